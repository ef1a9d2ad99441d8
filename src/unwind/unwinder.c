// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bpf/bpf.h>

#include "debuginfo.h"
#include "ehframe.h"
#include "filecache.h"
#include "elf_syms.h"
#include "hashmap.h"
#include "log.h"
#include "procmaps.h"
#include "sampler.h"
#include "symbolize.h"
#include "unwinder.h"
#include "vec.h"

/* One file's rows in the BPF array. */
struct table {
	char key[2 * 64 + 1];	/* build-ID, or "dev:inode" without one */
	uint32_t first, nr;	/* rows [first, first + nr); nr 0: no table */
	uint32_t id;		/* never reused (the BPF row cache's key) */
	bool fp;		/* built with frame pointers (BPFS_UMAP_FP) */
	struct ehframe_seg *segs;
	size_t nr_segs;
	unsigned int refs;	/* process mappings that use it */
	bool by_build_id;	/* key is a build-ID */
	uint64_t idle_ns;	/* kept since then with no process; 0: in use */
};

/* A file as mapped: (device, inode) to its table, so the build-ID is read
 * once per file. */
struct file_ent {
	uint64_t dev, inode;
	struct table *t;
};

struct uproc {
	int pid;
	struct table *t[BPFS_UNWIND_MAPS]; /* held, one per entry mapping */
	size_t nr;
};

/* A free run of rows. */
struct extent {
	uint32_t first, nr;
};

struct unwinder {
	struct unwinder_opts o;
	struct hashmap *tables; /* key -> struct table */
	struct hashmap *files;	/* struct file_ent (dev, inode) -> itself */
	struct hashmap *procs;	/* pid -> struct uproc */
	struct vec free;	/* struct extent, sorted by first */
	struct bpfs_unwind_proc scratch;
	uint32_t last_id;	/* of the newest table */
	struct sampler *s;	/* unwinder__start: whose processes are sampled */
	struct unwinder_stats stats;
};

static uint64_t hash_file(const void *k)
{
	return hashmap__hash_bytes(k, 2 * sizeof(uint64_t), 0);
}

static bool equal_file(const void *a, const void *b)
{
	return !memcmp(a, b, 2 * sizeof(uint64_t));
}

int unwinder__new(const struct unwinder_opts *o, struct unwinder **out)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	struct extent *all;

	if (!u)
		return -ENOMEM;
	u->o = *o;
	u->free = VEC_INIT(struct extent);
	u->tables = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	u->files = hashmap__new(hash_file, equal_file);
	u->procs = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	all = vec__push(&u->free);
	if (!u->tables || !u->files || !u->procs || !all) {
		unwinder__free(u);
		return -ENOMEM;
	}
	all->first = 0;
	all->nr = o->max_rows;
	u->stats.max_rows = o->max_rows;
	*out = u;
	return 0;
}

/* After each change to the BPF per-process hash, before any row it no
 * longer names is reused: the BPF side's per-CPU copies of its entries
 * (proc_memo in bpf/unwind.bpf.h) are stale from then on. */
static void procs_changed(struct unwinder *u)
{
	if (u->o.procs_epoch)
		__atomic_add_fetch(u->o.procs_epoch, 1, __ATOMIC_SEQ_CST);
}

static void put_table(struct table *t)
{
	if (t && t->refs)
		t->refs--;
}

void unwinder__free(struct unwinder *u)
{
	void *val;

	if (!u)
		return;
	for (size_t i = 0; u->procs && hashmap__next(u->procs, &i, NULL, &val);) {
		struct uproc *p = val;

		bpf_map_delete_elem(u->o.procs_fd, &p->pid);
		free(p);
	}
	for (size_t i = 0; u->files && hashmap__next(u->files, &i, NULL, &val);)
		free(val);
	for (size_t i = 0; u->tables && hashmap__next(u->tables, &i, NULL, &val);) {
		free(((struct table *)val)->segs);
		free(val);
	}
	hashmap__free(u->procs);
	hashmap__free(u->files);
	hashmap__free(u->tables);
	vec__free(&u->free);
	free(u);
}

