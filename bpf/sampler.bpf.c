// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling side of bpfsampler: one perf_event program attached to the
 * sampling event(s) on every CPU. Each sample takes the kernel stack and the
 * user stack (frame pointers), stores each distinct stack segment once in
 * `stacks`, and then either counts (pid, tid, comm, event, stacks) in
 * `counts` (aggregate mode) or sends a sample record through this CPU's ring
 * (stream mode). New segments are sent once as stack records in stream mode.
 *
 * Every sample ends in exactly one bucket of the `stats` map (kept,
 * spilled, streamed, idle, filtered or lost by reason), so the loader can
 * prove nothing vanished: see docs/design.md, "Loss model".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpfsampler/sampler_abi.h"

#define EEXIST 17
#define EBUSY 16

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load (rodata is frozen, so the verifier sees
 * constants and prunes the unused branches). */
const volatile __u32 mode = BPFS_MODE_AGGREGATE;
const volatile __u32 filter_mode = BPFS_FILTER_NONE;
const volatile bool include_idle = false;
const volatile bool collect_user = true;
const volatile bool collect_kernel = true;
const volatile __u32 max_depth = BPFS_DEFAULT_DEPTH; /* user frames */
/* Frames walked in the interrupt; the rest, or a walk that faulted, is
 * finished at return to user space when use_task_work is set. */
const volatile __u32 irq_depth = BPFS_MAX_USER_DEPTH;
const volatile bool use_task_work = false;
/* bpfsampler itself: sampled like everyone (its cost shows), never
 * announced, or reading its own maps would change them and announce it
 * again, a loop. */
const volatile __u32 loader_pid = 0;
/* Ring data that makes the loader wake up (else it polls on a timer). */
const volatile __u64 wakeup_bytes = 64 * 1024;
/* A process announcement wakes the loader at once (it may live only
 * milliseconds); the agent lets it wait for its next drain. */
const volatile bool announce_now = true;
/* Tests narrow stack ids to a few bits to force collisions and check that
 * colliding stacks are never merged (--debug-stack-id-bits). */
const volatile __u64 stack_id_mask = ~BPFS_STACK_ID_SMALL;
/* Measurement only (BPFS_DEBUG_CUT, docs/benchmarks.md): end each sample
 * after stage N, to break its cost down. 0, the default, runs everything;
 * the verifier drops the unused exits. */
const volatile __u32 debug_cut = 0;
#define CUT(n) (debug_cut && debug_cut <= (n))

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BPFS_MAX_EVENTS * BPFS_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* The sample this CPU is handling: its event, for stat_inc, and whether
 * it stored a segment new to its stacks map (then its key cannot be in
 * `counts` yet). The off-CPU unit sets event once (its own map) and never
 * reads fresh. */
struct cur_sample {
	__u32 event;
	__u32 fresh;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cur_sample);
} cur_event SEC(".maps");

/* Sized by the loader (--map-entries, --stack-entries). Preallocated: a
 * BPF_F_NO_PREALLOC map allocates from per-CPU caches refilled by irq_work,
 * and in interrupt/NMI context a burst of new stacks drains them and inserts
 * fail with -ENOMEM (seen here at start-up), losing samples. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct bpfs_count_key);
	__type(value, struct bpfs_count_val);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct bpfs_stack);
} stacks SEC(".maps");

/* Segments of up to BPFS_SEG_SMALL frames (most of them): an insert
 * writes a quarter of the bytes, in a quarter of the cache lines. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct bpfs_stack_small);
} stacks_s SEC(".maps");

/* (pid, comm, number of mappings) already announced to the loader: the
 * first sample of a process, of its new image after an exec, or after its
 * mappings changed (ld.so mapping libraries, dlopen) sends a NEW_KEY record
 * with a wake-up, so that its maps are read while it lives: a maps read at
 * the very first sample after exec sees no libraries yet. */
struct seen_key {
	__u32 pid;
	__u32 map_count;
	char comm[BPFS_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct seen_key);
	__type(value, __u8);
} seen SEC(".maps");

/* The key this CPU announced or found in `seen` last: a CPU-bound process
 * sampled again and again costs a 24-byte compare, not a hash lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen_key);
} last_seen SEC(".maps");

/* Each process's newest mapping generation (bpfs_rec_map), read by every
 * sample. LRU: a process evicted here by 16384 others samples with gen 0
 * again, and is named after the first mappings the loader read. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} mapgens SEC(".maps");

/* The compat variant walks frame pointers where tables were asked for:
 * a chain cut by code without them is marked (take_user_stack_compat). */
const volatile bool mark_fp_cuts = false;
/* Follow mapping changes (on_exec is loaded; the loader reads mmap2). */
const volatile bool track_maps = false;
/* The generation counter shared by every process: gens only rise. */
__u64 map_gen_seq = 0; /* 64-bit: clang 14 has no 32-bit fetch-and-add for BPF v1 */
/* Bumped after every store to mapgens (here and by the loader): a CPU's
 * cached gen (gen_cache) is good while it has not moved. */
__u64 map_gen_epoch = 0;

/* The gen this CPU looked up last: a CPU sampling one process again and
 * again reads it without a hash lookup. The epoch is read before the
 * lookup and a writer bumps it after its store, so a cached gen older
 * than a store is never taken for current. */
struct gen_cache {
	__u64 epoch;
	__u32 pid;
	__u32 gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_cache);
} gen_cache SEC(".maps");

static __always_inline __u32 map_gen_of(__u32 pid)
{
	__u64 epoch = *(volatile __u64 *)&map_gen_epoch;
	struct gen_cache *c;
	__u32 zero = 0, *gen, g;

	c = bpf_map_lookup_elem(&gen_cache, &zero);
	if (c && c->pid == pid && c->epoch == epoch)
		return c->gen;
	gen = bpf_map_lookup_elem(&mapgens, &pid);
	g = gen ? *gen : 0;
	if (c) {
		c->epoch = epoch;
		c->pid = pid;
		c->gen = g;
	}
	return g;
}

/* The tgids or tids selected by -p/-t/-- command, each with a enum
 * bpfs_filter_state. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} filter SEC(".maps");

/* One ring per CPU (--ring-size each): a CPU never contends with another
 * for its ring, and the loader drains them all from one epoll set. */
struct ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct ring);
} rings SEC(".maps");

/* Per-CPU record sequence numbers: every record a CPU tries to send takes
 * one, sent or not, so the loader sees each lost record as a gap. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seqs SEC(".maps");

/* Records being numbered and sent right now on each CPU: taken before the
 * stop flag is read, given back once the record is submitted (or known
 * unsent). Set the flag, see every CPU at 0, and no record can take a
 * number any more: the loader then drains and reads where the sequences
 * ended (sampler__final_seqs), and they match what it received. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} recs_busy SEC(".maps");

/* Set by the loader at the end, after the last drain that completions may
 * still feed: a record that would come later takes no number and is
 * counted as BPFS_STAT_RECS_AFTER_STOP instead. */
__u32 recs_stop = 0;

/* Numbering and reserving must not be split by a preemption: a completion
 * runs preemptible, and every task run in between on the CPU takes numbers
 * whose records land before its own, more of them than the loader's window
 * of late numbers holds (issue #14). Interrupts still nest, a handful of
 * records at most. Since 6.10; only completions (6.18, use_task_work) run
 * preemptible, so only then is it called. */
extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;

/* The user stack as walked, leaf first, before it is cut into segments,
 * and the walk's state. The state lives in the map value, not on the BPF
 * stack: the verifier tracks stack values exactly, so a counter there makes
 * it walk every one of the 1024 iterations of the bpf_loop callback. */
struct ustack {
	__u64 fp, sp, base;
	__u32 nr, words;
	__u32 fault;
	__u32 limit;   /* frames this walk may take */
	__u32 limited; /* stopped at limit with the chain going on */
	/* The table walk (unwind.bpf.h): why it ended early (sample flags),
	 * and the last row found with the addresses it covers. */
	__u32 reason;
	__u32 row_ok;
	__u32 fp_steps; /* frames stepped by frame pointers in BPFS_UMAP_FP code */
	__u32 row_searches; /* rows searched, the row cache missing them */
	__u32 run_off;	/* a frame-pointer run stopped short: unwind_step next */
	__s32 map_idx;	/* the last mapping found, -1: none; kept across walks */
	__s32 map_prev; /* the one found before it */
	__u32 tail_taken; /* the outer frames came from the tail memo */
	__u32 tail_pad;
	__u64 row_lo, row_hi;
	struct bpfs_unwind_row row;
	/* A head in struct bpfs_stack's layout, right before ips: a walk of
	 * up to BPFS_SEG_FRAMES frames is stored as a segment from here,
	 * without being copied into segscratch first (store_walk). */
	__u64 seg_parent;
	__u32 seg_nr, seg_pad;
	__u64 ips[BPFS_MAX_USER_DEPTH];
};

_Static_assert(__builtin_offsetof(struct ustack, ips) -
			       __builtin_offsetof(struct ustack, seg_parent) ==
		       __builtin_offsetof(struct bpfs_stack, ips) &&
		       __builtin_offsetof(struct ustack, seg_nr) -
			       __builtin_offsetof(struct ustack, seg_parent) ==
		       __builtin_offsetof(struct bpfs_stack, nr),
	       "a walk's head and frames read as a segment");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ustack);
} uscratch SEC(".maps");

/* The segment being stored (not on the 512-byte BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpfs_stack);
} segscratch SEC(".maps");

/* A window of user stack memory, read with one helper call: walking the
 * frames inside it costs no helper call per frame. 1 KiB: a read cost
 * ~200 ns on these VMs nearly whatever its size, and 512 bytes took two
 * for a main thread's six frames (1 KiB: 15% less per sample there, 10%
 * on a 200-deep recursion; 2 KiB no better; docs/benchmarks.md). */
#define UWIN_WORDS 128

struct uwin {
	__u64 w[UWIN_WORDS + 1]; /* +1: w[off + 1] with off masked to UWIN_WORDS - 1 */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uwin);
} uwindow SEC(".maps");

/* Completion at return to user space: the thread's own context, where
 * reads may fault pages in. One per thread at a time, keyed by tid; the
 * walk's scratch lives here too, since this code can sleep and per-CPU
 * scratch would be shared with whatever runs next on the CPU. */
struct ucompletion {
	struct bpf_task_work tw;
	__u32 pid;
	__u32 tid;
	struct ustack st;
	struct uwin win;
	struct bpfs_stack seg;
};

/* The scratch of a walk run by a task iterator that the loader reads (the
 * off-CPU unit's threads blocked before the run): such a program runs
 * preemptible, so per-CPU scratch could be rewritten under it by the
 * scheduler's path on its CPU. One: the loader reads such an iterator from
 * one thread, once at a time. */
struct taskwalk {
	struct ustack st;
	struct uwin win;
	struct bpfs_stack seg;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct taskwalk);
} taskwalk SEC(".maps");

/* store_segment's sources besides completions (tids are below them): the
 * taskwalk's segment, and this CPU's walk read as one (struct ustack) */
#define SEG_SRC_TASKWALK 0xffffffffu
#define SEG_SRC_WALK 0xfffffffeu

/* LRU: entries are never deleted (the callback runs from its own entry);
 * the least recently sampled threads make room. Sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ucompletion);
} completions SEC(".maps");

/*
 * A perf_event program's context holds the user-space ABI's struct pt_regs
 * (bpf_user_pt_regs_t), whose layout is fixed on x86-64 whatever the
 * kernel's own struct pt_regs looks like: 6.18 made cs a 2-byte member of a
 * union, 6.1 has an 8-byte field, and a CO-RE read relocated from one
 * cannot load the other (the context takes 8-byte loads only). So these are
 * plain offsets, with no relocation. volatile: clang would otherwise share
 * loads at the same offsets across branches, a ctx access the verifier
 * refuses.
 */
struct abi_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;
	__u64 orig_ax, ip, cs, flags, sp, ss;
};
#define CTX_REG(ctx, r) (*(volatile __u64 *)&((struct abi_regs *)&(ctx)->regs)->r)

/* Event ev's counter which, by n (frames, for BPFS_STAT_UFRAMES_FP). */
static __always_inline void stat_add_ev(__u32 ev, __u32 which, __u64 n)
{
	__u32 key = (ev < BPFS_MAX_EVENTS ? ev : 0) * BPFS_STAT_NR + which;
	__u64 *v = bpf_map_lookup_elem(&stats, &key);

	if (v)
		*v += n; /* per-CPU slot: no atomics needed */
}

/* A sample bucket of event ev. */
static __always_inline void stat_inc_ev(__u32 ev, __u32 which)
{
	stat_add_ev(ev, which, 1);
}

/* A sample bucket of the current sample's event, where it is not at hand. */
static __always_inline void stat_inc(__u32 which)
{
	__u32 zero = 0;
	struct cur_sample *cur = bpf_map_lookup_elem(&cur_event, &zero);

	stat_inc_ev(cur ? cur->event : 0, which);
}

/* A counter that is not about one sample (records, completions), kept under
 * event 0, from code that an interrupt on the same CPU can interrupt. */
static __always_inline void stat_inc_global(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline void *this_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&rings, &cpu);
}

static __always_inline void recs_busy_put(void)
{
	__u32 zero = 0;
	__u64 *busy = bpf_map_lookup_elem(&recs_busy, &zero);

	if (busy)
		__sync_fetch_and_add(busy, -1ULL); /* an add: a sub is a fetching atomic (5.12) */
}

/* The part of sending a record before the slot: raises this CPU's busy
 * count and returns its sequence counter, or NULL when the loader has
 * stopped taking records (no number taken, busy count given back).
 * compat: the program variant for kernels before 5.19 (see on_sample). */
static __always_inline __u64 *rec_enter(void *ring, const bool compat)
{
	__u32 zero = 0;
	__u64 *seq, *busy;

	seq = bpf_map_lookup_elem(&seqs, &zero);
	busy = bpf_map_lookup_elem(&recs_busy, &zero);
	if (!seq || !ring || !busy)
		return NULL;
	/* A fetching atomic (a full barrier, also on arm64) before the flag
	 * is read: the loader sets the flag, then reads the busy counts. The
	 * comparison, never true, only makes clang keep the fetching form.
	 * Fetching atomics came in 5.12: before, the plain locked add, which
	 * is a full barrier on x86-64 too (the only target built). */
	if (compat)
		__sync_fetch_and_add(busy, 1);
	if ((!compat && __sync_fetch_and_add(busy, 1) == (1ULL << 63)) ||
	    *(volatile __u32 *)&recs_stop) {
		__sync_fetch_and_add(busy, -1ULL); /* an add: a sub is a fetching atomic (5.12) */
		stat_inc_global(BPFS_STAT_RECS_AFTER_STOP);
		return NULL;
	}
	return seq;
}

