/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The outer frames of the interrupt's last table walk on this CPU, taken
 * again without their rows (docs/design.md, "The tail memo").
 *
 * A thread's outermost frames (_start, __libc_start_main, main's caller)
 * are the same sample after sample, and where they are in code without
 * frame pointers each costs a mapping check, a row from the row cache and
 * its window words (taking them from the memo: 0.88x the BPF time per
 * sample on python3.11, ~0.95x on a loop built with frame pointers,
 * docs/benchmarks.md). A step of the table
 * walk is a function of the frame's registers (pc, sp, bp), the tables
 * (unwind_procs_epoch) and the words it reads from the stack (the return
 * address, the saved rbp). So when a walk reaches the registers the memo
 * begins with, and every word the memo's steps read still holds the value
 * they read, the rest of the walk is the memo's frames: exactly those a
 * walk would take, or the memo is not used.
 *
 * The walk notes its row steps in a ring (trail); a walk that ended at its
 * outermost frame (a row that says so, or a frame pointer of 0) with
 * nothing flagged leaves its last steps, up to TRAIL_LEN, as the memo,
 * from the first whose frame is not the innermost (whose registers change
 * at every sample). The steps must follow each other: a frame-pointer
 * step, or one where CPython's frames went in, between them breaks the
 * chain (the frame count tells).
 */
#ifndef BPFSAMPLER_TAILMEMO_BPF_H
#define BPFSAMPLER_TAILMEMO_BPF_H

#define TRAIL_LEN 8 /* a power of 2 */
#define TAIL_WORDS (2 * TRAIL_LEN)

enum trail_kind {
	TRAIL_STEP = 1, /* a frame taken through its row */
	TRAIL_END,	/* the frame is the outermost (its row, or rbp 0) */
};

struct trail_ent {
	__u64 pc, sp, bp;    /* the frame's registers as the step began */
	__u64 ra_addr, ra;   /* the return address, and where it was read */
	__u64 rbp_addr, nbp; /* the caller's rbp, and where; rbp_addr 0: none */
	__u32 nr;	     /* the frames before the step (st->nr) */
	__u32 kind;
};

struct tail_memo {
	__u32 pid;
	__u32 valid;
	__u64 epoch;	  /* unwind_procs_epoch when it was taken */
	__u64 py_epoch;	  /* py_procs_epoch then */
	__u64 pc, sp, bp; /* the registers its first step began from */
	__u64 wlo;	  /* the lowest word its steps read */
	__u32 nframes;	  /* frames it adds */
	__u32 nwords;
	__u32 span; /* words from wlo through the highest read */
	__u32 pad;
	__u64 ips[TRAIL_LEN];
	__u64 wval[TAIL_WORDS];
	__u32 woff[TAIL_WORDS]; /* words from wlo */
};

struct tail_state {
	struct tail_memo memo;
	__u64 walk_epoch, walk_py_epoch; /* read as this walk began */
	__u32 usable;  /* the memo is this process's at those epochs */
	__u32 trail_n; /* row steps noted by this walk */
	struct trail_ent trail[TRAIL_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tail_state);
} tailmemo SEC(".maps");

/* The epochs a memo is valid at: the tables' and CPython's processes'. */
static __always_inline __u64 tail_epoch(void)
{
	return *(volatile __u64 *)&unwind_procs_epoch;
}

static __always_inline __u64 tail_py_epoch(void)
{
	return *(volatile __u64 *)&py_procs_epoch;
}

/* At the start of the interrupt's walk of pid. */
static __always_inline void tail_begin(struct tail_state *tm, __u32 pid)
{
	struct tail_memo *mm = &tm->memo;

	tm->trail_n = 0;
	tm->walk_epoch = tail_epoch();
	tm->walk_py_epoch = tail_py_epoch();
	tm->usable = mm->valid && mm->pid == pid && mm->epoch == tm->walk_epoch &&
		     mm->py_epoch == tm->walk_py_epoch;
}

/* The entry the step under way fills: the words' addresses go in as
 * they are read (in the map value, not in locals of the walk's callback,
 * whose frame is at 6.1's limit). */
static __always_inline struct trail_ent *trail_cur(struct tail_state *tm)
{
	return &tm->trail[tm->trail_n & (TRAIL_LEN - 1)];
}

