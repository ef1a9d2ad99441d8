// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "stream.h"
#include "bpfsampler/python_abi.h"
#include "vec.h"

/* Samples of one thread waiting for its completion record. */
struct pending_list {
	struct bpfs_rec_sample *v;
	size_t nr, cap;
};

/* Per-CPU sequence tracking; CPUs are few, so a small growable array.
 * A program in task context (a completion, a fork) takes its number and is
 * interrupted by a sample before it reserves its ring slot: the sample's
 * record then comes first, one number ahead of the one it jumped. So the
 * numbers skipped recently are remembered, and one that turns up late fills
 * its gap instead of being counted as missing. */
#define SEQ_LATE_WINDOW 64
struct cpu_seq {
	uint64_t last;	  /* highest number seen; 0: nothing seen yet */
	uint64_t missing; /* bit i: number last - 1 - i not seen (yet) */
};

/* A stack segment, with the window it came in (stream__next_window) and
 * the BPF map's clear generation it was stored in (stream__stacks_cleared).
 * Allocated to its frames only: most stacks are far shorter than a
 * segment's 127 frames, and a long run keeps thousands. */
struct segment {
	uint64_t window;
	uint64_t gen;
	struct bpfs_stack s; /* last: s.ips has s.nr entries */
};

struct stream {
	struct stream_opts opts;
	struct hashmap *segments; /* id -> struct segment * */
	struct hashmap *counts;	  /* struct bpfs_count_key * -> struct bpfs_count_val * */
	struct hashmap *next_counts; /* the next window's (window_end set), or NULL */
	uint64_t window_end;	  /* samples from then on count in the next window */
	uint64_t window;	  /* windows closed so far */
	uint64_t gen;		  /* times the BPF stacks map was emptied */
	bool sealed;		  /* the open window is being read */
	struct hashmap *comms;	  /* pid -> last comm (char[16]) */
	struct cpu_seq *cpus;
	size_t nr_cpus;
	struct bpfs_rec_sample *samples;
	size_t nr_samples, cap_samples;
	struct hashmap *pending; /* tid -> struct pending_list * */
	struct stream_stats stats;
};

static uint64_t hash_key(const void *k)
{
	return hashmap__hash_bytes(k, sizeof(struct bpfs_count_key), 0);
}

static bool equal_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct bpfs_count_key)) == 0;
}

static void free_counts(struct hashmap *counts)
{
	const void *key;
	void *val;

	for (size_t i = 0; counts && hashmap__next(counts, &i, &key, &val);) {
		free((void *)key);
		free(val);
	}
	hashmap__free(counts);
}

int stream__new(const struct stream_opts *o, struct stream **out)
{
	struct stream *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	if (o)
		st->opts = *o;
	st->segments = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	st->counts = hashmap__new(hash_key, equal_key);
	st->comms = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	st->pending = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!st->segments || !st->counts || !st->comms || !st->pending) {
		stream__free(st);
		return -ENOMEM;
	}
	*out = st;
	return 0;
}

void stream__free(struct stream *st)
{
	void *val;

	if (!st)
		return;
	for (size_t i = 0; st->segments && hashmap__next(st->segments, &i, NULL, &val);)
		free(val);
	free_counts(st->counts);
	free_counts(st->next_counts);
	for (size_t i = 0; st->comms && hashmap__next(st->comms, &i, NULL, &val);)
		free(val);
	hashmap__free(st->segments);
	hashmap__free(st->comms);
	for (size_t i = 0; st->pending && hashmap__next(st->pending, &i, NULL, &val);) {
		free(((struct pending_list *)val)->v);
		free(val);
	}
	hashmap__free(st->pending);
	free(st->cpus);
	free(st->samples);
	free(st);
}