/* The record could not be reserved: its number is spent (a visible gap). */
static __always_inline void rec_unsent(void)
{
	stat_inc_global(BPFS_STAT_RECS_UNSENT);
	recs_busy_put();
}

/* The next sequence number of this CPU. Atomic: a completion callback or
 * an exec in task context and the sampling interrupt share the counter.
 * The compat variant has no fetching atomics (5.12) and needs none: only
 * its sampling program sends records there, and a perf_event program never
 * nests on a CPU (bpf_prog_active). */
static __always_inline __u64 seq_take(__u64 *seq, const bool compat)
{
	__u64 s;

	if (!compat)
		return __sync_fetch_and_add(seq, 1) + 1;
	s = *seq + 1;
	*seq = s;
	return s;
}

/* Reserves a record on this CPU's ring and fills its header; NULL when the
 * ring is full (the sequence number is spent anyway: a visible gap) or
 * when the loader has stopped taking records (no number taken). A record
 * returned must go to rec_submit. */
static __always_inline void *rec_reserve(void *ring, __u32 size, __u32 type, const bool compat)
{
	struct bpfs_rec_hdr *hdr;
	__u64 *seq, s;

	seq = rec_enter(ring, compat);
	if (!seq)
		return NULL;
	/* !compat: no kfunc call at all in the compat variant (5.10 knows
	 * none, even in code the verifier would prune) */
	if (!compat && use_task_work)
		bpf_preempt_disable();
	s = seq_take(seq, compat);
	hdr = bpf_ringbuf_reserve(ring, size, 0);
	if (!compat && use_task_work)
		bpf_preempt_enable();
	if (!hdr) {
		rec_unsent();
		return NULL;
	}
	hdr->type = type;
	hdr->cpu = bpf_get_smp_processor_id();
	hdr->seq = s;
	return hdr;
}

/* rec_reserve for a record whose size is known only at run time: the slot
 * is the dynptr dp, and *h the header to write into it. False when not
 * reserved (dp released already, or never set up); when true, dp must go
 * to rec_submit_dynptr. */
static __always_inline bool rec_reserve_dynptr(void *ring, __u32 size, __u32 type,
					       struct bpf_dynptr *dp, struct bpfs_rec_hdr *h)
{
	__u64 *seq;
	long err;

	seq = rec_enter(ring, false);
	if (!seq)
		return false;
	if (use_task_work)
		bpf_preempt_disable();
	h->seq = __sync_fetch_and_add(seq, 1) + 1;
	err = bpf_ringbuf_reserve_dynptr(ring, size, 0, dp);
	if (use_task_work)
		bpf_preempt_enable();
	if (err) {
		/* a failed reservation is a null dynptr, but must be
		 * discarded all the same */
		bpf_ringbuf_discard_dynptr(dp, 0);
		rec_unsent();
		return false;
	}
	h->type = type;
	h->cpu = bpf_get_smp_processor_id();
	return true;
}

/* Wakes the loader only once a batch has piled up; it also polls on a
 * timer, so small batches are drained without a wake-up per record. */
static __always_inline __u64 wakeup_flags(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									  : BPF_RB_NO_WAKEUP;
}

static __always_inline void rec_submit(void *ring, void *rec)
{
	bpf_ringbuf_submit(rec, wakeup_flags(ring));
	recs_busy_put();
}

static __always_inline void rec_submit_dynptr(void *ring, struct bpf_dynptr *dp)
{
	bpf_ringbuf_submit_dynptr(dp, wakeup_flags(ring));
	recs_busy_put();
}

#include "segments.bpf.h"

/* The kernel stack through the kernel's own unwinder, as one segment,
 * without its skip innermost frames (the off-CPU unit's: the tracepoint's
 * own). A stack that cannot be read is not a drop: the sample is kept,
 * marked. */
static __always_inline bool take_kernel_stack(void *ctx, struct bpfs_stack *s, __u64 *id,
					      __u32 *flags, const bool compat, __u64 skip)
{
	long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), skip & BPF_F_SKIP_FIELD_MASK);

	if (n < 0) {
		stat_inc(BPFS_STAT_KSTACK_ERR);
		*flags |= BPFS_F_KSTACK_ERR;
		return true;
	}
	s->nr = n / sizeof(__u64);
	s->parent = 0;
	if (!s->nr)
		return true;
	if (s->nr >= BPFS_SEG_FRAMES) {
		stat_inc(BPFS_STAT_KSTACK_TRUNC);
		*flags |= BPFS_F_KSTACK_TRUNC;
	}
	/* s is segscratch's */
	*id = compat ? store_segment_compat(0x6b, true) : store_segment(0, 0x6b, true, s->nr);
	return *id != 0;
}

/*
 * The user stack, walked through frame pointers here rather than with
 * bpf_get_stack(BPF_F_USER_STACK). The kernel's walker accepts any frame
 * pointer below TASK_SIZE, so every chain that ends the ABI's way (rbp = 0
 * from _start) or in code built without frame pointers (rbp = garbage, as in
 * Debian's glibc) ends with a read that page-faults; with page faults
 * disabled that costs about 700 ns per sample on these VMs (1347 -> 668 ns
 * measured with bpf_stats). Here a frame pointer must be 8-byte aligned,
 * above the stack pointer, within MAX_STACK_SPAN of it, and rise from frame
 * to frame (which also rules out cycles), so the walk ends without touching
 * an unmapped page. It is also not bounded by perf_event_max_stack (127):
 * it goes on to --max-stack-depth.
 */
#define MAX_STACK_SPAN (64ULL << 20)

/* How a walk reads user memory: from the sampling interrupt, where a read
 * must not fault; in the walked thread's own task context (a completion),
 * where pages may fault in; or another thread's memory, from a sleepable
 * task iterator run by the loader (bpf_copy_from_user_task, 5.18). A
 * constant at each call site: the other readers compile away. */
enum urd {
	URD_IRQ,
	URD_SELF,
	URD_TASK,
};

/* A user stack walk's state for bpf_loop's callbacks: the tables and the
 * row cache are for the walk through unwind tables (unwind.bpf.h). */
struct walk {
	struct ustack *st;
	struct uwin *win;
	const struct bpfs_unwind_proc *proc; /* NULL: frame pointers */
	__u32 cache; /* 1 + this CPU's first row-cache slot; 0: none */
	__u32 cache_pad;
	const struct bpfs_py_proc *py; /* NULL: no CPython here (python.bpf.h) */
	struct py_cursor *pyc;
	struct task_struct *task; /* URD_TASK: the thread whose stack is walked */
	struct tail_state *tm;	  /* the CPU's tail memo (tailmemo.bpf.h): sampling only */
};

static __always_inline long read_user(const struct walk *w, void *dst, __u32 size, __u64 addr,
				      enum urd rd)
{
	if (rd == URD_TASK)
		return bpf_copy_from_user_task(dst, size, (void *)addr, w->task, 0);
	if (rd == URD_SELF)
		return bpf_copy_from_user(dst, size, (void *)addr);
	return bpf_probe_read_user(dst, size, (void *)addr);
}

