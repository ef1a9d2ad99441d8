/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stack segments, stored once (docs/design.md, "Stack ids that cannot
 * merge two stacks, and segments"): hashed by content, kept in `stacks_s`
 * (up to BPFS_SEG_SMALL frames) or `stacks`, compared on every hit so
 * that two stacks are never merged, and sent to the loader once in stream
 * mode. Included by sampler.bpf.c after its maps, counters and records,
 * which it uses.
 */
#ifndef BPFSAMPLER_SEGMENTS_BPF_H
#define BPFSAMPLER_SEGMENTS_BPF_H

static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* The loops over frames run under bpf_loop: the verifier checks each
 * callback once, where an inlined 127-step loop is re-walked at every probe
 * and call site (over the 1M-instruction limit). */
struct seg_loop {
	const struct bpfs_stack *a;
	const void *b; /* a struct bpfs_stack, or a bpfs_stack_small */
	__u64 h;
	bool differ;
};

/* Eight frames per callback: the per-call cost of bpf_loop dominated deep
 * stacks (26 us per 1000-frame sample with one frame per call). */
#define FRAMES_PER_CALL 8

static long hash_frames(__u64 blk, void *data)
{
	struct seg_loop *l = data;
	__u32 nr = l->a->nr;

	for (int k = 0; k < FRAMES_PER_CALL; k++) {
		__u64 i = blk * FRAMES_PER_CALL + k;

		if (i >= nr || i >= BPFS_SEG_FRAMES)
			return 1;
		l->h = (l->h ^ l->a->ips[i]) * 0x9e3779b97f4a7c15ULL;
		l->h ^= l->h >> 29;
	}
	return 0;
}

/* b's frames against a's, up to frames (b's size: the verifier's bound). */
static __always_inline long compare_frames_of(struct seg_loop *l, __u64 blk, __u32 frames,
					      const __u64 *b)
{
	__u32 nr = l->a->nr;

	for (int k = 0; k < FRAMES_PER_CALL; k++) {
		__u64 i = blk * FRAMES_PER_CALL + k;

		if (i >= nr || i >= frames)
			return 1;
		if (l->a->ips[i] != b[i]) {
			l->differ = true;
			return 1;
		}
	}
	return 0;
}

static long compare_frames(__u64 blk, void *data)
{
	struct seg_loop *l = data;

	return compare_frames_of(l, blk, BPFS_SEG_FRAMES, ((const struct bpfs_stack *)l->b)->ips);
}

static long compare_frames_small(__u64 blk, void *data)
{
	struct seg_loop *l = data;

	return compare_frames_of(l, blk, BPFS_SEG_SMALL,
				 ((const struct bpfs_stack_small *)l->b)->ips);
}

static __always_inline __u32 seg_nr(const struct bpfs_stack *s)
{
	return s->nr < BPFS_SEG_FRAMES ? s->nr : BPFS_SEG_FRAMES;
}

static __always_inline __u64 seg_hash(const struct bpfs_stack *s, __u64 seed)
{
	struct seg_loop l = { .a = s, .h = mix64(seed ^ s->nr ^ mix64(s->parent)) };

	bpf_loop((seg_nr(s) + FRAMES_PER_CALL - 1) / FRAMES_PER_CALL, hash_frames, &l, 0);
	return mix64(l.h);
}

static __always_inline bool seg_equal(const struct bpfs_stack *a, const struct bpfs_stack *b)
{
	struct seg_loop l = { .a = a, .b = b };

	if (a->nr != b->nr || a->parent != b->parent)
		return false;
	bpf_loop((seg_nr(a) + FRAMES_PER_CALL - 1) / FRAMES_PER_CALL, compare_frames, &l, 0);
	return !l.differ;
}

static __always_inline bool seg_equal_small(const struct bpfs_stack *a,
					    const struct bpfs_stack_small *b)
{
	struct seg_loop l = { .a = a, .b = b };

	if (a->nr != b->nr || a->parent != b->parent || a->nr > BPFS_SEG_SMALL)
		return false;
	bpf_loop((a->nr + FRAMES_PER_CALL - 1) / FRAMES_PER_CALL, compare_frames_small, &l, 0);
	return !l.differ;
}

/* The same without bpf_loop (5.17), for the compat variant: a bounded loop
 * the verifier walks frame by frame, once, inside the global function. */
static __always_inline __u64 seg_hash_compat(const struct bpfs_stack *s, __u64 seed)
{
	__u64 h = mix64(seed ^ s->nr ^ mix64(s->parent));
	__u32 nr = seg_nr(s);

	for (__u32 i = 0; i < BPFS_SEG_FRAMES; i++) {
		if (i >= nr)
			break;
		h = (h ^ s->ips[i]) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return mix64(h);
}

static __always_inline bool seg_equal_compat(const struct bpfs_stack *a,
					     const struct bpfs_stack *b)
{
	__u32 nr = seg_nr(a);

	if (a->nr != b->nr || a->parent != b->parent)
		return false;
	for (__u32 i = 0; i < BPFS_SEG_FRAMES; i++) {
		if (i >= nr)
			break;
		if (a->ips[i] != b->ips[i])
			return false;
	}
	return true;
}

/* Stream mode: a segment new to `stacks` goes to the loader once. If the
 * record cannot be reserved the segment stays in the map, and the loader
 * reads it from there when a sample needs it. */
static __always_inline void send_segment(__u64 id, const struct bpfs_stack *s)
{
	void *ring = this_ring();
	struct {
		struct bpfs_rec_hdr hdr;
		__u64 id;
	} head = { .id = id };
	struct bpf_dynptr dp;
	__u32 nr = seg_nr(s);
	/* only the frames the segment has: 5 on average under a build */
	__u32 body = BPFS_REC_STACK_SIZE(nr) - sizeof(head);

	_Static_assert(sizeof(head) == __builtin_offsetof(struct bpfs_rec_stack, seg),
		       "head is the record up to its segment");

	if (!ring || !rec_reserve_dynptr(ring, BPFS_REC_STACK_SIZE(nr), BPFS_REC_STACK,
					 &dp, &head.hdr)) {
		stat_inc_global(BPFS_STAT_STACK_RECS_LOST);
		return;
	}
	bpf_dynptr_write(&dp, 0, &head, sizeof(head), 0);
	/* parent, nr, pad and nr frames: s is in a map value or on the
	 * caller's scratch, whole, so body never reads past it */
	if (body > sizeof(*s))
		body = sizeof(*s);
	bpf_dynptr_write(&dp, sizeof(head), (void *)s, body, 0);
	rec_submit_dynptr(ring, &dp);
}

/* A stack record built whole before it is sent (no dynptr before 5.19). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpfs_rec_stack);
} recscratch SEC(".maps");

/* send_segment for the compat variant: the record is built in recscratch
 * and copied into the ring by bpf_ringbuf_output, only as long as its
 * frames. */
static __always_inline void send_segment_compat(__u64 id, const struct bpfs_stack *s)
{
	__u32 zero = 0, nr = seg_nr(s), size = BPFS_REC_STACK_SIZE(nr);
	struct bpfs_rec_stack *rec = bpf_map_lookup_elem(&recscratch, &zero);
	void *ring = this_ring();
	__u64 *seq;

	if (!ring || !rec || !(seq = rec_enter(ring, true))) {
		stat_inc_global(BPFS_STAT_STACK_RECS_LOST);
		return;
	}
	rec->hdr.type = BPFS_REC_STACK;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.seq = seq_take(seq, true);
	rec->id = id;
	bpf_probe_read_kernel(&rec->seg, sizeof(rec->seg), s);
	if (size > sizeof(*rec))
		size = sizeof(*rec);
	if (bpf_ringbuf_output(ring, rec, size, wakeup_flags(ring))) {
		rec_unsent();
		stat_inc_global(BPFS_STAT_STACK_RECS_LOST);
		return;
	}
	recs_busy_put();
}

/*
 * Returns the id of segment s in `stacks`, inserting it when new, or 0 when
 * it could not be stored (the reason is counted). The id is a content hash;
 * on a hit the frames and parent are compared, and a different segment in
 * the slot sends us to the next probe, so two stacks can never be merged
 * (unlike a STACK_TRACE map with BPF_F_REUSE_STACKID/FAST_STACK_CMP, or one
 * that drops on -EEXIST).
 */
/* The sample being taken stored a new segment: its key is new to `counts`. */
static __always_inline void mark_fresh(void)
{
	__u32 zero = 0;
	struct cur_sample *cur = bpf_map_lookup_elem(&cur_event, &zero);

	if (cur)
		cur->fresh = 1;
}

static __always_inline void seg_loss(__u32 which, bool in_sample)
{
	/* In a completion the sample is already counted (deferred): a failed
	 * store is a failed completion, not a lost sample. */
	if (in_sample)
		stat_inc(which);
	else
		stat_inc_global(BPFS_STAT_COMPLETION_ERR);
}

/*
 * A global function: the verifier checks it once, on its own, instead of
 * once per call site and per state of each caller (inlined, it made
 * on_sample 157k processed instructions and ~290 ms of verification, most of
 * the start-up; now ~13k and ~20 ms). The price is one BPF-to-BPF call per
 * segment stored. It takes no pointer: the segment is found again here
 * (seg_source), as a map value, since the 6.1 verifier refuses a global
 * function's pointer argument as the value of a map update, and 5.10 takes
 * no pointer argument but the context in a global function at all.
 */
/* The segment to store: this CPU's scratch (src 0), this CPU's walk
 * (SEG_SRC_WALK: its head and frames), the task iterator's
 * (SEG_SRC_TASKWALK), or the one of the completion of thread src, which
 * runs in task context where per-CPU scratch would be shared with whatever
 * runs next on the CPU. */
static __always_inline const struct bpfs_stack *seg_source(__u32 src)
{
	struct ucompletion *cw;
	struct taskwalk *tw;
	__u32 zero = 0;

	if (!src)
		return bpf_map_lookup_elem(&segscratch, &zero);
	if (src == SEG_SRC_WALK) {
		struct ustack *st = bpf_map_lookup_elem(&uscratch, &zero);

		if (!st)
			return NULL;
		barrier_var(st);
		return (const struct bpfs_stack *)&st->seg_parent;
	}
	/* barrier_var: else clang adds the offset before the NULL test, which
	 * the verifier refuses */
	if (src == SEG_SRC_TASKWALK) {
		tw = bpf_map_lookup_elem(&taskwalk, &zero);
		if (!tw)
			return NULL;
		barrier_var(tw);
		return &tw->seg;
	}
	cw = bpf_map_lookup_elem(&completions, &src);
	if (!cw)
		return NULL;
	barrier_var(cw);
	return &cw->seg;
}

/* Whether s is the same segment as old, in stacks_s (small) or stacks. */
static __always_inline bool seg_same(const void *old, const struct bpfs_stack *s, bool small,
				     const bool compat)
{
	if (small)
		return seg_equal_small(s, old);
	return compat ? seg_equal_compat(old, s) : seg_equal(old, s);
}

/* Stores s in stacks_s (small: the caller checked it fits; never in the
 * compat variant, which keeps one comparison loop) or in stacks. */
static __always_inline __u64 store_segment_in(__u32 src, __u64 seed, bool in_sample, bool small,
					      const bool compat)
{
	const struct bpfs_stack *s = seg_source(src);
	void *map = small ? (void *)&stacks_s : (void *)&stacks;
	__u64 id, cls = small ? BPFS_STACK_ID_SMALL : 0;

	if (!s)
		return 0;
	if (small && s->nr > BPFS_SEG_SMALL) { /* cannot happen: the caller checked */
		seg_loss(BPFS_STAT_LOST_STACKS_FULL, in_sample);
		return 0;
	}
	id = (compat ? seg_hash_compat(s, seed) : seg_hash(s, seed)) & stack_id_mask;

	/* unrolled: as a loop, clang put its head right after a call, a
	 * back-edge the verifier of 6.1 and 5.10 refuses */
#pragma unroll
	for (int probe = 0; probe < BPFS_STACK_PROBES; probe++) {
		void *old;
		long err;

		if (id == 0)
			id = 1;
		id |= cls;
		old = bpf_map_lookup_elem(map, &id);
		if (!old) {
			err = bpf_map_update_elem(map, &id, s, BPF_NOEXIST);
			if (!err) {
				/* per CPU: one shared counter's line went
				 * back and forth between CPUs storing at once
				 * (a build: nearly every sample new) */
				stat_inc_global(BPFS_STAT_SEGS_STORED);
				if (in_sample)
					mark_fresh();
				/* one read of mode: the compat
				 * variant must not keep send_segment */
				if (mode == BPFS_MODE_STREAM) {
					if (compat)
						send_segment_compat(id, s);
					else
						send_segment(id, s);
				}
				return id;
			}
			if (err == -EBUSY) {
				seg_loss(BPFS_STAT_LOST_BUSY, in_sample);
				return 0;
			}
			if (err != -EEXIST) {
				seg_loss(BPFS_STAT_LOST_STACKS_FULL, in_sample);
				return 0;
			}
			/* Another CPU inserted this id just now: compare. */
			old = bpf_map_lookup_elem(map, &id);
			if (!old)
				continue;
		}
		if (seg_same(old, s, small, compat))
			return id;
		id = mix64(id + 0x9e3779b97f4a7c15ULL) & stack_id_mask;
	}
	seg_loss(BPFS_STAT_LOST_COLLISION, in_sample);
	return 0;
}

__noinline __u64 store_segment_big(__u32 src, __u64 seed, bool in_sample)
{
	return store_segment_in(src, seed, in_sample, false, false);
}

/* Its own global function: one map at each of its call sites, so that the
 * verifier inlines their lookups. */
__noinline __u64 store_segment_small(__u32 src, __u64 seed, bool in_sample)
{
	return store_segment_in(src, seed, in_sample, true, false);
}

/* A segment of nr frames, from src (seg_source). */
static __always_inline __u64 store_segment(__u32 src, __u64 seed, bool in_sample, __u32 nr)
{
	if (nr <= BPFS_SEG_SMALL)
		return store_segment_small(src, seed, in_sample);
	return store_segment_big(src, seed, in_sample);
}

/* The compat variant's: this CPU's scratch only (it has no completions). */
__noinline __u64 store_segment_compat(__u64 seed, bool in_sample)
{
	return store_segment_in(0, seed, in_sample, false, true);
}

#endif
