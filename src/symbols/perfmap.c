// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfmap.h"
#include "regfile.h"
#include "vec.h"

struct entry {
	uint64_t start, size;
	char *name;
};

struct perfmap {
	struct entry *v;
	size_t nr;
	uint64_t unread; /* bytes past PERFMAP_MAX_BYTES */
};

static int cmp_start(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int add(struct perfmap *pm, size_t *cap, uint64_t start, uint64_t size, const char *name)
{
	if (pm->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct entry *nv = realloc(pm->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		pm->v = nv;
		*cap = ncap;
	}
	pm->v[pm->nr].name = strdup(name);
	if (!pm->v[pm->nr].name)
		return -ENOMEM;
	pm->v[pm->nr].start = start;
	pm->v[pm->nr++].size = size;
	return 0;
}

/* One "START SIZE NAME" line, NUL-terminated in place of its '\n'. */
static int parse_line(struct perfmap *pm, size_t *cap, char *line)
{
	uint64_t start, size;
	int name_at = 0;

	if (sscanf(line, "%" SCNx64 " %" SCNx64 " %n", &start, &size, &name_at) < 2 || !name_at)
		return 0;
	return add(pm, cap, start, size, line + name_at);
}

/* Reads lines from f, at most PERFMAP_MAX_BYTES. Lines are cut by '\n'
 * itself, not by what fgets and strlen see: a NUL byte in garbage must not
 * make the next line look like the rest of a long one. Lines longer than
 * PERFMAP_LINE_MAX and lines with a NUL are skipped whole. */
static int parse(FILE *f, uint64_t file_size, struct perfmap *pm)
{
	char *buf = malloc(2 * PERFMAP_LINE_MAX);
	size_t have = 0, cap = 0, got;
	bool skip = false; /* inside a line too long to keep */
	uint64_t done = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (!err && (got = fread(buf + have, 1, 2 * PERFMAP_LINE_MAX - have, f)) > 0) {
		char *p = buf, *nl;

		have += got;
		while (!err && (nl = memchr(p, '\n', buf + have - p))) {
			size_t len = nl - p + 1;

			done += len;
			if (done > PERFMAP_MAX_BYTES) {
				pm->unread = file_size > done - len ? file_size - (done - len) : 1;
				goto out;
			}
			*nl = '\0';
			if (!skip && len <= PERFMAP_LINE_MAX && !memchr(p, '\0', len - 1))
				err = parse_line(pm, &cap, p);
			skip = false;
			p = nl + 1;
		}
		have -= p - buf;
		memmove(buf, p, have);
		if (have >= PERFMAP_LINE_MAX) { /* no '\n' in a line's worth: drop it */
			done += have;
			have = 0;
			skip = true;
		}
	}
	/* a last line without '\n' is not whole: a JIT may be writing it */
out:
	free(buf);
	return err;
}

int perfmap__load(const char *path, uid_t owner, struct perfmap **out)
{
	struct perfmap *pm = NULL;
	struct stat st;
	FILE *f = NULL;
	int fd, err;

	/* no symlink games, and the owner of what was opened */
	fd = regfile__open(path, O_NOFOLLOW, &st);
	if (fd < 0)
		return fd;
	if (st.st_uid != owner && st.st_uid != 0) {
		err = -EPERM;
		goto out;
	}
	f = fdopen(fd, "r");
	pm = calloc(1, sizeof(*pm));
	if (!f || !pm) {
		err = -ENOMEM;
		goto out;
	}
	fd = -1; /* f owns it */
	err = parse(f, st.st_size, pm);
	if (err)
		goto out;
	/* an empty map has no array: qsort(NULL, 0) is undefined */
	if (pm->nr)
		qsort(pm->v, pm->nr, sizeof(*pm->v), cmp_start);
	*out = pm;
	pm = NULL;
out:
	perfmap__free(pm);
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	return err;
}

static unsigned long long entry_start(const void *e)
{
	return ((const struct entry *)e)->start;
}

uint64_t perfmap__unread(const struct perfmap *pm)
{
	return pm->unread;
}

const char *perfmap__find(const struct perfmap *pm, uint64_t addr)
{
	long i = bsearch_last_le(pm->v, pm->nr, sizeof(*pm->v), addr, entry_start);

	if (i < 0 || addr >= pm->v[i].start + pm->v[i].size)
		return NULL;
	return pm->v[i].name;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	for (size_t i = 0; i < pm->nr; i++)
		free(pm->v[i].name);
	free(pm->v);
	free(pm);
}