/* Reads the window at fp: the whole window when it is mapped, else just
 * the one frame (the window may run past the top of the stack). Returns the
 * number of words read, 0 on a fault. */
static __always_inline __u32 read_window(const struct walk *w, __u64 fp, enum urd rd)
{
	if (!read_user(w, w->win->w, UWIN_WORDS * sizeof(__u64), fp, rd))
		return UWIN_WORDS;
	if (!read_user(w, w->win->w, 2 * sizeof(__u64), fp, rd))
		return 2;
	return 0;
}

/* One frame per call, from bpf_loop: the verifier checks the body once
 * instead of once per unrolled iteration. Returns 1 to stop. */
static __always_inline long walk_step(struct walk *w, enum urd rd)
{
	struct ustack *st = w->st;
	__u32 nr = st->nr;
	__u64 off, next, ret, fp = st->fp;

	if (nr >= max_depth || nr >= BPFS_MAX_USER_DEPTH)
		return 1;
	if (fp < st->sp || fp - st->sp >= MAX_STACK_SPAN || (fp & 7))
		return 1;
	if (nr >= st->limit) {
		st->limited = 1;
		return 1;
	}
	off = (fp - st->base) / 8;
	if (!st->words || fp < st->base || off + 1 >= st->words) {
		st->base = fp;
		off = 0;
		st->words = read_window(w, fp, rd);
		if (!st->words) {
			st->fault = 1;
			return 1;
		}
	}
	off &= UWIN_WORDS - 1; /* a no-op (off + 1 < words); bounds it for the verifier */
	next = w->win->w[off];
	ret = w->win->w[off + 1];
	if (!ret) {
		st->fp = 0; /* the chain's end, the ABI's way */
		return 1;
	}
	st->ips[nr] = ret;
	st->nr = nr + 1;
	if (next <= fp) {
		if (!next)
			st->fp = 0; /* the chain's end, the ABI's way */
		return 1;
	}
	st->sp = fp;
	st->fp = next;
	return 0;
}

/* Several frames per callback, as for hashing: fewer bpf_loop calls. */
#define WALK_PER_CALL 4

static __always_inline long walk_steps(void *data, enum urd rd)
{
	for (int k = 0; k < WALK_PER_CALL; k++)
		if (walk_step(data, rd))
			return 1;
	return 0;
}

static long walk_frame(__u64 i, void *data)
{
	return walk_steps(data, URD_IRQ);
}

static long walk_frame_sleepable(__u64 i, void *data)
{
	return walk_steps(data, URD_SELF);
}

static long walk_frame_task(__u64 i, void *data)
{
	return walk_steps(data, URD_TASK);
}

#include "python.bpf.h"
#include "unwind.bpf.h"
#include "task_work.bpf.h"

struct cut {
	struct ustack *st;
	struct bpfs_stack *seg;
	__u32 src;   /* where store_segment finds seg again (seg_source) */
	__u32 nr;    /* frames walked */
	bool in_sample;
	__u64 id;    /* last segment stored; 0 when storing failed */
};

/* Stores segment j counted from the root: frames [nr-127(j+1), nr-127j) of
 * the leaf-first walk, with the previous (outer) segment as parent. */
static long cut_segment(__u64 j, void *data)
{
	struct cut *c = data;
	__u32 end, start, len;

	if (j * BPFS_SEG_FRAMES >= c->nr)
		return 1;
	end = c->nr - j * BPFS_SEG_FRAMES;
	start = end > BPFS_SEG_FRAMES ? end - BPFS_SEG_FRAMES : 0;
	len = end - start;
	if (len > BPFS_SEG_FRAMES || start >= BPFS_MAX_USER_DEPTH)
		return 1; /* cannot happen; bounds for the verifier */
	c->seg->parent = c->id;
	c->seg->nr = len;
	/* one helper call instead of a copy loop the verifier walks 127 times */
	bpf_probe_read_kernel(c->seg->ips, (len & 0x7f) * sizeof(__u64),
			      &c->st->ips[start & (BPFS_MAX_USER_DEPTH - 1)]);
	c->id = store_segment(c->src, 0x75, c->in_sample, len);
	return c->id ? 0 : 1;
}

/* Cuts the walk in st into segments and stores them; the leaf segment's
 * id, or 0 when one could not be stored (counted). This CPU's walk (src 0,
 * st its uscratch) of one segment is stored from st itself: no helper
 * call and no callback (most stacks; fp1's time moved within its noise,
 * docs/benchmarks.md). */
static __always_inline __u64 store_walk(struct ustack *st, struct bpfs_stack *seg, __u32 src,
					bool in_sample)
{
	struct cut c = { .st = st, .seg = seg, .src = src, .nr = st->nr, .in_sample = in_sample };

	if (!src && c.nr <= BPFS_SEG_FRAMES) {
		if (!c.nr)
			return 0;
		st->seg_parent = 0;
		st->seg_nr = c.nr;
		return store_segment(SEG_SRC_WALK, 0x75, in_sample, c.nr);
	}
	bpf_loop(BPFS_MAX_USER_DEPTH / BPFS_SEG_FRAMES + 1, cut_segment, &c, 0);
	return c.id;
}

static __always_inline void walk_from(struct ustack *st, __u64 ip, __u64 fp, __u64 sp,
				      __u32 limit)
{
	st->ips[0] = ip;
	st->fp = fp;
	st->sp = sp;
	st->nr = 1;
	st->words = 0;
	st->base = 0;
	st->fault = 0;
	st->limit = limit;
	st->limited = 0;
	st->reason = 0;
	st->row_ok = 0;
	st->fp_steps = 0;
	st->row_searches = 0;
	st->run_off = 0;
	st->tail_taken = 0;
	/* map_idx and map_prev are kept from the last walk in this scratch:
	 * a mapping index is only a guess, used once the address is checked
	 * to lie inside that mapping of the walked process, so a guess left
	 * by another process (or another version of this one's mappings)
	 * costs a search, never a wrong answer. A CPU sampling one process
	 * again and again finds its mappings without a search. */
}

/* Zeroes of a completion's size (no special fields: just bytes). */
struct completion_zero {
	char b[sizeof(struct ucompletion)];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct completion_zero);
} czero SEC(".maps");

