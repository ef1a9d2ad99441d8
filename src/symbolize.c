// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "debuginfo.h"
#include "elf_syms.h"
#include "hashmap.h"
#include "ksyms.h"
#include "perfmap.h"
#include "log.h"
#include "procmaps.h"
#include "symbolize.h"

/* An executable file mapping made during the profile: what is at
 * [m.start, m.end) for the samples of generation gen and later, until a
 * later mapping covers the address. */
struct mapevent {
	uint32_t gen;
	bool exec;	  /* an exec: older events are of another image */
	uint64_t mm;
	struct procmap m; /* m.path owned; unset for an exec */
};

/* A process's executable mappings as read from /proc at one time. */
struct snapshot {
	struct procmaps *maps;
	uint64_t mm;	       /* the address space they are of; 0: not known */
	struct snapshot *older;
};

/* Snapshots kept per process: one per image it exec'd, and with mappings
 * followed, one more each time a read finds something unmapped (samples
 * taken before still need it). The oldest go first. */
#define MAX_SNAPSHOTS 8

struct proc {
	int pid;
	char comm[17];
	struct snapshot *snaps; /* newest first; NULL: never readable */
	bool new_image;	       /* exec'd since the last read */
	unsigned int reads;    /* times the maps were read */
	unsigned int eager;    /* announcements read at once since exec */
	uid_t uid;	       /* real uid, for the perf map's owner check */
	int nspid;	       /* pid in its own pid namespace */
	struct perfmap *jit;   /* /tmp/perf-PID.map, when it has JIT code */
	int ppid;	       /* parent, when it forked us without exec */
	uint64_t mm;	       /* address space last announced */
	bool dirty;	       /* new samples since the last read */
	bool refreshed;	       /* maps re-read once after a miss */
	struct mapevent *events; /* followed mappings, sorted by gen */
	size_t nr_events, cap_events;
};

struct file_key {
	uint64_t dev;
	uint64_t inode;
};

struct file_entry {
	struct file_key key;
	struct symtab *st; /* NULL: not an ELF we could read */
	char *path;	   /* as first seen mapped, for unnamed frames */
};

struct symbolizer {
	struct hashmap *procs;	/* pid -> struct proc */
	struct hashmap *files;	/* struct file_key -> struct file_entry */
	struct hashmap *strings; /* interned "module+0x..." names */
	struct symtab *vdso;
	bool vdso_tried;
	struct ksyms *ksyms;
	bool ksyms_tried;
	struct debuginfo_opts dbg;
	bool tracking;		/* mappings followed as made */
	struct symbolizer_stats stats;
};

static uint64_t hash_file_key(const void *k)
{
	return hashmap__hash_bytes(k, sizeof(struct file_key), 0);
}

static bool equal_file_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct file_key)) == 0;
}

static void free_snapshots(struct snapshot *s)
{
	while (s) {
		struct snapshot *older = s->older;

		procmaps__free(s->maps);
		free(s);
		s = older;
	}
}

static bool same_mapping(const struct procmap *a, const struct procmap *b)
{
	return a->start == b->start && a->dev == b->dev && a->inode == b->inode &&
	       a->pgoff == b->pgoff;
}

/* Whether a file mapping of old is not in new. */
static bool unmapped_since(const struct procmaps *old, const struct procmaps *new)
{
	for (size_t i = 0; i < old->nr; i++) {
		const struct procmap *m = &old->maps[i], *n;

		if (!m->path || m->path[0] != '/')
			continue;
		n = procmaps__find(new, m->start);
		if (!n || !same_mapping(m, n))
			return true;
	}
	return false;
}

/* Keeps pm as p's newest snapshot: in place of the newest when it only adds
 * to it, else in front of it. */
static int keep_snapshot(struct symbolizer *sym, struct proc *p, struct procmaps *pm)
{
	struct snapshot *s = p->snaps, **link;
	unsigned int n = 0;

	if (s && !p->new_image && s->mm == p->mm &&
	    !(sym->tracking && unmapped_since(s->maps, pm))) {
		procmaps__free(s->maps);
		s->maps = pm;
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->maps = pm;
	s->mm = p->mm;
	s->older = p->snaps;
	p->snaps = s;
	p->new_image = false;
	for (link = &p->snaps; *link && n < MAX_SNAPSHOTS; link = &(*link)->older)
		n++;
	free_snapshots(*link);
	*link = NULL;
	return 0;
}

int symbolizer__new(const struct symbolizer_opts *o, struct symbolizer **out)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));

	if (!sym)
		return -ENOMEM;
	if (o) {
		sym->dbg.roots = o->debug_dirs;
		sym->dbg.nr_roots = o->nr_debug_dirs;
	}
	sym->procs = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	sym->files = hashmap__new(hash_file_key, equal_file_key);
	sym->strings = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	if (!sym->procs || !sym->files || !sym->strings) {
		symbolizer__free(sym);
		return -ENOMEM;
	}
	*out = sym;
	return 0;
}

