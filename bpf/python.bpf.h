/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython frames, walked from BPF inside the native walk (docs/design.md,
 * "Interpreter frames: CPython"); included by sampler.bpf.c before the walk
 * through unwind tables, whose step calls python_frames() when a native
 * frame lies in _PyEval_EvalFrameDefault.
 *
 * The loader recognises a CPython process by what its files export, picks
 * the offsets of its version (include/bpfsampler/python_abi.h) and puts
 * them in `py_procs`. At the first evaluation frame of a sample the walk
 * finds the sampled thread's PyThreadState (the thread list of _PyRuntime's
 * interpreters, matched by thread_id, which is pthread_self(): the thread's
 * fs base on x86-64 glibc) and its innermost interpreter frame; each
 * evaluation frame then gives the Python frames it runs (one for 3.8-3.10,
 * down to the entry frame for 3.11+), and the native walk goes on below.
 * Every read is checked, every loop bounded; a Python part that ends early
 * ends with a marker frame, and the native frames below stay.
 */
#ifndef BPFSAMPLER_PYTHON_BPF_H
#define BPFSAMPLER_PYTHON_BPF_H

#include "bpfsampler/python_abi.h"

/* Set by the loader (--no-python clears it, and so does a kernel the
 * probe found lacking): the verifier drops the walk when false. */
const volatile bool use_python = false;

/* Filled by the loader for every recognised CPython process. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct bpfs_py_proc);
} py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BPFS_PY_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

/* Where a sample's Python walk is: per CPU (only the sampling interrupt
 * walks Python; the sleepable completion does not). */
#define PY_BUF 128
/* The window of user memory the frames are read from. 3.11+ keeps a
 * thread's frames one above the other in its data stack, the caller
 * below the callee: one read of the 2 KiB below a frame serves the
 * frames of several calls, where a read per frame cost ~200 ns on these
 * VMs (docs/benchmarks.md, "Half of BCC's cost"). */
#define PY_WIN 2048

struct py_cursor {
	__u64 frame;  /* the next interpreter frame to read; 0: none */
	__u64 tstate; /* search state */
	__u64 interp;
	__u32 state;  /* PY_FRESH, PY_WALKING, PY_DONE */
	__u32 taken;  /* Python frames (and markers) this sample */
	__u32 pid;
	__u32 pos;    /* where the next frame goes in st->ips */
	__u32 stop;   /* this evaluation frame's Python frames are done */
	__u32 tail;   /* python_tail: the whole rest of the chain */
	__u32 pad2;
	__u32 now;    /* the sample's time, in 2^20 ns (about ms) */
	__u64 fsbase;
	__u64 first;  /* the thread's innermost interpreter frame, 0: none */
	/* the thread state found last on this CPU, checked before use (its
	 * thread_id must still be the sampled thread's) */
	__u64 last_tstate;
	__u64 last_fsbase;
	__u32 last_pid;
	__u32 at;     /* the current frame's offset in win */
	__u64 wbase;  /* user address of win[0] */
	__u32 wlen;   /* bytes of win read there; 0: none */
	__u32 pad3;
	__u8 win[PY_WIN + 8]; /* +8: a word at the last masked offset */
};

enum { PY_FRESH = 0, PY_WALKING, PY_DONE };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_cursor);
} py_cursor SEC(".maps");

/* (process, code object) pairs this CPU met lately and checked: a hit
 * costs no read of the object and no record. Direct mapped. An entry
 * serves half a second: then the object is checked and reported again, so
 * that one freed and another made at its address (import-time code is
 * freed once run) is read again by the loader. */
#define PY_SEEN_SLOTS 1024
#define PY_SEEN_TTL 512 /* 2^20 ns units: 0.54 s */

struct py_seen {
	struct {
		__u64 code;
		__u32 pid;
		__u32 stamp; /* 2^20 ns units */
	} s[PY_SEEN_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_seen);
} py_seen SEC(".maps");

static __always_inline void py_stat(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &which);

	if (v)
		*v += 1; /* per CPU, only the interrupt counts: no atomics */
}

/* Bumped by the loader after each process it adds to py_procs
 * (sampler__python_added; the off-CPU unit shares this .bss): what a CPU
 * remembers of a pid without an entry holds until then. The memo starts
 * as "pid 0 at epoch 0": the idle task, never Python. */