/* First fit; UINT32_MAX when no free run is long enough. */
static uint32_t rows_alloc(struct unwinder *u, uint32_t n)
{
	for (size_t i = 0; i < u->free.nr; i++) {
		struct extent *e = vec__at(&u->free, i);
		uint32_t first = e->first;

		if (e->nr < n)
			continue;
		e->first += n;
		e->nr -= n;
		if (!e->nr) {
			memmove(e, e + 1, (u->free.nr - i - 1) * sizeof(*e));
			u->free.nr--;
		}
		u->stats.rows += n;
		if (u->stats.rows > u->stats.rows_peak)
			u->stats.rows_peak = u->stats.rows;
		return first;
	}
	return UINT32_MAX;
}

/* Gives rows back, merged with the free runs beside them. */
static void rows_free(struct unwinder *u, uint32_t first, uint32_t n)
{
	size_t i = 0;
	struct extent *e;

	if (!n)
		return;
	u->stats.rows -= n;
	while (i < u->free.nr && ((struct extent *)vec__at(&u->free, i))->first < first)
		i++;
	if (i > 0) {
		e = vec__at(&u->free, i - 1);
		if (e->first + e->nr == first) {
			e->nr += n;
			if (i < u->free.nr && e->first + e->nr == e[1].first) {
				e->nr += e[1].nr;
				memmove(e + 1, e + 2, (u->free.nr - i - 1) * sizeof(*e));
				u->free.nr--;
			}
			return;
		}
	}
	if (i < u->free.nr) {
		e = vec__at(&u->free, i);
		if (first + n == e->first) {
			e->first = first;
			e->nr += n;
			return;
		}
	}
	if (!vec__push(&u->free)) {
		/* out of memory: the rows are lost to reuse, not to safety */
		u->stats.rows += n;
		return;
	}
	e = vec__at(&u->free, i);
	memmove(e + 1, e, (u->free.nr - 1 - i) * sizeof(*e));
	e->first = first;
	e->nr = n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}
/* Rows into the BPF array at first: through a mapping of just their pages
 * (an mmapable array maps at any page offset), unmapped at once, so the
 * array is not resident in the profiler; or into memory (tests). */
static int rows_write(struct unwinder *u, uint32_t first, const struct bpfs_unwind_row *rows,
		      size_t nr)
{
	size_t off = (size_t)first * sizeof(*rows), len = nr * sizeof(*rows);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), start = off & ~(page - 1);
	size_t span = (off + len - start + page - 1) & ~(page - 1);
	void *p;

	if (u->o.rows_fd < 0) {
		memcpy(&u->o.rows[first], rows, len);
		return 0;
	}
	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, u->o.rows_fd, (off_t)start);
	if (p == MAP_FAILED)
		return -1;
	memcpy((char *)p + (off - start), rows, len);
	munmap(p, span);
	return 0;
}


/*
 * The CFI of the file at path (mapped as name): its .eh_frame, with its own
 * .debug_frame for the code .eh_frame leaves out; when there is neither, or
 * .eh_frame covers less than half of the code and the file has no
 * .debug_frame (built -fno-asynchronous-unwind-tables: only the C
 * runtime's functions have FDEs), the .debug_frame of its separate debug
 * file, found where its symbols' is. Most files have a whole .eh_frame and
 * no debug file is looked for.
 */
