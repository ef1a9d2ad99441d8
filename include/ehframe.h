/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwind tables: a file's .eh_frame (and, for the code it does not cover,
 * a .debug_frame: the file's own or its separate debug file's) turned into
 * the compact rows the BPF walk reads (struct bpfs_unwind_row, sorted by
 * pc, each valid up to the next row's pc), through elfutils' libdw. Rows that the walk cannot follow
 * (expression rules, a CFA on another register, a return address not at
 * CFA - 8) are kept as BPFS_CFA_NONE, so the walk stops honestly there;
 * addresses between functions get a NONE row too. x86_64 only.
 */
#ifndef BPFSAMPLER_EHFRAME_H
#define BPFSAMPLER_EHFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpfsampler/sampler_abi.h"

struct ehframe;

/* An executable PT_LOAD segment: how file offsets map to the addresses
 * the rows use (row pc = address - (start - pgoff + offset - vaddr)). */
struct ehframe_seg {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
};

struct ehframe_stats {
	size_t fdes;	    /* functions (FDEs) read */
	size_t direct;	    /* of which read in one pass, without libdw */
	size_t rows;	    /* rows after merging identical neighbours */
	size_t unsupported; /* of which BPFS_CFA_NONE inside a function */
	size_t debug_fdes;  /* functions from .debug_frame (.eh_frame had none) */
	size_t debug_shadowed; /* .debug_frame FDEs left out: .eh_frame has them */
	uint64_t eh_bytes;  /* bytes of code .eh_frame covers */
	uint64_t code_bytes; /* bytes of the executable PT_LOAD segments */
	size_t not_fp;	    /* rows a frame-pointer step would walk wrong at a
			     * return address (ehframe_stats__fp) */
	bool has_debug_frame; /* the file read for .debug_frame has one */
	bool debug_file;    /* .debug_frame came from a separate debug file */
};

/* Reads path's .eh_frame (via .eh_frame_hdr's sorted FDE table), and its
 * own .debug_frame for the functions .eh_frame does not cover (built
 * -fno-asynchronous-unwind-tables -g). Returns 0, -ENOENT when the file has
 * neither, or -errno. */
int ehframe__load(const char *path, struct ehframe **out);
/* The same with the .debug_frame of debug_path, path's separate debug file
 * (the caller checked it is of the same build: the rows are its addresses),
 * instead of path's own. */
int ehframe__load_debug(const char *path, const char *debug_path, struct ehframe **out);
/* The same with flags: EHFRAME_LIBDW_ONLY reads every function through
 * libdw's dwarf_cfi_addrframe, one row at a time, instead of running each
 * FDE's program once (the tests' reference: both give the same rows). */
#define EHFRAME_LIBDW_ONLY 1u
/* EHFRAME_FUNCS_ONLY keeps the functions' ranges and no rows (for
 * ehframe__func_start): a large stripped file's rows are tens of MB (cc1's
 * ~15 MB), its ranges 12 bytes a function, read from the FDE headers
 * without running their programs. */
#define EHFRAME_FUNCS_ONLY 2u
int ehframe__load_flags(const char *path, const char *debug_path, unsigned flags,
			struct ehframe **out);
/* Rows handed on as they are made, a chunk at a time, instead of kept: a
 * large file's table (libLLVM's 980,000 rows, 15 MB) is never whole in
 * memory. fn gets rows [at, at + n) of the table and returns 0 or -errno,
 * which ends the build; fn NULL: the rows are counted only (stats.rows).
 * The same rows as a whole build, in the same order. */
struct ehframe_sink {
	int (*fn)(void *ctx, size_t at, const struct bpfs_unwind_row *rows, size_t n);
	void *ctx;
	size_t chunk; /* rows held before they are handed on (not 0) */
};
/* ehframe__load with the rows handed to sink: ehframe__rows() then has
 * none, ehframe__stats() counts them. */
int ehframe__load_sink(const char *path, const struct ehframe_sink *sink, struct ehframe **out);
void ehframe__free(struct ehframe *t);
/* fn is asked every EHFRAME_CANCEL_EVERY functions while a table is
 * built; when it says true the build is abandoned (-ECANCELED). A large
 * file's table takes seconds of a CPU that sampling at 100 kHz leaves
 * little of, and a run past its end must not wait for it (docs/design.md,
 * "Every run ends"). NULL (the default): never abandoned. */
#define EHFRAME_CANCEL_EVERY 256
void ehframe__set_cancel(bool (*fn)(void));
const struct bpfs_unwind_row *ehframe__rows(const struct ehframe *t, size_t *nr);
/* The row that covers file address pc, or NULL (below the first row). */
const struct bpfs_unwind_row *ehframe__find(const struct ehframe *t, uint64_t pc);
/* The start of the function (FDE) that contains pc: 0 when none does. */
uint64_t ehframe__func_start(const struct ehframe *t, uint64_t pc);
const struct ehframe_seg *ehframe__segs(const struct ehframe *t, size_t *nr);
void ehframe__stats(const struct ehframe *t, struct ehframe_stats *out);

/* Whether the table is of code built with frame pointers: no row a
 * frame-pointer step would walk wrong, and no rule it does not know inside
 * a function (struct bpfs_unwind_map's BPFS_UMAP_FP). */
static inline bool ehframe_stats__fp(const struct ehframe_stats *st)
{
	return st->rows && !st->not_fp && !st->unsupported;
}
/* Heap bytes held by t. */
size_t ehframe__mem_bytes(const struct ehframe *t);

#endif