static int complete_walk(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ucompletion *cw = value;
	struct walk w = { .st = &cw->st, .win = &cw->win };
	const struct bpfs_unwind_proc *proc = unwind_proc(cw->pid);
	struct bpfs_rec_complete *rec;
	struct pt_regs *regs;
	void *ring;

	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	walk_from(&cw->st, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, bp),
		  BPF_CORE_READ(regs, sp), max_depth);
	user_walk(&w, proc, URD_SELF);
	if (!proc)
		cw->st.reason |= BPFS_F_USTACK_UNCHECKED;
	ring = this_ring();
	rec = rec_reserve(ring, sizeof(*rec), BPFS_REC_COMPLETE, false);
	if (!rec) {
		/* after the stop: counted as such, not as a failure */
		if (!*(volatile __u32 *)&recs_stop)
			stat_inc_global(BPFS_STAT_COMPLETION_ERR);
		return 0;
	}
	rec->ustack_id = store_walk(&cw->st, &cw->seg, cw->tid, false);
	rec->time_ns = bpf_ktime_get_ns();
	rec->pid = cw->pid;
	rec->tid = cw->tid;
	rec->flags = (cw->st.fault ? BPFS_F_USTACK_ERR : 0) |
		     (cw->st.nr >= max_depth ? BPFS_F_USTACK_TRUNC : 0) | cw->st.reason;
	rec_submit(ring, rec);
	/* the reasons a stack walked here was cut, counted as the
	 * interrupt's walk counts them (once per stack walked) */
	if (cw->st.fault)
		stat_inc_global(BPFS_STAT_USTACK_ERR);
	if (cw->st.nr >= max_depth)
		stat_inc_global(BPFS_STAT_USTACK_TRUNC);
	if (cw->st.reason & BPFS_F_USTACK_NOINFO)
		stat_inc_global(BPFS_STAT_USTACK_NOINFO);
	if (cw->st.reason & BPFS_F_USTACK_BADFRAME)
		stat_inc_global(BPFS_STAT_USTACK_BADFRAME);
	stat_inc_global(BPFS_STAT_COMPLETIONS);
	return 0;
}

/* Asks for a completion of this thread's user stack; false when it cannot
 * be had (the partial stack is then kept, marked). A completion already
 * scheduled for the thread serves this sample too. */
static __always_inline bool schedule_completion(struct task_struct *task, __u32 pid, __u32 tid)
{
	struct ucompletion *cw;
	long err;

	cw = bpf_map_lookup_elem(&completions, &tid);
	if (!cw) {
		/* too large to build on the BPF stack: insert from zeroes */
		struct completion_zero *zero_val;
		__u32 zero = 0;

		zero_val = bpf_map_lookup_elem(&czero, &zero);
		if (!zero_val)
			return false;
		bpf_map_update_elem(&completions, &tid, zero_val, BPF_NOEXIST);
		cw = bpf_map_lookup_elem(&completions, &tid);
		if (!cw)
			return false;
	}
	cw->pid = pid;
	cw->tid = tid;
	err = bpf_task_work_schedule_resume_impl(task, &cw->tw, &completions, complete_walk, NULL);
	return err == 0 || err == -EBUSY;
}

/* Tables are used but this process's are not loaded yet (its first
 * samples): a frame-pointer chain that ends other than the ABI's way may
 * have been cut by code without frame pointers. */
static __always_inline void user_walk_unchecked(struct ustack *st,
						const struct bpfs_unwind_proc *proc)
{
	if (!proc && unwind_mode != BPFS_UNWIND_FP && st->fp && !st->fault &&
	    st->nr < max_depth && !st->limited)
		st->reason |= BPFS_F_USTACK_NOINFO;
	if (!proc)
		st->reason |= BPFS_F_USTACK_UNCHECKED;
}

/* Why a finished user walk ended early, as the sample's flags, counted
 * (also by the off-CPU unit, bpf/offcpu.bpf.c). */
static __always_inline void user_walk_marks(struct ustack *st, __u32 *flags)
{
	if (st->fault) {
		stat_inc(BPFS_STAT_USTACK_ERR);
		*flags |= BPFS_F_USTACK_ERR;
	}
	if (st->nr >= max_depth || st->limited) {
		stat_inc(BPFS_STAT_USTACK_TRUNC);
		*flags |= BPFS_F_USTACK_TRUNC;
	}
	if (st->reason & BPFS_F_USTACK_NOINFO)
		stat_inc(BPFS_STAT_USTACK_NOINFO);
	if (st->reason & BPFS_F_USTACK_BADFRAME)
		stat_inc(BPFS_STAT_USTACK_BADFRAME);
	*flags |= st->reason;
}

/* The interrupt's user walk, from the registers at the interrupt: through
 * the tables of pid's process or frame pointers, with CPython's frames,
 * into uscratch. A global function: the verifier checks it once on its
 * own, where inlined it checked the walk again for each state on_sample
 * reached it in (the kernel stack's outcomes, the filter's): 136,000
 * instructions processed at load, of which the walk ~107,000. */
__noinline int user_walk_irq(struct bpf_perf_event_data *ctx, __u32 pid)
{
	struct walk w = {};

	{ /* a key whose slot later lookups reuse: with 4 bytes more this
	   * frame rounds up to 96 on 6.1, whose verifier then finds the
	   * deepest chain (on_sample, this, user_frame, python_frames,
	   * py_frame_step) at 544 bytes, over its 512 */
		__u32 zero = 0;

		w.st = bpf_map_lookup_elem(&uscratch, &zero);
		w.win = bpf_map_lookup_elem(&uwindow, &zero);
		w.tm = bpf_map_lookup_elem(&tailmemo, &zero);
	}
	if (!ctx || !w.st || !w.win || !w.tm)
		return 0;
	/* the registers first: the frame keeps no copy of them across the
	 * lookups below (6.1's 512 bytes, counted with this frame's size) */
	if (CTX_REG(ctx, cs) & 3) { /* interrupted in user mode: its registers */
		walk_from(w.st, CTX_REG(ctx, ip), CTX_REG(ctx, bp), CTX_REG(ctx, sp),
			  use_task_work ? irq_depth : max_depth);
	} else { /* in the kernel: the registers saved at kernel entry */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		/* direct BTF loads, not a helper call per field */
		walk_from(w.st, regs->ip, regs->bp, regs->sp, use_task_work ? irq_depth : max_depth);
	}
	tail_begin(w.tm, pid);
	w.py = python_begin(pid, &w.pyc);
	user_walk(&w, unwind_proc_irq(pid), URD_IRQ);
	/* a walk that took the memo leaves it: no call (its return, under
	 * this machine's return thunks, is not free) */
	if (w.proc && !w.st->tail_taken && w.tm->trail_n >= 2)
		tail_save(w.tm, w.st, pid);
	if (w.py)
		python_tail(w.st, w.py, w.pyc);
	user_walk_unchecked(w.st, w.proc);
	return 0;
}

static __always_inline bool take_user_stack(struct bpf_perf_event_data *ctx,
					    struct bpfs_stack *seg, struct bpfs_count_key *key)
{
	__u32 *flags = &key->flags;
	struct ustack *st;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&uscratch, &zero);
	if (!st)
		return true;
	user_walk_irq(ctx, key->pid);
	if (st->fp_steps)
		stat_add_ev(key->event, BPFS_STAT_UFRAMES_FP, st->fp_steps);
	if (st->row_searches)
		stat_add_ev(key->event, BPFS_STAT_ROW_SEARCHES, st->row_searches);
	if (st->tail_taken)
		stat_add_ev(key->event, BPFS_STAT_TAILS_TAKEN, 1);
	if (CUT(4))
		return false;
	if (use_task_work && (st->fault || st->limited) &&
	    schedule_completion(bpf_get_current_task_btf(), key->pid, key->tid))
		*flags |= BPFS_F_USTACK_PENDING;
	else
		user_walk_marks(st, flags);
	key->ustack_id = store_walk(st, seg, 0, true);
	return key->ustack_id != 0;
}

