/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI between bpf/python.bpf.h (CPython frames walked in BPF) and the
 * loader's src/interp/python/. Only fixed-width fields, enums and constants.
 * docs/design.md, "Interpreter frames: CPython", says how it fits the walk.
 */
#ifndef BPFSAMPLER_PYTHON_ABI_H
#define BPFSAMPLER_PYTHON_ABI_H

/*
 * A Python frame in a user stack is one tagged word where a return address
 * would be. User addresses on x86-64 stay below 2^47, so a word whose top
 * nibble is BPFS_PY_TAG is never a native frame:
 *   bits 60-63  BPFS_PY_TAG
 *   bits 44-59  the instruction: what the frame's version counts (3.8-3.9
 *               f_lasti in bytes, 3.10 f_lasti in code units, 3.11+ code
 *               units from the start of the bytecode); BPFS_PY_NO_INSTR
 *               when unknown or too large
 *   bits  0-43  the code object's address / 8 (objects are 8-aligned);
 *               0: a marker frame, the instruction field then says why
 *               (enum bpfs_py_mark)
 */
#define BPFS_PY_TAG 0xbULL
#define BPFS_PY_TAG_SHIFT 60
#define BPFS_PY_INSTR_SHIFT 44
#define BPFS_PY_INSTR_MASK 0xffffULL
#define BPFS_PY_NO_INSTR 0xffffULL
#define BPFS_PY_CODE_MASK ((1ULL << 44) - 1)

#define BPFS_PY_FRAME(code, instr)                                                    \
	((BPFS_PY_TAG << BPFS_PY_TAG_SHIFT) |                                         \
	 (((__u64)(instr) & BPFS_PY_INSTR_MASK) << BPFS_PY_INSTR_SHIFT) |              \
	 (((__u64)(code) >> 3) & BPFS_PY_CODE_MASK))
#define BPFS_PY_IS_FRAME(w) (((__u64)(w) >> BPFS_PY_TAG_SHIFT) == BPFS_PY_TAG)
#define BPFS_PY_CODE(w) (((__u64)(w) & BPFS_PY_CODE_MASK) << 3)
#define BPFS_PY_INSTR(w) (((__u64)(w) >> BPFS_PY_INSTR_SHIFT) & BPFS_PY_INSTR_MASK)

/* Why the interpreter's part of a stack ended early: a marker frame
 * (code 0) says it where the next Python frame would have been; the native
 * frames below it are kept. */
enum bpfs_py_mark {
	BPFS_PY_MARK_NONE = 0,
	BPFS_PY_MARK_NO_THREAD,	 /* no thread state for this thread */
	BPFS_PY_MARK_READ,	 /* a frame or thread state could not be read */
	BPFS_PY_MARK_BAD_CODE,	 /* what should be a code object is not one */
	BPFS_PY_MARK_TOO_DEEP,	 /* more frames than BPFS_PY_MAX_FRAMES (or a
				  * chain that loops) */
};

/* Counters in the per-CPU `py_stats` array (the loader sums and shows them):
 * samples whose walk met Python, and why a Python part ended early. */
enum bpfs_py_stat {
	BPFS_PY_STAT_WALKS = 0,	  /* samples whose native walk met the interpreter */
	BPFS_PY_STAT_FRAMES,	  /* Python frames emitted */
	BPFS_PY_STAT_NO_THREAD,	  /* marked: no thread state for the thread */
	BPFS_PY_STAT_READ,	  /* marked: unreadable frame */
	BPFS_PY_STAT_BAD_CODE,	  /* marked: not a code object */
	BPFS_PY_STAT_TOO_DEEP,	  /* marked: too many frames, or a loop */
	BPFS_PY_STAT_CODE_RECS,	  /* code object records sent */
	BPFS_PY_STAT_CODE_UNSENT, /* of which not reserved (ring full): the
				   * next miss sends it again */
	BPFS_PY_STAT_TAILS,	  /* samples whose Python frames the native walk
				   * did not reach, put outward of its last frame */
	BPFS_PY_STAT_FRAME_READS, /* reads of frame memory (one serves the frames
				   * of several calls in 3.11+'s data stack) */
	BPFS_PY_STAT_TSTATE_KEPT, /* walks whose thread state was the one the CPU
				   * found last, checked, with no search */
	BPFS_PY_STAT_NR,
};