__u64 py_procs_epoch = 0;

/* The last pid this CPU found without an entry, at which epoch: a thread
 * that is not Python, sampled again and again, costs a compare instead of
 * a hash lookup. Only absence is remembered (an entry is looked up for
 * its pointer); the epoch is read before the lookup, and the loader bumps
 * it after its insert, so an entry added meanwhile is found at the next
 * sample at the latest. */
struct py_absent {
	__u64 epoch;
	__u32 pid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_absent);
} py_absent SEC(".maps");

/* Whether this CPU found pid without an entry last, at the current epoch
 * (inline in python_begin: a thread that is not Python costs no call). */
static __always_inline bool py_known_absent(__u32 pid)
{
	__u64 epoch = *(volatile __u64 *)&py_procs_epoch;
	struct py_absent *a;
	__u32 zero = 0;

	a = bpf_map_lookup_elem(&py_absent, &zero);
	return a && a->epoch == epoch && a->pid == pid;
}

/* Not inlined: its locals in the sampling program's own frame took the
 * deepest call chain (on_sample, user_frame, python_frames,
 * py_frame_step) to 544 bytes of stack, which 6.1's and 6.12's verifiers
 * refuse (the limit is 512). */
static __noinline const struct bpfs_py_proc *py_proc_of(__u32 pid)
{
	__u64 epoch = *(volatile __u64 *)&py_procs_epoch;
	const struct bpfs_py_proc *py;
	struct py_absent *a;
	__u32 zero = 0;

	a = bpf_map_lookup_elem(&py_absent, &zero);
	py = bpf_map_lookup_elem(&py_procs, &pid);
	if (!py && a) {
		a->epoch = epoch;
		a->pid = pid;
	}
	return py;
}

static __always_inline bool python_in_eval(const struct bpfs_py_proc *py, __u64 look)
{
	return (look >= py->eval_start[0] && look < py->eval_end[0]) ||
	       (look >= py->eval_start[1] && look < py->eval_end[1]);
}

/* A word or a byte of the current frame (off < PY_BUF: layout.c checks). */
static __always_inline __u64 py_word(const struct py_cursor *c, __u32 off)
{
	if (off > PY_BUF - 8)
		return 0;
	return *(__u64 *)&c->win[(c->at + off) & (PY_WIN - 1)];
}

static __always_inline __u8 py_byte(const struct py_cursor *c, __u32 off)
{
	if (off >= PY_BUF)
		return 0;
	return c->win[(c->at + off) & (PY_WIN - 1)];
}

/* Reads len bytes at addr into the window; false on a fault. */
static __always_inline bool py_win_read(struct py_cursor *c, __u64 addr, __u64 len)
{
	c->wlen = 0;
	barrier_var(len); /* else clang tests a 32-bit copy the verifier does not bound */
	if (len > PY_WIN)
		return false;
	if (bpf_probe_read_user(c->win, len, (void *)addr))
		return false;
	c->wbase = addr;
	c->wlen = len;
	return true;
}

/* Makes the PY_BUF bytes at frame the current frame: from the window when
 * it holds them, else by a read of the window ending there (3.11+: the
 * frames below are the callers'), not below frame's page (which may be
 * the data stack's first: a fault costs more than the read); false when
 * frame cannot be read. */
static __always_inline bool py_load(struct py_cursor *c, __u64 frame, __u32 model)
{
	__u64 start = frame + PY_BUF - PY_WIN, page = frame & ~4095ULL;

	if (c->wlen >= PY_BUF && frame >= c->wbase && frame - c->wbase <= c->wlen - PY_BUF) {
		c->at = frame - c->wbase;
		return true;
	}
	py_stat(BPFS_PY_STAT_FRAME_READS);
	if (model == BPFS_PY_MODEL_FRAMEOBJ || frame < PY_WIN)
		start = frame; /* frame objects sit anywhere on the heap */
	else if (start < page)
		start = page;
	c->at = frame - start;
	if (py_win_read(c, start, frame + PY_BUF - start))
		return true;
	c->at = 0;
	return start != frame && py_win_read(c, frame, PY_BUF);
}

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* One step of the search for the thread's state: one thread state, or a
 * move to the next interpreter. */
