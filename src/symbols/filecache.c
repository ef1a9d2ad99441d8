// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfo.h"
#include "dwarf_lines.h"
#include "ehframe.h"
#include "elf_syms.h"
#include "filecache.h"
#include "gopclntab.h"
#include "hashmap.h"
#include "log.h"
#include "procmaps.h"

struct file_key {
	uint64_t dev;
	uint64_t inode;
};

struct file_rec {
	struct mapped_file pub;
	struct file_key key;
	struct timespec mtime;	 /* zero: could not be stat'ed */
	char *path;
	char build_id[2 * 64 + 1];
	struct symtab *owned;	 /* symbols of a file with no build-ID */
	struct dwlines *owned_lines; /* and its DWARF, when it has some */
	struct gopcln *owned_go; /* and its Go table, when read */
	bool remote;		 /* stripped, no local debug file: ask the
				  * debuginfod servers after sampling */
	struct file_rec *next;	 /* every record, for freeing: a record
				  * replaced in `files` is still pointed to
				  * by the mappings it was found for */
	int fd;			 /* owns: O_PATH to the file, or -1 (see
				  * filecache__known) */
	unsigned int refs;	 /* mappings that hold it (filecache__put) */
	unsigned int idle;	 /* sweeps it has spent with no holder */
	struct ehframe *funcs;	 /* its functions from .eh_frame, read the
				  * first time a frame in it had no symbol */
	bool funcs_tried;
};

/* The symbols of one build-ID, shared by every file that has it, and the
 * DWARF of the same file (binary or debug file) when it has some. */
struct id_syms {
	char id[2 * 64 + 1]; /* the key */
	struct symtab *st;
	struct dwlines *lines;
	struct gopcln *go;
	unsigned int refs; /* files that use st */
};

struct filecache {
	struct hashmap *files;	 /* struct file_key -> newest struct file_rec */
	struct hashmap *by_id;	 /* build-ID -> struct id_syms */
	struct file_rec *all;
	const struct debuginfo_opts *dbg;
	bool no_lines; /* DWARF is not read */
	unsigned int lines_open; /* DWARF readers held: each holds an fd */
	unsigned int lines_max;
	struct symtab *vdso;
	bool vdso_tried;
	unsigned int fds, max_fds; /* O_PATH descriptors held, and the cap */
	struct filecache_stats stats;
};

static uint64_t hash_key(const void *k)
{
	return hashmap__hash_bytes(k, sizeof(struct file_key), 0);
}

static bool equal_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct file_key)) == 0;
}

/*
 * Descriptors the cache may hold, for each of its two uses: a quarter of the
 * soft fd limit, at most CAP, so the perf events, rings and sockets keep the
 * rest. O_PATH descriptors of files already read (checked with fstat) get
 * 512; DWARF readers, each holding its file open (the map_files path goes
 * with its process), get 256: files past it have no lines (counted), and
 * under churn of thousands of distinct -g executables the profiler still has
 * fds for what it must open.
 */
static unsigned int fd_budget(unsigned int cap)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return cap;
	return rl.rlim_cur / 4 < cap ? rl.rlim_cur / 4 : cap;
}

static void close_fd(struct filecache *fc, struct file_rec *r)
{
	if (r->fd < 0)
		return;
	close(r->fd);
	r->fd = -1;
	fc->fds--;
}

int filecache__new(const struct debuginfo_opts *dbg, struct filecache **out)
{
	struct filecache *fc = calloc(1, sizeof(*fc));

	if (!fc)
		return -ENOMEM;
	fc->dbg = dbg;
	fc->lines_max = fd_budget(256);
	fc->max_fds = fd_budget(512);
	fc->files = hashmap__new(hash_key, equal_key);
	fc->by_id = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	if (!fc->files || !fc->by_id) {
		filecache__free(fc);
		return -ENOMEM;
	}
	*out = fc;
	return 0;
}

