// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF program functions bpfprogs keeps: their extents (from
 * bpf_prog_info, here from the input) and their names from the "[bpf]"
 * lines of kallsyms text. The input: one byte N (mod 17), N functions of
 * 12 bytes (start, 8 bytes, and length, 4, host order), then the text.
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "bpfprogs.h"
#include "fuzz.h"

#define MAX_FUNCS 16

struct fn {
	uint64_t start, len;
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

/* Whether name is the third field of one line of text: "ADDR TYPE NAME",
 * each line read as a C string (up to a NUL), split at white space. */
static bool is_name_field(const char *text, size_t size, const char *name)
{
	const char *p = text, *end = text + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = strndup(p, len), *save = NULL, *tok;
		bool found = false;

		if (!line)
			abort();
		tok = strtok_r(line, " \t\n\v\f\r", &save);
		for (int field = 0; tok && field < 2; field++)
			tok = strtok_r(NULL, " \t\n\v\f\r", &save);
		found = tok && !strcmp(tok, name);
		free(line);
		if (found)
			return true;
		p += len + 1;
	}
	return false;
}

/* The function a lookup of addr must give, by brute force: the last given
 * at each start, the one with the greatest start at or below addr, if addr
 * is inside it. */
static const struct fn *expected(const struct fn *fns, size_t n, uint64_t addr)
{
	const struct fn *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (fns[i].start > addr)
			continue;
		if (!best || fns[i].start >= best->start)
			best = &fns[i]; /* >=: a later one replaces it */
	}
	if (!best || addr - best->start >= best->len)
		return NULL;
	return best;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fn fns[MAX_FUNCS];
	size_t n = size ? data[0] % (MAX_FUNCS + 1) : 0, off = 1;
	struct bpfprogs *bp;
	const char *text;
	size_t text_size;
	FILE *f;

	if (size < 1 + 12 * n)
		return 0;
	for (size_t i = 0; i < n; i++, off += 12) {
		uint32_t len;

		memcpy(&fns[i].start, data + off, 8);
		memcpy(&len, data + off + 8, 4);
		fns[i].len = len;
	}
	text = (const char *)data + off;
	text_size = size - off;
	if (bpfprogs__new(&bp))
		abort();
	for (size_t i = 0; i < n; i++) {
		if (bpfprogs__add(bp, fns[i].start, fns[i].len))
			abort();
	}
	/* always: it sorts what was added, as bpfprogs__poll does (glibc's
	 * fmemopen refuses a size of 0) */
	f = text_size ? fmemopen((void *)text, text_size, "r") : fopen("/dev/null", "re");
	if (!f)
		abort();
	bpfprogs__name_from(bp, f);
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		uint64_t probe[4] = { fns[i].start, fns[i].start - 1, fns[i].start + fns[i].len - 1,
				      fns[i].start + fns[i].len };

		for (size_t k = 0; k < 4; k++) {
			const struct fn *want = expected(fns, n, probe[k]);
			const char *name = NULL;
			uint64_t start = 0;
			bool found = bpfprogs__find(bp, probe[k], &name, &start);

			if (found != !!want || (want && start != want->start))
				abort();
			/* a name is a whole name field of a line of the text */
			if (found && name &&
			    (strlen(name) > 255 || !is_name_field(text, text_size, name)))
				abort();
		}
	}
	bpfprogs__free(bp);
	return 0;
}