static __always_inline bool selected(__u32 pid, __u32 tid)
{
	__u8 *state;
	__u32 key;

	if (filter_mode == BPFS_FILTER_NONE)
		return true;
	key = filter_mode == BPFS_FILTER_TGID ? pid : tid;
	state = bpf_map_lookup_elem(&filter, &key);
	return state && *state == BPFS_FILTER_SELECTED;
}

/* The partial record: what the interrupt knows about one sample, taken
 * at time_ns (the off-CPU unit's: when the block began). */
static __always_inline bool send_sample_at(const struct bpfs_count_key *key, __u64 period,
					   __u64 time_ns, const bool compat)
{
	void *ring = this_ring();
	struct bpfs_rec_sample *rec;

	rec = rec_reserve(ring, sizeof(*rec), BPFS_REC_SAMPLE, compat);
	if (!rec)
		return false;
	rec->time_ns = time_ns;
	rec->period = period;
	rec->kstack_id = key->kstack_id;
	rec->ustack_id = key->ustack_id;
	rec->pid = key->pid;
	rec->tid = key->tid;
	rec->event = key->event;
	rec->flags = key->flags;
	rec->map_gen = key->map_gen;
	__builtin_memcpy(rec->comm, key->comm, sizeof(rec->comm));
	rec_submit(ring, rec);
	return true;
}

static __always_inline bool send_sample(const struct bpfs_count_key *key, __u64 period,
					const bool compat)
{
	return send_sample_at(key, period, bpf_ktime_get_ns(), compat);
}

/* The current task: a BTF pointer whose fields are direct loads, or in the
 * compat variant (bpf_get_current_task_btf is 5.11) a plain address whose
 * fields are read by BPF_CORE_READ. */
#define CUR_TASK(compat)                                                                   \
	((compat) ? (struct task_struct *)bpf_get_current_task() : bpf_get_current_task_btf())
#define TASK_MM(task, compat) ((compat) ? BPF_CORE_READ(task, mm) : (task)->mm)

/* Whether last, this CPU's memo (last_seen), is (pid, map_count, comm):
 * a CPU-bound process sampled again and again costs this compare. */
static __always_inline bool seen_last(const struct seen_key *last, __u32 pid, __u32 map_count,
				      const char *comm)
{
	return last && last->pid == pid && last->map_count == map_count &&
	       *(__u64 *)last->comm == *(const __u64 *)comm &&
	       *(__u64 *)&last->comm[8] == *(const __u64 *)&comm[8];
}

static __always_inline void announce_process(const struct bpfs_count_key *key, const bool compat)
{
	struct task_struct *task = CUR_TASK(compat);
	struct seen_key sk = { .pid = key->pid }, *last;
	struct mm_struct *mm = TASK_MM(task, compat);
	struct bpfs_rec_new_key *rec;
	__u32 zero = 0;
	void *ring;
	__u8 one = 1;

	if (key->pid == loader_pid)
		return;
	__builtin_memcpy(sk.comm, key->comm, sizeof(sk.comm));
	if (compat)
		sk.map_count = mm ? BPF_CORE_READ(mm, map_count) : 0;
	else
		sk.map_count = mm ? mm->map_count : 0; /* direct BTF loads, no helper */
	last = bpf_map_lookup_elem(&last_seen, &zero);
	if (seen_last(last, sk.pid, sk.map_count, sk.comm))
		return;
	if (last)
		*last = sk;
	if (bpf_map_lookup_elem(&seen, &sk))
		return;
	bpf_map_update_elem(&seen, &sk, &one, BPF_ANY);
	ring = this_ring();
	rec = rec_reserve(ring, sizeof(*rec), BPFS_REC_NEW_KEY, compat);
	if (!rec) {
		stat_inc_global(BPFS_STAT_NOTIFY_LOST);
		return;
	}
	rec->pid = key->pid;
	rec->tid = key->tid;
	rec->ppid = BPF_CORE_READ(task, real_parent, tgid);
	rec->mm = (__u64)mm;
	__builtin_memcpy(rec->comm, key->comm, sizeof(rec->comm));
	/* wake the loader now: a process may live only milliseconds */
	if (announce_now) {
		bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
		recs_busy_put();
	} else {
		rec_submit(ring, rec);
	}
}

/* Whether this CPU announced this process, as it is now, last (the
 * memo announce_process checks first): the common case, inline, without
 * announce_current's call. */
static __always_inline bool announced_last(const struct bpfs_count_key *key,
					   struct task_struct *task)
{
	struct mm_struct *mm = task->mm;
	struct seen_key *last;
	__u32 zero = 0;

	if (key->pid == loader_pid)
		return true;
	last = bpf_map_lookup_elem(&last_seen, &zero);
	return seen_last(last, key->pid, mm ? mm->map_count : 0, key->comm);
}

/* announce_process for on_sample, as a global function: its locals (the
 * seen key, the record) then stay out of on_sample's frame, which is in
 * the deepest call chains (6.1's 512 bytes, each frame rounded up to 32).
 * Scalars only: the 6.1 verifier is strict about a global function's
 * pointer arguments. */
__noinline int announce_current(__u32 pid, __u32 tid, __u64 comm_lo, __u64 comm_hi)
{
	struct bpfs_count_key key = { .pid = pid, .tid = tid };

	*(__u64 *)key.comm = comm_lo;
	*(__u64 *)&key.comm[8] = comm_hi;
	announce_process(&key, false);
	return 0;
}

/* Who may add to a key of `counts` at the same time. */
enum count_writers {
	/* only the CPU adding: a sample's key names the thread running
	 * there (its tid), which no other CPU samples meanwhile, and a
	 * perf_event program does not nest on its CPU */
	COUNT_ONE_WRITER,
	/* another CPU as well: the off-CPU unit counts a block from the
	 * window's cut on one CPU while the thread comes back on another */
	COUNT_SHARED,
};

/* Plain adds where one CPU writes: an atomic add waits for every store
 * before it to reach the cache (the walk's window, the scratch's state),
 * and cost ~80 ns a sample of fp1 where those lines were cold
 * (docs/benchmarks.md). The loader only reads and deletes meanwhile, and an
 * aligned 8-byte store is never seen torn. */
static __always_inline bool add_count(struct bpfs_count_val *val, __u64 period, __u32 ev,
				      const enum count_writers writers)
{
	if (writers == COUNT_SHARED) {
		__sync_fetch_and_add(&val->samples, 1);
		__sync_fetch_and_add(&val->period, period);
	} else {
		val->samples += 1;
		val->period += period;
	}
	stat_inc_ev(ev, BPFS_STAT_KEPT);
	return true;
}

/* Aggregate mode. A full map spills the sample to the ring, as pprof's
 * in-process table evicts to its log, rather than losing it. A sample
 * that stored a new segment (fresh) has a key `counts` cannot hold yet:
 * it goes to the ring without the map's lookup and insert, which cost
 * more than the record where most stacks are new (a build, CPython's
 * frames with their instructions); its key enters the map when seen again.
 */
