// SPDX-License-Identifier: GPL-2.0
/*
 * The CPython processes being profiled (interp_python.h, pyreg.h): each
 * process's mappings, as they are read, are checked for a CPython
 * interpreter (per file, once); a supported one gets its offsets into the
 * BPF `py_procs` map, so that its samples carry Python frames. The code
 * objects those frames name are read once per (process, object), when BPF
 * first reports them and while the process lives, and kept until the
 * process is forgotten: a process that exits keeps its names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "filecache.h"
#include "hashmap.h"
#include "interp_python.h"
#include "log.h"
#include "procmaps.h"
#include "pyreg.h"
#include "sampler.h"
#include "symbolize.h"
#include "vec.h"

/* A file seen mapped: a CPython or not (by device and inode). Most are
 * not: 24 bytes then, the interpreter's tables (600) only for one. */
struct pyfile {
	uint64_t dev, ino;
	int err;	 /* pybin__read's */
	struct pybin *b; /* owns; NULL unless err is 0 */
};

/* Files told apart at most: past it, those that are not a CPython are
 * forgotten (read again when met), so a host that runs new executables
 * for months (builds, deployments) does not grow this table. */
#define PY_FILES_MAX 8192

struct pyproc {
	int pid;
	bool supported;
	struct pylayout l;
};

struct code_key {
	uint64_t code;
	uint32_t pid, pad;
};

struct pyname {
	struct code_key k;
	int err; /* the read failed: named as unknown until reported again */
	uint64_t name_obj; /* the name's str object, to tell reuse */
	struct pycode c;
};

struct pyreg {
	int procs_fd; /* BPF py_procs; -1: none (tests) */
	struct sampler *s; /* told of each insert; NULL in tests */
	struct hashmap *files, *procs, *codes;
	struct code_key *pending;
	size_t nr_pending, cap_pending;
	bool said[16]; /* versions said unsupported (by minor, 2.x at 0) */
	struct pyreg_stats stats;
};

static uint64_t file_hash(const void *k)
{
	return hashmap__hash_bytes(k, 2 * sizeof(uint64_t), 0x9f);
}

static bool file_equal(const void *a, const void *b)
{
	return !memcmp(a, b, 2 * sizeof(uint64_t));
}

static uint64_t code_hash(const void *k)
{
	return hashmap__hash_bytes(k, sizeof(struct code_key), 0x3c);
}

static bool code_equal(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct code_key));
}

