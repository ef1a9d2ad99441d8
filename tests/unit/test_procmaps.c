// SPDX-License-Identifier: GPL-2.0
/* The /proc/PID/maps parser: odd paths, what is kept, lookups at the edges. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmaps.h"
#include "unit.h"

static const char maps_text[] =
	"00400000-00401000 r--p 00000000 fd:01 1234                       /usr/bin/app\n"
	"00401000-00402000 r-xp 00001000 fd:01 1234                       /usr/bin/app\n"
	"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	"7f0000100000-7f0000200000 r-xp 00026000 08:02 99   /opt/my lib/libsp ace.so (deleted)\n"
	"7f0000300000-7f0000301000 r-xp 00000000 00:00 0                  \n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                  [vdso]\n"
	"7ffd00010000-7ffd00031000 rw-p 00000000 00:00 0                  [stack]\n";

static struct procmaps *parse(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct procmaps *pm = NULL;

	CHECK(f && procmaps__parse(f, 42, &pm) == 0, "parse");
	if (f)
		fclose(f);
	return pm;
}

static void test_kept_and_fields(void)
{
	struct procmaps *pm = parse(maps_text);

	if (!pm)
		return;
	CHECK(pm->pid == 42 && pm->nr == 4, "executable mappings only: %zu", pm->nr);
	CHECK(pm->maps[0].start == 0x401000 && pm->maps[0].pgoff == 0x1000 &&
		      pm->maps[0].inode == 1234 && pm->maps[0].dev == makedev(0xfd, 1),
	      "fields of the first");
	CHECK(strcmp(pm->maps[1].path, "/opt/my lib/libsp ace.so") == 0 && pm->maps[1].deleted,
	      "spaces kept, (deleted) stripped: '%s'", pm->maps[1].path);
	CHECK(pm->maps[2].path == NULL, "anonymous executable mapping has no path");
	CHECK(strcmp(pm->maps[3].path, "[vdso]") == 0, "pseudo paths kept");
	procmaps__free(pm);
}

static void test_find_edges(void)
{
	struct procmaps *pm = parse(maps_text);
	const struct procmap *m;

	if (!pm)
		return;
	m = procmaps__find(pm, 0x401000);
	CHECK(m && m->start == 0x401000, "start is inside");
	CHECK(procmaps__find(pm, 0x402000) == NULL, "end is outside");
	m = procmaps__find(pm, 0x401fff);
	CHECK(m && m->start == 0x401000, "last byte inside");
	CHECK(procmaps__find(pm, 0x400500) == NULL, "non-executable mapping not kept");
	CHECK(procmaps__find(pm, 0x7f0000250000) == NULL, "gap");
	CHECK(procmaps__find(pm, 0) == NULL && procmaps__find(pm, ~0ULL) == NULL, "ends");
	procmaps__free(pm);
}

/* Text from elsewhere (a saved snapshot) may be out of order; the last line
 * may lack its newline; a path may hold "(deleted)" without being deleted. */
static void test_odd_lines(void)
{
	static const char text[] =
		"7f0000100000-7f0000200000 r-xp 00000000 103:02 7 /tmp/a (deleted) b\n"
		"00401000-00402000 r-xp 00001000 fd:01 1234 /usr/bin/app\n"
		"7f0000000000-7f0000001000 --xp 00000000 00:00 0";
	struct procmaps *pm = parse(text);

	if (!pm)
		return;
	CHECK(pm->nr == 3, "all three executable: %zu", pm->nr);
	if (pm->nr != 3)
		goto out;
	CHECK(pm->maps[0].start == 0x401000 && pm->maps[1].start == 0x7f0000000000 &&
		      pm->maps[2].start == 0x7f0000100000,
	      "sorted by start");
	CHECK(pm->maps[1].path == NULL && pm->maps[1].end == 0x7f0000001000,
	      "anonymous, no newline");
	CHECK(strcmp(pm->maps[2].path, "/tmp/a (deleted) b") == 0 && !pm->maps[2].deleted,
	      "only a final \" (deleted)\" marks deletion: '%s'", pm->maps[2].path);
	CHECK(pm->maps[2].dev == makedev(0x103, 2) && major(pm->maps[2].dev) == 0x103,
	      "major above 0xff");
	CHECK(procmaps__find(pm, 0x7f0000000fff) == &pm->maps[1], "find after sorting");
out:
	procmaps__free(pm);
}

static void test_empty(void)
{
	struct procmaps *pm = parse("");

	CHECK(pm && pm->nr == 0, "no lines, no mappings");
	CHECK(pm && procmaps__find(pm, 0x1000) == NULL, "nothing found");
	procmaps__free(pm);
}