/* A step begins: through a row (TRAIL_STEP), or not (0: not noted). */
static __always_inline void trail_start(struct tail_state *tm, __u32 kind)
{
	struct trail_ent *e;

	if (!tm)
		return;
	e = trail_cur(tm);
	e->kind = kind;
	e->ra_addr = 0;
	e->rbp_addr = 0;
}

/* Where the step under way read the caller's rbp, and its return
 * address. */
static __always_inline void trail_rbp_at(struct tail_state *tm, __u64 addr)
{
	if (tm)
		trail_cur(tm)->rbp_addr = addr;
}

static __always_inline void trail_ra_at(struct tail_state *tm, __u64 addr)
{
	if (tm)
		trail_cur(tm)->ra_addr = addr;
}

/* The step took its frame (or found the outermost, TRAIL_END): noted
 * with its registers, when it went through a row. */
static __always_inline void trail_commit(struct tail_state *tm, const struct ustack *st,
					 __u64 pc, __u64 ra, __u64 nbp, __u32 kind)
{
	struct trail_ent *e;

	if (!tm)
		return;
	e = trail_cur(tm);
	if (!e->kind)
		return;
	e->pc = pc;
	e->sp = st->sp;
	e->bp = st->fp;
	e->ra = ra;
	e->nbp = nbp;
	e->nr = st->nr;
	e->kind = kind;
	tm->trail_n++;
}

/* The walk found its outermost frame by its rule, or by a frame pointer
 * of 0 (the ABI's end, _start's). */
static __always_inline void trail_end(struct tail_state *tm, const struct ustack *st)
{
	trail_start(tm, TRAIL_END);
	trail_commit(tm, st, 0, 0, 0, TRAIL_END);
}

/* Whether the memo begins at these registers (nr > 1: not the innermost
 * frame, whose registers a memo never begins with). */
static __always_inline bool tail_at(const struct tail_state *tm, __u32 nr, __u64 pc,
				    const struct ustack *st)
{
	const struct tail_memo *mm;

	if (!tm)
		return false;
	mm = &tm->memo;
	return tm->usable && nr > 1 && mm->pc == pc && mm->sp == st->sp && mm->bp == st->fp;
}

/* The memo's words in st's window, read at its lowest word if the window
 * does not hold them all: their offset in the window, or -1. */
static __always_inline long tail_window(struct ustack *st, struct uwin *win,
					const struct tail_memo *mm)
{
	__u64 lo = mm->wlo;

	if (!st->words || lo < st->base || ((lo - st->base) & 7) ||
	    (lo - st->base) / 8 + mm->span > st->words) {
		st->base = lo;
		st->words = 0;
		if (bpf_probe_read_user(win->w, UWIN_WORDS * sizeof(__u64), (void *)lo))
			return -1; /* the walk reads its own words, and says why */
		st->words = UWIN_WORDS;
	}
	return (lo - st->base) / 8;
}

/*
 * The memo's frames onto st, when every word its steps read holds what
 * they read: 1, else 0 with st's frames as they were. A global function,
 * verified once; called only where the registers match.
 */
__noinline int tail_take(struct ustack *st, struct uwin *win, const struct tail_memo *mm)
{
	__u32 nr, n;
	long off;

	if (!st || !win || !mm)
		return 0;
	nr = st->nr;
	n = mm->nframes;
	if (!n || n > TRAIL_LEN || nr + n > st->limit || nr + n > max_depth ||
	    nr + n > BPFS_MAX_USER_DEPTH)
		return 0;
	off = tail_window(st, win, mm);
	if (off < 0)
		return 0;
	for (__u32 j = 0; j < TAIL_WORDS; j++) {
		if (j >= mm->nwords)
			break;
		if (win->w[(off + mm->woff[j]) & (UWIN_WORDS - 1)] != mm->wval[j])
			return 0;
	}
	for (__u32 j = 0; j < TRAIL_LEN; j++) {
		if (j >= n)
			break;
		st->ips[(nr + j) & (BPFS_MAX_USER_DEPTH - 1)] = mm->ips[j];
	}
	st->nr = nr + n;
	st->tail_taken = 1;
	return 1;
}

