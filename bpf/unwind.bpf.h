/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user stack walked through unwind tables (docs/design.md, "Unwinding
 * without frame pointers"), included by sampler.bpf.c after the frame
 * pointer walk, whose state (struct ustack) and reads it shares.
 *
 * The loader fills `unwind_rows` with the rows of every file it has read
 * (src/unwind/), and `unwind_procs` with each process's executable
 * mappings and the slice of rows of each. Per frame: find the mapping of
 * the address, the row that covers it (binary search), compute the CFA,
 * read the return address at CFA - 8 and the caller's rbp where the row
 * says it was saved, and check that the stack rises. Where a mapping has no
 * table (JIT code, a file without .eh_frame) one frame-pointer step is taken
 * instead (--unwind auto), and the next frame goes back to the tables.
 * Every walk that ends before the outermost frame says why (flags).
 */
#ifndef BPFSAMPLER_UNWIND_BPF_H
#define BPFSAMPLER_UNWIND_BPF_H

/* Bumped by the loader after each change to unwind_procs (src/unwind/):
 * every CPU's copy of a process's entry (proc_memo) and its tail memo
 * (tailmemo.bpf.h) are then stale. */
__u64 unwind_procs_epoch = 0;

#include "tailmemo.bpf.h"

/* Sized by the loader (--unwind-rows) and written through mmap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct bpfs_unwind_row);
} unwind_rows SEC(".maps");

/* Only the loader inserts (never from the sampling interrupt), so it need
 * not be preallocated: 4 KiB a process. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct bpfs_unwind_proc);
} unwind_procs SEC(".maps");

const volatile __u32 unwind_mode = BPFS_UNWIND_FP;

/*
 * Rows found, per CPU, by (table, 16-byte chunk of file addresses): a
 * profile's samples return through the same call sites again and again,
 * and are interrupted in the same loops, and a hit costs two compares
 * instead of a binary search of up to 24 steps (libc: 15). A slot holds
 * the row of the last address looked up in its chunk, a hit is an address
 * inside that row's range: the innermost frame's pc, which differs from
 * sample to sample inside a loop, hits as a return address does (keyed by
 * the exact address, 9.5% of python3.11's lookups missed, 6.0% by chunk
 * with 512 slots, 0.5% with the slots below and the wide rows' second
 * slot). Direct mapped; a table's id is never reused, so a released
 * table's rows are never handed out. Only the sampling
 * interrupt uses it (one at a time per CPU); the sleepable completion does
 * not, since an interrupt on its CPU could rewrite a slot it is reading.
 */
#define UNWIND_CACHE_SLOTS BPFS_UNWIND_CACHE_SLOTS
#define UNWIND_CACHE_CHUNK_SHIFT 4
/* A row wider than this has a slot by its 4 KiB page of addresses too:
 * a sample anywhere in a long body (python3.11's evaluation loop: one row
 * over 47 KiB) finds it once that page's was looked up. */
#define UNWIND_CACHE_WIDE 256
#define UNWIND_CACHE_WIDE_SHIFT 12

struct urow_slot {
	__u64 lo, hi;	/* file addresses the row covers; hi ~0: to the map's end */
	__u32 table_id; /* 0: empty */
	__u32 pad;
	struct bpfs_unwind_row row;
};

/* UNWIND_CACHE_SLOTS slots per CPU, CPU c's from c * UNWIND_CACHE_SLOTS
 * (the loader sizes it by the possible CPUs): one per-CPU value may not
 * pass 32 KiB, 800 slots, and 512 held too few of python3.11's rows (its
 * evaluation loop alone is 55 KiB of code: 42% of its samples searched
 * the innermost frame's row, ~0.7 searches a sample in all). A slot
 * past the map's end (an unsized map) is no cache. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UNWIND_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct urow_slot);
} unwind_cache SEC(".maps");

/* Binary-search bounds for the verifier: 2^7 mappings, 2^24 rows. */
#define UNWIND_MAP_STEPS 7
#define UNWIND_ROW_STEPS 24

/* The binary searches run under bpf_loop, one step per call: inlined, the
 * verifier walks every step's branches at every frame and call site (over
 * the 1M-instruction limit). Invariant: the answer is in [lo, hi). */
struct usearch {
	const struct bpfs_unwind_proc *proc;
	__u64 x;
	__u32 lo, hi;
};

/* The rows' search: its own, smaller (unwind_find_row's frame is in the
 * deepest call chains, which 6.1 bounds at 512 bytes). */
struct rsearch {
	__u64 x;
	__u64 next;    /* pc of the first row above x */
	__u32 lo, hi;
	__u32 first;   /* the map's first row */
	__u32 missing; /* a row could not be read */
};

static long map_search_step(__u64 i, void *data)
{
	struct usearch *s = data;
	__u32 mid;

	if (s->hi - s->lo <= 1)
		return 1;
	mid = (s->lo + s->hi) / 2;
	if (s->proc->m[mid & (BPFS_UNWIND_MAPS - 1)].start <= s->x)
		s->lo = mid;
	else
		s->hi = mid;
	return 0;
}

/* The mapping of addr in proc, or -1. */
static __always_inline int unwind_find_map(const struct bpfs_unwind_proc *proc, __u64 addr)
{
	struct usearch s = { .proc = proc, .x = addr, .hi = proc->nr };
	__u32 lo;

	if (s.hi > BPFS_UNWIND_MAPS)
		s.hi = BPFS_UNWIND_MAPS;
	if (!s.hi || addr < proc->m[0].start)
		return -1;
	bpf_loop(UNWIND_MAP_STEPS + 1, map_search_step, &s, 0);
	lo = s.lo & (BPFS_UNWIND_MAPS - 1);
	return addr < proc->m[lo].end ? (int)lo : -1;
}

static __always_inline bool unwind_in_map(const struct bpfs_unwind_proc *proc, __s32 i,
					  __u64 addr)
{
	__u32 j = i;

	if (i < 0 || i >= BPFS_UNWIND_MAPS || i >= proc->nr)
		return false;
	/* masked as well as checked: 6.1's verifier loses the check's bound
	 * where clang spills the index and reloads it (fp_run_step's call),
	 * and clang drops a mask it can prove idle */
	barrier_var(j);
	j &= BPFS_UNWIND_MAPS - 1;
	return addr >= proc->m[j].start && addr < proc->m[j].end;
}

/* The same, trying the two mappings found last first: a stack's frames
 * are mostly in a few files, and go back and forth between a program and
 * libc. */
static __always_inline int unwind_map_of(struct ustack *st, const struct bpfs_unwind_proc *proc,
					 __u64 addr)
{
	__s32 last = st->map_idx, prev = st->map_prev;
	int mi;

	if (unwind_in_map(proc, last, addr))
		return last;
	if (unwind_in_map(proc, prev, addr)) {
		st->map_prev = last;
		st->map_idx = prev;
		return prev;
	}
	mi = unwind_find_map(proc, addr);
	st->map_prev = last;
	st->map_idx = mi;
	return mi;
}

static long row_search_step(__u64 i, void *data)
{
	struct rsearch *s = data;
	struct bpfs_unwind_row *r;
	__u32 mid, key;

	if (s->hi - s->lo <= 1)
		return 1;
	mid = (s->lo + s->hi) / 2;
	key = s->first + mid;
	r = bpf_map_lookup_elem(&unwind_rows, &key);
	if (!r) {
		s->missing = 1;
		return 1;
	}
	if (r->pc <= s->x) {
		s->lo = mid;
	} else {
		s->hi = mid;
		s->next = r->pc;
	}
	return 0;
}

/* The index of (table, x >> shift) in the cache from 1 + its CPU's first
 * slot (walk.cache; 0: none). */
static __always_inline __u32 urow_index(__u32 cache, __u64 x, __u32 table_id, __u32 shift)
{
	__u64 chunk = (x >> shift) ^ ((__u64)shift << 56);
	__u32 h = (__u32)((chunk * 0x9E3779B97F4A7C15ULL) >> 40) ^ table_id;

	return cache - 1 + (h & (UNWIND_CACHE_SLOTS - 1));
}

static __always_inline struct urow_slot *urow_slot(__u32 cache, __u64 x, __u32 table_id,
						   __u32 shift)
{
	__u32 i = urow_index(cache, x, table_id, shift);

	return cache ? bpf_map_lookup_elem(&unwind_cache, &i) : NULL;
}

/* Whether slot holds the row of m's table covering file address x. */
static __always_inline bool urow_hit(const struct urow_slot *slot,
				     const struct bpfs_unwind_map *m, __u64 x)
{
	return slot && slot->table_id == m->table_id && x >= slot->lo && x < slot->hi;
}

/* The row of slot, as the walk's current row. */
static __always_inline void urow_take(struct ustack *st, const struct bpfs_unwind_map *m,
				      const struct urow_slot *slot)
{
	st->row = slot->row;
	st->row_lo = slot->lo + m->bias;
	st->row_hi = slot->hi == ~0ULL ? m->end : slot->hi + m->bias;
	st->row_ok = 1;
}

/* Keeps row r (up to next, ~0: the map's end) in slot, when there is one. */
static __always_inline void urow_fill(struct urow_slot *slot, const struct bpfs_unwind_row *r,
				      __u64 next, __u32 table_id)
{
	if (!slot)
		return;
	slot->lo = r->pc;
	slot->hi = next;
	slot->row = *r;
	slot->table_id = table_id;
}

/* The row covering look from the row cache, copied into st->row with the
 * range it covers in the process's addresses (recursion and loops find
 * the same row again without even this: the caller checks that range
 * first). Inline: on a hit, no call (python3.11's walk: ~15 rows a
 * sample, 95% of them hits). */
static __always_inline bool unwind_cached_row(struct ustack *st, const struct bpfs_unwind_map *m,
					      __u64 look, __u32 cache)
{
	__u64 x = look - m->bias;
	struct urow_slot *slot;

	slot = urow_slot(cache, x, m->table_id, UNWIND_CACHE_CHUNK_SHIFT);
	if (!urow_hit(slot, m, x))
		return false;
	urow_take(st, m, slot);
	return true;
}

/* The row covering file address x among the map's rows, by binary
 * search, copied into st->row as unwind_cached_row does, and into the row
 * cache when one is given (the caller tried it first). */
__noinline bool unwind_find_row(struct ustack *st, const struct bpfs_unwind_map *m, __u64 look,
				__u32 cache)
{
	struct rsearch s = { .next = ~0ULL };
	struct urow_slot *slot = NULL;
	struct bpfs_unwind_row *r;
	__u32 key;

	/* a global function: verified once on its own, not at every state
	 * of the walk that calls it; its pointers may be NULL */
	if (!st || !m)
		return false;
	s.x = look - m->bias;
	s.hi = m->row_nr;
	s.first = m->row_first;
	/* a wide row's slot by page: here, not inline in the step (the
	 * verifier checks this function once). One key for every lookup: a
	 * slot less in a frame of the deepest chains (6.1's 512 bytes) */
	key = urow_index(cache, s.x, m->table_id, UNWIND_CACHE_WIDE_SHIFT);
	if (cache)
		slot = bpf_map_lookup_elem(&unwind_cache, &key);
	if (urow_hit(slot, m, s.x)) {
		urow_take(st, m, slot);
		return true;
	}
	key = urow_index(cache, s.x, m->table_id, UNWIND_CACHE_CHUNK_SHIFT);
	slot = cache ? bpf_map_lookup_elem(&unwind_cache, &key) : NULL;
	st->row_searches++;
	key = m->row_first;
	r = bpf_map_lookup_elem(&unwind_rows, &key);
	if (!r || !s.hi || r->pc > s.x)
		return false;
	bpf_loop(UNWIND_ROW_STEPS + 1, row_search_step, &s, 0);
	if (s.missing)
		return false;
	key = m->row_first + s.lo;
	r = bpf_map_lookup_elem(&unwind_rows, &key);
	if (!r)
		return false;
	st->row = *r;
	st->row_lo = r->pc + m->bias;
	st->row_hi = s.next == ~0ULL ? m->end : s.next + m->bias;
	st->row_ok = 1;
	urow_fill(slot, r, s.next, m->table_id);
	if (!cache || s.next - r->pc <= UNWIND_CACHE_WIDE)
		return true;
	key = urow_index(cache, s.x, m->table_id, UNWIND_CACHE_WIDE_SHIFT);
	urow_fill(bpf_map_lookup_elem(&unwind_cache, &key), r, s.next, m->table_id);
	return true;
}

/* Where the word at addr and the n - 1 after it (n <= 2) lie in the
 * window of stack memory read last: an index into it, the window read
 * again at addr when it does not hold them (at a multiple of 8 bytes from
 * its start: CFAs are 8-aligned). Stacks are walked upwards, so one read
 * serves several frames, as in the frame-pointer walk. -1, with st->fault
 * set, when it cannot be read. An index, not the words through pointers:
 * a stack slot per word took the deepest call chain (on_sample,
 * user_frame, python_frames, py_frame_step) past the 512 bytes 6.1 and
 * 6.12 allow; and a frame's two words behind one check give the verifier
 * one way of reading them instead of four. */
static __always_inline long unwind_slot(const struct walk *w, __u64 addr, __u32 n, enum urd rd)
{
	struct ustack *st = w->st;
	__u64 off = (addr - st->base) / 8;

	if (!st->words || addr < st->base || off + n > st->words || ((addr - st->base) & 7)) {
		st->base = addr;
		off = 0;
		st->words = read_window(w, addr, rd);
		if (!st->words) {
			st->fault = 1;
			return -1;
		}
	}
	return off & (UWIN_WORDS - 1);
}

/* The window's word at slot i (from unwind_slot). */
static __always_inline __u64 unwind_win(const struct walk *w, long i)
{
	return w->win->w[i & (UWIN_WORDS - 1)];
}

/* Ends the walk with a reason (a sample flag). */
static __always_inline long unwind_stop(struct ustack *st, __u32 reason)
{
	st->reason |= reason;
	return 1;
}

/* One frame: from the registers of frame nr - 1 to its caller's. CPython's
 * frames only from the interrupt (its reads are python.bpf.h's own). */
static __always_inline long unwind_step(struct walk *w, enum urd rd)
{
	const struct bpfs_unwind_proc *proc = w->proc;
	const struct bpfs_py_proc *py = rd == URD_IRQ ? w->py : NULL;
	struct ustack *st = w->st;
	__u32 nr = st->nr;
	__u64 pc, look, sp = st->sp, bp = st->fp, cfa, ra, nbp = bp;
	const struct bpfs_unwind_map *m;
	bool table;
	long i;
	int mi;

	if (nr >= max_depth || nr >= BPFS_MAX_USER_DEPTH || !nr)
		return 1; /* the caller flags the depth limit */
	if (nr >= st->limit) {
		st->limited = 1;
		return 1;
	}
	pc = st->ips[(nr - 1) & (BPFS_MAX_USER_DEPTH - 1)];
	/* a return address is one past the call: look the call up */
	look = nr == 1 ? pc : pc - 1;
	mi = unwind_map_of(st, proc, look);
	m = mi >= 0 ? &proc->m[mi & (BPFS_UNWIND_MAPS - 1)] : NULL;
	/* the row, unless the code was built with frame pointers and this is
	 * not the innermost frame (which may be in a prologue): there the row
	 * would say what the frame-pointer step does (BPFS_UMAP_FP, fp_row in
	 * src/unwind/ehframe.c), taken without the lookup */
	table = m && m->row_nr;
	if (table && !(nr > 1 && (m->flags & BPFS_UMAP_FP))) {
		struct bpfs_unwind_row *r = &st->row;

		/* the outer frames of the CPU's last walk, when they are
		 * these (tailmemo.bpf.h): no row for any of them */
		if (rd == URD_IRQ && tail_at(w->tm, nr, pc, st) &&
		    tail_take(st, w->win, &w->tm->memo))
			return 1;
		if (rd == URD_IRQ)
			trail_start(w->tm, TRAIL_STEP);
		/* the last row found still covers it (loops, recursion):
		 * no call */
		if (!(st->row_ok && look >= st->row_lo && look < st->row_hi) &&
		    !unwind_cached_row(st, m, look, w->cache) &&
		    !unwind_find_row(st, m, look, w->cache))
			return unwind_stop(st, BPFS_F_USTACK_NOINFO);
		switch (r->cfa_type) {
		case BPFS_CFA_END:
			/* the outermost frame: the stack is whole */
			if (rd == URD_IRQ)
				trail_end(w->tm, st);
			return 1;
		case BPFS_CFA_RSP:
			cfa = sp + r->cfa_off;
			break;
		case BPFS_CFA_RBP:
			cfa = bp + r->cfa_off;
			break;
		case BPFS_CFA_PLT:
			cfa = sp + 8 + ((pc & 15) >= (__u64)r->cfa_off ? 8 : 0);
			break;
		default:
			return unwind_stop(st, BPFS_F_USTACK_NOINFO);
		}
		if (cfa <= sp || cfa - sp >= MAX_STACK_SPAN)
			return unwind_stop(st, BPFS_F_USTACK_BADFRAME);
		/* the saved rbp first: it lies below the return address
		 * (cfa - 16, most often), and a window read for the return
		 * address would start above it and be read again for it
		 * (2.6 windows of 1 KiB a walk on frame-pointer code, 1
		 * with this order) */
		if (r->rbp_type == BPFS_RBP_CFA) {
			i = unwind_slot(w, cfa + (__s64)r->rbp_off * 8, 1, rd);
			if (i < 0)
				return 1;
			nbp = unwind_win(w, i);
			if (rd == URD_IRQ)
				trail_rbp_at(w->tm, cfa + (__s64)r->rbp_off * 8);
		}
		if (rd == URD_IRQ)
			trail_ra_at(w->tm, cfa - 8);
		i = unwind_slot(w, cfa - 8, 1, rd);
		if (i < 0)
			return 1;
		ra = unwind_win(w, i);
	} else {
		/* a frame-pointer step: code built with them, or no table
		 * (where allowed) */
		if (rd == URD_IRQ)
			trail_start(w->tm, 0);
		if (!table && unwind_mode == BPFS_UNWIND_DWARF)
			return unwind_stop(st, BPFS_F_USTACK_NOINFO);
		if (!bp) {
			/* the chain's end, the ABI's way (_start's) */
			if (rd == URD_IRQ)
				trail_end(w->tm, st);
			return 1;
		}
		if (bp < sp || bp - sp >= MAX_STACK_SPAN || (bp & 7))
			return unwind_stop(st, table ? BPFS_F_USTACK_BADFRAME :
							 BPFS_F_USTACK_NOINFO);
		i = unwind_slot(w, bp, 2, rd);
		if (i < 0)
			return 1;
		nbp = unwind_win(w, i);
		ra = unwind_win(w, i + 1);
		cfa = bp + 16;
		st->fp_steps += table;
	}
	if (!ra)
		return 1; /* a zeroed return address: the thread's first frame */
	/* a return address outside every executable mapping is not a frame */
	if (unwind_map_of(st, proc, ra - 1) < 0)
		return unwind_stop(st, BPFS_F_USTACK_BADFRAME);
	/* an evaluation frame of CPython: its Python frames take its place */
	if (py && python_in_eval(py, look)) {
		python_frames(st, py, w->pyc);
		nr = st->nr;
		if (nr >= max_depth || nr >= BPFS_MAX_USER_DEPTH)
			return 1;
	} else if (rd == URD_IRQ) {
		/* a step with CPython's frames is not noted: the chain of
		 * noted steps breaks there */
		trail_commit(w->tm, st, pc, ra, nbp, TRAIL_STEP);
	}
	st->ips[nr & (BPFS_MAX_USER_DEPTH - 1)] = ra;
	st->nr = nr + 1;
	st->sp = cfa;
	st->fp = nbp;
	return 0;
}

/* The process's unwind tables, when they are used and loaded. */
static __always_inline const struct bpfs_unwind_proc *unwind_proc(__u32 pid)
{
	if (unwind_mode == BPFS_UNWIND_FP)
		return NULL;
	return bpf_map_lookup_elem(&unwind_procs, &pid);
}

/* This CPU's copy of the entry of the process its interrupt walked last,
 * taken at epoch: a CPU sampling one process again and again finds its
 * tables without a hash lookup (bucket, element), the sample's first
 * dependent loads, each a cache miss when cold. Only the interrupt's walk
 * uses it (perf_event programs do not nest on a CPU), as the row cache. */
struct proc_memo {
	__u32 pid;
	__u32 valid;
	__u64 epoch;
	struct bpfs_unwind_proc proc;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct proc_memo);
} proc_memo SEC(".maps");