void symbolizer__free(struct symbolizer *sym)
{
	const void *key;
	void *val;
	size_t i;

	if (!sym)
		return;
	for (i = 0; sym->procs && hashmap__next(sym->procs, &i, NULL, &val);) {
		struct proc *p = val;

		free_snapshots(p->snaps);
		perfmap__free(p->jit);
		for (size_t e = 0; e < p->nr_events; e++)
			free(p->events[e].m.path);
		free(p->events);
		free(p);
	}
	for (i = 0; sym->files && hashmap__next(sym->files, &i, NULL, &val);) {
		symtab__free(((struct file_entry *)val)->st);
		free(((struct file_entry *)val)->path);
		free(val);
	}
	for (i = 0; sym->strings && hashmap__next(sym->strings, &i, &key, NULL);)
		free((void *)key);
	hashmap__free(sym->procs);
	hashmap__free(sym->files);
	hashmap__free(sym->strings);
	symtab__free(sym->vdso);
	ksyms__free(sym->ksyms);
	free(sym);
}

static const char *intern(struct symbolizer *sym, const char *s)
{
	char *copy = hashmap__find(sym->strings, s);

	if (copy)
		return copy;
	copy = strdup(s);
	if (!copy || hashmap__set(sym->strings, copy, copy, NULL)) {
		free(copy);
		return "[out of memory]";
	}
	return copy;
}

static struct proc *get_proc(struct symbolizer *sym, int pid)
{
	struct proc *p = hashmap__find(sym->procs, (void *)(uintptr_t)pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (hashmap__set(sym->procs, (void *)(uintptr_t)pid, p, NULL)) {
		free(p);
		return NULL;
	}
	return p;
}

static struct symtab *mapping_symtab(struct symbolizer *sym, int pid, const struct procmap *m);

/* Real uid and the pid inside the process's own pid namespace. */
static void read_ids(struct proc *p)
{
	char path[64], line[256];
	FILE *f;

	p->nspid = p->pid;
	snprintf(path, sizeof(path), "/proc/%d/status", p->pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Uid:", 4))
			p->uid = strtoul(line + 4, NULL, 10);
		else if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t') ? strrchr(line, '\t') : line + 6;

			p->nspid = atoi(last);
		}
	}
	if (f)
		fclose(f);
}

/*
 * A JIT's symbol map: /tmp/perf-NSPID.map seen from inside the process's
 * mount and pid namespaces, else the host's /tmp/perf-PID.map. Read only
 * when owned by the process's user or root, as perf checks.
 */
static void load_perf_map(struct proc *p)
{
	char path[128];
	struct perfmap *pm;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", p->pid, p->nspid);
	err = perfmap__load(path, p->uid, &pm);
	if (err == -ENOENT || err == -ESRCH) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", p->pid);
		err = perfmap__load(path, p->uid, &pm);
	}
	if (err == -EPERM)
		p_warn("ignoring %s: not owned by the process's user (uid %u) or root", path,
		       (unsigned int)p->uid);
	if (err)
		return;
	perfmap__free(p->jit);
	p->jit = pm;
}

static void load_maps(struct symbolizer *sym, struct proc *p)
{
	bool anon_exec = false;
	int err;
	struct procmaps *pm;

	p->dirty = false;
	err = procmaps__load(p->pid, &pm);
	if (err) {
		p_dbg("pid %d: maps unreadable: %s", p->pid, strerror(-err));
		return; /* gone: keep what we had */
	}
	if (!pm->nr) {
		/* A zombie's maps read empty: it has exited, keep what we had. */
		procmaps__free(pm);
		return;
	}
	p_dbg("pid %d: %zu executable mappings", p->pid, pm->nr);
	if (keep_snapshot(sym, p, pm)) {
		procmaps__free(pm);
		return;
	}
	/* Open the files now, through /proc/PID/map_files, while the process
	 * lives: a deleted binary or one in another mount namespace cannot be
	 * opened by its path after it exits. Cached per file, so cheap. */
	if (!p->reads)
		read_ids(p);
	for (size_t i = 0; i < pm->nr; i++) {
		if (pm->maps[i].path && pm->maps[i].path[0] == '/')
			mapping_symtab(sym, p->pid, &pm->maps[i]);
		anon_exec |= !pm->maps[i].path;
	}
	if (anon_exec)
		load_perf_map(p);
	if (!p->reads++)
		sym->stats.processes++;
}

