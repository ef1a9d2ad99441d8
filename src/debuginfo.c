// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "debuginfo.h"
#include "elf_syms.h"
#include "log.h"

#define STD_ROOT "/usr/lib/debug"

int debuginfo__file_crc(const char *path, unsigned int *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, n);
	close(fd);
	if (n < 0)
		return -EIO;
	*crc = c;
	return 0;
}

/* Loads candidate path if it exists and belongs to st: same build-ID when
 * both have one, and (for a debuglink) the right CRC. */
static int try_candidate(const struct symtab *st, const char *path, bool check_crc,
			 unsigned int want_crc, struct symtab **out)
{
	const char *want_id = symtab__build_id(st), *got_id;
	struct symtab *dbg;
	unsigned int crc;
	int err;

	if (access(path, R_OK))
		return -ENOENT;
	if (check_crc) {
		err = debuginfo__file_crc(path, &crc);
		if (err || crc != want_crc) {
			p_dbg("%s: debuglink CRC %08x, the binary wants %08x: rejected", path, crc,
			      want_crc);
			return -ENOENT;
		}
	}
	err = symtab__load(path, &dbg);
	if (err)
		return err;
	got_id = symtab__build_id(dbg);
	if (want_id && got_id && strcmp(want_id, got_id)) {
		p_dbg("%s: build-ID %s, the binary has %s: rejected", path, got_id, want_id);
		symtab__free(dbg);
		return -ENOENT;
	}
	if (!symtab__has_symtab(dbg)) {
		symtab__free(dbg);
		return -ENOENT;
	}
	err = symtab__adopt_layout(dbg, st);
	if (err) {
		symtab__free(dbg);
		return err;
	}
	*out = dbg;
	return 0;
}

/* The roots searched, --debug-dir ones first, then sysroot + /usr/lib/debug. */
static size_t roots(const struct debuginfo_opts *o, char out[][4096], size_t max)
{
	size_t n = 0;

	for (size_t i = 0; o && i < o->nr_roots && n < max; i++)
		snprintf(out[n++], 4096, "%s", o->roots[i]);
	if (n < max)
		snprintf(out[n++], 4096, "%s%s", o && o->sysroot ? o->sysroot : "", STD_ROOT);
	return n;
}

static int by_build_id(const struct symtab *st, char r[][4096], size_t nr, struct symtab **out)
{
	const char *id = symtab__build_id(st);
	char path[4096 + 256];

	if (!id || strlen(id) < 3)
		return -ENOENT;
	for (size_t i = 0; i < nr; i++) {
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", r[i], id, id + 2);
		if (!try_candidate(st, path, false, 0, out))
			return 0;
	}
	return -ENOENT;
}

static int by_debuglink(const struct symtab *st, const char *path, const struct debuginfo_opts *o,
			char r[][4096], size_t nr, struct symtab **out)
{
	unsigned int crc;
	const char *link = symtab__debuglink(st, &crc);
	char dir[4096], cand[8192 + 256], *copy;
	const char *sysroot = o && o->sysroot ? o->sysroot : "";

	if (!link || strchr(link, '/'))
		return -ENOENT; /* a name, never a path */
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	snprintf(dir, sizeof(dir), "%s", dirname(copy));
	free(copy);
	/* beside the file, in its .debug/, then under each root + its dir */
	snprintf(cand, sizeof(cand), "%s%s/%s", sysroot, dir, link);
	if (!try_candidate(st, cand, true, crc, out))
		return 0;
	snprintf(cand, sizeof(cand), "%s%s/.debug/%s", sysroot, dir, link);
	if (!try_candidate(st, cand, true, crc, out))
		return 0;
	for (size_t i = 0; i < nr; i++) {
		snprintf(cand, sizeof(cand), "%s%s/%s", r[i], dir, link);
		if (!try_candidate(st, cand, true, crc, out))
			return 0;
	}
	return -ENOENT;
}

int debuginfo__load(const struct symtab *st, const char *path, const struct debuginfo_opts *o,
		    struct symtab **out)
{
	static char r[9][4096];
	size_t nr = roots(o, r, 9);

	if (!by_build_id(st, r, nr, out))
		return 0;
	return by_debuglink(st, path, o, r, nr, out);
}
