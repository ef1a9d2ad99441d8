// SPDX-License-Identifier: GPL-2.0
/* Source lines and inline frames from DWARF (dwarf_lines.h), against
 * binutils' addr2line -i on a fixture built at test time
 * (tests/fixtures/fx_inline.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_lines.h"
#include "unit.h"

#define FX(name) FIXTURE_DIR "/" name
#define MAX_A2L 8

/* addr2line's answer, read from fx_inline.a2l: the address, then a
 * function and a file:line per frame, innermost first. */
struct a2l {
	uint64_t addr;
	size_t nr;
	char fn[MAX_A2L][256];
	char file[MAX_A2L][1024];
	unsigned int line[MAX_A2L];
};

static bool read_a2l_of(const char *path, struct a2l *o)
{
	FILE *f = fopen(path, "r");
	char fn[256], loc[1024], *colon;
	bool ok = false;

	memset(o, 0, sizeof(*o));
	if (!f)
		return false;
	if (fscanf(f, "%" SCNx64, &o->addr) != 1)
		goto out;
	while (o->nr < MAX_A2L && fscanf(f, "%255s %1023s", fn, loc) == 2) {
		colon = strrchr(loc, ':');
		if (!colon)
			goto out;
		*colon = '\0';
		snprintf(o->fn[o->nr], sizeof(o->fn[0]), "%s", fn);
		snprintf(o->file[o->nr], sizeof(o->file[0]), "%s", loc);
		o->line[o->nr++] = strtoul(colon + 1, NULL, 10);
	}
	ok = o->nr > 0;
out:
	fclose(f);
	return ok;
}

static bool read_a2l(struct a2l *o)
{
	return read_a2l_of(FX("fx_inline.a2l"), o);
}

/* What dwlines says at the mark of file path equals addr2line's frames. */
static void check_frames(const char *path, const struct a2l *want)
{
	const struct dw_frame *fr;
	struct dwlines *dl = NULL;
	size_t nr = 0;

	CHECK(dwlines__open(path, &dl) == 0, "%s: open", path);
	if (!dl)
		return;
	CHECK(dwlines__find(dl, want->addr, &fr, &nr) == 0, "find 0x%" PRIx64, want->addr);
	CHECK(nr == want->nr, "%s: %zu frames, addr2line -i has %zu", path, nr, want->nr);
	for (size_t i = 0; i < nr && i < want->nr; i++) {
		CHECK(fr[i].function && !strcmp(fr[i].function, want->fn[i]), "frame %zu: %s, want %s",
		      i, fr[i].function ? fr[i].function : "NULL", want->fn[i]);
		CHECK(fr[i].file && !strcmp(fr[i].file, want->file[i]), "frame %zu: file %s, want %s",
		      i, fr[i].file ? fr[i].file : "NULL", want->file[i]);
		CHECK(fr[i].line == want->line[i], "frame %zu: line %u, want %u", i, fr[i].line,
		      want->line[i]);
		/* the functions are all declared in the fixture's source */
		CHECK(fr[i].fn_file && strstr(fr[i].fn_file, "fx_inline.c") && fr[i].fn_line,
		      "frame %zu: declared at %s:%u", i, fr[i].fn_file ? fr[i].fn_file : "NULL",
		      fr[i].fn_line);
	}
	/* a second lookup is the cached answer, the same */
	CHECK(dwlines__find(dl, want->addr, &fr, &nr) == 0 && nr == want->nr &&
		      (!nr || (fr[0].line == want->line[0])),
	      "cached answer");
	/* an address no unit covers: no frames, no error */
	CHECK(dwlines__find(dl, 0x10, &fr, &nr) == 0 && nr == 0, "0x10: %zu frames", nr);
	dwlines__free(dl);
}

static void test_inline_chain(void)
{
	struct a2l want;

	CHECK(read_a2l(&want), "read fx_inline.a2l");
	/* the fixture's point: three frames, inner and middle inlined */
	CHECK(want.nr == 3 && !strcmp(want.fn[0], "fx_inner") && !strcmp(want.fn[1], "fx_middle") &&
		      !strcmp(want.fn[2], "fx_outer"),
	      "addr2line -i: %zu frames, %s", want.nr, want.fn[0]);
	check_frames(FX("fx_inline"), &want);
}

/* A function whose DIE is inside another function's. */
static void test_nested_function(void)
{
	struct a2l want;

	CHECK(read_a2l_of(FX("fx_nested.a2l"), &want), "read fx_nested.a2l");
	CHECK(want.nr == 1 && !strcmp(want.fn[0], "fx_nested"), "addr2line: %zu frames, %s",
	      want.nr, want.fn[0]);
	check_frames(FX("fx_inline"), &want);
}

/* A separate debug file (objcopy --only-keep-debug) answers the same. */
static void test_debug_file(void)
{
	struct a2l want;

	CHECK(read_a2l(&want), "read fx_inline.a2l");
	check_frames(FX("fx_inline.debug"), &want);
}

/* No .debug_info: nothing to read, which is not an error. */
/* Between windows: the reader frees what libdw read and keeps its
 * answers, which own their strings; a new address reads the DWARF again. */
static void test_trim(void)
{
	const struct dw_frame *fr;
	struct dwlines *dl = NULL;
	struct a2l want, nested;
	size_t nr = 0;

	CHECK(read_a2l(&want) && read_a2l_of(FX("fx_nested.a2l"), &nested), "read .a2l");
	CHECK(dwlines__open(FX("fx_inline"), &dl) == 0, "open");
	if (!dl)
		return;
	CHECK(!dwlines__trim(dl), "nothing read yet: nothing to free");
	CHECK(dwlines__find(dl, want.addr, &fr, &nr) == 0 && nr == want.nr, "find: %zu", nr);
	CHECK(dwlines__trim(dl), "read: freed");
	CHECK(!dwlines__trim(dl), "twice: nothing more");
	/* cached: the strings are the reader's own, still whole */
	CHECK(dwlines__find(dl, want.addr, &fr, &nr) == 0 && nr == want.nr && nr &&
		      fr[0].line == want.line[0] && !strcmp(fr[0].file, want.file[0]) &&
		      !strcmp(fr[nr - 1].function, want.fn[nr - 1]),
	      "cached after trim: %zu frames", nr);
	CHECK(!dwlines__trim(dl), "a cached answer reads nothing");
	/* a new address: read again */
	CHECK(dwlines__find(dl, nested.addr, &fr, &nr) == 0 && nr == 1 &&
		      !strcmp(fr[0].function, "fx_nested"), "new address after trim: %zu", nr);
	CHECK(dwlines__trim(dl), "read again: freed again");
	dwlines__free(dl);
}

static void test_no_debug_info(void)
{
	struct dwlines *dl = NULL;

	CHECK(dwlines__open(FX("fx_inline_nodebug"), &dl) == -ENOENT, "stripped of debug: -ENOENT");
	CHECK(!dl, "no object");
	CHECK(dwlines__open(FX("fx_stripped"), &dl) == -ENOENT, "strip --strip-all: -ENOENT");
	CHECK(dwlines__open(FX("fx_nopie.nm"), &dl) == -ENOEXEC, "not ELF: -ENOEXEC");
	CHECK(dwlines__open(FX("no-such-file"), &dl) == -ENOENT, "missing: -ENOENT");
	dwlines__free(NULL);
}

int main(void)
{
	RUN(test_inline_chain);
	RUN(test_nested_function);
	RUN(test_debug_file);
	RUN(test_trim);
	RUN(test_no_debug_info);
	UNIT_EXIT();
}