static __always_inline void count_sample(const struct bpfs_count_key *key, __u64 period,
					 bool fresh, const enum count_writers writers,
					 const bool compat)
{
	struct bpfs_count_val *val, init = { 1, period };
	long err;

	if (fresh && send_sample(key, period, compat)) {
		stat_inc_ev(key->event, BPFS_STAT_FIRST);
		return;
	}
	val = bpf_map_lookup_elem(&counts, key);
	if (val && add_count(val, period, key->event, writers))
		return;
	err = bpf_map_update_elem(&counts, key, &init, BPF_NOEXIST);
	if (!err) {
		stat_inc_ev(key->event, BPFS_STAT_KEPT);
		return;
	}
	if (err == -EEXIST) {
		val = bpf_map_lookup_elem(&counts, key);
		if (val && add_count(val, period, key->event, writers))
			return;
	}
	if (send_sample(key, period, compat))
		stat_inc(BPFS_STAT_SPILLED);
	else
		stat_inc(err == -EBUSY ? BPFS_STAT_LOST_BUSY : BPFS_STAT_LOST_COUNTS_FULL);
}

/* 5.10 has no bpf_task_pt_regs (5.15). On x86-64 the user registers saved
 * at kernel entry sit at the top of the task's kernel stack, THREAD_SIZE
 * (16 KiB without KASAN) above task->stack, in the ABI's layout (no
 * padding before 6.9's FRED). Trusted only when the saved cs is the 64-bit
 * user code segment: any other stack size reads something else there. */
#define COMPAT_THREAD_SIZE 16384
#define USER_CS_64 0x33

static __always_inline bool user_regs_compat(struct task_struct *task, __u64 *ip, __u64 *bp,
					     __u64 *sp)
{
	void *stack = BPF_CORE_READ(task, stack);
	struct abi_regs *r = (struct abi_regs *)(stack + COMPAT_THREAD_SIZE) - 1;
	__u64 cs = 0;

	if (!stack || bpf_probe_read_kernel(&cs, sizeof(cs), &r->cs) ||
	    (cs & 0xffff) != USER_CS_64)
		return false;
	return !bpf_probe_read_kernel(ip, sizeof(*ip), &r->ip) &&
	       !bpf_probe_read_kernel(bp, sizeof(*bp), &r->bp) &&
	       !bpf_probe_read_kernel(sp, sizeof(*sp), &r->sp);
}

/* The kernel's own frame-pointer walker (bpf_get_stack), which ends in
 * silence wherever the chain does: the fallback when the user registers
 * cannot be found. */
static __always_inline bool get_user_stack_compat(struct bpf_perf_event_data *ctx,
						  struct bpfs_stack *seg,
						  struct bpfs_count_key *key, __u32 frames)
{
	long n = bpf_get_stack(ctx, seg->ips, (frames & 0x7f) * sizeof(__u64), BPF_F_USER_STACK);

	if (n < 0) {
		stat_inc(BPFS_STAT_USTACK_ERR);
		key->flags |= BPFS_F_USTACK_ERR;
		return true;
	}
	seg->nr = n / sizeof(__u64);
	seg->parent = 0;
	if (!seg->nr)
		return true;
	if (seg->nr >= frames) {
		stat_inc(BPFS_STAT_USTACK_TRUNC);
		key->flags |= BPFS_F_USTACK_TRUNC;
	}
	key->ustack_id = store_segment_compat(0x75, true);
	return key->ustack_id != 0;
}

/* Whether a frame-pointer chain ended before the thread's first frame.
 * The ABI's end is a frame pointer of zero, from the thread's first
 * function; anything else not a frame pointer is code built without them.
 * But such code may hold zero in the register too (a vDSO frame over
 * glibc's, over an interpreter's): in the main thread, whose start is
 * known, the chain is whole only if it ended just below the initial
 * stack, at __libc_start_call_main (glibc is built without frame pointers:
 * its frames end every chain so; main's frame record is 272 bytes below
 * glibc 2.36's initial stack). */
#define START_FRAMES_SPAN 512
static __always_inline bool fp_chain_cut(struct task_struct *task, const struct ustack *st,
					 __u32 frames, bool main_thread)
{
	__u64 top;

	if (st->fault || st->limited || st->nr >= frames)
		return false;
	if (!main_thread)
		return st->fp || st->nr == 1;
	top = BPF_CORE_READ(task, mm, start_stack);
	return st->sp >= top || top - st->sp >= START_FRAMES_SPAN;
}

/*
 * The user stack in the compat variant: no unwind tables (they need
 * bpf_loop, 5.17), so frame pointers, walked here with a bounded loop
 * (walk_step, as the full variant's) up to one segment. Unlike
 * bpf_get_stack it knows why the chain ended: the ABI's zero, or a
 * register that is no frame pointer (code built without them, marked "no
 * unwind info": on this kernel there are no tables to go on with).
 */
static __always_inline bool take_user_stack_compat(struct bpf_perf_event_data *ctx,
						   struct task_struct *task,
						   struct bpfs_stack *seg,
						   struct bpfs_count_key *key)
{
	__u32 frames = max_depth < BPFS_SEG_FRAMES ? max_depth : BPFS_SEG_FRAMES, zero = 0, nr;
	__u64 ip = CTX_REG(ctx, ip), bp = CTX_REG(ctx, bp), sp = CTX_REG(ctx, sp);
	struct walk w = {};

	key->flags |= BPFS_F_USTACK_UNCHECKED;
	w.st = bpf_map_lookup_elem(&uscratch, &zero);
	w.win = bpf_map_lookup_elem(&uwindow, &zero);
	if (!w.st || !w.win ||
	    (!(CTX_REG(ctx, cs) & 3) && !user_regs_compat(task, &ip, &bp, &sp)))
		return get_user_stack_compat(ctx, seg, key, frames);
	walk_from(w.st, ip, bp, sp, frames);
	for (int i = 0; i < BPFS_SEG_FRAMES; i++)
		if (walk_step(&w, URD_IRQ))
			break;
	if (mark_fp_cuts && fp_chain_cut(task, w.st, frames, key->pid == key->tid))
		w.st->reason |= BPFS_F_USTACK_NOINFO;
	user_walk_marks(w.st, &key->flags);
	nr = w.st->nr;
	if (nr > BPFS_SEG_FRAMES)
		nr = BPFS_SEG_FRAMES; /* cannot happen: walked to frames at most */
	seg->nr = nr;
	seg->parent = 0;
	bpf_probe_read_kernel(seg->ips, (nr & 0x7f) * sizeof(__u64), w.st->ips);
	key->ustack_id = store_segment_compat(0x75, true);
	return key->ustack_id != 0;
}

/* The sample: the full variant, or the compat one for kernels before 5.19,
 * chosen by the constant compat so that clang leaves in each only the
 * helpers its kernels have. */