void filecache__free(struct filecache *fc)
{
	void *val;

	if (!fc)
		return;
	while (fc->all) {
		struct file_rec *r = fc->all;

		fc->all = r->next;
		close_fd(fc, r);
		symtab__free(r->owned);
		dwlines__free(r->owned_lines);
		gopcln__free(r->owned_go);
		ehframe__free(r->funcs);
		free(r->path);
		free(r);
	}
	for (size_t i = 0; fc->by_id && hashmap__next(fc->by_id, &i, NULL, &val);) {
		symtab__free(((struct id_syms *)val)->st);
		dwlines__free(((struct id_syms *)val)->lines);
		gopcln__free(((struct id_syms *)val)->go);
		free(val);
	}
	hashmap__free(fc->files);
	hashmap__free(fc->by_id);
	symtab__free(fc->vdso);
	free(fc);
}

/* The first way to the file that works (see filecache__open), into
 * path[size], with its status. */
static int find_file(int pid, const struct procmap *m, char *path, size_t size, struct stat *sb)
{
	procmaps__file_link(pid, m, path, size);
	if (!stat(path, sb))
		return 0;
	snprintf(path, size, "/proc/%d/root%s", pid, m->path);
	if (!stat(path, sb) && (uint64_t)sb->st_ino == m->inode)
		return 0;
	snprintf(path, size, "%s", m->path);
	if (!stat(path, sb) && (uint64_t)sb->st_ino == m->inode)
		return 0;
	return -ENOENT;
}

/* Symbols of the file at path (mapped as m->path), from its local debug
 * file when it is stripped (*stripped: there was none). */
static struct symtab *load_symbols(struct filecache *fc, const char *path, const char *mapped,
				   bool *stripped, bool *from_debug)
{
	struct symtab *st, *dbg;

	*stripped = false;
	*from_debug = false;
	if (symtab__load(path, &st))
		return NULL;
	fc->stats.parsed++;
	if (!symtab__has_symtab(st)) {
		if (!debuginfo__load(st, mapped, fc->dbg, &dbg)) {
			symtab__free(st);
			st = dbg;
			*from_debug = true;
			fc->stats.debug_files++;
		} else {
			*stripped = true;
		}
	}
	fc->stats.symtab_bytes += symtab__mem_bytes(st);
	return st;
}

/*
 * The DWARF of the file st was read from (the binary or its debug file),
 * opened now, while the path works (a /proc/PID/map_files link goes with
 * its process), and read at the first lookup. Only a file with a
 * .debug_info is opened: most libraries are stripped and cost nothing.
 */
static void close_lines(struct filecache *fc, struct dwlines *dl)
{
	if (!dl)
		return;
	dwlines__free(dl);
	fc->lines_open--;
}

static struct dwlines *open_lines_of(struct filecache *fc, const struct symtab *st)
{
	struct dwlines *dl;
	int err;

	if (fc->no_lines || !st || !symtab__has_debug_info(st) || !symtab__path(st))
		return NULL;
	if (fc->lines_open >= fc->lines_max) {
		if (!fc->stats.dwarf_skipped++)
			p_dbg("%u files with DWARF held: %s and the next get no source lines",
			      fc->lines_open, symtab__path(st));
		return NULL;
	}
	err = dwlines__open(symtab__path(st), &dl);
	if (err) {
		p_dbg("%s: no source lines: %s", symtab__path(st), strerror(-err));
		return NULL;
	}
	fc->stats.dwarf_files++;
	fc->lines_open++;
	return dl;
}

/*
 * The DWARF for the symbols st of the file mapped as `mapped`: st's own
 * file's, or, when st is the binary's own table without DWARF (strip
 * --strip-debug keeps .symtab; the DWARF went to a debug file), its debug
 * file's, looked for as a stripped file's symbols are (searched: that
 * was done already, for the symbols).
 */
static struct dwlines *open_lines(struct filecache *fc, const struct symtab *st,
				  const char *mapped, bool searched)
{
	struct symtab *dbg;
	struct dwlines *dl;

	if (fc->no_lines || !st || symtab__has_debug_info(st) || searched)
		return open_lines_of(fc, st);
	if (!symtab__build_id(st) && !symtab__debuglink(st, NULL))
		return NULL;
	if (debuginfo__load(st, mapped, fc->dbg, &dbg))
		return NULL;
	dl = open_lines_of(fc, dbg);
	symtab__free(dbg);
	return dl;
}