static int load_cfi(struct unwinder *u, const char *path, const char *name, struct ehframe **out)
{
	struct ehframe *eh = NULL, *full;
	struct ehframe_stats st = {};
	char dbg[4096];
	int err, derr;

	err = ehframe__load(path, &eh);
	if (err && err != -ENOENT)
		return err;
	if (!err) {
		ehframe__stats(eh, &st);
		if (st.has_debug_frame || st.eh_bytes * 2 >= st.code_bytes)
			goto out;
	}
	if (debuginfo__find(path, name, u->o.dbg, ".debug_frame", dbg, sizeof(dbg)))
		goto out;
	derr = ehframe__load_debug(path, dbg, &full);
	if (derr) {
		/* what .eh_frame gave, if anything, still serves */
		p_dbg("%s: the .debug_frame of %s: %s", name, dbg, strerror(-derr));
		goto out;
	}
	p_dbg("%s: unwind table from the .debug_frame of %s", name, dbg);
	ehframe__free(eh);
	eh = full;
	err = 0;
out:
	if (!err)
		*out = eh;
	return err;
}

static void release_table(struct unwinder *u, struct table *t);

/* Releases the table kept longest with no process, for a new table's
 * rows; false when none is kept. */
static bool evict_idle(struct unwinder *u)
{
	struct table *oldest = NULL;
	void *val;

	for (size_t i = 0; hashmap__next(u->tables, &i, NULL, &val);) {
		struct table *t = val;

		if (t->idle_ns && !t->refs && (!oldest || t->idle_ns < oldest->idle_ns))
			oldest = t;
	}
	if (!oldest)
		return false;
	release_table(u, oldest);
	u->stats.evicted++;
	return true;
}

/* Rows for a table of nr rows, evicting kept tables to make room;
 * UINT32_MAX when they do not fit (said once, counted as full). */
static uint32_t alloc_table_rows(struct unwinder *u, size_t nr, const char *name)
{
	uint32_t first = nr && nr <= u->o.max_rows ? rows_alloc(u, nr) : UINT32_MAX;

	while (first == UINT32_MAX && nr && nr <= u->o.max_rows && evict_idle(u))
		first = rows_alloc(u, nr);
	if (first == UINT32_MAX && u->stats.full++ == 0)
		p_warn("unwind tables full (%" PRIu64 " rows in use): %s and later files "
		       "are walked by frame pointers; raise --unwind-rows", u->stats.rows, name);
	return first;
}

/* t's rows are [first, first + nr), written: t takes them, and eh's
 * segments. Returns 0 or -ENOMEM (the rows are still the caller's). */
static int take_rows(struct table *t, const struct ehframe *eh, uint32_t first, size_t nr)
{
	const struct ehframe_seg *segs = ehframe__segs(eh, &t->nr_segs);

	t->segs = malloc(t->nr_segs * sizeof(*segs));
	if (!t->segs && t->nr_segs)
		return -ENOMEM;
	memcpy(t->segs, segs, t->nr_segs * sizeof(*segs));
	t->first = first;
	t->nr = nr;
	return 0;
}

/* A table built but not placed (rows unwritable, a second build that
 * disagreed with the first, no memory for its segments): said, as the
 * full array is; load_table neither counts it as a file without one. */
#define ERR_SAID (-EALREADY)

static int not_placed(struct unwinder *u, const char *name, uint32_t first, size_t nr, int err)
{
	rows_free(u, first, nr);
	if (err == -ECANCELED)
		return err;
	p_warn("%s: cannot place its unwind table: %s; walked by frame pointers", name,
	       strerror(-err));
	return ERR_SAID;
}

/* Tables of files this large are built twice, streamed: rows counted,
 * then handed a chunk at a time into their place in the array, never
 * whole in the loader's memory (libLLVM's are 15 MB: a transient that
 * doubled an agent's RSS beside a build). BPFS_DEBUG_STREAM_MIN=BYTES
 * (tests): another threshold. */
#define STREAM_MIN_BYTES (16ULL << 20)
#define STREAM_CHUNK 4096

static uint64_t stream_min(void)
{
	const char *e = getenv("BPFS_DEBUG_STREAM_MIN");

	return e ? strtoull(e, NULL, 10) : STREAM_MIN_BYTES;
}

/* BPFS_DEBUG_STREAM_PAUSE_MS=N (tests): a pause between the two builds,
 * in which the process that mapped the file can exit. */