/*
 * Called when the BPF side announces a process: new, exec'd (new comm), or
 * with a changed number of mappings. The first few announcements of a
 * process are read at once (early in its life it may be gone in
 * milliseconds, and ld.so is still mapping libraries); after that, reads
 * are batched by symbolizer__refresh(), since a process that keeps mapping
 * and unmapping memory would announce itself at every sample.
 */
#define EAGER_READS 8

void symbolizer__note_process(struct symbolizer *sym, int pid, int ppid, uint64_t mm,
			      const char *comm)
{
	struct proc *p = get_proc(sym, pid);

	if (!p)
		return;
	if (ppid > 0 && ppid != pid) {
		p->ppid = ppid;
		/* read the parent's maps while it lives: they are the child's
		 * if the child is gone before its own could be read */
		if (!hashmap__find(sym->procs, (void *)(uintptr_t)ppid))
			symbolizer__note_process(sym, ppid, 0, 0, comm);
	}
	p_dbg("process %d (%s) announced (maps read %u times)", pid, comm, p->reads);
	if (!p->comm[0])
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	if (mm && p->mm && mm != p->mm) {
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
		p->eager = 0; /* an exec: a new life */
		p->new_image = true;
	}
	if (mm)
		p->mm = mm;
	if (p->eager++ < EAGER_READS)
		load_maps(sym, p);
	else
		p->dirty = true;
}

void symbolizer__set_tracking(struct symbolizer *sym, bool on)
{
	sym->tracking = on;
}

/* The path of a mapping just made: the map_files link while it is mapped,
 * else the path this file was first seen at, else its maps entry. */
static char *mapping_path(struct symbolizer *sym, struct proc *p, const struct procmap *m)
{
	struct file_key key = { m->dev, m->inode };
	struct file_entry *fe = hashmap__find(sym->files, &key);
	char link[96], buf[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, p->pid, m->start,
		 m->end);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
			buf[n - 10] = 0;
		return strdup(buf);
	}
	if (fe && fe->path)
		return strdup(fe->path);
	for (const struct snapshot *s = p->snaps; s; s = s->older)
		for (size_t i = 0; i < s->maps->nr; i++)
			if (s->maps->maps[i].path && same_mapping(&s->maps->maps[i], m))
				return strdup(s->maps->maps[i].path);
	return NULL;
}

static int add_event(struct proc *p, const struct mapevent *ev)
{
	size_t i;

	if (p->nr_events == p->cap_events) {
		size_t cap = p->cap_events ? 2 * p->cap_events : 8;
		struct mapevent *v = realloc(p->events, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->events = v;
		p->cap_events = cap;
	}
	/* Records of several CPUs' rings arrive out of gen order. */
	for (i = p->nr_events; i > 0 && p->events[i - 1].gen > ev->gen; i--)
		p->events[i] = p->events[i - 1];
	p->events[i] = *ev;
	p->nr_events++;
	return 0;
}

void symbolizer__note_mapping(struct symbolizer *sym, int pid, const struct sym_mapping *sm)
{
	struct proc *p = get_proc(sym, pid);
	struct mapevent ev = {
		.gen = sm->gen,
		.exec = sm->exec,
		.mm = sm->mm,
		.m = { .start = sm->start, .end = sm->end, .pgoff = sm->pgoff, .inode = sm->ino,
		       .exec = true, .dev = makedev(sm->dev >> 20, sm->dev & 0xfffff) },
	};

	if (!p)
		return;
	if (!ev.exec) {
		sym->stats.mappings++;
		ev.m.path = mapping_path(sym, p, &ev.m);
		if (!ev.m.path || !mapping_symtab(sym, pid, &ev.m)) {
			sym->stats.mappings_unopened++;
			p_dbg("pid %d: mapping %" PRIx64 "-%" PRIx64 " of inode %" PRIu64
			      " could not be opened", pid, sm->start, sm->end, sm->ino);
		}
		if (!ev.m.path)
			ev.m.path = strdup("[unknown file]");
	}
	if (add_event(p, &ev))
		free(ev.m.path);
}

void symbolizer__refresh(struct symbolizer *sym)
{
	void *val;

	for (size_t i = 0; hashmap__next(sym->procs, &i, NULL, &val);) {
		struct proc *p = val;

		if (p->dirty)
			load_maps(sym, p);
	}
}

/* Opens the file behind a mapping the way the process sees it: map_files
 * works for deleted files and other mount namespaces while the process
 * lives; its root/ path while it lives; the plain path after that. */
static struct symtab *load_file(int pid, const struct procmap *m)
{
	char path[4096 + 64];
	struct symtab *st;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start,
		 m->end);
	if (!symtab__load(path, &st))
		return st;
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, m->path);
	if (!symtab__load(path, &st))
		return st;
	if (!symtab__load(m->path, &st))
		return st;
	return NULL;
}