/* unwind_proc for the interrupt, through the memo: always the memo's
 * copy, never the hash's value, so that the walk's callbacks see one kind
 * of pointer (the verifier would check them again for each). The epoch is
 * read before the copy: a change after it makes the copy stale. */
static __always_inline const struct bpfs_unwind_proc *unwind_proc_irq(__u32 pid)
{
	__u64 epoch = *(volatile __u64 *)&unwind_procs_epoch;
	const struct bpfs_unwind_proc *proc;
	struct proc_memo *memo;
	__u32 zero = 0, n;

	if (unwind_mode == BPFS_UNWIND_FP)
		return NULL;
	memo = bpf_map_lookup_elem(&proc_memo, &zero);
	if (!memo)
		return NULL;
	if (memo->valid && memo->pid == pid && memo->epoch == epoch)
		return &memo->proc;
	memo->valid = 0;
	proc = bpf_map_lookup_elem(&unwind_procs, &pid);
	if (!proc)
		return NULL;
	n = proc->nr;
	if (n > BPFS_UNWIND_MAPS)
		n = BPFS_UNWIND_MAPS;
	/* the header and the mappings in use, not all BPFS_UNWIND_MAPS */
	if (bpf_probe_read_kernel(&memo->proc,
				  offsetof(struct bpfs_unwind_proc, m) + n * sizeof(proc->m[0]), proc))
		return NULL;
	memo->pid = pid;
	memo->epoch = epoch;
	memo->valid = 1;
	return &memo->proc;
}