static void stream_pause(void)
{
	const char *e = getenv("BPFS_DEBUG_STREAM_PAUSE_MS");
	long ms = e ? strtol(e, NULL, 10) : 0;

	if (ms > 0)
		nanosleep(&(struct timespec){ ms / 1000, ms % 1000 * 1000000L }, NULL);
}

struct stream_to {
	struct unwinder *u;
	uint32_t first;
	size_t nr;
};

static int write_chunk(void *ctx, size_t at, const struct bpfs_unwind_row *rows, size_t n)
{
	struct stream_to *to = ctx;

	if (at + n > to->nr)
		return -E2BIG; /* the second build made more rows than the first */
	return rows_write(to->u, to->first + at, rows, n) ? -errno : 0;
}

/* Whether .eh_frame alone makes the table: it covers half the code or
 * more (libLLVM's covers 49%), or no debug file has a .debug_frame for
 * the rest (load_cfi's choice). */
static bool eh_enough(struct unwinder *u, const char *path, const char *name,
		      const struct ehframe_stats *st)
{
	char dbg[4096];

	return st->eh_bytes * 2 >= st->code_bytes ||
	       debuginfo__find(path, name, u->o.dbg, ".debug_frame", dbg, sizeof(dbg)) != 0;
}

/* The streamed build; -EAGAIN: the file wants the whole build (a
 * .debug_frame, or a debug file's to add), or is too small to stream. */
static int load_streamed(struct unwinder *u, struct table *t, const char *path, const char *name)
{
	struct stream_to to = { .u = u };
	struct ehframe_sink sink = { .fn = NULL, .chunk = STREAM_CHUNK };
	struct ehframe_stats st;
	struct ehframe *eh;
	struct stat sb;
	int err;

	if (stat(path, &sb) || (uint64_t)sb.st_size < stream_min())
		return -EAGAIN;
	err = ehframe__load_sink(path, &sink, &eh);
	if (err)
		return err == -ECANCELED ? err : -EAGAIN;
	ehframe__stats(eh, &st);
	ehframe__free(eh);
	if (st.has_debug_frame || !st.rows || !eh_enough(u, path, name, &st))
		return -EAGAIN;
	to.nr = st.rows;
	to.first = alloc_table_rows(u, to.nr, name);
	if (to.first == UINT32_MAX)
		return ERR_SAID;
	stream_pause();
	sink = (struct ehframe_sink){ .fn = write_chunk, .ctx = &to, .chunk = STREAM_CHUNK };
	err = ehframe__load_sink(path, &sink, &eh);
	if (!err) {
		ehframe__stats(eh, &st);
		err = st.rows == to.nr ? take_rows(t, eh, to.first, to.nr) : -EIO;
		t->fp = ehframe_stats__fp(&st);
		ehframe__free(eh);
	}
	if (err)
		return not_placed(u, name, to.first, to.nr, err);
	p_dbg("%s: unwind table of %zu rows at %u, streamed", name, to.nr, to.first);
	return 0;
}

/* The whole build: every row in memory, then written; *st its stats. */
static int load_whole(struct unwinder *u, struct table *t, const char *path, const char *name,
		      struct ehframe_stats *st)
{
	const struct bpfs_unwind_row *rows;
	struct ehframe *eh;
	uint32_t first;
	size_t nr;
	int err;

	err = load_cfi(u, path, name, &eh);
	if (err)
		return err;
	rows = ehframe__rows(eh, &nr);
	first = alloc_table_rows(u, nr, name);
	if (first == UINT32_MAX) {
		ehframe__free(eh);
		return ERR_SAID;
	}
	/* the BPF side reads them once a process entry points here */
	err = rows_write(u, first, rows, nr) ? -errno : take_rows(t, eh, first, nr);
	if (!err) {
		ehframe__stats(eh, st);
		t->fp = ehframe_stats__fp(st);
		p_dbg("%s: unwind table of %zu rows at %u%s", name, nr, first,
		      t->fp ? " (built with frame pointers)" : "");
	}
	ehframe__free(eh);
	return err ? not_placed(u, name, first, nr, err) : 0;
}