static struct symtab *vdso_symtab(struct symbolizer *sym)
{
	const void *image = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct procmaps *self = NULL;
	const struct procmap *m;

	if (sym->vdso_tried)
		return sym->vdso;
	sym->vdso_tried = true;
	/* Every process maps the same vDSO image of this kernel: read ours. */
	if (!image || procmaps__load(getpid(), &self))
		return NULL;
	m = procmaps__find(self, (uintptr_t)image);
	if (m && symtab__load_mem(image, m->end - m->start, &sym->vdso))
		sym->vdso = NULL;
	procmaps__free(self);
	return sym->vdso;
}

static struct symtab *mapping_symtab(struct symbolizer *sym, int pid, const struct procmap *m)
{
	struct file_entry *fe;
	struct file_key key = { m->dev, m->inode };

	if (strcmp(m->path, "[vdso]") == 0)
		return vdso_symtab(sym);
	if (m->path[0] != '/')
		return NULL;
	fe = hashmap__find(sym->files, &key);
	if (fe)
		return fe->st;
	fe = calloc(1, sizeof(*fe));
	if (!fe)
		return NULL;
	fe->key = key;
	fe->path = strdup(m->path);
	fe->st = load_file(pid, m);
	if (fe->st)
		sym->stats.files++;
	if (fe->st && !symtab__has_symtab(fe->st)) {
		/* Stripped: its .symtab may be in a debug file. */
		struct symtab *dbg;

		if (!debuginfo__load(fe->st, m->path, &sym->dbg, &dbg)) {
			symtab__free(fe->st);
			fe->st = dbg;
			sym->stats.debug_files++;
		}
	}
	if (hashmap__set(sym->files, &fe->key, fe, NULL)) {
		symtab__free(fe->st);
		free(fe->path);
		free(fe);
		return NULL;
	}
	return fe->st;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The newest followed mapping of p made at or before gen that covers addr,
 * back to the last exec before gen (*exec_mm: the image it made, else 0). */
static const struct procmap *find_followed(const struct proc *p, uint32_t gen, uint64_t addr,
					   uint64_t *exec_mm)
{
	*exec_mm = 0;
	for (size_t i = p->nr_events; i-- > 0;) {
		const struct mapevent *e = &p->events[i];

		if (e->gen > gen)
			continue;
		if (e->exec) {
			*exec_mm = e->mm;
			return NULL;
		}
		if (addr >= e->m.start && addr < e->m.end)
			return &e->m;
	}
	return NULL;
}

/* Whether mapping m (read from /proc) was made after gen: then it was not
 * there yet for a sample of gen. */
static bool made_after(const struct proc *p, const struct procmap *m, uint32_t gen)
{
	for (size_t i = p->nr_events; i-- > 0 && p->events[i].gen > gen;)
		if (!p->events[i].exec && same_mapping(&p->events[i].m, m))
			return true;
	return false;
}

/* Whether a sample of gen can be in the image whose maps were read as mm
 * (0: not known): the image of the last exec before gen, or with no exec
 * before gen, an image older than the first exec after it. */
static bool image_at(const struct proc *p, uint64_t mm, uint32_t gen, uint64_t exec_mm)
{
	if (!mm || exec_mm)
		return !mm || mm == exec_mm;
	for (size_t i = 0; i < p->nr_events; i++)
		if (p->events[i].exec && p->events[i].gen > gen && p->events[i].mm == mm)
			return false;
	return true;
}

/* The mapping of maps read from /proc (as image mm) that covers addr, if
 * it was there at gen. */
static const struct procmap *find_read(const struct proc *p, const struct procmaps *maps,
				       uint64_t mm, uint32_t gen, uint64_t exec_mm, uint64_t addr)
{
	const struct procmap *m = maps ? procmaps__find(maps, addr) : NULL;

	if (!m || !image_at(p, mm, gen, exec_mm) || made_after(p, m, gen))
		return NULL;
	return m;
}

/* What p had mapped at addr at gen: followed mappings first (they are
 * newer than any maps read), then the maps read from /proc. */
static const struct procmap *find_own(const struct proc *p, uint32_t gen, uint64_t addr)
{
	uint64_t exec_mm;
	const struct procmap *m = find_followed(p, gen, addr, &exec_mm);

	for (const struct snapshot *s = p->snaps; s && !m; s = s->older)
		m = find_read(p, s->maps, s->mm, gen, exec_mm, addr);
	return m;
}

static const struct procmap *find_mapping(struct symbolizer *sym, struct proc *p, uint32_t gen,
					  uint64_t addr)
{
	const struct procmap *m = find_own(p, gen, addr);
	struct proc *parent = NULL;

	if (p->ppid && p->ppid != p->pid)
		parent = hashmap__find(sym->procs, (void *)(uintptr_t)p->ppid);
	/* Gone before its maps could be read: a child forked without exec
	 * (same comm) has its parent's mappings (as they are now: when it
	 * forked is not known). */
	if (!m && !p->snaps && parent && !strcmp(parent->comm, p->comm))
		return find_own(parent, UINT32_MAX, addr);
	/* A library loaded after we last read the maps: read them once more. */
	if (!m && !p->refreshed) {
		p->refreshed = true;
		load_maps(sym, p);
		m = find_own(p, gen, addr);
	}
	/* Not in any image of its own: a sample between fork and exec, whose
	 * address space was still a copy of the parent's. */
	if (!m && parent)
		m = find_own(parent, UINT32_MAX, addr);
	return m;
}

const char *symbolizer__user(struct symbolizer *sym, int pid, uint32_t gen, uint64_t addr,
			     bool ret_addr)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr, vaddr;
	struct proc *p = get_proc(sym, pid);
	const struct procmap *m;
	struct symtab *st;
	const char *name;
	char buf[512];