/*
 * Frames of code built with frame pointers, taken in a run: while each
 * return address stays in the same BPFS_UMAP_FP mapping, a frame is the
 * frame-pointer walk's two words plus a range check, without unwind_step's
 * row, mapping search and CPython check (the step it takes there alike).
 * Only past the innermost frame, which may be in a prologue.
 */
#define FP_RUN_STEPS 8

enum fp_run_result {
	FP_RUN_MORE,  /* took FP_RUN_STEPS frames: the next may be one too */
	FP_RUN_STOP,  /* the walk ended */
	FP_RUN_OTHER, /* the next frame is unwind_step's */
};

static __always_inline long fp_run_step(struct walk *w, const struct bpfs_unwind_map *m,
					enum urd rd)
{
	struct ustack *st = w->st;
	__u32 nr = st->nr;
	__u64 look, bp = st->fp, sp = st->sp, nbp, ra;
	long i;

	/* unwind_step flags the limits. nr < 2 never holds (unwind_frames
	 * starts runs past the innermost frame), but bounds nr - 1 for the
	 * verifier: without it on_sample's load processed 21,000 more
	 * instructions, with 8 bytes more of stack in the deepest chain */
	if (nr < 2 || nr >= max_depth || nr >= BPFS_MAX_USER_DEPTH || nr >= st->limit)
		return FP_RUN_OTHER;
	look = st->ips[(nr - 1) & (BPFS_MAX_USER_DEPTH - 1)] - 1;
	if (look < m->start || look >= m->end)
		return FP_RUN_OTHER;
	if (!bp) {
		trail_end(w->tm, st); /* the chain's end, the ABI's way */
		return FP_RUN_STOP;
	}
	if (bp < sp || bp - sp >= MAX_STACK_SPAN || (bp & 7)) {
		unwind_stop(st, BPFS_F_USTACK_BADFRAME);
		return FP_RUN_STOP;
	}
	i = unwind_slot(w, bp, 2, rd);
	if (i < 0)
		return FP_RUN_STOP;
	nbp = unwind_win(w, i);
	ra = unwind_win(w, i + 1);
	if (!ra)
		return FP_RUN_STOP;
	st->fp_steps++;
	if ((ra - 1 < m->start || ra - 1 >= m->end) && unwind_map_of(st, w->proc, ra - 1) < 0) {
		unwind_stop(st, BPFS_F_USTACK_BADFRAME);
		return FP_RUN_STOP;
	}
	/* masked where clang would drop the mask (nr < the bound above):
	 * with eight steps unrolled it spills nr, and 6.1's verifier loses
	 * the bound on the reload */
	i = nr;
	barrier_var(i);
	st->ips[i & (BPFS_MAX_USER_DEPTH - 1)] = ra;
	st->nr = nr + 1;
	st->sp = bp + 16;
	st->fp = nbp;
	return FP_RUN_MORE;
}