static __always_inline int sample(struct bpf_perf_event_data *ctx, __u32 ev, const bool compat)
{
	struct task_struct *task = CUR_TASK(compat);
	/* the task's own fields, direct BTF loads: one helper call less */
	__u64 pid_tgid = compat ? bpf_get_current_pid_tgid() :
				  (__u64)task->tgid << 32 | (__u32)task->pid;
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct bpfs_count_key key = {};
	struct bpfs_stack *seg;
	struct cur_sample *cur;
	__u32 zero = 0;
	bool user_ok;

	/* for the counters deep down (store_segment) */
	cur = bpf_map_lookup_elem(&cur_event, &zero);
	if (cur) {
		cur->event = ev;
		cur->fresh = 0;
	}
	stat_inc_ev(ev, BPFS_STAT_TAKEN);
	if (tid == 0 && !include_idle) {
		stat_inc_ev(ev, BPFS_STAT_IDLE);
		return 0;
	}
	if (!selected(pid, tid)) {
		stat_inc_ev(ev, BPFS_STAT_FILTERED);
		return 0;
	}
	if (CUT(1))
		return 0;
	seg = bpf_map_lookup_elem(&segscratch, &zero);
	if (!seg)
		return 0; /* cannot happen: a one-entry array */

	key.pid = pid;
	key.tid = tid;
	key.event = ev;
	/* Two direct BTF loads instead of the helper's call and string copy;
	 * a comm changing under us may come out torn (the loader reads it as
	 * 16 bytes, NUL-terminated or not), as perf's own read may. */
	if (compat) {
		bpf_get_current_comm(key.comm, sizeof(key.comm));
	} else {
		*(__u64 *)key.comm = *(volatile __u64 *)task->comm;
		*(__u64 *)&key.comm[8] = *(volatile __u64 *)&task->comm[8];
	}
	if (track_maps)
		key.map_gen = map_gen_of(pid);
	if (compat)
		announce_process(&key, true);
	else if (!announced_last(&key, task))
		announce_current(pid, tid, *(__u64 *)key.comm, *(__u64 *)&key.comm[8]);
	if (CUT(2))
		return 0;

	/* Interrupted in user mode there is no kernel stack: skip the helper,
	 * which costs ~250 ns even when it finds nothing. */
	if (collect_kernel && !(CTX_REG(ctx, cs) & 3) &&
	    !take_kernel_stack(ctx, seg, &key.kstack_id, &key.flags, compat, 0))
		return 0;

	if (CUT(3))
		return 0;
	if (!TASK_MM(task, compat)) {
		key.flags |= BPFS_F_KTHREAD; /* kernel thread: no user stack */
	} else if (collect_user) {
		user_ok = compat ? take_user_stack_compat(ctx, task, seg, &key)
				 : take_user_stack(ctx, seg, &key);
		if (!user_ok)
			return 0;
	}
	if (CUT(5))
		return 0;

	if (key.flags & BPFS_F_USTACK_PENDING) {
		/* Its user stack comes later: the loader waits for it. */
		if (send_sample(&key, ctx->sample_period, compat))
			stat_inc(BPFS_STAT_DEFERRED);
		else
			stat_inc(BPFS_STAT_LOST_RING_FULL);
		return 0;
	}
	if (mode == BPFS_MODE_STREAM) {
		if (send_sample(&key, ctx->sample_period, compat))
			stat_inc(BPFS_STAT_STREAMED);
		else
			stat_inc(BPFS_STAT_LOST_RING_FULL);
		return 0;
	}
	count_sample(&key, ctx->sample_period, cur && cur->fresh, COUNT_ONE_WRITER, compat);
	return 0;
}

/* The off-CPU unit (bpf/offcpu.bpf.c) includes this file for its maps
 * and helpers, shared by fd with this object's, and none of its programs. */
#ifndef BPFS_SAMPLER_NO_PROGS
/* Kernels from 5.19 (features.c says which helpers): the event is the
 * attach cookie. */
SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, bpf_get_attach_cookie(ctx), false);
}

/* Kernels before 5.19: no attach cookie before 5.15, so one program per
 * event index (BPFS_MAX_EVENTS), only those in use loaded. */
#define ON_SAMPLE_COMPAT(n)                                                                \
	SEC("perf_event")                                                                  \
	int on_sample_compat##n(struct bpf_perf_event_data *ctx)                           \
	{                                                                                  \
		return sample(ctx, n, true);                                               \
	}
ON_SAMPLE_COMPAT(0)
ON_SAMPLE_COMPAT(1)
ON_SAMPLE_COMPAT(2)
ON_SAMPLE_COMPAT(3)
ON_SAMPLE_COMPAT(4)
ON_SAMPLE_COMPAT(5)
ON_SAMPLE_COMPAT(6)
ON_SAMPLE_COMPAT(7)
_Static_assert(BPFS_MAX_EVENTS == 8, "one compat program per event index");

/* With -- command: follow the command's children (threads share the tgid
 * and need nothing). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid, cpid = child->tgid;
	__u8 one = BPFS_FILTER_SELECTED, *state;

	if (ppid == cpid)
		return 0;
	state = bpf_map_lookup_elem(&filter, &ppid);
	if (!state || *state != BPFS_FILTER_SELECTED)
		return 0;
	if (bpf_map_update_elem(&filter, &cpid, &one, BPF_ANY))
		stat_inc_global(BPFS_STAT_FOLLOW_FULL);
	return 0;
}

/*
 * Mapping generations, so that each sample is named after the mappings live
 * when it was taken (dlclose then dlopen at the same address, exec). The
 * loader follows file mappings from perf's side-band records (a dummy event
 * with mmap2: no cost on any system call) and takes their gens from
 * map_gen_seq itself; an exec is caught here, where it happens, so the
 * first sample of the new image already carries its gen. The process's
 * samples from now on carry it.
 */
static __always_inline void send_exec(__u32 pid, __u64 mm)
{
	__u32 gen = (__u32)(__sync_fetch_and_add(&map_gen_seq, 1) + 1);
	struct bpfs_rec_map *rec;
	void *ring;

	bpf_map_update_elem(&mapgens, &pid, &gen, BPF_ANY);
	__sync_fetch_and_add(&map_gen_epoch, 1);
	ring = this_ring();
	rec = rec_reserve(ring, sizeof(*rec), BPFS_REC_MAP, false);
	if (!rec) {
		stat_inc_global(BPFS_STAT_MAP_RECS_LOST);
		return;
	}
	rec->time_ns = bpf_ktime_get_ns();
	rec->start = 0;
	rec->end = 0;
	rec->pgoff = 0;
	rec->dev = 0;
	rec->ino = 0;
	rec->mm = mm;
	rec->pid = pid;
	rec->gen = gen;
	rec->flags = BPFS_MAP_F_EXEC;
	rec->pad = 0;
	/* An exec carries no file (its image is read from /proc after the
	 * process is announced, which wakes the loader itself; file mappings
	 * come through the side-band), so it waits for the next drain: a
	 * third of the agent's wake-ups under churn (docs/design.md,
	 * "Symbols"). */
	rec_submit(ring, rec);
}

/* Mappings are per process: -t selects threads, so follow every process. */
static __always_inline bool follow_process(__u32 pid)
{
	if (pid == loader_pid)
		return false;
	return filter_mode != BPFS_FILTER_TGID || bpf_map_lookup_elem(&filter, &pid);
}

/* With -- command: the command's process is selected from its exec on;
 * until then it is bpfsampler's forked child, and its samples count as not
 * selected. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_command_exec, struct task_struct *task, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 pid = task->tgid;
	__u8 *state = bpf_map_lookup_elem(&filter, &pid);

	if (state && *state == BPFS_FILTER_AFTER_EXEC)
		*state = BPFS_FILTER_SELECTED;
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = task->tgid;

	/* the old image's tables would walk the new one: frame pointers
	 * until the loader has read the new mappings */
	if (unwind_mode != BPFS_UNWIND_FP)
		bpf_map_delete_elem(&unwind_procs, &pid);
	if (follow_process(pid))
		send_exec(pid, (__u64)task->mm);
	return 0;
}
#endif /* BPFS_SAMPLER_NO_PROGS */
