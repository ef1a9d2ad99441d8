/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Source lines and inline frames of one ELF file from its DWARF (elfutils'
 * libdw): an ELF virtual address (what `addr2line -e FILE` takes) -> the
 * functions inlined at it, innermost first, each with its source file and
 * line, ending with the function the code is really in.
 *
 * Cheap to hold: dwlines__open() only opens the file and checks it has
 * .debug_info; the DWARF is read on the first lookup (most files mapped in
 * a profile are never asked). Answers are cached per address, the cache
 * bounded (it starts again when full), and hold their own strings.
 */
#ifndef BPFSAMPLER_DWARF_LINES_H
#define BPFSAMPLER_DWARF_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dwlines;

/* One frame at an address. Strings live as long as the dwlines. */
struct dw_frame {
	const char *function; /* linkage (mangled) name, else DW_AT_name; NULL: none */
	const char *fn_file;  /* where the function is declared, NULL: unknown */
	uint32_t fn_line;     /* its declaration's line, 0: unknown */
	const char *file;     /* source file of `line`, NULL: unknown */
	uint32_t line;	      /* frame 0: the address's line; frame i > 0: where
			       * frame i - 1 was inlined (its call site) */
};

/*
 * Opens the file at path for lookups. Returns 0, -ENOENT when it has no
 * .debug_info (nothing to read: not an error), -ENOEXEC when it is not ELF,
 * or -errno. The fd stays open until dwlines__free: path may be a
 * /proc/PID/map_files link that is gone when the lookups come.
 */
int dwlines__open(const char *path, struct dwlines **out);
void dwlines__free(struct dwlines *dl);
/*
 * The frames at vaddr, innermost first: *nr of them (0 when the DWARF does
 * not cover vaddr). *frames stays valid until the next call. Returns 0, or
 * -errno when the DWARF cannot be read (said once, then every lookup
 * answers 0 frames).
 */
int dwlines__find(struct dwlines *dl, uint64_t vaddr, const struct dw_frame **frames, size_t *nr);
/*
 * Between windows of a long run: frees what libdw read (the decompressed
 * debug sections: megabytes for a big library) and the unit tables,
 * keeping the fd and the answers cached (which own their strings). Only an
 * address not asked before makes the next lookup read the DWARF again.
 * Returns whether something was freed.
 */
bool dwlines__trim(struct dwlines *dl);

#endif
