// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <elfutils/debuginfod.h>
#include <gelf.h>

#include "debuginfo.h"
#include "elf_syms.h"
#include "hashmap.h"
#include "log.h"
#include "regfile.h"

#define STD_ROOT "/usr/lib/debug"

int debuginfo__file_crc(const char *path, unsigned int *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	ssize_t n;
	int fd = regfile__open(path, 0, NULL);

	if (fd < 0)
		return fd;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, n);
	close(fd);
	if (n < 0)
		return -EIO;
	*crc = c;
	return 0;
}

/*
 * What a search takes: accept() is given each candidate that exists (and
 * has the debuglink's CRC) in search order, and returns 0 to take it, or
 * -ENOENT to look further. Symbols and unwinding want different things of
 * the same files, found the same way.
 */
struct want {
	int (*accept)(const struct symtab *st, const char *path, void *ctx);
	void *ctx;
};

/* Loads candidate path's symbols if they belong to st: same build-ID when
 * both have one, and a .symtab. */
static int accept_symbols(const struct symtab *st, const char *path, void *ctx)
{
	const char *want_id = symtab__build_id(st), *got_id;
	struct symtab **out = ctx, *dbg;
	int err;

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

/* Takes path if it exists and, for a debuglink, has the right CRC. */
static int try_candidate(const struct symtab *st, const char *path, bool check_crc,
			 unsigned int want_crc, const struct want *w)
{
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
	return w->accept(st, path, w->ctx);
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

static int by_build_id(const struct symtab *st, char r[][4096], size_t nr, const struct want *w)
{
	const char *id = symtab__build_id(st);
	char path[4096 + 256];

	if (!id || strlen(id) < 3)
		return -ENOENT;
	for (size_t i = 0; i < nr; i++) {
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", r[i], id, id + 2);
		if (!try_candidate(st, path, false, 0, w))
			return 0;
	}
	return -ENOENT;
}

static int by_debuglink(const struct symtab *st, const char *path, const struct debuginfo_opts *o,
			char r[][4096], size_t nr, const struct want *w)
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
	if (!try_candidate(st, cand, true, crc, w))
		return 0;
	snprintf(cand, sizeof(cand), "%s%s/.debug/%s", sysroot, dir, link);
	if (!try_candidate(st, cand, true, crc, w))
		return 0;
	for (size_t i = 0; i < nr; i++) {
		snprintf(cand, sizeof(cand), "%s%s/%s", r[i], dir, link);
		if (!try_candidate(st, cand, true, crc, w))
			return 0;
	}
	return -ENOENT;
}

/*
 * libdebuginfod is opened only when servers are named, as elfutils' own
 * libdw does: linked in, it brings libcurl and its TLS, SSH and LDAP
 * libraries into every run (measured: +150 mappings, +5.5 MB of RSS, for a
 * feature most runs do not use). The header gives the types.
 */
static struct {
	__typeof__(debuginfod_begin) *begin;
	__typeof__(debuginfod_end) *end;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_set_progressfn) *set_progressfn;
	__typeof__(debuginfod_get_url) *get_url;
} lib;

#define LIBDEBUGINFOD "libdebuginfod.so.1"

static int open_lib(void)
{
	void *h;

	if (lib.begin)
		return 0;
	h = dlopen(LIBDEBUGINFOD, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		p_warn("DEBUGINFOD_URLS is set, but %s cannot be loaded (%s): install the "
		       "libdebuginfod1 package; looking for debug files locally only",
		       LIBDEBUGINFOD, dlerror());
		return -ENOENT;
	}
	lib.end = dlsym(h, "debuginfod_end");
	lib.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	lib.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
	lib.get_url = dlsym(h, "debuginfod_get_url");
	lib.begin = dlsym(h, "debuginfod_begin");
	if (!lib.end || !lib.find_debuginfo || !lib.set_progressfn || !lib.get_url ||
	    !lib.begin) {
		p_warn("%s lacks the functions bpfsampler uses (elfutils 0.179 or later is "
		       "needed); looking for debug files locally only", LIBDEBUGINFOD);
		lib.begin = NULL;
		return -ENOENT;
	}
	return 0; /* the library stays loaded: the client lives to exit */
}