/* Python frames a sample may take in all (a chain that loops ends here). */
#define BPFS_PY_MAX_FRAMES 256
/* Thread states searched for the sampled thread's, per interpreter, and
 * interpreters searched. */
#define BPFS_PY_MAX_THREADS 64
#define BPFS_PY_MAX_INTERPS 4

/* How a version keeps its frames. */
enum bpfs_py_model {
	BPFS_PY_MODEL_NONE = 0,
	/* 3.8-3.10: one PyFrameObject per _PyEval_EvalFrameDefault call,
	 * the thread's innermost in tstate->frame, chained by f_back */
	BPFS_PY_MODEL_FRAMEOBJ,
	/* 3.11: _PyInterpreterFrame chain from tstate->cframe->current_frame;
	 * one evaluation call runs frames down to the one marked is_entry */
	BPFS_PY_MODEL_ENTRY_FLAG,
	/* 3.12-3.13: the same chain, each evaluation call's frames ended by a
	 * shim frame owned by the C stack (owner == BPFS_PY_OWNED_BY_CSTACK) */
	BPFS_PY_MODEL_CSTACK_SHIM,
};

#define BPFS_PY_OWNED_BY_CSTACK 3

/* The offsets a walk needs, per process (the loader picks them by version:
 * src/interp/python/layout.c). ~0 (BPFS_PY_NONE) where a version has no such
 * field. */
#define BPFS_PY_NONE 0xffffffffU

struct bpfs_py_offsets {
	__u32 model;		/* enum bpfs_py_model */
	__u32 runtime_interps;	/* _PyRuntime -> interpreters.head */
	__u32 interp_next;	/* PyInterpreterState -> next */
	__u32 interp_threads;	/* PyInterpreterState -> first thread state */
	__u32 tstate_next;	/* PyThreadState -> next */
	__u32 tstate_thread_id; /* PyThreadState -> thread_id (pthread_self) */
	__u32 tstate_frame;	/* PyThreadState -> frame / cframe / current_frame */
	__u32 cframe_current;	/* _PyCFrame -> current_frame; NONE: tstate_frame
				 * points at the frame itself */
	__u32 frame_code;	/* frame -> code object */
	__u32 frame_back;	/* frame -> previous (outer) frame */
	__u32 frame_instr;	/* frame -> f_lasti (int) or the instruction
				 * pointer (3.11+) */
	__u32 frame_entry;	/* 3.11: frame -> is_entry (u8) */
	__u32 frame_owner;	/* 3.12+: frame -> owner (u8) */
	__u32 code_bytecode;	/* code object -> first instruction (3.11+:
				 * PyCode_Type's tp_basicsize) */
	__u32 object_type;	/* PyObject -> ob_type */
	__u32 pad;
};

/* A recognised CPython process, in the `py_procs` hash (key: tgid). */
#define BPFS_PY_EVAL_RANGES 2

struct bpfs_py_proc {
	/* [start, end) of _PyEval_EvalFrameDefault (and its .cold part),
	 * absolute: a native frame there runs Python frames */
	__u64 eval_start[BPFS_PY_EVAL_RANGES];
	__u64 eval_end[BPFS_PY_EVAL_RANGES];
	__u64 runtime;	 /* &_PyRuntime */
	__u64 code_type; /* &PyCode_Type: what a code object's ob_type is */
	struct bpfs_py_offsets off;
};

/*
 * Sent the first time a CPU's walk meets a (process, code object) it has
 * not met lately (a per-CPU direct-mapped cache: repeats are rare, never
 * harmful): the loader reads the code object's names while the process
 * lives, so a process that exits keeps them.
 */
#define BPFS_REC_PY_CODE 16 /* beside enum bpfs_rec_type (sampler_abi.h) */

struct bpfs_rec_py_code {
	__u32 type; /* struct bpfs_rec_hdr, spelled out: this header stands */
	__u32 cpu;  /* alone, without sampler_abi.h */
	__u64 seq;
	__u64 code;
	__u32 pid;
	__u32 pad;
};

#endif