/* The mapping found last, when the next frames may be a run: code built
 * with frame pointers, with a table (as unwind_step's condition), in a
 * process without CPython (unwind_step checks each of its frames for the
 * evaluation loop). */
static __always_inline const struct bpfs_unwind_map *fp_run_map(const struct walk *w)
{
	const struct bpfs_unwind_proc *proc = w->proc;
	const struct bpfs_unwind_map *m;
	__s32 i = w->st->map_idx;

	if (w->py || i < 0 || i >= BPFS_UNWIND_MAPS || i >= proc->nr)
		return NULL;
	m = &proc->m[i & (BPFS_UNWIND_MAPS - 1)];
	return m->row_nr && (m->flags & BPFS_UMAP_FP) ? m : NULL;
}

/* Up to FP_RUN_STEPS frames of such a run, from the interrupt. */
static __always_inline long fp_run(struct walk *w)
{
	const struct bpfs_unwind_map *m = fp_run_map(w);
	long r = FP_RUN_OTHER;

	if (!m)
		return r;
#pragma unroll
	for (int k = 0; k < FP_RUN_STEPS; k++) {
		r = fp_run_step(w, m, URD_IRQ);
		if (r != FP_RUN_MORE)
			break;
	}
	return r;
}

/* A callback's frames through the tables: a run of frame-pointer frames,
 * else one unwind_step. Runs in the interrupt's walk only: a completion
 * walks rarely. A run that stops short hands the next frame to the next
 * callback rather than to an unwind_step after it: the verifier then
 * checks the run and the step each once, not the step once for every way
 * out of the run (which took on_sample's load past 500,000 instructions
 * and 2 s at four frames a run). */