/* The first of the trail's last entries that follow each other up to its
 * END entry (at i_end), none the innermost frame's: its index, or -1. */
static __always_inline long tail_first(const struct tail_state *tm, __u32 i_end)
{
	__u32 want = tm->trail[i_end & (TRAIL_LEN - 1)].nr;
	long first = -1;

	for (__u32 k = 1; k < TRAIL_LEN; k++) {
		const struct trail_ent *e;

		if (k > i_end)
			break;
		e = &tm->trail[(i_end - k) & (TRAIL_LEN - 1)];
		if (e->kind != TRAIL_STEP || e->nr + k != want || e->nr < 2)
			break;
		first = i_end - k;
	}
	return first;
}

/* A word into the memo at w: 0, or -1 when it comes below the word
 * before it, or beyond one window from lo. */
static __always_inline int tail_word(struct tail_memo *mm, __u32 w, __u64 addr, __u64 val,
				     __u64 lo, __u64 *prev)
{
	if (w >= TAIL_WORDS || addr < *prev || ((addr - lo) & 7) || (addr - lo) / 8 >= UWIN_WORDS)
		return -1;
	mm->woff[w] = (addr - lo) / 8;
	mm->wval[w] = val;
	*prev = addr;
	return 0;
}

/* The memo's words and frames from the trail's entries first..i_end - 1:
 * 0, or -1 when their words do not rise from one to the next (as a walk
 * reads them: the saved rbp, then the return address, CFA after CFA) or
 * go beyond one window. Two words a step: a step that read no rbp gives
 * its return address twice, chosen without a branch (a branch a step made
 * the verifier walk each combination). */
static __always_inline int tail_fill(struct tail_memo *mm, const struct tail_state *tm,
				     long first, __u32 i_end)
{
	const struct trail_ent *f = &tm->trail[first & (TRAIL_LEN - 1)];
	__u64 lo = f->rbp_addr ? f->rbp_addr : f->ra_addr, prev = lo;
	__u32 n = 0;

	for (__u32 k = 0; k < TRAIL_LEN; k++) {
		const struct trail_ent *e = &tm->trail[(first + k) & (TRAIL_LEN - 1)];
		__u64 has = (e->rbp_addr | -e->rbp_addr) >> 63, m = -has;

		if (first + k >= i_end)
			break;
		if (tail_word(mm, 2 * k, (e->rbp_addr & m) | (e->ra_addr & ~m),
			      (e->nbp & m) | (e->ra & ~m), lo, &prev) ||
		    tail_word(mm, 2 * k + 1, e->ra_addr, e->ra, lo, &prev))
			return -1;
		mm->ips[k] = e->ra;
		n = k + 1;
	}
	if (!n)
		return -1;
	mm->nframes = n;
	mm->nwords = 2 * n;
	mm->wlo = lo;
	mm->span = (prev - lo) / 8 + 1;
	return 0;
}

/*
 * After a walk that did not take the memo: its last steps become the
 * memo when the walk ended at the outermost frame's row with nothing
 * flagged, and their words lie within one window. Stamped with the epochs
 * read as the walk began (tail_begin): a change of the tables meanwhile
 * leaves it stale. A global function, verified once.
 */
__noinline int tail_save(struct tail_state *tm, const struct ustack *st, __u32 pid)
{
	struct tail_memo *mm;
	const struct trail_ent *f;
	__u32 i_end;
	long first;

	if (!tm || !st || st->tail_taken || st->reason || st->fault || st->limited ||
	    tm->trail_n < 2)
		return 0;
	i_end = tm->trail_n - 1;
	f = &tm->trail[i_end & (TRAIL_LEN - 1)];
	if (f->kind != TRAIL_END || f->nr != st->nr)
		return 0;
	first = tail_first(tm, i_end);
	if (first < 0)
		return 0;
	mm = &tm->memo;
	mm->valid = 0;
	if (tail_fill(mm, tm, first, i_end))
		return 0;
	f = &tm->trail[first & (TRAIL_LEN - 1)];
	mm->pc = f->pc;
	mm->sp = f->sp;
	mm->bp = f->bp;
	mm->pid = pid;
	mm->epoch = tm->walk_epoch;
	mm->py_epoch = tm->walk_py_epoch;
	mm->valid = 1;
	return 0;
}

#endif