struct py_find {
	const struct bpfs_py_proc *py;
	struct py_cursor *c;
	__u64 found;
};

static long py_find_step(__u64 i, void *data)
{
	struct py_find *f = data;
	const struct bpfs_py_offsets *o = &f->py->off;
	struct py_cursor *c = f->c;

	if (!c->tstate) {
		if (!c->interp)
			return 1;
		c->tstate = py_read_ptr(c->interp + o->interp_threads);
		c->interp = py_read_ptr(c->interp + o->interp_next);
		return 0;
	}
	if (py_read_ptr(c->tstate + o->tstate_thread_id) == c->fsbase) {
		f->found = c->tstate;
		return 1;
	}
	c->tstate = py_read_ptr(c->tstate + o->tstate_next);
	return 0;
}

/* The thread state this CPU found last, when it is still the sampled
 * thread's: its thread_id and frame pointer in one read (the search reads
 * the interpreter list and each thread state on the way); c->frame gets
 * the field at tstate_frame. Few locals: python_frames' stack, with the
 * walk's that calls it, is near the 512 bytes 6.1's verifier allows. */
static __always_inline __u32 py_tstate_lo(const struct bpfs_py_offsets *o)
{
	return o->tstate_thread_id < o->tstate_frame ? o->tstate_thread_id : o->tstate_frame;
}

static __always_inline bool py_last_tstate(const struct bpfs_py_proc *py, struct py_cursor *c)
{
	const struct bpfs_py_offsets *o = &py->off;
	__u64 span;

	if (!c->last_tstate || c->last_pid != c->pid || c->last_fsbase != c->fsbase)
		return false;
	span = (o->tstate_thread_id > o->tstate_frame ? o->tstate_thread_id : o->tstate_frame) -
	       py_tstate_lo(o) + 8;
	if (!py_win_read(c, c->last_tstate + py_tstate_lo(o), span))
		return false;
	c->at = 0;
	if (*(__u64 *)&c->win[(o->tstate_thread_id - py_tstate_lo(o)) & (PY_WIN - 1)] !=
	    c->fsbase)
		return false;
	c->frame = *(__u64 *)&c->win[(o->tstate_frame - py_tstate_lo(o)) & (PY_WIN - 1)];
	py_stat(BPFS_PY_STAT_TSTATE_KEPT);
	return true;
}

/* The innermost interpreter frame of the sampled thread, or 0. */
static __always_inline __u64 py_first_frame(const struct bpfs_py_proc *py, struct py_cursor *c)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct py_find f = { .py = py, .c = c };
	const struct bpfs_py_offsets *o = &py->off;

	c->fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (!py_last_tstate(py, c)) {
		c->tstate = 0;
		c->interp = py_read_ptr(py->runtime + o->runtime_interps);
		bpf_loop(BPFS_PY_MAX_INTERPS * (BPFS_PY_MAX_THREADS + 1), py_find_step, &f, 0);
		if (!f.found)
			return 0;
		c->last_tstate = f.found;
		c->last_fsbase = c->fsbase;
		c->last_pid = c->pid;
		c->frame = py_read_ptr(f.found + o->tstate_frame);
	}
	if (c->frame && o->cframe_current != BPFS_PY_NONE)
		return py_read_ptr(c->frame + o->cframe_current);
	return c->frame;
}

/*
 * The sampled thread's innermost interpreter frame (c->first) and the
 * sample's time, found when the walk begins (python_begin), before any
 * native frame: python_frames at the first evaluation frame, or
 * python_tail after the walk, takes the frame from there. Every sample of
 * a CPython process searched for it anyway, in one or the other. A global
 * function, called from the walk's own frame: the search (its reads and
 * py_find_step's loop) stays out of the deepest call chain (the walk's
 * callback, python_frames, py_frame_step), which 6.1's and 6.12's
 * verifiers bound at 512 bytes of stack, each frame rounded up to 32.
 */
__noinline int python_start(const struct bpfs_py_proc *py, struct py_cursor *c)
{
	if (!py || !c)
		return 0;
	c->now = (__u32)(bpf_ktime_get_ns() >> 20);
	c->first = py_first_frame(py, c);
	return 0;
}

