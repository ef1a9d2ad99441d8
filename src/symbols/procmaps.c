// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procmaps.h"
#include "regfile.h"

/* One line: "start-end perms offset major:minor inode   path". The path may
 * hold spaces, and ends in " (deleted)" when the file was removed. */
static int parse_line(char *line, struct procmap *m)
{
	unsigned int major, minor;
	char perms[8];
	int path_at = 0;
	size_t len;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &m->start,
		   &m->end, perms, &m->pgoff, &major, &minor, &m->inode, &path_at) < 7)
		return -EINVAL;
	m->dev = makedev(major, minor);
	m->exec = strchr(perms, 'x') != NULL;
	m->deleted = false;
	m->path = NULL;
	if (!m->exec)
		return 0; /* dropped by the caller: no path to copy */
	len = strlen(line + path_at);
	while (len && (line[path_at + len - 1] == '\n'))
		line[path_at + --len] = '\0';
	if (!len)
		return 0;
	if (len > 10 && strcmp(line + path_at + len - 10, " (deleted)") == 0) {
		m->deleted = true;
		line[path_at + len - 10] = '\0';
	}
	m->path = strdup(line + path_at);
	return m->path ? 0 : -ENOMEM;
}

static int cmp_start(const void *a, const void *b)
{
	const struct procmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int push(struct procmaps *pm, size_t *cap, const struct procmap *m)
{
	if (pm->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct procmap *nm = realloc(pm->maps, ncap * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		pm->maps = nm;
		*cap = ncap;
	}
	pm->maps[pm->nr++] = *m;
	return 0;
}

int procmaps__parse(FILE *f, int pid, struct procmaps **out)
{
	struct procmaps *pm;
	size_t cap = 0, n = 0;
	char *line = NULL;
	int err = 0;

	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->pid = pid;
	while (getline(&line, &n, f) > 0) {
		struct procmap m;

		err = parse_line(line, &m);
		if (err)
			goto out;
		if (!m.exec)
			continue;
		err = push(pm, &cap, &m);
		if (err) {
			free(m.path);
			goto out;
		}
	}
	/* read() can fail partway (the wait for the target's mmap lock is
	 * killable): a truncated list would pass for a smaller address space. */
	if (ferror(f)) {
		err = errno ? -errno : -EIO;
		goto out;
	}
	/* The kernel lists VMAs in order already; text from elsewhere may not. */
	if (pm->nr)
		qsort(pm->maps, pm->nr, sizeof(*pm->maps), cmp_start);
out:
	free(line);
	if (err) {
		procmaps__free(pm);
		return err;
	}
	*out = pm;
	return 0;
}

/*
 * PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h): an ioctl on the
 * maps file that returns one VMA at a time, filtered in the kernel. Asking
 * for executable ones only skips formatting every other VMA (and its path)
 * as text: about 8 us instead of 47 for a small process here, and the maps
 * reads were the agent's largest cost under process churn
 * (docs/benchmarks.md, "The agent"). The struct is the UAPI's, spelled out
 * since older headers (Debian 12's) lack it.
 */
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10

/* Decided at the first read: the kernel has the ioctl or not. */
static enum { QUERY_UNKNOWN, QUERY_YES, QUERY_NO } have_query;

/* One executable VMA from q into m, its name as the text would give it. */
static int query_to_map(const struct procmap_query *q, char *name, struct procmap *m)
{
	size_t len = q->vma_name_size ? strnlen(name, q->vma_name_size) : 0;

	*m = (struct procmap){ .start = q->vma_start, .end = q->vma_end, .pgoff = q->vma_offset,
			       .dev = makedev(q->dev_major, q->dev_minor), .inode = q->inode,
			       .exec = true };
	if (!len)
		return 0;
	if (len > 10 && strcmp(name + len - 10, " (deleted)") == 0) {
		m->deleted = true;
		name[len - 10] = '\0';
	}
	m->path = strdup(name);
	return m->path ? 0 : -ENOMEM;
}

/* The executable VMAs through PROCMAP_QUERY; -ENOTTY: no such ioctl. */
static int query_maps(int fd, int pid, struct procmaps **out)
{
	struct procmaps *pm = calloc(1, sizeof(*pm));
	char name[4096 + 16];
	uint64_t addr = 0;
	size_t cap = 0;
	int err = 0;

	if (!pm)
		return -ENOMEM;
	pm->pid = pid;
	for (;;) {
		struct procmap_query q = {
			.size = sizeof(q),
			.query_flags = PROCMAP_QUERY_VMA_EXECUTABLE |
				       PROCMAP_QUERY_COVERING_OR_NEXT_VMA,
			.query_addr = addr,
			.vma_name_addr = (uintptr_t)name,
			.vma_name_size = sizeof(name),
		};
		struct procmap m;

		if (ioctl(fd, PROCMAP_QUERY, &q)) {
			/* ENOENT: no executable VMA at or above addr */
			err = errno == ENOENT ? 0 : -errno;
			break;
		}
		err = query_to_map(&q, name, &m);
		if (!err)
			err = push(pm, &cap, &m);
		if (err) {
			free(m.path);
			break;
		}
		addr = q.vma_end;
	}
	if (err) {
		procmaps__free(pm);
		return err;
	}
	*out = pm; /* in address order, as the kernel walks them */
	return 0;
}

bool procmaps__has_query(void)
{
	struct procmaps *pm = NULL;

	if (have_query == QUERY_UNKNOWN && !procmaps__load(getpid(), &pm))
		procmaps__free(pm);
	return have_query == QUERY_YES;
}

int procmaps__load(int pid, struct procmaps **out)
{
	char path[64];
	FILE *f;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (have_query != QUERY_NO) {
		err = query_maps(fd, pid, out);
		if (err != -ENOTTY && err != -EINVAL) {
			have_query = QUERY_YES;
			close(fd);
			return err;
		}
		/* before 6.11: ENOTTY; a struct size it does not know: EINVAL */
		if (have_query == QUERY_UNKNOWN)
			have_query = QUERY_NO;
	}
	f = fdopen(fd, "re");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	err = procmaps__parse(f, pid, out);
	fclose(f);
	return err;
}

const struct procmap *procmaps__find(const struct procmaps *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct procmap *m = &pm->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

void procmaps__free(struct procmaps *pm)
{
	if (!pm)
		return;
	for (size_t i = 0; i < pm->nr; i++)
		free(pm->maps[i].path);
	free(pm->maps);
	free(pm);
}

void procmaps__file_link(int pid, const struct procmap *m, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
}

/* Whether pid still has an address space: a zombie keeps its pid but has
 * neither an exe link nor its mappings. */
static bool has_mm(int pid)
{
	char path[32], target[8];

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return readlink(path, target, sizeof(target)) > 0;
}

int procmaps__open_file(int pid, const struct procmap *m)
{
	char path[4096 + 32];
	struct stat sb;
	int fd;

	procmaps__file_link(pid, m, path, sizeof(path));
	fd = regfile__open(path, 0, NULL);
	if (fd >= 0)
		return fd;
	if (m->path && m->path[0] == '/' &&
	    snprintf(path, sizeof(path), "/proc/%d/root%s", pid, m->path) < (int)sizeof(path)) {
		fd = regfile__open(path, 0, &sb);
		if (fd >= 0 && (uint64_t)sb.st_ino == m->inode)
			return fd;
		if (fd >= 0) { /* another file at the path now */
			close(fd);
			fd = -ESTALE;
		}
	}
	if (!has_mm(pid))
		return -ESRCH;
	return fd < 0 ? fd : -ENOENT;
}