/* Builds the table of the file at path into the rows array. */
static void load_table(struct unwinder *u, struct table *t, const char *path, const char *name)
{
	struct ehframe_stats st = {};
	uint64_t t0 = now_ns();
	int err;

	err = load_streamed(u, t, path, name);
	if (!err)
		u->stats.streamed++;
	else if (err == -EAGAIN)
		err = load_whole(u, t, path, name, &st);
	if (err == -ECANCELED) {
		p_dbg("%s: unwind table abandoned: the run is ending", name);
		u->stats.abandoned++;
		return;
	}
	if (err == ERR_SAID)
		return;
	if (err) {
		p_dbg("%s: no unwind table: %s", name, strerror(-err));
		u->stats.no_table++;
		return;
	}
	u->stats.built++;
	u->stats.debug_frame += st.debug_fdes > 0;
	u->stats.debug_files += st.debug_fdes > 0 && st.debug_file;
	u->stats.build_ns += now_ns() - t0;
}

/* The file of mapping m, held open while its table is built, and the
 * path that reaches it through the descriptor: a process that exits in
 * the middle of the build (a compiler's cc1 lives 50 ms; a large file's
 * table is read twice) takes its /proc/PID/map_files link with it, and the
 * table would be lost for every later process of the file. */
static int hold_file(int pid, const struct procmap *m, char *path, size_t size)
{
	int fd = procmaps__open_file(pid, m);

	if (fd >= 0)
		snprintf(path, size, "/proc/self/fd/%d", fd);
	return fd;
}

/* The table kept under key, taken up again if it was idle; or NULL. */
static struct table *kept_table(struct unwinder *u, const char *key)
{
	struct table *t = hashmap__find(u->tables, key);

	if (t && t->idle_ns) { /* kept: taken up again, not built */
		t->idle_ns = 0;
		u->stats.reused++;
	}
	return t;
}

/* A new table under key, built from the file at path. */
static struct table *build_table(struct unwinder *u, const char *key, const char *path,
				 const char *name)
{
	struct table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->key, sizeof(t->key), "%s", key);
	t->by_build_id = !strchr(key, ':');
	t->id = ++u->last_id;
	load_table(u, t, path, name);
	if (hashmap__set(u->tables, t->key, t, NULL)) {
		rows_free(u, t->first, t->nr);
		free(t->segs);
		free(t);
		return NULL;
	}
	return t;
}

/* The table of mapping m's file: kept under the build-ID the file cache
 * read when it opened the file (it checks the inode it holds), else read
 * here, through the file held open while it is built. */
static struct table *table_of(struct unwinder *u, int pid, const struct procmap *m,
			      const struct mapped_file *file)
{
	char path[64], key[sizeof(((struct table *)0)->key)] = "";
	struct table *t;
	int fd;

	if (file && file->build_id) {
		snprintf(key, sizeof(key), "%s", file->build_id);
		if ((t = kept_table(u, key)))
			return t;
	}
	fd = hold_file(pid, m, path, sizeof(path));
	if (fd < 0)
		return NULL; /* gone: the next process of the file builds it */
	t = NULL;
	if (!key[0]) { /* no build-ID from the cache: read here, else the inode */
		if (elf_build_id__read(path, key, sizeof(key)))
			snprintf(key, sizeof(key), "%" PRIx64 ":%" PRIu64, m->dev, m->inode);
		t = kept_table(u, key);
	}
	if (!t)
		t = build_table(u, key, path, m->path);
	close(fd);
	return t;
}

