// SPDX-License-Identifier: GPL-2.0
/* The shared helpers: hash map (with deletion), growable array, binary
 * search, name sets. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "atomicfile.h"
#include "hashmap.h"
#include "namepack.h"
#include "unit.h"
#include "vec.h"

/* Random adds and deletes against a plain array: every key still there is
 * found with its value, every deleted one is not. A weak hash crowds keys
 * into clusters that wrap around the table, where deletion is hardest. */
static uint64_t weak_hash(const void *k)
{
	return ((uintptr_t)k % 7) + 1;
}

static void test_hashmap_delete(void)
{
	enum { N = 500 };
	static int present[N];
	struct hashmap *m = hashmap__new(weak_hash, hashmap__equal_int);
	unsigned int seed = 1;
	size_t live = 0;

	CHECK(m, "new");
	for (int round = 0; round < 20000; round++) {
		int k = rand_r(&seed) % N;
		void *old = NULL;

		if (rand_r(&seed) % 3) {
			CHECK(!hashmap__set(m, (void *)(uintptr_t)(k + 1), (void *)(uintptr_t)(k + 7),
					    &old), "set");
			live += !present[k];
			present[k] = 1;
		} else {
			bool was = hashmap__delete(m, (void *)(uintptr_t)(k + 1), NULL, &old);

			CHECK(was == !!present[k], "delete %d: %d, expected %d", k, was, present[k]);
			CHECK(!was || old == (void *)(uintptr_t)(k + 7), "old value of %d", k);
			live -= present[k];
			present[k] = 0;
		}
	}
	CHECK(hashmap__size(m) == live, "size %zu, expected %zu", hashmap__size(m), live);
	for (int k = 0; k < N; k++) {
		void *v = hashmap__find(m, (void *)(uintptr_t)(k + 1));

		CHECK(present[k] ? v == (void *)(uintptr_t)(k + 7) : v == NULL, "find %d", k);
	}
	hashmap__free(m);
}

static unsigned long long key_of(const void *e)
{
	return *(const uint64_t *)e;
}

static void test_vec_and_bsearch(void)
{
	struct vec v = VEC_INIT(uint64_t);
	uint64_t more[] = { 1000, 2000 };

	/* no data yet: nothing to point into (UBSan, fuzz_ksyms) */
	CHECK(!vec__append(&v, more, 0) && v.nr == 0 && !v.data, "nothing onto an empty vector");
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t *e = vec__push(&v);

		CHECK(e && *e == 0, "push zeroed");
		if (e)
			*e = i * 10;
	}
	CHECK(!vec__append(&v, more, 2) && v.nr == 102, "append");
	CHECK(*(uint64_t *)vec__at(&v, 101) == 2000, "at");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 0, key_of) == 0, "first");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 15, key_of) == 1, "between");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 990, key_of) == 99, "exact");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 5000, key_of) == 101, "after the last");
	CHECK(bsearch_last_le(v.data, 0, v.elem, 5, key_of) == -1, "empty");
	more[0] = 5;
	CHECK(bsearch_last_le(more, 1, sizeof(uint64_t), 4, key_of) == -1, "before the first");
	vec__free(&v);
	CHECK(!v.data && !v.nr, "freed");
}

