// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "procmaps.h"

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

int procmaps__load(int pid, struct procmaps **out)
{
	char path[64];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
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