/*
 * debuginfod, asked last. debuginfo has no object of its own (symbolize calls
 * debuginfo__load() with options only), so the one client of the process
 * lives here, made on the first lookup and ended by atexit(): a run that
 * never needs it never opens a connection, and no caller has to learn a
 * lifecycle. Lookups run on one thread (the symbolizer's).
 */
static const char no_answer[] = ""; /* value in `asked` for a miss */

/*
 * libdebuginfod waits DEBUGINFOD_TIMEOUT (default 90 s) for a server and
 * tries 1 + DEBUGINFOD_RETRY_LIMIT (2) times: a server that accepts and never
 * answers would hold the profile back for minutes. The API has no per-client
 * timeout, but its progress callback is the documented way to stop a lookup,
 * so unless the user set DEBUGINFOD_TIMEOUT we give up on a lookup whose
 * download has not begun after this long. A download under way (its size
 * known) is left to the library's own low-speed limit.
 */
#define START_WAIT_S 5

static struct {
	debuginfod_client *client;
	struct hashmap *asked; /* build-ID -> path in the client cache, or no_answer */
	bool off;	       /* no client, or a server timed out: stop asking */
	struct timespec start; /* of the lookup under way */
	bool gave_up;	       /* on_progress() stopped it */
} dfd;

static int on_progress(debuginfod_client *c, long done, long size)
{
	struct timespec now;

	/* size: set once a server has answered with a file */
	if (size > 0 || clock_gettime(CLOCK_MONOTONIC, &now))
		return 0;
	if (now.tv_sec - dfd.start.tv_sec < START_WAIT_S)
		return 0;
	dfd.gave_up = true;
	return 1;
}

static void debuginfod_cleanup(void)
{
	const void *key;
	void *val;

	for (size_t i = 0; dfd.asked && hashmap__next(dfd.asked, &i, &key, &val);) {
		free((void *)key);
		if (val != no_answer)
			free(val);
	}
	hashmap__free(dfd.asked);
	if (dfd.client)
		lib.end(dfd.client);
	memset(&dfd, 0, sizeof(dfd));
}

/* As gdb and perf do: only when the user named servers. libdebuginfod reads
 * DEBUGINFOD_URLS itself at each lookup; this only decides whether to ask. */
bool debuginfo__remote_wanted(void)
{
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);

	return urls && urls[strspn(urls, " \t")];
}

static int debuginfod_start(void)
{
	static bool registered;

	if (dfd.client)
		return 0;
	if (dfd.off) /* the client could not be made */
		return -ENOENT;
	if (!registered) {
		if (atexit(debuginfod_cleanup)) {
			dfd.off = true;
			return -ENOMEM;
		}
		registered = true;
	}
	if (open_lib()) {
		dfd.off = true;
		return -ENOENT;
	}
	errno = 0;
	dfd.asked = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	dfd.client = lib.begin();
	if (!dfd.asked || !dfd.client) {
		p_warn("debuginfod: cannot start a client: %s; looking for debug files "
		       "locally only",
		       strerror(errno ? errno : ENOMEM));
		debuginfod_cleanup();
		dfd.off = true;
		return -ENOENT;
	}
	/* This replaces the bar DEBUGINFOD_PROGRESS asks for: not hanging
	 * matters more to a profiler than a progress bar. */
	if (!getenv(DEBUGINFOD_TIMEOUT_ENV_VAR))
		lib.set_progressfn(dfd.client, on_progress);
	return 0;
}

/* Asks the servers once per build-ID per run, answer or not: a second
 * binary with the same build-ID reuses the file, a miss is not retried. */