/*
 * The Go table of the file at path (gopclntab.h), when it adds something
 * to st: names for a binary without .symtab, or lines and inline frames for
 * one without DWARF. A Go binary with both keeps them (they agree: see
 * tests/unit/test_gopclntab.c). Read whole now: no fd is kept.
 */
static struct gopcln *open_go(struct filecache *fc, const struct symtab *st, const char *path,
			      const char *mapped, bool has_lines)
{
	struct gopcln *g;
	int err;

	if (!st || !symtab__maybe_go(st) || (symtab__has_symtab(st) && (has_lines || fc->no_lines)))
		return NULL;
	err = gopcln__open(path, &g);
	/* said when it was to name the functions: the user can do something */
	if (err == -ENOTSUP && !symtab__has_symtab(st))
		p_warn("%s: its Go table is of a layout before Go 1.16, or of a 32-bit "
		       "program: its functions keep addresses (build it with Go 1.16 or later, "
		       "or without -ldflags=-s)", mapped);
	else if (err && err != -ENOENT)
		p_dbg("%s: its Go table cannot be read: %s", mapped, strerror(-err));
	if (err)
		return NULL;
	fc->stats.go_files++;
	fc->stats.symtab_bytes += gopcln__mem_bytes(g);
	p_dbg("%s: Go %s+ table, %zu functions%s", mapped, gopcln__layout(g),
	      gopcln__nr_funcs(g), gopcln__has_inlines(g) ? "" : ", no inline trees found");
	return g;
}

/* Fills r's symbols: the build-ID's, when they are loaded already. */
static void read_file(struct filecache *fc, struct file_rec *r, const char *path)
{
	struct id_syms *e;
	struct symtab *st;
	bool stripped, from_debug;

	if (!elf_build_id__read(path, r->build_id, sizeof(r->build_id)))
		r->pub.build_id = r->build_id;
	e = r->pub.build_id ? hashmap__find(fc->by_id, r->build_id) : NULL;
	if (e) {
		fc->stats.shared++;
		r->pub.st = e->st;
		r->pub.lines = e->lines;
		r->pub.go = e->go;
		e->refs++;
		return;
	}
	st = load_symbols(fc, path, r->path, &stripped, &from_debug);
	r->pub.st = st;
	r->pub.lines = open_lines(fc, st, r->path, from_debug || stripped);
	r->pub.go = open_go(fc, st, path, r->path, r->pub.lines != NULL);
	r->remote = stripped && r->pub.build_id && debuginfo__remote_wanted();
	if (!st || !r->pub.build_id) {
		r->owned = st;
		r->owned_lines = r->pub.lines;
		r->owned_go = r->pub.go;
		return;
	}
	e = calloc(1, sizeof(*e));
	if (e) {
		memcpy(e->id, r->build_id, sizeof(e->id));
		e->st = st;
		e->lines = r->pub.lines;
		e->go = r->pub.go;
		e->refs = 1;
	}
	if (!e || hashmap__set(fc->by_id, e->id, e, NULL)) {
		free(e);
		r->owned = st; /* still right, only not shared */
		r->owned_lines = r->pub.lines;
		r->owned_go = r->pub.go;
	}
}