/* The table of mapping m of pid, built when its file is new. */
static struct table *get_table(struct unwinder *u, int pid, const struct procmap *m,
			       const struct mapped_file *file)
{
	struct file_ent k = { m->dev, m->inode }, *f = hashmap__find(u->files, &k);
	struct table *t;

	if (f && f->t)
		return f->t;
	t = table_of(u, pid, m, file);
	if (!t)
		return NULL;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (f) {
			*f = k;
			if (hashmap__set(u->files, f, f, NULL)) {
				free(f);
				f = NULL;
			}
		}
	}
	if (f)
		f->t = t;
	return t;
}

/* File address = address - bias, from the PT_LOAD holding the mapping's
 * file offset. false when none does (then no rows are used). */
static bool mapping_bias(const struct table *t, const struct procmap *m, uint64_t *bias)
{
	for (size_t i = 0; i < t->nr_segs; i++) {
		const struct ehframe_seg *s = &t->segs[i];

		if (m->pgoff + 4096 > s->offset && m->pgoff < s->offset + s->filesz) {
			*bias = m->start - m->pgoff + s->offset - s->vaddr;
			return true;
		}
	}
	return false;
}

void unwinder__note_maps(struct unwinder *u, int pid, const struct procmaps *pm,
			 const struct mapped_file *const *files)
{
	struct uproc *p = hashmap__find(u->procs, (void *)(uintptr_t)pid), old;
	struct bpfs_unwind_proc *v = &u->scratch;
	size_t nr = 0;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		p->pid = pid;
		if (hashmap__set(u->procs, (void *)(uintptr_t)pid, p, NULL)) {
			free(p);
			return;
		}
	}
	old = *p;
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < pm->nr; i++) {
		const struct procmap *m = &pm->maps[i];
		struct bpfs_unwind_map *e;
		struct table *t = NULL;
		uint64_t bias;

		if (nr == BPFS_UNWIND_MAPS) {
			u->stats.maps_left_out += pm->nr - i;
			break;
		}
		e = &v->m[nr];
		e->start = m->start;
		e->end = m->end;
		/* files get their table; anonymous and special mappings
		 * ([vdso], JIT code) a frame-pointer step */
		if (m->path && m->path[0] == '/')
			t = get_table(u, pid, m, files ? files[i] : NULL);
		if (t && t->nr && mapping_bias(t, m, &bias)) {
			e->bias = bias;
			e->row_first = t->first;
			e->row_nr = t->nr;
			e->table_id = t->id;
			e->flags = t->fp ? BPFS_UMAP_FP : 0;
		}
		/* held even without rows: a file known to have no table is
		 * not read again while it is mapped */
		if (t)
			t->refs++;
		p->t[nr++] = t;
	}
	p->nr = nr;
	v->nr = nr;
	if (bpf_map_update_elem(u->o.procs_fd, &pid, v, BPF_ANY))
		u->stats.update_errors++;
	procs_changed(u);
	for (size_t i = 0; i < old.nr; i++)
		put_table(old.t[i]);
}

/* The files known to have t: none from now on (a kept table is found
 * again by build-ID, never by a device and inode another file may take). */
static void forget_files(struct unwinder *u, const struct table *t)
{
	void *val;

	for (size_t i = 0; hashmap__next(u->files, &i, NULL, &val);) {
		struct file_ent *f = val;

		if (f->t == t) {
			hashmap__delete(u->files, f, NULL, NULL);
			free(f);
			i = 0; /* deleting may move entries */
		}
	}
}

static void release_table(struct unwinder *u, struct table *t)
{
	forget_files(u, t);
	hashmap__delete(u->tables, t->key, NULL, NULL);
	rows_free(u, t->first, t->nr);
	free(t->segs);
	free(t);
	u->stats.released++;
}