/* The sample's Python state, or NULL when pid is not a recognised CPython
 * (a hash lookup, or the CPU's memo of the last pid without an entry;
 * only when the feature is on). */
static __always_inline const struct bpfs_py_proc *python_begin(__u32 pid, struct py_cursor **c)
{
	const struct bpfs_py_proc *py;
	__u32 zero = 0;

	if (!use_python || py_known_absent(pid))
		return NULL;
	py = py_proc_of(pid);
	if (!py)
		return NULL;
	*c = bpf_map_lookup_elem(&py_cursor, &zero);
	if (!*c)
		return NULL;
	(*c)->state = PY_FRESH;
	(*c)->wlen = 0; /* memory read by an earlier sample is stale */
	(*c)->taken = 0;
	(*c)->pid = pid;
	python_start(py, *c);
	return py;
}

struct py_emit {
	struct ustack *st;
	const struct bpfs_py_proc *py;
	struct py_cursor *c;
};

static __always_inline void py_put(struct py_emit *e, __u64 word)
{
	struct py_cursor *c = e->c;

	if (c->pos >= max_depth || c->pos >= BPFS_MAX_USER_DEPTH) {
		c->stop = 1;
		return;
	}
	e->st->ips[c->pos & (BPFS_MAX_USER_DEPTH - 1)] = word;
	c->pos++;
	c->taken++;
}

/* Ends this sample's Python part with a marker frame. */
static __always_inline long py_mark(struct py_emit *e, __u32 why, __u32 stat)
{
	py_put(e, BPFS_PY_FRAME(0, why));
	py_stat(stat);
	e->c->state = PY_DONE;
	return 1;
}

/* Whether code is a code object of this process, checked once per CPU and
 * (process, object) while it stays in the cache; the loader hears of it
 * the first time, to read its names while the process lives. */
static __always_inline bool py_code_ok(struct py_emit *e, __u64 code)
{
	__u32 zero = 0, h, pid = e->c->pid;
	struct bpfs_rec_py_code *rec;
	struct py_seen *seen;
	void *ring;

	seen = bpf_map_lookup_elem(&py_seen, &zero);
	if (!seen || !code || (code & 7))
		return false;
	h = (__u32)(((code >> 4) ^ pid) * 0x9E3779B1U) >> 22;
	h &= PY_SEEN_SLOTS - 1;
	if (seen->s[h].code == code && seen->s[h].pid == pid &&
	    e->c->now - seen->s[h].stamp < PY_SEEN_TTL)
		return true;
	if (py_read_ptr(code + e->py->off.object_type) != e->py->code_type)
		return false;
	ring = this_ring();
	rec = rec_reserve(ring, sizeof(*rec), BPFS_REC_PY_CODE, false);
	if (!rec) {
		py_stat(BPFS_PY_STAT_CODE_UNSENT);
		return true; /* not cached: sent again at the next miss */
	}
	rec->code = code;
	rec->pid = pid;
	rec->pad = 0;
	rec_submit(ring, rec);
	py_stat(BPFS_PY_STAT_CODE_RECS);
	seen->s[h].code = code;
	seen->s[h].pid = pid;
	seen->s[h].stamp = e->c->now;
	return true;
}

/* The frame's instruction, as the ABI's frame word carries it. */
static __always_inline __u64 py_instr(const struct bpfs_py_offsets *o, struct py_cursor *c,
				      __u64 code)
{
	__u64 ip, base;
	__s32 lasti;

	if (o->model == BPFS_PY_MODEL_FRAMEOBJ) {
		lasti = (__s32)py_word(c, o->frame_instr);
		return lasti < 0 || lasti >= (__s32)BPFS_PY_NO_INSTR ? BPFS_PY_NO_INSTR : lasti;
	}
	ip = py_word(c, o->frame_instr);
	base = code + o->code_bytecode;
	if (ip < base || (ip - base) / 2 >= BPFS_PY_NO_INSTR)
		return BPFS_PY_NO_INSTR;
	return (ip - base) / 2;
}