static int temporaries(const char *dir)
{
	char cmd[256];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A %s | grep -c '^[.]tmp[.]'", dir);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

static void read_back(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

static void test_atomicfile(void)
{
	char dir[] = "/tmp/bpfs-atomic.XXXXXX", path[64], buf[64];
	struct atomicfile af;
	struct stat st;
	mode_t old = umask(077);

	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof(path), "%s/out", dir);
	CHECK(atomicfile__open(&af, AT_FDCWD, path, 0644, 0) == 0, "open");
	CHECK(atomicfile__write(&af, "first", 5) == 0, "write");
	read_back(path, buf, sizeof(buf));
	/* an O_TMPFILE (ext4, tmpfs): no name at all while it is written, so
	 * a kill leaves nothing */
	CHECK(access(path, F_OK) && temporaries(dir) == 0, "nothing in the directory before commit");
	CHECK(atomicfile__commit(&af) == 0, "commit");
	read_back(path, buf, sizeof(buf));
	CHECK(!strcmp(buf, "first") && temporaries(dir) == 0, "whole after commit: '%s'", buf);
	CHECK(!stat(path, &st) && (st.st_mode & 0777) == 0644, "mode 0644 despite umask 077: %o",
	      st.st_mode & 0777);

	CHECK(atomicfile__open(&af, AT_FDCWD, path, 0644, 0) == 0, "open again");
	CHECK(atomicfile__write(&af, "half", 4) == 0, "write");
	atomicfile__abort(&af);
	atomicfile__abort(&af); /* again: nothing */
	read_back(path, buf, sizeof(buf));
	CHECK(!strcmp(buf, "first") && temporaries(dir) == 0, "abort keeps the old file: '%s'",
	      buf);

	CHECK(atomicfile__open(&af, AT_FDCWD, path, 0644, 0) == 0, "replace: open");
	CHECK(atomicfile__write(&af, "second", 6) == 0 && atomicfile__commit(&af) == 0, "commit");
	read_back(path, buf, sizeof(buf));
	CHECK(!strcmp(buf, "second") && temporaries(dir) == 0, "replaced, no temporary: '%s'",
	      buf);
	atomicfile__write(&af, "x", 1); /* after commit: fd -1, EBADF, no crash */

	CHECK(atomicfile__open(&af, AT_FDCWD, "/nonexistent-dir/x", 0644, 0) == -ENOENT, "no dir");
	snprintf(buf, sizeof(buf), "%s/", dir);
	CHECK(atomicfile__open(&af, AT_FDCWD, buf, 0644, 0) == -EISDIR, "a directory's name");
	CHECK(chdir(dir) == 0, "chdir");
	CHECK(atomicfile__open(&af, AT_FDCWD, "bare", 0600, 0) == 0 && atomicfile__commit(&af) == 0 &&
		      access("bare", F_OK) == 0, "a bare name, in the working directory");
	unlink("bare");
	unlink(path);
	CHECK(chdir("/") == 0 && rmdir(dir) == 0, "nothing else left");
	umask(old);
}

/* Name i of a set: mangled-looking, of varied lengths; one of 5000 bytes
 * (a block of its own), one empty. */
static size_t make_name(char *buf, size_t size, unsigned int i, unsigned int salt)
{
	if (i == 777) {
		memset(buf, 'x', 5000);
		buf[5000] = '\0';
		return 5000;
	}
	if (i == 778) {
		buf[0] = '\0';
		return 0;
	}
	return (size_t)snprintf(buf, size, "_ZN4llvm%u%*sMethod%uEv", salt, (int)(i % 37), "",
				i);
}

static struct namepack *make_set(unsigned int n, unsigned int salt, uint32_t *refs)
{
	struct namepack_build b;
	struct namepack *np = NULL;
	char name[6000];

	if (namepack__begin(&b, (size_t)n * 40))
		return NULL;
	for (unsigned int i = 0; i < n; i++)
		namepack__add(&b, name, make_name(name, sizeof(name), i, salt), &refs[i]);
	return namepack__finish(&b, &np) ? NULL : np;
}

/* A buffer of names laid out as namepack__add lays them out becomes a
 * plain set: each name at its offset, the buffer cut to the names. */
static void test_namepack_adopt(void)
{
	static const char names[] = "main\0\0libc_start\0";
	size_t len = sizeof(names) - 1;
	char *buf = malloc(64);
	struct namepack *np = NULL;

	CHECK(buf, "memory");
	if (!buf)
		return;
	memcpy(buf, names, len);
	CHECK(namepack__adopt(buf, len, &np) == 0 && np, "a buffer adopted");
	if (!np)
		return;
	CHECK(!strcmp(namepack__get(np, 0), "main") && !*namepack__get(np, 5) &&
		      !strcmp(namepack__get(np, 6), "libc_start"),
	      "each name at its offset");
	CHECK(namepack__get(np, (uint32_t)len) == NULL, "a ref past the names: NULL");
	/* the set's memory starts at ref 0: the 64-byte buffer, cut */
	CHECK(malloc_usable_size((void *)namepack__get(np, 0)) < 64,
	      "the buffer cut to the names: %zu usable bytes",
	      malloc_usable_size((void *)namepack__get(np, 0)));
	{
		/* the same names added one by one: a set cut to size */
		struct namepack_build b;
		struct namepack *added = NULL;
		uint32_t r;

		CHECK(namepack__begin(&b, len) == 0 && namepack__add(&b, "main", 4, &r) == 0 &&
			      namepack__add(&b, "", 0, &r) == 0 &&
			      namepack__add(&b, "libc_start", 10, &r) == 0 &&
			      namepack__finish(&b, &added) == 0,
		      "the same set added");
		CHECK(added && namepack__bytes(np) == namepack__bytes(added),
		      "counted as the same set added one by one: %zu bytes, %zu",
		      namepack__bytes(np), namepack__bytes(added));
		namepack__free(added);
	}
	namepack__free(np);
}

/* Every name read back as added, in an order that leaves the per-thread
 * cache of decompressed blocks again and again; a set freed and another
 * made at once never reads the first one's blocks. */
static void test_namepack(void)
{
	enum { N = 20000 };
	static uint32_t refs[N], refs2[N];
	struct namepack *np = make_set(N, 1, refs), *small;
	char want[6000];
	unsigned int bad = 0;
	uint32_t r;

	/* plain unless the process asks (the agent does) */
	CHECK(np && namepack__bytes(np) > (size_t)N * 30 &&
		      namepack__get(np, refs[9]) == namepack__get(np, refs[9]),
	      "by default a large set is kept plain: %zu bytes", namepack__bytes(np));
	namepack__free(np);
	namepack__compress_large();
	np = make_set(N, 1, refs);
	CHECK(np != NULL, "a large set is made");
	if (!np)
		return;
	for (unsigned int k = 0; k < 3 * N; k++) {
		unsigned int i = (unsigned int)((k * 7919ULL) % N);
		const char *got = namepack__get(np, refs[i]);

		make_name(want, sizeof(want), i, 1);
		bad += !got || strcmp(got, want);
	}
	CHECK(bad == 0, "every name read back as added (%u wrong)", bad);
	CHECK(namepack__bytes(np) * 3 < (size_t)N * 40, "compressed: %zu bytes for %u names",
	      namepack__bytes(np), N);
	CHECK(namepack__get(np, UINT32_MAX) == NULL, "a ref past the names: NULL");
	{
		/* a set that large is compressed: not adopted, still the caller's */
		char *big = calloc(1, NAMEPACK_PLAIN_MAX);
		struct namepack *taken = NULL;

		CHECK(big && namepack__adopt(big, NAMEPACK_PLAIN_MAX, &taken) == -EOPNOTSUPP &&
			      !taken,
		      "a large buffer is not adopted once sets are compressed");
		free(big);
	}
	namepack__get(np, refs[5]);
	namepack__free(np);
	np = make_set(N, 2, refs2);
	make_name(want, sizeof(want), 5, 2);
	CHECK(np && !strcmp(namepack__get(np, refs2[5]), want), "a new set: its own names");
	namepack__free(np);
	{
		struct namepack_build b;

		uint32_t empty;

		CHECK(namepack__begin(&b, 16) == 0 && namepack__add(&b, "", 0, &empty) == 0 &&
			      namepack__add(&b, "main", 4, &r) == 0 &&
			      namepack__finish(&b, &small) == 0,
		      "a small set is made, an empty name first");
		CHECK(namepack__get(small, empty) && !*namepack__get(small, empty),
		      "the empty name read back");
		CHECK(!strcmp(namepack__get(small, r), "main") &&
			      namepack__get(small, r) == namepack__get(small, r),
		      "a small set is plain: the same pointer each time");
		namepack__free(small);
	}
}

int main(void)
{
	RUN(test_hashmap_delete);
	RUN(test_vec_and_bsearch);
	RUN(test_atomicfile);
	RUN(test_namepack_adopt);
	RUN(test_namepack);
	UNIT_EXIT();
}