int pyreg__new(int procs_fd, struct pyreg **out)
{
	struct pyreg *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->procs_fd = procs_fd;
	r->files = hashmap__new(file_hash, file_equal);
	r->procs = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	r->codes = hashmap__new(code_hash, code_equal);
	if (!r->files || !r->procs || !r->codes) {
		pyreg__free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

static void free_name(struct pyname *n)
{
	pycode__free(&n->c);
	free(n);
}

static void free_file(struct pyfile *f)
{
	free(f->b);
	free(f);
}

/* The files that are not a CPython go (PY_FILES_MAX). */
static void forget_other_files(struct pyreg *r)
{
	struct vec gone = VEC_INIT(struct pyfile *);
	void *v;

	for (size_t i = 0; hashmap__next(r->files, &i, NULL, &v);)
		if (((struct pyfile *)v)->err && vec__append(&gone, &v, 1))
			break; /* out of memory: those listed go */
	for (size_t i = 0; i < gone.nr; i++) {
		struct pyfile *f = *(struct pyfile **)vec__at(&gone, i);

		hashmap__delete(r->files, f, NULL, NULL);
		free_file(f);
	}
	vec__free(&gone);
}

void pyreg__free(struct pyreg *r)
{
	void *v;

	if (!r)
		return;
	for (size_t i = 0; r->files && hashmap__next(r->files, &i, NULL, &v);)
		free_file(v);
	for (size_t i = 0; r->procs && hashmap__next(r->procs, &i, NULL, &v);)
		free(v);
	for (size_t i = 0; r->codes && hashmap__next(r->codes, &i, NULL, &v);)
		free_name(v);
	hashmap__free(r->files);
	hashmap__free(r->procs);
	hashmap__free(r->codes);
	free(r->pending);
	free(r);
}

/* pybin__read of m's file, through the descriptor opened for it. */
static int read_pybin(int pid, const struct procmap *m, struct pybin *b)
{
	char path[32];
	int fd = procmaps__open_file(pid, m), err;

	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = pybin__read(path, b);
	close(fd);
	return err;
}

static const struct pyfile *file_of(struct pyreg *r, int pid, const struct procmap *m)
{
	struct pyfile key = { .dev = m->dev, .ino = m->inode }, *f;
	struct pybin b;

	f = hashmap__find(r->files, &key);
	if (f)
		return f;
	if (hashmap__size(r->files) >= PY_FILES_MAX)
		forget_other_files(r);
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	*f = key;
	f->err = read_pybin(pid, m, &b);
	if (f->err == -ESRCH) { /* not read: the next process of the file reads it */
		free(f);
		return NULL;
	}
	if (!f->err && !(f->b = malloc(sizeof(b))))
		f->err = -ENOMEM;
	if (!f->err) {
		*f->b = b;
		r->stats.interpreters++;
	}
	if (hashmap__set(r->files, f, f, NULL)) {
		free_file(f);
		return NULL;
	}
	return f;
}

/* Says once per version that its frames stay native. */
static void say_unsupported(struct pyreg *r, const struct pybin *b, const char *path)
{
	int slot = b->major == 3 && b->minor >= 0 && b->minor < 16 ? b->minor : 0;

	r->stats.unsupported++;
	if (r->said[slot])
		return;
	r->said[slot] = true;
	if (b->minor < 0)
		p_warn("%s: a CPython of unknown version; its frames stay native", path);
	else
		p_warn("%s: CPython %d.%d; its frames stay native (Python frames are named for "
		       "CPython %s)", path, b->major, b->minor, pylayout__range());
}

/* The address of the file's vaddr in the process, from its mapping m. */
static uint64_t bias_of(const struct pybin *b, const struct procmap *m)
{
	return m->start - m->pgoff + b->exec_off - b->exec_vaddr;
}

static int put_proc(struct pyreg *r, int pid, const struct pybin *b, uint64_t bias,
		    struct pyproc *p)
{
	struct bpfs_py_proc v = {
		.eval_start = { b->eval + bias, b->eval_cold ? b->eval_cold + bias : 0 },
		.eval_end = { b->eval + b->eval_size + bias,
			      b->eval_cold ? b->eval_cold + b->eval_cold_size + bias : 0 },
		.runtime = b->runtime + bias,
		.code_type = b->code_type + bias,
		.off = p->l.bpf,
	};
	__u32 key = pid;

	if (r->procs_fd < 0)
		return 0;
	if (bpf_map_update_elem(r->procs_fd, &key, &v, BPF_ANY)) {
		r->stats.update_errors++;
		return -errno;
	}
	if (r->s)
		sampler__python_added(r->s);
	return 0;
}

/* pid maps CPython file b at mapping m. */
static void note_interpreter(struct pyreg *r, int pid, const struct pybin *b,
			     const struct procmap *m)
{
	struct pyproc *p = hashmap__find(r->procs, (void *)(uintptr_t)pid);
	uint64_t bias = bias_of(b, m);
	int n;

	if (p)
		return; /* known: its interpreter does not move */
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->pid = pid;
	if (hashmap__set(r->procs, (void *)(uintptr_t)pid, p, NULL)) {
		free(p);
		return;
	}
	if (!pylayout__get(b, &p->l)) {
		say_unsupported(r, b, m->path);
		return;
	}
	n = pylayout__from_members(&p->l, b->code_type + bias, py_read_process,
				   (void *)(uintptr_t)pid);
	p_dbg("pid %d: CPython %d.%d (%s), %d code fields from PyCode_Type", pid, b->major,
	      b->minor, m->path, n);
	p->supported = !put_proc(r, pid, b, bias, p);
	if (p->supported)
		r->stats.processes++;
}

void pyreg__note_maps(struct pyreg *r, int pid, const struct procmaps *pm)
{
	for (size_t i = 0; r && i < pm->nr; i++) {
		const struct procmap *m = &pm->maps[i];
		const struct pyfile *f;

		if (!m->path || m->path[0] != '/' || !m->exec)
			continue;
		f = file_of(r, pid, m);
		if (!f || f->err)
			continue;
		if (m->pgoff != (f->b->exec_off & ~4095ULL))
			continue; /* not the mapping of its code */
		if (f->b->major != 3 || f->b->minor < 0 || !f->b->eval) {
			say_unsupported(r, f->b, m->path);
			continue;
		}
		note_interpreter(r, pid, f->b, m);
	}
}

static void read_code(struct pyreg *r, const struct code_key *k);

/* Read now, in the drain: a few hundred bytes by process_vm_readv, no
 * file I/O, and a process may live only until the loader's next pass. */
void pyreg__on_code(struct pyreg *r, uint32_t pid, uint64_t code)
{
	struct code_key k = { .code = code, .pid = pid };

	r->stats.code_records++;
	if (r->nr_pending == 0) {
		read_code(r, &k);
		return;
	}
	if (r->nr_pending == r->cap_pending) {
		size_t cap = r->cap_pending ? 2 * r->cap_pending : 64;
		struct code_key *n = realloc(r->pending, cap * sizeof(*n));

		if (!n) {
			r->stats.code_unread++;
			return;
		}
		r->pending = n;
		r->cap_pending = cap;
	}
	r->pending[r->nr_pending++] = k;
}

/* Whether the object at n's address is still the one read: its name and
 * first line where they were (BPF reports each object again every half
 * second; one freed and another made at its address is read again).
 * Unknown when they cannot be read: the process is exiting (its last
 * blocks are reported as it goes) and keeps the names it had. */
enum same { SAME, OTHER, UNKNOWN };

static enum same still_same(const struct pyproc *p, const struct pyname *n)
{
	uint32_t off = p->l.co_qualname != BPFS_PY_NONE ? p->l.co_qualname : p->l.co_name;
	uint64_t name;
	int32_t first;

	if (n->err)
		return OTHER;
	if (py_read_process((void *)(uintptr_t)n->k.pid, n->k.code + off, &name, 8) ||
	    py_read_process((void *)(uintptr_t)n->k.pid, n->k.code + p->l.co_firstlineno, &first,
			    4))
		return UNKNOWN;
	return name == n->name_obj && first == n->c.firstlineno ? SAME : OTHER;
}

static void read_code(struct pyreg *r, const struct code_key *k)
{
	struct pyproc *p = hashmap__find(r->procs, (void *)(uintptr_t)k->pid);
	struct pyname *n = hashmap__find(r->codes, k);

	if (n) {
		if (!p || !p->supported || still_same(p, n) != OTHER)
			return;
		hashmap__delete(r->codes, k, NULL, NULL);
		free_name(n);
		r->stats.code_reread++;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return;
	n->k = *k;
	n->err = p && p->supported ?
			 pycode__read(&p->l, k->code, py_read_process, (void *)(uintptr_t)k->pid,
				      &n->c) :
			 -ENOENT;
	if (!n->err)
		py_read_process((void *)(uintptr_t)k->pid,
				k->code + (p->l.co_qualname != BPFS_PY_NONE ? p->l.co_qualname :
									       p->l.co_name),
				&n->name_obj, 8);
	if (n->err) {
		r->stats.code_unread++;
		p_dbg("pid %u: code object %#" PRIx64 " not read: %s", k->pid, k->code,
		      p && p->supported ? strerror(-n->err) : "no CPython known there");
	}
	else
		r->stats.codes++;
	if (hashmap__set(r->codes, &n->k, n, NULL))
		free_name(n);
}

void pyreg__read_pending(struct pyreg *r)
{
	for (size_t i = 0; r && i < r->nr_pending; i++)
		read_code(r, &r->pending[i]);
	if (r)
		r->nr_pending = 0;
}

static const char *const marks[] = {
	[BPFS_PY_MARK_NONE] = "[python: unknown frame]",
	[BPFS_PY_MARK_NO_THREAD] = "[python: no thread state]",
	[BPFS_PY_MARK_READ] = "[python: frame unreadable]",
	[BPFS_PY_MARK_BAD_CODE] = "[python: not a code object]",
	[BPFS_PY_MARK_TOO_DEEP] = "[python: too many frames]",
};

bool pyreg__name(struct pyreg *r, uint32_t pid, uint64_t word, struct pyreg_frame *out)
{
	struct code_key k = { .code = BPFS_PY_CODE(word), .pid = pid };
	struct pyproc *p;
	struct pyname *n;
	uint64_t why = BPFS_PY_INSTR(word);

	memset(out, 0, sizeof(*out));
	if (!k.code) {
		out->marker = true;
		out->name = why < sizeof(marks) / sizeof(marks[0]) ? marks[why] : marks[0];
		return true;
	}
	if (r)
		pyreg__read_pending(r); /* reported after the last drain */
	n = r ? hashmap__find(r->codes, &k) : NULL;
	if (!n || n->err) {
		out->name = "[python: code not read]";
		out->marker = true;
		return false;
	}
	p = hashmap__find(r->procs, (void *)(uintptr_t)pid);
	out->name = n->c.name;
	out->file = n->c.file[0] ? n->c.file : NULL;
	out->first_line = n->c.firstlineno;
	out->line = p ? pycode__line(&p->l, n->c.lines, n->c.nr_lines, n->c.firstlineno,
				     (uint32_t)BPFS_PY_INSTR(word)) :
			0;
	return true;
}

void pyreg__forget(struct pyreg *r, int pid)
{
	struct pyproc *p;
	__u32 key = pid;
	void *v;

	if (!r)
		return;
	if (hashmap__delete(r->procs, (void *)(uintptr_t)pid, NULL, (void **)&p)) {
		if (p->supported && r->procs_fd >= 0)
			bpf_map_delete_elem(r->procs_fd, &key);
		free(p);
	}
	for (size_t i = 0; hashmap__next(r->codes, &i, NULL, &v);) {
		struct pyname *n = v;

		if (n->k.pid != (uint32_t)pid)
			continue;
		hashmap__delete(r->codes, &n->k, NULL, NULL);
		free_name(n);
		r->stats.codes_released++;
		i = 0; /* deleting may move entries */
	}
}

void pyreg__stats(const struct pyreg *r, struct pyreg_stats *out)
{
	void *v;

	*out = r ? r->stats : (struct pyreg_stats){};
	out->files = r ? hashmap__size(r->files) : 0;
	for (size_t i = 0; r && hashmap__next(r->codes, &i, NULL, &v);)
		out->code_bytes += sizeof(struct pyname) + ((struct pyname *)v)->c.nr_lines;
}

int pyreg__start(struct sampler *s, struct symbolizer *sym, struct pyreg **out)
{
	int fd, err;

	*out = NULL;
	if (sampler__python_map(s, &fd))
		return 0; /* not walked: --no-python, an older kernel */
	err = pyreg__new(fd, out);
	if (err) {
		p_err("cannot set up the names of Python frames: %s; try --no-python",
		      strerror(-err));
		return err;
	}
	(*out)->s = s;
	symbolizer__set_python(sym, *out);
	return 0;
}