/* One interpreter frame of the current evaluation frame. */
static long py_frame_step(__u64 i, void *data)
{
	struct py_emit *e = data;
	struct py_cursor *c = e->c;
	const struct bpfs_py_offsets *o = &e->py->off;
	__u64 frame = c->frame, code, back;
	__u8 owner = 0, entry = 0;

	if (!frame) {
		c->state = PY_DONE;
		return 1;
	}
	if (c->taken >= BPFS_PY_MAX_FRAMES - 1)
		return py_mark(e, BPFS_PY_MARK_TOO_DEEP, BPFS_PY_STAT_TOO_DEEP);
	if (!py_load(c, frame, o->model))
		return py_mark(e, BPFS_PY_MARK_READ, BPFS_PY_STAT_READ);
	back = py_word(c, o->frame_back);
	if (o->model == BPFS_PY_MODEL_CSTACK_SHIM)
		owner = py_byte(c, o->frame_owner);
	if (owner == BPFS_PY_OWNED_BY_CSTACK) {
		/* the shim below an evaluation call's first frame: the next
		 * evaluation frame's Python frames start past it */
		c->frame = back;
		return c->tail ? 0 : 1;
	}
	code = py_word(c, o->frame_code);
	if (!py_code_ok(e, code))
		return py_mark(e, BPFS_PY_MARK_BAD_CODE, BPFS_PY_STAT_BAD_CODE);
	py_put(e, BPFS_PY_FRAME(code, py_instr(o, c, code)));
	py_stat(BPFS_PY_STAT_FRAMES);
	if (o->model == BPFS_PY_MODEL_ENTRY_FLAG)
		entry = py_byte(c, o->frame_entry);
	c->frame = back;
	/* 3.8-3.10: one Python frame per evaluation call; 3.11: down to the
	 * frame the call entered with */
	if (c->stop)
		return 1;
	if (c->tail)
		return 0;
	return o->model == BPFS_PY_MODEL_FRAMEOBJ || entry;
}

/*
 * The Python frames run by the evaluation frame at st->ips[st->nr - 1]
 * (the native walk found that frame in _PyEval_EvalFrameDefault): they
 * replace it, innermost first, and st->nr grows by their number less one.
 * With none (a call that has not pushed its frame yet, a walk already
 * ended) the native frame stays. A global function: verified once, on its
 * own, not at every state of the native walk that calls it.
 */
__noinline int python_frames(struct ustack *st, const struct bpfs_py_proc *py,
			     struct py_cursor *c)
{
	struct py_emit e = { .st = st, .py = py, .c = c };

	if (!st || !py || !c || !st->nr || c->state == PY_DONE)
		return 0;
	c->pos = st->nr - 1;
	c->stop = 0;
	c->tail = 0;
	if (c->state == PY_FRESH) {
		py_stat(BPFS_PY_STAT_WALKS);
		c->state = PY_WALKING;
		c->frame = c->first;
		if (!c->frame) {
			py_mark(&e, BPFS_PY_MARK_NO_THREAD, BPFS_PY_STAT_NO_THREAD);
			goto out;
		}
	}
	bpf_loop(BPFS_PY_MAX_FRAMES, py_frame_step, &e, 0);
out:
	if (c->pos > st->nr - 1)
		st->nr = c->pos;
	return 0;
}

/*
 * After the native walk: the Python frames it did not reach, outward of
 * the last native frame. The native walk ends early where a file's unwind
 * table is not loaded yet (a process's first samples, a busy loader) or
 * a frame cannot be walked, and then never meets the evaluation frames
 * outward: the thread's Python stack (all of it, or the rest from where
 * the last evaluation frame left it) still names what runs. Nothing when
 * the thread runs no Python code.
 */
__noinline int python_tail(struct ustack *st, const struct bpfs_py_proc *py,
			   struct py_cursor *c)
{
	struct py_emit e = { .st = st, .py = py, .c = c };

	if (!st || !py || !c || c->state == PY_DONE)
		return 0;
	if (c->state == PY_FRESH) {
		c->frame = c->first;
		if (!c->frame)
			return 0;
		py_stat(BPFS_PY_STAT_WALKS);
	}
	if (!c->frame)
		return 0;
	c->pos = st->nr;
	c->stop = 0;
	c->tail = 1;
	bpf_loop(BPFS_PY_MAX_FRAMES, py_frame_step, &e, 0);
	if (c->pos > st->nr)
		st->nr = c->pos;
	py_stat(BPFS_PY_STAT_TAILS);
	return 0;
}

#endif