	sym->stats.user_frames++;
	m = p ? find_mapping(sym, p, gen, look) : NULL;
	if ((!m || !m->path) && p && p->jit && (name = perfmap__find(p->jit, look))) {
		sym->stats.user_named++;
		return name;
	}
	if (!m) {
		snprintf(buf, sizeof(buf), "[unmapped]+0x%" PRIx64, addr);
		return intern(sym, buf);
	}
	if (!m->path) {
		snprintf(buf, sizeof(buf), "[anon]+0x%" PRIx64, addr);
		return intern(sym, buf);
	}
	st = mapping_symtab(sym, pid, m);
	vaddr = look - m->start + m->pgoff;
	if (st && !symtab__off_to_vaddr(st, look - m->start + m->pgoff, &vaddr)) {
		name = symtab__find(st, vaddr, NULL);
		if (name) {
			sym->stats.user_named++;
			return name;
		}
	}
	/* Unnamed: module and the address addr2line -e wants (ELF vaddr of
	 * the original address, not the -1 used for the lookup). */
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, basename_of(m->path),
		 vaddr + (addr - look));
	return intern(sym, buf);
}

const char *symbolizer__kernel(struct symbolizer *sym, uint64_t addr, bool ret_addr)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr;
	const struct ksym *ks;
	char buf[512];

	sym->stats.kernel_frames++;
	if (!sym->ksyms_tried) {
		sym->ksyms_tried = true;
		if (ksyms__load(NULL, &sym->ksyms))
			p_warn("cannot read /proc/kallsyms: kernel frames show addresses only");
		else if (ksyms__hidden(sym->ksyms))
			p_warn("/proc/kallsyms hides addresses (kernel.kptr_restrict): run as root "
			       "or set sysctl kernel.kptr_restrict=0 for kernel names");
	}
	ks = sym->ksyms ? ksyms__find(sym->ksyms, look) : NULL;
	if (!ks) {
		snprintf(buf, sizeof(buf), "[kernel]+0x%" PRIx64, addr);
		return intern(sym, buf);
	}
	sym->stats.kernel_named++;
	if (!ks->module)
		return ks->name;
	snprintf(buf, sizeof(buf), "%s [%s]", ks->name, ks->module);
	return intern(sym, buf);
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	*out = sym->stats;
}
