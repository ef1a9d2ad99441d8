/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Functions, source lines and inline frames of a Go binary from its
 * .gopclntab: the table the Go runtime keeps for its own tracebacks, which
 * `go build -ldflags='-s -w'` (how Go services ship: no .symtab, no DWARF)
 * leaves in place. Layouts of Go 1.16 and later, told by the header's magic:
 * 0xfffffffa (1.16, 1.17), 0xfffffff0 (1.18, 1.19), 0xfffffff1 (1.20+).
 * Older tables (0xfffffffb, Go 1.2 to 1.15) are refused (-ENOTSUP).
 *
 * Answers have the form of dwarf_lines.h's, so inline frames reach every
 * format the same way: an ELF virtual address -> the functions inlined at
 * it, innermost first, each with its file and line, ending with the
 * function the code is really in. The inline tree (FUNCDATA_InlTree) lives
 * outside the table (Go 1.18+: at an offset from moduledata.gofunc, found
 * by looking for the runtime's moduledata in the binary's data); when it
 * cannot be found, functions and lines still come, without inline frames.
 */
#ifndef BPFSAMPLER_GOPCLNTAB_H
#define BPFSAMPLER_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gopcln;
struct dw_frame;

/* What gopcln__parse reads: copied, the caller keeps its buffers. */
struct gopcln_image {
	const void *tab;  /* the .gopclntab bytes */
	size_t tab_size;
	uint64_t tab_addr; /* its ELF virtual address */
	const void *data; /* bytes that hold the inline trees (Go 1.18+: from
			   * gofunc on; 1.16: the read-only data), or NULL */
	size_t data_size;
	uint64_t data_addr;
	uint64_t gofunc; /* Go 1.18+: moduledata.gofunc, the base of the
			  * funcdata offsets; 0: unknown (no inline frames) */
	uint64_t text;	 /* the .text address, when the header's textStart
			  * is 0; 0: unknown */
};

/* Parses a table. Returns 0, -ENOTSUP for a layout older than Go 1.16 or
 * not 64-bit, -EINVAL for a table that does not hold together, or
 * -ENOMEM. */
int gopcln__parse(const struct gopcln_image *img, struct gopcln **out);
/*
 * The table of the ELF file at path: its .gopclntab section (PIE builds
 * call it .data.rel.ro.gopclntab), or, with no section headers, the table
 * found by its header in a loaded segment. Returns 0, -ENOENT when the file
 * has none (not a Go binary: not an error), -ENOTSUP, -EINVAL, -ENOEXEC
 * (not ELF) or -errno. No fd is kept.
 */
int gopcln__open(const char *path, struct gopcln **out);
void gopcln__free(struct gopcln *g);

/* "1.16", "1.18" or "1.20": the first Go release of the table's layout. */
const char *gopcln__layout(const struct gopcln *g);
/* Whether inline frames can be given (the inline trees were found). */
bool gopcln__has_inlines(const struct gopcln *g);
size_t gopcln__mem_bytes(const struct gopcln *g);
size_t gopcln__nr_funcs(const struct gopcln *g);
/* Function i (0 <= i < nr_funcs): its entry address and name (NULL when
 * the table does not say). Returns 0 or -ERANGE. */
int gopcln__func(const struct gopcln *g, size_t i, uint64_t *entry, const char **name);
/* The name of the function holding vaddr, or NULL; *off (may be NULL)
 * gets vaddr - its entry. Strings live as long as g. */
const char *gopcln__name(const struct gopcln *g, uint64_t vaddr, uint64_t *off);
/*
 * The frames at vaddr, innermost first (dwarf_lines.h's struct dw_frame):
 * *nr of them, 0 when no function holds vaddr. *frames stays valid until
 * the next call. Returns 0.
 */
int gopcln__find(struct gopcln *g, uint64_t vaddr, const struct dw_frame **frames, size_t *nr);

#endif