static __always_inline long unwind_frames(struct walk *w, enum urd rd)
{
	struct ustack *st = w->st;
	long r;

	if (rd != URD_IRQ || st->run_off || st->nr < 2 || !fp_run_map(w)) {
		st->run_off = 0;
		return unwind_step(w, rd);
	}
	r = fp_run(w);
	if (r == FP_RUN_OTHER) {
		st->run_off = 1;
		return 0;
	}
	return r == FP_RUN_STOP;
}

/* One step of either walk: through the tables when the process has them,
 * else frame pointers (WALK_PER_CALL frames a call). One callback for both,
 * called from one bpf_loop: the verifier inlines a bpf_loop only when its
 * call site always gets the same callback, and clang merges two calls that
 * differ only in it into one site (the walk then paid the helper's
 * indirect call per frame). */
static long user_frame(__u64 i, void *data)
{
	struct walk *w = data;

	if (w->proc)
		return unwind_frames(w, URD_IRQ);
	return walk_frame(i, data);
}

static long user_frame_sleepable(__u64 i, void *data)
{
	struct walk *w = data;

	if (w->proc)
		return unwind_frames(w, URD_SELF);
	return walk_frame_sleepable(i, data);
}

static long user_frame_task(__u64 i, void *data)
{
	struct walk *w = data;

	if (w->proc)
		return unwind_frames(w, URD_TASK);
	return walk_frame_task(i, data);
}

/* Walks w->st (set up by walk_from) through the tables of proc, or through
 * frame pointers when proc is NULL, reading as rd says. The row cache is
 * the interrupt's only: a walk in task context does not use it, since an
 * interrupt on its CPU could rewrite a slot it is reading. */
static __always_inline void user_walk(struct walk *w, const struct bpfs_unwind_proc *proc,
				      enum urd rd)
{
	/* a table walk's callback takes a frame or more, but for a run
	 * stopped by a limit before its first frame (unwind_frames): one
	 * callback per frame leaves room for it */
	__u32 n = proc ? BPFS_MAX_USER_DEPTH : BPFS_MAX_USER_DEPTH / WALK_PER_CALL;

	w->proc = proc;
	w->cache = proc && rd == URD_IRQ ? bpf_get_smp_processor_id() * UNWIND_CACHE_SLOTS + 1 : 0;
	if (rd == URD_TASK)
		bpf_loop(n, user_frame_task, w, 0);
	else if (rd == URD_SELF)
		bpf_loop(n, user_frame_sleepable, w, 0);
	else
		bpf_loop(n, user_frame, w, 0);
}

#endif
