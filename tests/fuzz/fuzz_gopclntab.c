// SPDX-License-Identifier: GPL-2.0
/*
 * Go's pclntab (gopclntab.h), as any process's binary may hold it. The
 * input: an ELF file (it starts with \x7fELF: gopcln__open, which finds the
 * table by section or by header and the moduledata in the data), or a raw
 * table: its size (4 bytes, little-endian), the table, then the bytes of the
 * inline trees (gofunc at their start). Seeds: tests/fuzz/corpus/gopclntab/,
 * the three layouts of tests/unit/fx_gopcln.h (test_gopclntab --seeds DIR).
 * Asked: every function's entry, middle and end, and addresses around.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "dwarf_lines.h"
#include "fuzz.h"
#include "gopclntab.h"

#define TAB_ADDR 0x4b0000ULL
#define DATA_ADDR 0x500000ULL
#define MAX_FRAMES 32 /* gopclntab.c's depth */
#define MAX_ASKED 4096

/* At most the depth kept, strings that end. */
static void check_frames(const struct dw_frame *f, size_t nr)
{
	size_t len = 0;

	if (nr > MAX_FRAMES || (nr && !f))
		abort();
	for (size_t i = 0; i < nr; i++) {
		len += f[i].function ? strlen(f[i].function) : 0;
		len += f[i].fn_file ? strlen(f[i].fn_file) : 0;
		len += f[i].file ? strlen(f[i].file) : 0;
	}
	if (len == SIZE_MAX)
		abort(); /* not reached: only for the reads above */
}

/* Asked twice: the cached answer is the one first made. */
static void ask(struct gopcln *g, uint64_t addr)
{
	const struct dw_frame *f, *h;
	struct dw_frame first[MAX_FRAMES];
	size_t n, m;

	if (gopcln__find(g, addr, &f, &n))
		abort();
	check_frames(f, n);
	memcpy(first, f, n * sizeof(*f));
	if (gopcln__find(g, addr, &h, &m) || m != n || memcmp(first, h, n * sizeof(*h)))
		abort();
	(void)gopcln__name(g, addr, NULL);
}

static void ask_all(struct gopcln *g)
{
	size_t nf = gopcln__nr_funcs(g), asked = 0;
	uint64_t entry, next;
	const char *name;

	for (size_t i = 0; i < nf && asked < MAX_ASKED; i++, asked += 4) {
		if (gopcln__func(g, i, &entry, &name))
			abort();
		if (name)
			(void)strlen(name);
		next = entry + 64;
		if (i + 1 < nf && !gopcln__func(g, i + 1, &next, &name) && next < entry)
			abort(); /* the table was checked sorted */
		ask(g, entry);
		ask(g, entry - 1);
		ask(g, entry + (next - entry) / 2);
		ask(g, next - 1);
	}
	if (gopcln__func(g, nf, &entry, &name) != -ERANGE)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gopcln *g = NULL;
	uint32_t tab_size;

	if (size >= 4 && !memcmp(data, "\177ELF", 4)) {
		if (!gopcln__open(fuzz_file(data, size), &g))
			ask_all(g);
		gopcln__free(g);
		return 0;
	}
	if (size < 4)
		return 0;
	memcpy(&tab_size, data, 4);
	if (tab_size > size - 4)
		tab_size = size - 4;
	if (gopcln__parse(&(struct gopcln_image){ .tab = data + 4, .tab_size = tab_size,
						  .tab_addr = TAB_ADDR,
						  .data = data + 4 + tab_size,
						  .data_size = size - 4 - tab_size,
						  .data_addr = DATA_ADDR, .gofunc = DATA_ADDR,
						  .text = 0x401000 },
			  &g))
		return 0;
	ask_all(g);
	gopcln__free(g);
	return 0;
}