static int fetch(const char *id, const char **path)
{
	char *key, *got = NULL;
	void *known = hashmap__find(dfd.asked, id);
	int fd;

	if (known || dfd.off) {
		*path = known && known != no_answer ? known : NULL;
		return 0;
	}
	key = strdup(id);
	if (!key)
		return -ENOMEM;
	dfd.gave_up = false;
	clock_gettime(CLOCK_MONOTONIC, &dfd.start);
	/* build_id_len 0: the build-ID is given as lowercase hex, as we hold it */
	fd = lib.find_debuginfo(dfd.client, (const unsigned char *)id, 0, &got);
	if (fd >= 0) {
		close(fd); /* in the client cache: loaded by path like a local file */
		if (lib.get_url(dfd.client))
			p_dbg("debuginfod: build-ID %s: fetched from %s into %s", id,
			      lib.get_url(dfd.client), got);
		else
			p_dbg("debuginfod: build-ID %s: in the client cache: %s", id, got);
	} else {
		got = NULL;
		if (dfd.gave_up)
			fd = -ETIME;
		p_dbg("debuginfod: build-ID %s: no debug file: %s", id, strerror(-fd));
		/* A server that timed out will likely time out again, each time
		 * as long: one wait per run is enough. */
		if (fd == -ETIME || fd == -ETIMEDOUT) {
			p_dbg("debuginfod: a server timed out, not asking again this run");
			dfd.off = true;
		}
	}
	if (hashmap__set(dfd.asked, key, got ? got : (void *)no_answer, NULL)) {
		free(key);
		free(got);
		return -ENOMEM;
	}
	*path = got;
	return 0;
}

int debuginfo__fetch(const struct symtab *st, struct symtab **out)
{
	const char *id = symtab__build_id(st), *path;
	int err;

	if (!id || !debuginfo__remote_wanted() || debuginfod_start())
		return -ENOENT;
	err = fetch(id, &path);
	if (err)
		return err;
	if (!path)
		return -ENOENT;
	/* A server's file gets the checks a local one gets: same build-ID,
	 * has a .symtab, laid out as the binary. */
	return try_candidate(st, path, false, 0, &(struct want){ accept_symbols, out });
}

/* Local candidates: by build-ID under each root, then by debuglink. */
static int search(const struct symtab *st, const char *path, const struct debuginfo_opts *o,
		  const struct want *w)
{
	static char r[9][4096];
	size_t nr = roots(o, r, 9);

	if (!by_build_id(st, r, nr, w))
		return 0;
	return by_debuglink(st, path, o, r, nr, w);
}

int debuginfo__load(const struct symtab *st, const char *path, const struct debuginfo_opts *o,
		    struct symtab **out)
{
	return search(st, path, o, &(struct want){ accept_symbols, out });
}

struct want_section {
	const char *section;
	char *out;
	size_t size;
};

static bool has_section(const char *path, const char *section)
{
	int fd = regfile__open(path, 0, NULL);
	bool has = false;
	Elf *elf;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		has = elf__has_contents(elf, section);
	if (elf)
		elf_end(elf);
	close(fd);
	return has;
}

/*
 * A debug file for the addresses of its binary (unwind rows): it must carry
 * the binary's build-ID, not only a matching name, since rows from another
 * build would send the walk to wrong return addresses. A binary without a
 * build-ID has only its debuglink's CRC to go by.
 */
static int accept_section(const struct symtab *st, const char *path, void *ctx)
{
	const char *want_id = symtab__build_id(st);
	struct want_section *ws = ctx;
	char got[2 * 64 + 1];

	if (want_id) {
		if (elf_build_id__read(path, got, sizeof(got)))
			snprintf(got, sizeof(got), "none");
		if (strcmp(want_id, got)) {
			p_warn("%s: build-ID %s, the binary has %s: another build, its %s "
			       "not used",
			       path, got, want_id, ws->section);
			return -ENOENT;
		}
	}
	if (!has_section(path, ws->section)) {
		p_dbg("%s: no %s", path, ws->section);
		return -ENOENT;
	}
	if ((size_t)snprintf(ws->out, ws->size, "%s", path) >= ws->size)
		return -ENAMETOOLONG;
	return 0;
}

int debuginfo__find(const char *file, const char *path, const struct debuginfo_opts *o,
		    const char *section, char *out, size_t size)
{
	struct want_section ws = { section, out, size };
	struct symtab *st;
	int err;

	err = symtab__load_ids(file, &st);
	if (err)
		return err;
	if (!symtab__build_id(st) && !symtab__debuglink(st, NULL))
		err = -ENOENT;
	else
		err = search(st, path, o, &(struct want){ accept_section, &ws });
	symtab__free(st);
	return err;
}
