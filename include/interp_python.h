/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPython in the profiled processes (src/interp/python/, docs/design.md,
 * "Interpreter frames: CPython"), in three parts:
 *
 * - pybin: what a file says of itself: whether it is a CPython interpreter
 *   (it exports _PyEval_EvalFrameDefault, _PyRuntime, PyCode_Type), which
 *   version (Py_Version from 3.11, the API it exports before), where those
 *   symbols are, and 3.13's _Py_DebugOffsets. Never the file's name.
 * - pylayout: the offsets of a version (tables checked against the real
 *   binaries; 3.13 from _Py_DebugOffsets), and the code object's fields from
 *   PyCode_Type's member table in the process.
 * - pycode: a code object read from a process (through a read callback:
 *   process_vm_readv, or a buffer in the tests and the fuzz target) into a
 *   name, a file and a line table, and the line of an instruction.
 *
 * pyreg (python.c) ties them to the sampler: recognises processes as their
 * mappings are read, gives BPF their offsets, reads each code object BPF
 * reports once while the process lives, and names the frames.
 */
#ifndef BPFSAMPLER_INTERP_PYTHON_H
#define BPFSAMPLER_INTERP_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpfsampler/python_abi.h"

/* The versions whose frames are named: 3.8 to 3.13. */
#define PY_MIN_MINOR 8
#define PY_MAX_MINOR 13

struct pybin {
	int major, minor, micro; /* minor -1: a CPython of unknown version */
	uint64_t eval, eval_size;	    /* _PyEval_EvalFrameDefault (vaddr) */
	uint64_t eval_cold, eval_cold_size; /* its .cold part, 0 when none known */
	uint64_t runtime;		    /* _PyRuntime */
	uint64_t code_type;		    /* PyCode_Type */
	/* the executable PT_LOAD: address = vaddr + (map start - pgoff +
	 * exec_off - exec_vaddr) */
	uint64_t exec_off, exec_vaddr;
	bool debug_offsets;		    /* 3.13+: _Py_DebugOffsets read */
	uint64_t dbg[72];		    /* its words, from the cookie on */
};

/* Reads the ELF file at path. 0: a CPython interpreter (out filled; minor
 * -1 when its version is not told); -ENOENT: not one; else -errno. */
int pybin__read(const char *path, struct pybin *out);
/* The same for an image in memory (the fuzz target and tests). */
int pybin__read_mem(const void *buf, size_t size, struct pybin *out);

enum py_lines {
	PY_LINES_LNOTAB = 0, /* 3.8-3.9: co_lnotab, byte offsets */
	PY_LINES_310,	     /* 3.10: co_linetable, byte offsets */
	PY_LINES_LOCATIONS,  /* 3.11+: the location table, code units */
};

struct pylayout {
	int minor;
	struct bpfs_py_offsets bpf;
	uint32_t co_name, co_qualname, co_filename, co_firstlineno, co_lines;
	enum py_lines lines;
	uint32_t instr_bytes; /* bytes per unit of the frame word's instruction
			       * (1: 3.8-3.9's f_lasti, else 2) */
	uint32_t str_length, str_state, str_ascii_data, str_compact_data;
	uint32_t bytes_size, bytes_data;
};

/* The table of a version; false when its frames are not named (then they
 * stay native). For 3.13, b's _Py_DebugOffsets must agree with it. */
bool pylayout__get(const struct pybin *b, struct pylayout *out);
/* The supported range, for --version -v ("3.8-3.13"). */
const char *pylayout__range(void);

/* Reads len bytes of the process at addr into buf: 0, or -errno. */
typedef int (*py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Takes the code object fields from PyCode_Type's tp_members (at
 * code_type in the process), where it names them: the table stays for the
 * rest. Returns how many fields it took, or -errno. */
int pylayout__from_members(struct pylayout *l, uint64_t code_type, py_read_fn rd, void *ctx);

#define PY_MAX_NAME 256
#define PY_MAX_LINES (64 * 1024) /* line table bytes kept per code object */

struct pycode {
	char name[PY_MAX_NAME];	 /* qualname (3.11+) or co_name, UTF-8 */
	char file[PY_MAX_NAME];	 /* co_filename */
	int32_t firstlineno;
	uint8_t *lines;		 /* the line table, malloc'd; NULL: none */
	uint32_t nr_lines;
};

/* Reads the code object at addr. 0, -EFAULT (unreadable), -EINVAL (not
 * what a code object holds), -ENOMEM. pycode__free() after a 0. */
int pycode__read(const struct pylayout *l, uint64_t addr, py_read_fn rd, void *ctx,
		 struct pycode *out);
void pycode__free(struct pycode *c);
/* The source line of the frame word's instruction (BPFS_PY_INSTR), 0 when
 * unknown. */
int32_t pycode__line(const struct pylayout *l, const uint8_t *tab, uint32_t n, int32_t first,
		     uint32_t instr);

/* A process's memory, read with process_vm_readv (py_read_fn, ctx: the
 * pid cast to a pointer). */
int py_read_process(void *pid, uint64_t addr, void *buf, size_t len);

#endif
