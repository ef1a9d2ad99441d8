// SPDX-License-Identifier: GPL-2.0
/*
 * CPython's frames named (src/interp/python/): the line tables of each
 * version decoded against tables made by hand from CPython's own format
 * notes; code objects read from a memory image laid out as 3.11 and 3.12
 * lay them out (compact ASCII, Latin-1 and UCS-2 strings, a missing file);
 * the version tables; and a hostile image (lengths past the end, strings
 * that are not strings) read without a crash.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "interp_python.h"
#include "procmaps.h"
#include "pyreg.h"
#include "unit.h"

#define BASE 0x10000ULL
#define OK(c) CHECK(c, "%s", "")

static uint8_t mem[4096];

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < BASE || addr - BASE > sizeof(mem) || len > sizeof(mem) - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static struct pylayout layout(int minor)
{
	struct pybin b = { .major = 3, .minor = minor };
	struct pylayout l = {};

	pylayout__get(&b, &l);
	return l;
}

static void test_lnotab(void)
{
	struct pylayout l = layout(8);
	/* (bytes, line delta) pairs: [0,6) line 10, [6,14) 11, [14,...) 13 */
	const uint8_t t[] = { 6, 1, 8, 2 };

	/* the BPF word counts 3.8's f_lasti in bytes */
	OK(pycode__line(&l, t, sizeof(t), 10, 0) == 10);
	OK(pycode__line(&l, t, sizeof(t), 10, 5) == 10);
	OK(pycode__line(&l, t, sizeof(t), 10, 6) == 11);
	OK(pycode__line(&l, t, sizeof(t), 10, 14) == 13);
	OK(pycode__line(&l, t, sizeof(t), 10, BPFS_PY_NO_INSTR) == 0);
}

static void test_linetable_310(void)
{
	struct pylayout l = layout(10);
	/* (length in bytes, line delta, -128: none) */
	const uint8_t t[] = { 6, 0, 8, 1, 4, 0x80, 2, 2 };

	/* 3.10's f_lasti counts code units: byte offset = 2 * instr */
	OK(pycode__line(&l, t, sizeof(t), 10, 0) == 10);
	OK(pycode__line(&l, t, sizeof(t), 10, 3) == 11);
	OK(pycode__line(&l, t, sizeof(t), 10, 6) == 11);
	OK(pycode__line(&l, t, sizeof(t), 10, 7) == 0);  /* no line */
	OK(pycode__line(&l, t, sizeof(t), 10, 9) == 13);
	OK(pycode__line(&l, t, sizeof(t), 10, 10) == 0); /* past the end */
}

static void test_locations(void)
{
	struct pylayout l = layout(11);
	const uint8_t t[] = {
		0x80 | 13 << 3 | 1, 0x02,	 /* 2 units, no column: line +1 */
		0x80 | 10 << 3 | 0, 4, 9,	 /* 1 unit, one-line form: +0 */
		0x80 | 15 << 3 | 0,		 /* 1 unit, no location */
		0x80 | 11 << 3 | 2, 0, 3,	 /* 3 units, one-line form: +1 */
		0x80 | 14 << 3 | 0, 0x03, 0, 1, 2, /* long form: line -1 */
		0x80 | 0 << 3 | 0, 5,		 /* short form: +0 */
	};

	OK(pycode__line(&l, t, sizeof(t), 20, 0) == 21);
	OK(pycode__line(&l, t, sizeof(t), 20, 1) == 21);
	OK(pycode__line(&l, t, sizeof(t), 20, 2) == 21);
	OK(pycode__line(&l, t, sizeof(t), 20, 3) == 0);
	OK(pycode__line(&l, t, sizeof(t), 20, 6) == 22);
	OK(pycode__line(&l, t, sizeof(t), 20, 7) == 21);
	OK(pycode__line(&l, t, sizeof(t), 20, 8) == 21);
	OK(pycode__line(&l, t, sizeof(t), 20, 9) == 0);
	/* a table cut in the middle of an entry */
	OK(pycode__line(&l, t, 10, 20, 6) == 0 || pycode__line(&l, t, 10, 20, 6) == 22);
}

/* A compact str object at off: ASCII (kind 1, ascii bit), or not. */
static void put_str(const struct pylayout *l, uint32_t off, const void *chars, uint32_t n,
		    unsigned int kind, int ascii)
{
	uint64_t len = n;
	uint32_t state = 1 << 5 | kind << 2 | (ascii ? 1 << 6 : 0);

	memcpy(mem + off + l->str_length, &len, 8);
	memcpy(mem + off + l->str_state, &state, 4);
	memcpy(mem + off + (ascii ? l->str_ascii_data : l->str_compact_data), chars, n * kind);
}

static void put_ptr(uint32_t off, uint64_t v)
{
	memcpy(mem + off, &v, 8);
}

static void code_image(const struct pylayout *l)
{
	const uint8_t lines[] = { 0x80 | 13 << 3 | 7, 0x02 };
	uint64_t nl = sizeof(lines);
	int32_t first = 42;

	memset(mem, 0, sizeof(mem));
	put_ptr(0 + l->co_qualname, BASE + 1024);
	put_ptr(0 + l->co_name, BASE + 1024);
	put_ptr(0 + l->co_filename, BASE + 1536);
	put_ptr(0 + l->co_lines, BASE + 2048);
	memcpy(mem + l->co_firstlineno, &first, 4);
	put_str(l, 1024, "Outer.leaf", 10, 1, 1);
	put_str(l, 1536, "/srv/app.py", 11, 1, 1);
	memcpy(mem + 2048 + l->bytes_size, &nl, 8);
	memcpy(mem + 2048 + l->bytes_data, lines, sizeof(lines));
}