size_t unwinder__sweep(struct unwinder *u)
{
	uint64_t now = now_ns();
	size_t released = 0;
	struct table *dead[64];
	size_t nr_dead;
	void *val;

	for (size_t i = 0; hashmap__next(u->procs, &i, NULL, &val);) {
		struct uproc *p = val;

		if (kill(p->pid, 0) == 0 || errno != ESRCH)
			continue;
		bpf_map_delete_elem(u->o.procs_fd, &p->pid);
		procs_changed(u);
		for (size_t j = 0; j < p->nr; j++)
			put_table(p->t[j]);
		hashmap__delete(u->procs, (void *)(uintptr_t)p->pid, NULL, NULL);
		free(p);
		i = 0;
	}
	/* A process entry no longer points at these rows: kept a while when
	 * known by build-ID, else (and then) released, their rows reused. */
	do {
		nr_dead = 0;
		for (size_t i = 0; nr_dead < 64 && hashmap__next(u->tables, &i, NULL, &val);) {
			struct table *t = val;

			if (t->refs)
				continue;
			if (!t->idle_ns && t->by_build_id && u->o.keep_ns) {
				t->idle_ns = now;
				forget_files(u, t);
				continue;
			}
			if (!t->idle_ns || now - t->idle_ns >= u->o.keep_ns)
				dead[nr_dead++] = t;
		}
		for (size_t i = 0; i < nr_dead; i++)
			release_table(u, dead[i]);
		released += nr_dead;
	} while (nr_dead == 64);
	return released;
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *out)
{
	void *val;

	*out = u->stats;
	for (size_t i = 0; hashmap__next(u->tables, &i, NULL, &val);) {
		const struct table *t = val;

		if (t->idle_ns) {
			out->idle++;
			out->idle_rows += t->nr;
		}
	}
	out->tables = hashmap__size(u->tables);
	out->processes = hashmap__size(u->procs);
}

/* The table of the file at path, built now and kept as if its last process
 * had just gone: the first process that maps it takes it up at once. */
static void preload(struct unwinder *u, const char *path)
{
	char key[sizeof(((struct table *)0)->key)];
	struct table *t;

	if (!path || elf_build_id__read(path, key, sizeof(key)) || hashmap__find(u->tables, key))
		return;
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	memcpy(t->key, key, sizeof(t->key));
	t->by_build_id = true;
	t->id = ++u->last_id;
	load_table(u, t, path, path);
	t->idle_ns = now_ns();
	if (hashmap__set(u->tables, t->key, t, NULL)) {
		rows_free(u, t->first, t->nr);
		free(t->segs);
		free(t);
	}
}

void unwinder__preload_common(struct unwinder *u)
{
	Dl_info libc, ldso;

	if (!u->o.keep_ns)
		return;
	if (dladdr((void *)printf, &libc))
		preload(u, libc.dli_fname);
	if (getauxval(AT_BASE) && dladdr((void *)getauxval(AT_BASE), &ldso))
		preload(u, ldso.dli_fname);
}

static void on_maps(void *uw, int pid, const struct procmaps *pm,
		    const struct mapped_file *const *files)
{
	struct unwinder *u = uw;

	/* Not our own (~40 libraries whose tables would only delay the first
	 * ones of the processes sampled), nor a process -p or -- command does
	 * not select (a selected one's parent, whose maps are read for a
	 * child that forks without exec). */
	if (pid != getpid() && (!u->s || sampler__follows(u->s, pid)))
		unwinder__note_maps(u, pid, pm, files);
}

int unwinder__start(struct sampler *s, struct symbolizer *sym, uint32_t max_rows,
		    unsigned int keep_s, struct unwinder **out)
{
	struct unwinder_opts uo = { .max_rows = max_rows,
				    .dbg = symbolizer__debuginfo(sym),
				    .keep_ns = keep_s * 1000000000ULL };
	int err;

	err = sampler__unwind_maps(s, &uo.rows_fd, &uo.procs_fd, &uo.procs_epoch);
	if (err) {
		p_err("cannot map the unwind tables (%u rows): %s; try a smaller --unwind-rows "
		      "or --unwind fp", max_rows, strerror(-err));
		return err;
	}
	err = unwinder__new(&uo, out);
	if (err)
		return err;
	(*out)->s = s;
	symbolizer__set_maps_hook(sym, on_maps, *out);
	return 0;
}