static bool same_mtime(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/*
 * The fast way: a file already read whose descriptor we hold is the same
 * inode as long as we hold it (its number cannot be reused before the
 * inode is freed), so one fstat tells whether it was rewritten in place,
 * with no walk through /proc/PID/map_files. With a churn of short-lived
 * processes this is most of the agent's /proc work (docs/benchmarks.md,
 * "The agent").
 */
const struct mapped_file *filecache__known(struct filecache *fc, const struct procmap *m)
{
	struct file_key key = { m->dev, m->inode };
	struct file_rec *r = hashmap__find(fc->files, &key);
	struct stat sb;

	if (!r || r->fd < 0 || !r->pub.st || fstat(r->fd, &sb) || !same_mtime(&sb.st_mtim, &r->mtime))
		return NULL;
	r->refs++;
	r->idle = 0;
	fc->stats.fast++;
	return &r->pub;
}

/* Holds the file of r open (O_PATH: no read access needed, nothing read)
 * for filecache__known, while the cap allows. */
static void hold_fd(struct filecache *fc, struct file_rec *r, const char *path)
{
	struct stat sb;

	if (r->fd >= 0 || fc->fds >= fc->max_fds)
		return;
	r->fd = open(path, O_PATH | O_CLOEXEC);
	if (r->fd < 0)
		return;
	/* the file found must be the one stat'ed (a path may have changed) */
	if (fstat(r->fd, &sb) || (uint64_t)sb.st_ino != r->key.inode ||
	    !same_mtime(&sb.st_mtim, &r->mtime)) {
		close(r->fd);
		r->fd = -1;
		return;
	}
	fc->fds++;
}

const struct mapped_file *filecache__open(struct filecache *fc, int pid,
					  const struct procmap *m)
{
	struct file_key key = { m->dev, m->inode };
	const struct mapped_file *known = filecache__known(fc, m);
	struct file_rec *r = hashmap__find(fc->files, &key);
	char path[4096 + 64];
	struct stat sb;
	bool found;

	if (known)
		return known;
	found = !find_file(pid, m, path, sizeof(path), &sb);
	/* Gone, or the same file: what we know is all there is. */
	if (r && (!found || (sb.st_mtim.tv_sec == r->mtime.tv_sec &&
			     sb.st_mtim.tv_nsec == r->mtime.tv_nsec))) {
		r->refs++;
		r->idle = 0;
		/* Its symbols could not be read last time (a process that
		 * exited while they were read through its map_files): this
		 * one may let us, or every later process of the file would
		 * go unnamed. */
		if (found && !r->pub.st) {
			r->mtime = sb.st_mtim;
			read_file(fc, r, path);
			if (r->pub.st)
				fc->stats.unreadable--;
		}
		if (found && r->pub.st)
			hold_fd(fc, r, path);
		return &r->pub;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->path = strdup(m->path);
	if (!r->path) {
		free(r);
		return NULL;
	}
	r->key = key;
	r->fd = -1;
	r->refs = 1;
	r->pub.path = r->path;
	r->next = fc->all;
	fc->all = r;
	fc->stats.files++;
	if (found) {
		r->mtime = sb.st_mtim;
		read_file(fc, r, path);
		if (r->pub.st)
			hold_fd(fc, r, path);
	}
	if (!r->pub.st) {
		fc->stats.unreadable++;
		p_dbg("%s (pid %d): no symbols could be read", m->path, pid);
	}
	/* a failed insert only costs a second open later */
	hashmap__set(fc->files, &r->key, r, NULL);
	return &r->pub;
}

/* Gives every record that had old the symbols (and DWARF) of new instead. */
static void replace_symbols(struct filecache *fc, const struct symtab *old, struct symtab *new,
			    struct dwlines *lines)
{
	for (struct file_rec *r = fc->all; r; r = r->next) {
		if (r->pub.st != old)
			continue;
		r->pub.st = new;
		r->pub.lines = lines;
		r->remote = false;
		if (r->owned == old) {
			r->owned = new;
			r->owned_lines = lines;
		}
	}
}

void filecache__fetch_remote(struct filecache *fc)
{
	for (struct file_rec *r = fc->all; r; r = r->next) {
		struct symtab *old = (struct symtab *)r->pub.st, *dbg;
		struct dwlines *lines;

		if (!r->remote)
			continue;
		r->remote = false;
		if (debuginfo__fetch(old, &dbg))
			continue;
		fc->stats.debug_files++;
		fc->stats.symtab_bytes += symtab__mem_bytes(dbg) - symtab__mem_bytes(old);
		/* a stripped file had no DWARF: the fetched debug file's is all */
		lines = open_lines_of(fc, dbg);
		if (!r->owned) { /* shared by build-ID: the map holds it */
			struct id_syms *e = hashmap__find(fc->by_id, r->build_id);

			if (e) {
				e->st = dbg;
				close_lines(fc, e->lines);
				e->lines = lines;
			}
		} else {
			close_lines(fc, r->owned_lines);
		}
		replace_symbols(fc, old, dbg, lines);
		symtab__free(old);
	}
}

void filecache__put(struct filecache *fc, const struct mapped_file *f)
{
	struct file_rec *r = (struct file_rec *)f; /* pub is the first member */

	if (r && r->refs)
		r->refs--;
}

static void close_go(struct filecache *fc, struct gopcln *g)
{
	fc->stats.symtab_bytes -= gopcln__mem_bytes(g);
	gopcln__free(g);
}

/* The symbols r had, given back: its own, or one use of its build-ID's. */
static void release_symbols(struct filecache *fc, struct file_rec *r)
{
	struct id_syms *e;

	if (r->owned) {
		fc->stats.symtab_bytes -= symtab__mem_bytes(r->owned);
		symtab__free(r->owned);
		close_lines(fc, r->owned_lines);
		close_go(fc, r->owned_go);
		return;
	}
	e = r->pub.st && r->pub.build_id ? hashmap__find(fc->by_id, r->build_id) : NULL;
	if (!e || e->st != r->pub.st || --e->refs)
		return;
	hashmap__delete(fc->by_id, e->id, NULL, NULL);
	fc->stats.symtab_bytes -= symtab__mem_bytes(e->st);
	symtab__free(e->st);
	close_lines(fc, e->lines);
	close_go(fc, e->go);
	free(e);
}

size_t filecache__sweep(struct filecache *fc, unsigned int idle)
{
	struct file_rec **link = &fc->all, *r;
	size_t released = 0;
	void *val;

	while ((r = *link)) {
		if (r->refs || ++r->idle < idle) {
			link = &r->next;
			continue;
		}
		*link = r->next;
		if (hashmap__find(fc->files, &r->key) == r)
			hashmap__delete(fc->files, &r->key, NULL, NULL);
		release_symbols(fc, r);
		close_fd(fc, r);
		fc->stats.symtab_bytes -= ehframe__mem_bytes(r->funcs);
		ehframe__free(r->funcs);
		free(r->path);
		free(r);
		fc->stats.released++;
		released++;
	}
	fc->stats.held = 0;
	for (r = fc->all; r; r = r->next) {
		fc->stats.held++;
		if (r->owned_lines && dwlines__trim(r->owned_lines))
			fc->stats.dwarf_released++;
	}
	for (size_t i = 0; hashmap__next(fc->by_id, &i, NULL, &val);) {
		struct id_syms *e = val;

		if (e->lines && dwlines__trim(e->lines))
			fc->stats.dwarf_released++;
	}
	return released;
}

uint64_t filecache__func_start(struct filecache *fc, const struct mapped_file *f, int pid,
				const struct procmap *m, uint64_t vaddr)
{
	struct file_rec *r = (struct file_rec *)f; /* pub is the first member */
	char path[4096 + 64];
	struct stat sb;

	if (!r)
		return 0;
	if (!r->funcs_tried) {
		r->funcs_tried = true;
		/* the ranges only: the rows are the unwinder's, in BPF */
		if (!find_file(pid, m, path, sizeof(path), &sb) &&
		    !ehframe__load_flags(path, NULL, EHFRAME_FUNCS_ONLY, &r->funcs))
			fc->stats.symtab_bytes += ehframe__mem_bytes(r->funcs);
	}
	return r->funcs ? ehframe__func_start(r->funcs, vaddr) : 0;
}

const struct symtab *filecache__vdso(struct filecache *fc)
{
	const void *image = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct procmaps *self = NULL;
	const struct procmap *m;

	if (fc->vdso_tried)
		return fc->vdso;
	fc->vdso_tried = true;
	/* Every process maps the same vDSO image of this kernel: read ours. */
	if (!image || procmaps__load(getpid(), &self))
		return NULL;
	m = procmaps__find(self, (uintptr_t)image);
	if (m && symtab__load_mem(image, m->end - m->start, &fc->vdso))
		fc->vdso = NULL;
	procmaps__free(self);
	fc->stats.symtab_bytes += symtab__mem_bytes(fc->vdso);
	return fc->vdso;
}

void filecache__set_lines(struct filecache *fc, bool on)
{
	fc->no_lines = !on;
}

void filecache__stats(const struct filecache *fc, struct filecache_stats *out)
{
	*out = fc->stats;
}
