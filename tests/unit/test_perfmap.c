// SPDX-License-Identifier: GPL-2.0
/* JIT perf maps are files other users write: they are read as hostile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfmap.h"
#include "unit.h"

static char dir[] = "/tmp/bpfs-perfmap-XXXXXX";

static const char *path_of(const char *name)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static const char *write_file(const char *name, const void *data, size_t n)
{
	const char *p = path_of(name);
	FILE *f = fopen(p, "w");

	if (f) {
		fwrite(data, 1, n, f);
		fclose(f);
	}
	return p;
}

static void test_names_and_junk(void)
{
	static const char text[] =
		"1000 10 jit_a\n"
		"not a line at all\n"
		"\x01\x02\xff\xfe garbage\n"
		"2000 20 jit b with spaces\n"
		"3000 zz no size\n"
		"ffffffffffffffff 10 wraps\n"
		"5000 10 a\0nul\n"
		"6000 10 after_nul\n"
		"4000 8";
	struct perfmap *pm = NULL;
	const char *p = write_file("junk.map", text, sizeof(text) - 1);

	CHECK(perfmap__load(p, getuid(), &pm) == 0, "load");
	if (!pm)
		return;
	CHECK(perfmap__find(pm, 0x1008) && !strcmp(perfmap__find(pm, 0x1008), "jit_a"), "a");
	CHECK(perfmap__find(pm, 0x2000) && !strcmp(perfmap__find(pm, 0x2000), "jit b with spaces"),
	      "b");
	CHECK(!perfmap__find(pm, 0x1010) && !perfmap__find(pm, 0x3000), "gaps");
	CHECK(!perfmap__find(pm, 0x4000), "a last line without a newline or name is no entry");
	CHECK(!perfmap__find(pm, 5), "an entry that wraps around covers nothing below it");
	CHECK(!perfmap__find(pm, 0x5000), "a line with a NUL byte is skipped");
	CHECK(perfmap__find(pm, 0x6000) && !strcmp(perfmap__find(pm, 0x6000), "after_nul"),
	      "the line after a NUL byte is read");
	CHECK(perfmap__unread(pm) == 0, "all read");
	perfmap__free(pm);
}

static void test_long_line_skipped(void)
{
	size_t n = 3 * PERFMAP_LINE_MAX;
	char *buf = malloc(n + 64);
	struct perfmap *pm = NULL;
	const char *p;
	int len;

	if (!buf)
		return;
	len = snprintf(buf, 64, "1000 10 ");
	memset(buf + len, 'x', n - len); /* a name of 12 KB, then a real entry */
	len = snprintf(buf + n, 64, "\n2000 10 after\n");
	p = write_file("long.map", buf, n + len);
	free(buf);
	CHECK(perfmap__load(p, getuid(), &pm) == 0, "load");
	if (!pm)
		return;
	CHECK(!perfmap__find(pm, 0x1000), "the long line is skipped, not cut into entries");
	CHECK(perfmap__find(pm, 0x2000) && !strcmp(perfmap__find(pm, 0x2000), "after"), "after");
	perfmap__free(pm);
}

static void test_huge_is_bounded(void)
{
	const char *p = path_of("huge.map");
	FILE *f = fopen(p, "w");
	struct perfmap *pm = NULL;
	uint64_t written = 0;
	char line[64];

	if (!f)
		return;
	fputs("10 10 first\n", f);
	for (uint64_t a = 0x100000; written < PERFMAP_MAX_BYTES + (1 << 20); a += 16)
		written += fprintf(f, "%lx 10 %s\n", (unsigned long)a,
				   "jit_entry_with_a_name_of_some_length");
	snprintf(line, sizeof(line), "ffff0000 10 last\n");
	fputs(line, f);
	fclose(f);
	CHECK(perfmap__load(p, getuid(), &pm) == 0, "load");
	if (!pm)
		return;
	CHECK(perfmap__find(pm, 0x10) && !strcmp(perfmap__find(pm, 0x10), "first"), "first read");
	CHECK(!perfmap__find(pm, 0xffff0000), "last not read");
	CHECK(perfmap__unread(pm) > (1 << 20) && perfmap__unread(pm) < (2 << 20),
	      "unread %llu", (unsigned long long)perfmap__unread(pm));
	perfmap__free(pm);
	unlink(p);
}

static void test_not_a_plain_file(void)
{
	struct perfmap *pm = NULL;
	char fifo[256], target[256];

	snprintf(target, sizeof(target), "%s", write_file("target.map", "1000 10 planted\n", 16));
	CHECK(symlink(target, path_of("link.map")) == 0, "symlink");
	CHECK(perfmap__load(path_of("link.map"), getuid(), &pm) == -ELOOP && !pm,
	      "a symlink is refused");
	snprintf(fifo, sizeof(fifo), "%s", path_of("fifo.map"));
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
	/* a FIFO with no writer would block a plain open forever */
	CHECK(perfmap__load(fifo, getuid(), &pm) == -EINVAL && !pm, "a FIFO is refused");
	CHECK(perfmap__load(dir, getuid(), &pm) != 0 && !pm, "a directory is refused");
	CHECK(perfmap__load(path_of("none.map"), getuid(), &pm) == -ENOENT, "absent");
	if (geteuid() != 0)
		SKIP_TEST("not root: cannot give a file to another user");
	CHECK(chown(target, 65534, 65534) == 0, "chown");
	CHECK(perfmap__load(target, 1000, &pm) == -EPERM && !pm,
	      "owned by another user than the process's and not root: refused");
	CHECK(perfmap__load(target, 65534, &pm) == 0 && pm, "owned by the process's user");
	perfmap__free(pm);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(test_names_and_junk);
	RUN(test_long_line_skipped);
	RUN(test_huge_is_bounded);
	RUN(test_not_a_plain_file);
	for (const char *n = "junk.map\0long.map\0target.map\0link.map\0fifo.map\0"; *n;
	     n += strlen(n) + 1)
		unlink(path_of(n));
	rmdir(dir);
	UNIT_EXIT();
}