static void test_code_object(void)
{
	for (int minor = 11; minor <= 12; minor++) {
		struct pylayout l = layout(minor);
		struct pycode c;

		code_image(&l);
		OK(pycode__read(&l, BASE, rd, NULL, &c) == 0);
		OK(!strcmp(c.name, "Outer.leaf"));
		OK(!strcmp(c.file, "/srv/app.py"));
		OK(c.firstlineno == 42 && c.nr_lines == 2);
		OK(pycode__line(&l, c.lines, c.nr_lines, c.firstlineno, 5) == 43);
		pycode__free(&c);
	}
}

static void test_strings(void)
{
	struct pylayout l = layout(12);
	const uint8_t latin1[] = { 'c', 0xe9, 'l', 'l', 'o' };
	const uint16_t ucs2[] = { 0x3b1, 0x3b2, 0x0a };
	struct pycode c;

	code_image(&l);
	put_str(&l, 1024, latin1, 5, 1, 0);
	OK(pycode__read(&l, BASE, rd, NULL, &c) == 0);
	OK(!strcmp(c.name, "c\xc3\xa9llo"));
	pycode__free(&c);
	put_str(&l, 1024, ucs2, 3, 2, 0);
	OK(pycode__read(&l, BASE, rd, NULL, &c) == 0);
	OK(!strcmp(c.name, "\xce\xb1\xce\xb2?")); /* a newline is no name's */
	pycode__free(&c);
}

static void test_hostile(void)
{
	struct pylayout l = layout(11);
	uint64_t huge = ~0ULL;
	struct pycode c;

	code_image(&l);
	/* a name whose length runs past memory: cut to PY_MAX_NAME characters,
	 * never read past what it may hold */
	memcpy(mem + 1024 + l.str_length, &huge, 8);
	OK(pycode__read(&l, BASE, rd, NULL, &c) == 0 && strlen(c.name) < sizeof(c.name));
	pycode__free(&c);
	/* ... and where even that runs past memory, refused */
	memcpy(mem + sizeof(mem) - 64 + l.str_length, &huge, 8);
	put_ptr(0 + l.co_qualname, BASE + sizeof(mem) - 64);
	put_ptr(0 + l.co_name, BASE + sizeof(mem) - 64);
	mem[sizeof(mem) - 64 + l.str_state] = 1 << 5 | 1 << 2 | 1 << 6;
	OK(pycode__read(&l, BASE, rd, NULL, &c) == -EFAULT);
	code_image(&l);
	/* not compact, not a kind: not a string */
	memset(mem + 1024 + l.str_state, 0, 4);
	OK(pycode__read(&l, BASE, rd, NULL, &c) == -EINVAL);
	code_image(&l);
	/* a line table longer than memory: no lines, still a name */
	memcpy(mem + 2048 + l.bytes_size, &huge, 8);
	OK(pycode__read(&l, BASE, rd, NULL, &c) == 0 && !c.lines);
	pycode__free(&c);
	/* the object itself unreadable */
	OK(pycode__read(&l, BASE + sizeof(mem) - 8, rd, NULL, &c) == -EFAULT);
}

static void test_versions(void)
{
	struct pybin b = { .major = 3 };
	struct pylayout l;

	for (b.minor = 8; b.minor <= 12; b.minor++)
		OK(pylayout__get(&b, &l) && l.bpf.model != BPFS_PY_MODEL_NONE);
	b.minor = 7;
	OK(!pylayout__get(&b, &l)); /* recognised, not walked */
	b.minor = 14;
	OK(!pylayout__get(&b, &l)); /* not known: frames stay native */
	b.minor = 13;
	OK(!pylayout__get(&b, &l)); /* 3.13 only with its _Py_DebugOffsets */
	b.major = 2;
	b.minor = 7;
	OK(!pylayout__get(&b, &l));
}

/* Files that are not a CPython are told apart at most PY_FILES_MAX (8192)
 * at a time: a host that runs new executables for months does not grow the
 * registry; a file met again is not read again while it is held. */
static void test_files_bounded(void)
{
	struct procmap maps[100];
	struct procmaps pm = { .pid = getpid(), .nr = 100, .maps = maps };
	struct pyreg_stats st;
	struct pyreg *r;

	OK(!pyreg__new(-1, &r));
	for (uint64_t round = 0; round < 100; round++) {
		for (size_t i = 0; i < 100; i++)
			maps[i] = (struct procmap){ .start = 0x1000 * (i + 1), .end = 0x1000 * (i + 2),
						    .dev = 1, .inode = 1000000 + round * 100 + i,
						    .exec = true, .path = "/nonexistent/exe" };
		pyreg__note_maps(r, pm.pid, &pm);
		if (round == 0) {
			pyreg__note_maps(r, pm.pid, &pm);
			pyreg__stats(r, &st);
			CHECK(st.files == 100, "files met twice held once: %llu",
			      (unsigned long long)st.files);
		}
	}
	pyreg__stats(r, &st);
	CHECK(st.files > 0 && st.files <= 8192, "10,000 files met, %llu held",
	      (unsigned long long)st.files);
	CHECK(st.interpreters == 0, "none a CPython: %llu", (unsigned long long)st.interpreters);
	pyreg__free(r);
}

int main(void)
{
	RUN(test_lnotab);
	RUN(test_linetable_310);
	RUN(test_locations);
	RUN(test_code_object);
	RUN(test_strings);
	RUN(test_hostile);
	RUN(test_versions);
	RUN(test_files_bounded);
	UNIT_EXIT();
}