static uint64_t low_bits(uint64_t n)
{
	return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

/* A gap in one CPU's sequence numbers is records it could not reserve, or
 * records still to come from a program that an interrupt nested in. */
static int track_seq(struct stream *st, const struct bpfs_rec_hdr *h)
{
	struct cpu_seq *c;
	uint64_t d, j;

	if (h->cpu >= st->nr_cpus) {
		size_t n = h->cpu + 1;
		struct cpu_seq *nc = realloc(st->cpus, n * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		memset(nc + st->nr_cpus, 0, (n - st->nr_cpus) * sizeof(*nc));
		st->cpus = nc;
		st->nr_cpus = n;
	}
	c = &st->cpus[h->cpu];
	if (h->seq > c->last) {
		d = h->seq - c->last;
		st->stats.gaps += d - 1;
		/* last + 1 .. seq - 1 are missing now; last itself arrived
		 * (or is the 0 before the first record) */
		c->missing = (d >= 64 ? 0 : c->missing << d) | low_bits(d - 1);
		c->last = h->seq;
		return 0;
	}
	if (h->seq == c->last) {
		st->stats.reordered++; /* seen before: should not happen */
		return 0;
	}
	j = c->last - 1 - h->seq;
	if (j < SEQ_LATE_WINDOW && (c->missing & (1ULL << j))) {
		c->missing &= ~(1ULL << j);
		st->stats.gaps--;
		st->stats.late++;
		return 0;
	}
	st->stats.reordered++; /* seen before, or later than the window */
	return 0;
}

int stream__close_cpu(struct stream *st, uint32_t cpu, uint64_t last_seq)
{
	/* as if a record numbered last_seq + 1 arrived: the gap before it;
	 * nothing arrives after the final drain, so the window can go */
	struct bpfs_rec_hdr h = { .cpu = cpu, .seq = last_seq + 1 };
	int err;

	if (!last_seq || (cpu < st->nr_cpus && last_seq <= st->cpus[cpu].last))
		return 0;
	err = track_seq(st, &h);
	if (!err) {
		st->cpus[cpu].last = last_seq;
		st->cpus[cpu].missing = 0;
	}
	return err;
}

static void note_process(struct stream *st, uint32_t pid, uint32_t ppid, const char *comm16)
{
	char *known = hashmap__find(st->comms, (void *)(uintptr_t)(pid + 1UL));
	char comm[BPFS_COMM_LEN + 1] = {};

	if (known && strncmp(known, comm16, BPFS_COMM_LEN) == 0)
		return;
	if (!known) {
		known = calloc(1, BPFS_COMM_LEN);
		if (!known || hashmap__set(st->comms, (void *)(uintptr_t)(pid + 1UL), known, NULL)) {
			free(known);
			return;
		}
	}
	memcpy(known, comm16, BPFS_COMM_LEN);
	memcpy(comm, comm16, BPFS_COMM_LEN);
	if (st->opts.on_process)
		st->opts.on_process(st->opts.ctx, pid, ppid, 0, comm);
}

void stream__sample_key(const struct bpfs_rec_sample *r, struct bpfs_count_key *k)
{
	*k = (struct bpfs_count_key){
		.pid = r->pid,
		.tid = r->tid,
		.kstack_id = r->kstack_id,
		.ustack_id = r->ustack_id,
		.flags = r->flags,
		.event = r->event,
		.map_gen = r->map_gen,
	};
	memcpy(k->comm, r->comm, sizeof(k->comm));
}

static int count(struct stream *st, const struct bpfs_rec_sample *r)
{
	struct bpfs_count_val *v;
	struct bpfs_count_key k, *nk;

	struct hashmap *counts = st->counts;

	/* A sample of a window already closed (a completion that came late)
	 * counts in the open one: never lost, at most a window late. */
	if (st->sealed || (st->window_end && r->time_ns >= st->window_end))
		counts = st->next_counts;
	stream__sample_key(r, &k);
	v = hashmap__find(counts, &k);
	if (!v) {
		nk = malloc(sizeof(*nk));
		v = calloc(1, sizeof(*v));
		if (!nk || !v || (*nk = k, hashmap__set(counts, nk, v, NULL))) {
			free(nk);
			free(v);
			return -ENOMEM;
		}
	}
	v->samples++;
	v->period += r->period;
	return 0;
}

static int keep_sample(struct stream *st, const struct bpfs_rec_sample *r)
{
	if (st->nr_samples == st->cap_samples) {
		size_t cap = st->cap_samples ? st->cap_samples * 2 : 4096;
		struct bpfs_rec_sample *ns = realloc(st->samples, cap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		st->samples = ns;
		st->cap_samples = cap;
	}
	st->samples[st->nr_samples++] = *r;
	return 0;
}

static int take_sample(struct stream *st, const struct bpfs_rec_sample *r)
{
	struct bpfs_rec_sample fixed;
	__u32 gen = r->map_gen;
	int err;

	/* The sample's time names the mapping it ran in, when the loader
	 * gave that mapping its gen after the sample was taken. */
	if (st->opts.map_gen_at)
		gen = st->opts.map_gen_at(st->opts.ctx, r->pid, r->map_gen, r->time_ns);
	if (gen != r->map_gen) {
		fixed = *r;
		fixed.map_gen = gen;
		r = &fixed;
		st->stats.gens_by_time++;
	}
	err = count(st, r);
	if (!err && st->opts.keep_samples)
		err = keep_sample(st, r);
	return err;
}

static int defer_sample(struct stream *st, const struct bpfs_rec_sample *r)
{
	void *key = (void *)(uintptr_t)(r->tid + 1UL);
	struct pending_list *pl = hashmap__find(st->pending, key);

	if (!pl) {
		pl = calloc(1, sizeof(*pl));
		if (!pl || hashmap__set(st->pending, key, pl, NULL)) {
			free(pl);
			return -ENOMEM;
		}
	}
	if (pl->nr == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 8;
		struct bpfs_rec_sample *nv = realloc(pl->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		pl->v = nv;
		pl->cap = cap;
	}
	pl->v[pl->nr++] = *r;
	return 0;
}

/* A thread's whole user stack, walked at its return to user space: it
 * completes every sample of the thread taken before it still waiting. */
static int handle_complete(struct stream *st, const struct bpfs_rec_complete *c)
{
	struct pending_list *pl = hashmap__find(st->pending, (void *)(uintptr_t)(c->tid + 1UL));
	size_t kept = 0;
	int err = 0;

	st->stats.completions++;
	if (!pl)
		return 0;
	for (size_t i = 0; i < pl->nr; i++) {
		struct bpfs_rec_sample r = pl->v[i];

		if (r.time_ns > c->time_ns) {
			pl->v[kept++] = r; /* taken after this walk: the next one */
			continue;
		}
		r.flags &= ~BPFS_F_USTACK_PENDING;
		if (c->ustack_id)
			r.ustack_id = c->ustack_id;
		r.flags |= c->ustack_id ? c->flags : BPFS_F_USTACK_ERR;
		st->stats.completed++;
		if (!err)
			err = take_sample(st, &r);
	}
	pl->nr = kept;
	/* a thread's list goes with its last pending sample: threads come and
	 * go by the thousand on a busy host */
	if (!kept && hashmap__delete(st->pending, (void *)(uintptr_t)(c->tid + 1UL), NULL, NULL)) {
		free(pl->v);
		free(pl);
	}
	return err;
}

int stream__finish_if(struct stream *st, bool (*gone)(void *ctx, uint32_t pid), void *ctx)
{
	struct vec empty = VEC_INIT(uint64_t);
	const void *key;
	void *val;
	int err = 0;

	for (size_t i = 0; hashmap__next(st->pending, &i, &key, &val);) {
		struct pending_list *pl = val;
		size_t kept = 0;
		uint64_t *slot;

		for (size_t k = 0; k < pl->nr; k++) {
			struct bpfs_rec_sample r = pl->v[k];

			if (gone && !gone(ctx, r.pid)) {
				pl->v[kept++] = r;
				continue;
			}
			r.flags = (r.flags & ~BPFS_F_USTACK_PENDING) | BPFS_F_USTACK_ERR;
			st->stats.never_completed++;
			if (!err)
				err = take_sample(st, &r);
		}
		pl->nr = kept;
		if (!kept && gone && (slot = vec__push(&empty)))
			*slot = (uintptr_t)key;
	}
	/* the lists of threads gone, as handle_complete drops them */
	for (size_t i = 0; i < empty.nr; i++) {
		if (hashmap__delete(st->pending, (void *)(uintptr_t)*(uint64_t *)vec__at(&empty, i),
				    NULL, &val)) {
			free(((struct pending_list *)val)->v);
			free(val);
		}
	}
	vec__free(&empty);
	return err;
}

int stream__finish(struct stream *st)
{
	return stream__finish_if(st, NULL, NULL);
}

static struct segment *segment__new(const struct bpfs_stack *s, uint64_t window, uint64_t gen)
{
	size_t nr = s->nr < BPFS_SEG_FRAMES ? s->nr : BPFS_SEG_FRAMES;
	struct segment *seg = malloc(offsetof(struct segment, s.ips) + nr * sizeof(s->ips[0]));

	if (!seg)
		return NULL;
	seg->window = window;
	seg->gen = gen;
	seg->s.parent = s->parent;
	seg->s.nr = nr;
	seg->s.pad = 0;
	memcpy(seg->s.ips, s->ips, nr * sizeof(s->ips[0]));
	return seg;
}

static int handle_stack(struct stream *st, const struct bpfs_rec_stack *r)
{
	struct segment *known, *seg;

	st->stats.stack_records++;
	if (r->seg.nr > BPFS_SEG_FRAMES || !r->id) {
		st->stats.malformed++;
		return 0;
	}
	known = hashmap__find(st->segments, (void *)(uintptr_t)r->id);
	if (known && known->gen < st->gen) {
		/* The BPF map was emptied since: the id may now stand for
		 * another segment (probing after a collision), the newer one
		 * is right. */
		seg = segment__new(&r->seg, st->window, st->gen);
		if (!seg)
			return -ENOMEM;
		hashmap__set(st->segments, (void *)(uintptr_t)r->id, seg, NULL);
		free(known);
		return 0;
	}
	if (known) {
		/* The BPF side sends a segment once per insertion; seeing it
		 * again is harmless if it is the same, and kept first if not. */
		st->stats.duplicate_stacks++;
		if (known->s.nr != r->seg.nr || known->s.parent != r->seg.parent ||
		    memcmp(known->s.ips, r->seg.ips, known->s.nr * sizeof(known->s.ips[0])))
			st->stats.conflicting_stacks++;
		return 0;
	}
	seg = segment__new(&r->seg, st->window, st->gen);
	if (!seg)
		return -ENOMEM;
	if (hashmap__set(st->segments, (void *)(uintptr_t)r->id, seg, NULL)) {
		free(seg);
		return -ENOMEM;
	}
	return 0;
}

static size_t min_size(uint32_t type)
{
	switch (type) {
	case BPFS_REC_NEW_KEY:
		return sizeof(struct bpfs_rec_new_key);
	case BPFS_REC_SAMPLE:
		return sizeof(struct bpfs_rec_sample);
	case BPFS_REC_STACK:
		return BPFS_REC_STACK_HEAD; /* and its frames: size_ok */
	case BPFS_REC_COMPLETE:
		return sizeof(struct bpfs_rec_complete);
	case BPFS_REC_MAP:
		return sizeof(struct bpfs_rec_map);
	case BPFS_REC_PY_CODE:
		return sizeof(struct bpfs_rec_py_code);
	default:
		return SIZE_MAX;
	}
}

/* CONFIG_NR_CPUS is at most 8192 */
#define STREAM_MAX_CPUS 65536

/* A record of a size given by its contents (a stack: by its frame count)
 * must hold what it says it holds; nothing past size is ever read. */
static bool size_ok(const struct bpfs_rec_hdr *h, size_t size)
{
	const struct bpfs_rec_stack *r = (const void *)h;

	if (size < sizeof(*h) || size < min_size(h->type))
		return false;
	/* the sequence table is sized by the highest CPU seen: a wild cpu
	 * field would allocate gigabytes (found by fuzz_stream) */
	if (h->cpu >= STREAM_MAX_CPUS)
		return false;
	if (h->type == BPFS_REC_STACK)
		return r->seg.nr <= BPFS_SEG_FRAMES && size >= BPFS_REC_STACK_SIZE(r->seg.nr);
	return true;
}

int stream__handle(struct stream *st, const void *data, size_t size)
{
	const struct bpfs_rec_hdr *h = data;
	int err;

	if (!size_ok(h, size)) {
		st->stats.malformed++;
		return 0;
	}
	err = track_seq(st, h);
	if (err)
		return err;
	st->stats.records++;
	switch (h->type) {
	case BPFS_REC_NEW_KEY: {
		const struct bpfs_rec_new_key *r = data;
		char comm[BPFS_COMM_LEN + 1] = {};

		/* BPF announces a process only when something changed (new,
		 * exec, mappings): always pass it on */
		memcpy(comm, r->comm, BPFS_COMM_LEN);
		if (st->opts.on_process)
			st->opts.on_process(st->opts.ctx, r->pid, r->ppid, r->mm, comm);
		return 0;
	}
	case BPFS_REC_SAMPLE: {
		const struct bpfs_rec_sample *r = data;

		st->stats.samples++;
		note_process(st, r->pid, 0, r->comm);
		if (r->flags & BPFS_F_USTACK_PENDING)
			return defer_sample(st, r);
		return take_sample(st, r);
	}
	case BPFS_REC_STACK:
		return handle_stack(st, data);
	case BPFS_REC_COMPLETE:
		return handle_complete(st, data);
	case BPFS_REC_MAP:
		if (st->opts.on_mapping)
			st->opts.on_mapping(st->opts.ctx, data);
		return 0;
	case BPFS_REC_PY_CODE: {
		const struct bpfs_rec_py_code *r = data;

		if (st->opts.on_py_code)
			st->opts.on_py_code(st->opts.ctx, r->pid, r->code);
		return 0;
	}
	}
	return 0;
}

int stream__for_each_count(struct stream *st, stream_count_fn cb, void *ctx)
{
	const void *key;
	void *val;
	int err;

	for (size_t i = 0; hashmap__next(st->counts, &i, &key, &val);) {
		err = cb(ctx, key, val);
		if (err)
			return err;
	}
	return 0;
}

int stream__take_counts(struct stream *st, stream_count_fn take, void *ctx)
{
	struct vec taken = VEC_INIT(void *);
	const void *key;
	void *val, **slot;
	int err = 0;

	for (size_t i = 0; !err && hashmap__next(st->counts, &i, &key, &val);) {
		int r = take(ctx, key, val);

		if (r < 0)
			err = r;
		else if (r > 0 && !(slot = vec__push(&taken)))
			err = -ENOMEM;
		else if (r > 0)
			*slot = (void *)key;
	}
	/* deleted after the walk: the table does not move under it */
	for (size_t i = 0; i < taken.nr; i++) {
		void *k = *(void **)vec__at(&taken, i);
		const void *old_key;

		if (hashmap__delete(st->counts, k, &old_key, &val)) {
			free((void *)old_key);
			free(val);
		}
	}
	vec__free(&taken);
	return err;
}

int stream__set_window_end(struct stream *st, uint64_t end_ns)
{
	if (!st->next_counts) {
		st->next_counts = hashmap__new(hash_key, equal_key);
		if (!st->next_counts)
			return -ENOMEM;
	}
	st->window_end = end_ns;
	return 0;
}

/* Segments a sample of the open window can still need: those that came in
 * it, and in the one before (found in the BPF map before it was emptied,
 * so not sent again). */
#define SEGMENT_WINDOWS 2

/* The segments kept for SEGMENT_WINDOWS windows that no id in used (NULL:
 * none) names go. */
static void forget_old_segments(struct stream *st, const struct hashmap *used)
{
	struct vec old = VEC_INIT(uint64_t);
	const void *key;
	void *val;

	for (size_t i = 0; hashmap__next(st->segments, &i, &key, &val);) {
		uint64_t *id;

		if (((struct segment *)val)->window + SEGMENT_WINDOWS > st->window ||
		    (used && hashmap__find(used, key)))
			continue;
		id = vec__push(&old);
		if (!id)
			break; /* forgotten the next time */
		*id = (uintptr_t)key;
	}
	for (size_t i = 0; i < old.nr; i++) {
		hashmap__delete(st->segments, (void *)(uintptr_t)*(uint64_t *)vec__at(&old, i),
				NULL, &val);
		free(val);
	}
	st->stats.segments_forgotten += old.nr;
	vec__free(&old);
}

int stream__next_window(struct stream *st, uint64_t next_end_ns)
{
	struct hashmap *fresh = hashmap__new(hash_key, equal_key);

	if (!fresh)
		return -ENOMEM;
	free_counts(st->counts);
	st->counts = st->next_counts;
	st->next_counts = fresh;
	st->window_end = next_end_ns;
	st->sealed = false;
	st->window++;
	forget_old_segments(st, NULL);
	return 0;
}

static int mark_id(struct hashmap *used, uint64_t id)
{
	if (id && hashmap__set(used, (void *)(uintptr_t)id, (void *)1, NULL))
		return -ENOMEM;
	return 0;
}

int stream__mark_ids(void *used, const struct bpfs_count_key *k, const struct bpfs_count_val *v)
{
	int err = mark_id(used, k->kstack_id);

	return err ? err : mark_id(used, k->ustack_id);
}

int stream__forget_segments(struct stream *st, struct hashmap *used)
{
	struct vec todo = VEC_INIT(uint64_t);
	const void *key;
	void *val;
	int err;

	/* what the caller found used, the stream's own counts and the
	 * samples waiting for a completion */
	err = stream__for_each_count(st, stream__mark_ids, used);
	for (size_t i = 0; !err && hashmap__next(st->pending, &i, NULL, &val);) {
		struct pending_list *pl = val;

		for (size_t k = 0; !err && k < pl->nr; k++) {
			err = mark_id(used, pl->v[k].kstack_id);
			if (!err)
				err = mark_id(used, pl->v[k].ustack_id);
		}
	}
	for (size_t i = 0; !err && hashmap__next(used, &i, &key, NULL);) {
		uint64_t *slot = vec__push(&todo);

		if (!slot)
			err = -ENOMEM;
		else
			*slot = (uintptr_t)key;
	}
	/* ... and the segments outward of those */
	while (!err && todo.nr) {
		uint64_t id = *(uint64_t *)vec__at(&todo, --todo.nr);
		struct segment *seg = hashmap__find(st->segments, (void *)(uintptr_t)id);
		uint64_t parent = seg ? seg->s.parent : 0, *slot;

		if (!parent || hashmap__find(used, (void *)(uintptr_t)parent))
			continue;
		slot = vec__push(&todo);
		if (!slot || mark_id(used, parent))
			err = -ENOMEM;
		else
			*slot = parent;
	}
	if (!err)
		forget_old_segments(st, used);
	st->window++;
	vec__free(&todo);
	return err;
}

void stream__seal(struct stream *st)
{
	st->sealed = true;
}

int stream__keep_segment(void *ctx, uint64_t id, const struct bpfs_stack *s)
{
	struct stream *st = ctx;
	struct segment *known, *seg;

	if (!id || s->nr > BPFS_SEG_FRAMES) {
		st->stats.malformed++;
		return 0;
	}
	known = hashmap__find(st->segments, (void *)(uintptr_t)id);
	if (known && known->gen == st->gen)
		return 0; /* a record brought it since the last emptying */
	seg = segment__new(s, st->window, st->gen);
	if (!seg)
		return -ENOMEM;
	if (hashmap__set(st->segments, (void *)(uintptr_t)id, seg, NULL)) {
		free(seg);
		return -ENOMEM;
	}
	free(known);
	st->stats.segments_kept++;
	return 0;
}

void stream__stacks_cleared(struct stream *st)
{
	st->gen++;
	st->stats.stacks_cleared++;
}

void stream__forget_process(struct stream *st, uint32_t pid)
{
	void *comm;

	if (hashmap__delete(st->comms, (void *)(uintptr_t)(pid + 1UL), NULL, &comm))
		free(comm);
}

size_t stream__nr_segments(const struct stream *st)
{
	return hashmap__size(st->segments);
}

void stream__stats(const struct stream *st, struct stream_stats *out)
{
	*out = st->stats;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct bpfs_rec_sample *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	if (x->hdr.cpu != y->hdr.cpu)
		return x->hdr.cpu < y->hdr.cpu ? -1 : 1;
	return x->hdr.seq < y->hdr.seq ? -1 : x->hdr.seq > y->hdr.seq;
}

const struct bpfs_rec_sample *stream__samples(struct stream *st, size_t *nr)
{
	if (st->nr_samples) /* none: no array, and qsort(NULL, 0) is undefined */
		qsort(st->samples, st->nr_samples, sizeof(*st->samples), cmp_sample);
	*nr = st->nr_samples;
	return st->samples;
}

size_t stream__unwind(struct stream *st, uint64_t id, stream_fallback_fn fb, void *fbctx,
		      uint64_t *ips, size_t max, bool *missing)
{
	/* A chain longer than this is a cycle: ids are hashes, not trusted. */
	const int max_segments = BPFS_MAX_USER_DEPTH / BPFS_SEG_FRAMES + 2;
	struct bpfs_stack tmp;
	size_t n = 0;

	*missing = false;
	for (int s = 0; id && s < max_segments; s++) {
		const struct segment *known = hashmap__find(st->segments, (void *)(uintptr_t)id);
		const struct bpfs_stack *seg = known ? &known->s : NULL;

		if (!seg) {
			struct segment *copy;

			if (!fb || fb(fbctx, id, &tmp)) {
				*missing = true;
				break;
			}
			seg = &tmp;
			/* cache it: many samples share a segment */
			copy = segment__new(&tmp, st->window, st->gen);
			if (copy && !hashmap__set(st->segments, (void *)(uintptr_t)id, copy, NULL))
				seg = &copy->s;
			else
				free(copy);
		}
		for (uint32_t i = 0; i < seg->nr && i < BPFS_SEG_FRAMES && n < max; i++)
			ips[n++] = seg->ips[i];
		id = seg->parent;
	}
	return n;
}
