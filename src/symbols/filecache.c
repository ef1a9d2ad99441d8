// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfo.h"
#include "ehframe.h"
#include "elf_syms.h"
#include "filecache.h"
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
	bool remote;		 /* stripped, no local debug file: ask the
				  * debuginfod servers after sampling */
	struct file_rec *next;	 /* every record, for freeing: a record
				  * replaced in `files` is still pointed to
				  * by the mappings it was found for */
	unsigned int refs;	 /* mappings that hold it (filecache__put) */
	unsigned int idle;	 /* sweeps it has spent with no holder */
	struct ehframe *funcs;	 /* its functions from .eh_frame, read the
				  * first time a frame in it had no symbol */
	bool funcs_tried;
};

/* The symbols of one build-ID, shared by every file that has it. */
struct id_syms {
	char id[2 * 64 + 1]; /* the key */
	struct symtab *st;
	unsigned int refs; /* files that use st */
};

struct filecache {
	struct hashmap *files;	 /* struct file_key -> newest struct file_rec */
	struct hashmap *by_id;	 /* build-ID -> struct id_syms */
	struct file_rec *all;
	const struct debuginfo_opts *dbg;
	struct symtab *vdso;
	bool vdso_tried;
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

int filecache__new(const struct debuginfo_opts *dbg, struct filecache **out)
{
	struct filecache *fc = calloc(1, sizeof(*fc));

	if (!fc)
		return -ENOMEM;
	fc->dbg = dbg;
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
		symtab__free(r->owned);
		ehframe__free(r->funcs);
		free(r->path);
		free(r);
	}
	for (size_t i = 0; fc->by_id && hashmap__next(fc->by_id, &i, NULL, &val);) {
		symtab__free(((struct id_syms *)val)->st);
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
	snprintf(path, size, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
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
				   bool *stripped)
{
	struct symtab *st, *dbg;

	*stripped = false;
	if (symtab__load(path, &st))
		return NULL;
	fc->stats.parsed++;
	if (!symtab__has_symtab(st)) {
		if (!debuginfo__load(st, mapped, fc->dbg, &dbg)) {
			symtab__free(st);
			st = dbg;
			fc->stats.debug_files++;
		} else {
			*stripped = true;
		}
	}
	fc->stats.symtab_bytes += symtab__mem_bytes(st);
	return st;
}

/* Fills r's symbols: the build-ID's, when they are loaded already. */
static void read_file(struct filecache *fc, struct file_rec *r, const char *path)
{
	struct id_syms *e;
	struct symtab *st;
	bool stripped;

	if (!elf_build_id__read(path, r->build_id, sizeof(r->build_id)))
		r->pub.build_id = r->build_id;
	e = r->pub.build_id ? hashmap__find(fc->by_id, r->build_id) : NULL;
	if (e) {
		fc->stats.shared++;
		r->pub.st = e->st;
		e->refs++;
		return;
	}
	st = load_symbols(fc, path, r->path, &stripped);
	r->pub.st = st;
	r->remote = stripped && r->pub.build_id && debuginfo__remote_wanted();
	if (!st || !r->pub.build_id) {
		r->owned = st;
		return;
	}
	e = calloc(1, sizeof(*e));
	if (e) {
		memcpy(e->id, r->build_id, sizeof(e->id));
		e->st = st;
		e->refs = 1;
	}
	if (!e || hashmap__set(fc->by_id, e->id, e, NULL)) {
		free(e);
		r->owned = st; /* still right, only not shared */
	}
}

const struct mapped_file *filecache__open(struct filecache *fc, int pid,
					  const struct procmap *m)
{
	struct file_key key = { m->dev, m->inode };
	struct file_rec *r = hashmap__find(fc->files, &key);
	char path[4096 + 64];
	struct stat sb;
	bool found;

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
	r->refs = 1;
	r->pub.path = r->path;
	r->next = fc->all;
	fc->all = r;
	fc->stats.files++;
	if (found) {
		r->mtime = sb.st_mtim;
		read_file(fc, r, path);
	}
	if (!r->pub.st) {
		fc->stats.unreadable++;
		p_dbg("%s (pid %d): no symbols could be read", m->path, pid);
	}
	/* a failed insert only costs a second open later */
	hashmap__set(fc->files, &r->key, r, NULL);
	return &r->pub;
}

/* Gives every record that had old the symbols of new instead. */
static void replace_symbols(struct filecache *fc, const struct symtab *old, struct symtab *new)
{
	for (struct file_rec *r = fc->all; r; r = r->next) {
		if (r->pub.st != old)
			continue;
		r->pub.st = new;
		r->remote = false;
		if (r->owned == old)
			r->owned = new;
	}
}

void filecache__fetch_remote(struct filecache *fc)
{
	for (struct file_rec *r = fc->all; r; r = r->next) {
		struct symtab *old = (struct symtab *)r->pub.st, *dbg;

		if (!r->remote)
			continue;
		r->remote = false;
		if (debuginfo__fetch(old, &dbg))
			continue;
		fc->stats.debug_files++;
		fc->stats.symtab_bytes += symtab__mem_bytes(dbg) - symtab__mem_bytes(old);
		if (!r->owned) { /* shared by build-ID: the map holds it */
			struct id_syms *e = hashmap__find(fc->by_id, r->build_id);

			if (e)
				e->st = dbg;
		}
		replace_symbols(fc, old, dbg);
		symtab__free(old);
	}
}

void filecache__put(struct filecache *fc, const struct mapped_file *f)
{
	struct file_rec *r = (struct file_rec *)f; /* pub is the first member */

	if (r && r->refs)
		r->refs--;
}

/* The symbols r had, given back: its own, or one use of its build-ID's. */
static void release_symbols(struct filecache *fc, struct file_rec *r)
{
	struct id_syms *e;

	if (r->owned) {
		fc->stats.symtab_bytes -= symtab__mem_bytes(r->owned);
		symtab__free(r->owned);
		return;
	}
	e = r->pub.st && r->pub.build_id ? hashmap__find(fc->by_id, r->build_id) : NULL;
	if (!e || e->st != r->pub.st || --e->refs)
		return;
	hashmap__delete(fc->by_id, e->id, NULL, NULL);
	fc->stats.symtab_bytes -= symtab__mem_bytes(e->st);
	symtab__free(e->st);
	free(e);
}

size_t filecache__sweep(struct filecache *fc, unsigned int idle)
{
	struct file_rec **link = &fc->all, *r;
	size_t released = 0;

	while ((r = *link)) {
		if (r->refs || ++r->idle < idle) {
			link = &r->next;
			continue;
		}
		*link = r->next;
		if (hashmap__find(fc->files, &r->key) == r)
			hashmap__delete(fc->files, &r->key, NULL, NULL);
		release_symbols(fc, r);
		ehframe__free(r->funcs);
		free(r->path);
		free(r);
		fc->stats.released++;
		released++;
	}
	fc->stats.held = 0;
	for (r = fc->all; r; r = r->next)
		fc->stats.held++;
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
		if (!find_file(pid, m, path, sizeof(path), &sb) &&
		    !ehframe__load(path, &r->funcs))
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

void filecache__stats(const struct filecache *fc, struct filecache_stats *out)
{
	*out = fc->stats;
}