static void test_bad_input(void)
{
	const char *bad = "this is not a maps line\n";
	FILE *f = fmemopen((void *)bad, strlen(bad), "r");
	struct procmaps *pm = NULL;

	CHECK(procmaps__parse(f, 1, &pm) == -EINVAL && pm == NULL, "garbage is -EINVAL");
	fclose(f);
	CHECK(procmaps__load(4000000, &pm) == -ENOENT, "no such process");
	procmaps__free(NULL);
}

static __attribute__((noinline)) int here(void)
{
	return 1;
}

static void test_self(void)
{
	struct procmaps *pm = NULL;
	const struct procmap *m;
	char exe[4096] = {};

	CHECK(procmaps__load(getpid(), &pm) == 0, "own maps");
	if (!pm)
		return;
	m = procmaps__find(pm, (uintptr_t)here);
	CHECK(readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0, "exe");
	CHECK(m && m->exec && m->path && strcmp(m->path, exe) == 0, "own code in %s",
	      m && m->path ? m->path : "NULL");
	procmaps__free(pm);
}

/* A mapping's file opened through its link, else by its path if the
 * inode there is the mapping's; -ESRCH once the process has no address
 * space left (the caller keeps no verdict then). */
static void test_open_file(void)
{
	struct procmaps *pm = NULL;
	struct procmap m;
	pid_t child;
	int fd;

	CHECK(procmaps__load(getpid(), &pm) == 0 && procmaps__find(pm, (uintptr_t)here),
	      "own maps");
	if (!pm || !procmaps__find(pm, (uintptr_t)here))
		return;
	m = *procmaps__find(pm, (uintptr_t)here);
	fd = procmaps__open_file(getpid(), &m);
	CHECK(fd >= 0, "through map_files: %d", fd);
	if (fd >= 0)
		close(fd);
	m.start = 0x1000, m.end = 0x2000; /* no such link: by the path */
	fd = procmaps__open_file(getpid(), &m);
	CHECK(fd >= 0, "by its path, the same inode: %d", fd);
	if (fd >= 0)
		close(fd);
	m.inode++;
	CHECK(procmaps__open_file(getpid(), &m) == -ESTALE, "another file at the path: refused");
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	CHECK(procmaps__open_file(child, &m) == -ESRCH, "a process gone: -ESRCH");
	procmaps__free(pm);
}

/* procmaps__load (PROCMAP_QUERY where the kernel has it) gives what the
 * text of the same maps file gives, field by field, with a deleted file
 * (a memfd, mapped executable) among them. */
static void test_load_matches_text(void)
{
	struct procmaps *a = NULL, *b = NULL;
	int mfd = memfd_create("procmaps_test", MFD_CLOEXEC);
	void *code = MAP_FAILED;
	bool deleted = false;
	FILE *f;

	if (mfd >= 0 && !ftruncate(mfd, 4096))
		code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, mfd, 0);

	CHECK(procmaps__load(getpid(), &a) == 0, "load");
	f = fopen("/proc/self/maps", "re");
	CHECK(f && procmaps__parse(f, getpid(), &b) == 0, "parse the text");
	if (f)
		fclose(f);
	if (!a || !b)
		goto out;
	/* The gate VMA is not in the process's VMA tree, so PROCMAP_QUERY
	 * never returns it; it maps no file and has no symbols. */
	if (a->nr + 1 == b->nr && b->maps[b->nr - 1].path &&
	    !strcmp(b->maps[b->nr - 1].path, "[vsyscall]"))
		free(b->maps[--b->nr].path);
	CHECK(a->nr == b->nr && a->nr >= 2, "%zu and %zu executable mappings", a->nr, b->nr);
	for (size_t i = 0; i < a->nr && i < b->nr; i++) {
		const struct procmap *x = &a->maps[i], *y = &b->maps[i];

		CHECK(x->start == y->start && x->end == y->end && x->pgoff == y->pgoff &&
		      x->dev == y->dev && x->inode == y->inode && x->exec == y->exec &&
		      x->deleted == y->deleted &&
		      (x->path == y->path || (x->path && y->path && !strcmp(x->path, y->path))),
		      "mapping %zu: %s and %s", i, x->path ?: "(anon)", y->path ?: "(anon)");
		deleted |= x->deleted && x->path && strstr(x->path, "procmaps_test");
	}
	if (code != MAP_FAILED)
		CHECK(deleted, "the memfd's mapping is there, marked deleted");
out:
	if (code != MAP_FAILED)
		munmap(code, 4096);
	if (mfd >= 0)
		close(mfd);
	procmaps__free(a);
	procmaps__free(b);
}

int main(void)
{
	RUN(test_kept_and_fields);
	RUN(test_find_edges);
	RUN(test_odd_lines);
	RUN(test_empty);
	RUN(test_bad_input);
	RUN(test_self);
	RUN(test_open_file);
	RUN(test_load_matches_text);
	UNIT_EXIT();
}
