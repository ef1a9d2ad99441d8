// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "debuginfo.h"
#include "elf_syms.h"
#include "hashmap.h"
#include "ksyms.h"
#include "perfmap.h"
#include "log.h"
#include "procmaps.h"
#include "symbolize.h"

struct proc {
	int pid;
	char comm[17];
	struct procmaps *maps; /* NULL: never readable */
	struct procmaps *old_maps; /* before the last exec: a sample inside
				    * execve still has the old image's stack */
	unsigned int reads;    /* times the maps were read */
	unsigned int eager;    /* announcements read at once since exec */
	uid_t uid;	       /* real uid, for the perf map's owner check */
	int nspid;	       /* pid in its own pid namespace */
	struct perfmap *jit;   /* /tmp/perf-PID.map, when it has JIT code */
	int ppid;	       /* parent, when it forked us without exec */
	uint64_t mm;	       /* address space last announced */
	bool dirty;	       /* new samples since the last read */
	bool refreshed;	       /* maps re-read once after a miss */
};

struct file_key {
	uint64_t dev;
	uint64_t inode;
};

struct file_entry {
	struct file_key key;
	struct symtab *st; /* NULL: not an ELF we could read */
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
		procmaps__free(((struct proc *)val)->maps);
		procmaps__free(((struct proc *)val)->old_maps);
		perfmap__free(((struct proc *)val)->jit);
		free(val);
	}
	for (i = 0; sym->files && hashmap__next(sym->files, &i, NULL, &val);) {
		symtab__free(((struct file_entry *)val)->st);
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
	procmaps__free(p->maps);
	p->maps = pm;
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
		if (p->maps) {
			procmaps__free(p->old_maps);
			p->old_maps = p->maps;
			p->maps = NULL;
		}
	}
	if (mm)
		p->mm = mm;
	if (p->eager++ < EAGER_READS)
		load_maps(sym, p);
	else
		p->dirty = true;
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

static const struct procmap *find_mapping(struct symbolizer *sym, struct proc *p, uint64_t addr)
{
	const struct procmap *m = p->maps ? procmaps__find(p->maps, addr) : NULL;
	struct proc *parent;

	/* Gone before its maps could be read: a child forked without exec
	 * (same comm) has its parent's mappings. */
	if (!p->maps && p->ppid && p->ppid != p->pid) {
		parent = hashmap__find(sym->procs, (void *)(uintptr_t)p->ppid);
		if (parent && parent->maps && !strcmp(parent->comm, p->comm))
			return procmaps__find(parent->maps, addr);
	}

	/* A library loaded after we first read the maps: read them once more. */
	if (!m && !p->refreshed) {
		p->refreshed = true;
		load_maps(sym, p);
		m = p->maps ? procmaps__find(p->maps, addr) : NULL;
	}
	if (!m && p->old_maps)
		m = procmaps__find(p->old_maps, addr);
	/* Not in any image of its own: a sample between fork and exec, whose
	 * address space was still a copy of the parent's. */
	if (!m && p->ppid && p->ppid != p->pid) {
		parent = hashmap__find(sym->procs, (void *)(uintptr_t)p->ppid);
		if (parent && parent->maps)
			m = procmaps__find(parent->maps, addr);
	}
	return m;
}

const char *symbolizer__user(struct symbolizer *sym, int pid, uint64_t addr, bool ret_addr)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr, vaddr;
	struct proc *p = get_proc(sym, pid);
	const struct procmap *m;
	struct symtab *st;
	const char *name;
	char buf[512];

	sym->stats.user_frames++;
	m = p ? find_mapping(sym, p, look) : NULL;
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
