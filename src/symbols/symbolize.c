// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace.h"
#include "bpfprogs.h"
#include "debuginfo.h"
#include "elf_syms.h"
#include "filecache.h"
#include "hashmap.h"
#include "ksyms.h"
#include "log.h"
#include "perfmap.h"
#include "procmaps.h"
#include "symbolize.h"

struct symbolizer {
	struct addrspace *as;
	struct filecache *fc;
	struct hashmap *strings; /* interned "module+0x..." names */
	struct ksyms *ksyms;
	bool ksyms_tried;
	struct bpfprogs *bpf;
	struct debuginfo_opts dbg;
	uint64_t user_frames, user_named, kernel_frames, kernel_named;
};

int symbolizer__new(const struct symbolizer_opts *o, struct symbolizer **out)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));
	int err;

	if (!sym)
		return -ENOMEM;
	if (o) {
		sym->dbg.roots = o->debug_dirs;
		sym->dbg.nr_roots = o->nr_debug_dirs;
	}
	err = filecache__new(&sym->dbg, &sym->fc);
	if (!err)
		err = addrspace__new(sym->fc, &sym->as);
	if (!err)
		err = bpfprogs__new(&sym->bpf);
	if (!err) {
		sym->strings = hashmap__new(hashmap__hash_str, hashmap__equal_str);
		if (!sym->strings)
			err = -ENOMEM;
	}
	if (err) {
		symbolizer__free(sym);
		return err;
	}
	*out = sym;
	return 0;
}

void symbolizer__free(struct symbolizer *sym)
{
	const void *key;

	if (!sym)
		return;
	for (size_t i = 0; sym->strings && hashmap__next(sym->strings, &i, &key, NULL);)
		free((void *)key);
	hashmap__free(sym->strings);
	/* the address spaces point into the file cache: free them first */
	addrspace__free(sym->as);
	filecache__free(sym->fc);
	ksyms__free(sym->ksyms);
	bpfprogs__free(sym->bpf);
	free(sym);
}

void symbolizer__note_process(struct symbolizer *sym, int pid, int ppid, uint64_t mm,
			      const char *comm)
{
	addrspace__note_process(sym->as, pid, ppid, mm, comm);
}

void symbolizer__note_mapping(struct symbolizer *sym, int pid, const struct as_mapping *am)
{
	addrspace__note_mapping(sym->as, pid, am);
}

void symbolizer__set_tracking(struct symbolizer *sym, bool on)
{
	addrspace__set_tracking(sym->as, on);
}

void symbolizer__refresh(struct symbolizer *sym)
{
	addrspace__refresh(sym->as);
	bpfprogs__poll(sym->bpf);
}

void symbolizer__finish(struct symbolizer *sym)
{
	symbolizer__refresh(sym);
	filecache__fetch_remote(sym->fc);
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

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The symbols of the file a hit is in: the file's, or the vDSO's. */
static const struct symtab *hit_symtab(struct symbolizer *sym, const struct as_hit *hit)
{
	if (hit->file)
		return hit->file->st;
	if (hit->m->path && !strcmp(hit->m->path, "[vdso]"))
		return filecache__vdso(sym->fc);
	return NULL;
}

/* A hit in a file: the file offset and ELF virtual address of addr. */
static void locate(const struct symtab *st, const struct as_hit *hit, uint64_t addr,
		   uint64_t *off, uint64_t *vaddr)
{
	*off = addr - hit->m->start + hit->m->pgoff;
	if (!st || symtab__off_to_vaddr(st, *off, vaddr))
		*vaddr = *off;
}

int symbolizer__normalize(struct symbolizer *sym, int pid, uint32_t gen, uint64_t addr,
			  struct sym_location *loc)
{
	struct as_hit hit;

	*loc = (struct sym_location){};
	if (addrspace__find(sym->as, pid, gen, addr, &hit) || !hit.m->path ||
	    hit.m->path[0] == '[')
		return -ENOENT;
	loc->path = hit.m->path;
	loc->build_id = hit.file ? hit.file->build_id : NULL;
	loc->map_start = hit.m->start;
	loc->map_end = hit.m->end;
	loc->map_pgoff = hit.m->pgoff;
	locate(hit_symtab(sym, &hit), &hit, addr, &loc->file_offset, &loc->vaddr);
	return 0;
}

const char *symbolizer__user(struct symbolizer *sym, int pid, uint32_t gen, uint64_t addr,
			     bool ret_addr)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr, off, vaddr;
	const struct symtab *st;
	struct as_hit hit;
	const char *name;
	char buf[512];

	sym->user_frames++;
	addrspace__find(sym->as, pid, gen, look, &hit);
	if ((!hit.m || !hit.m->path) && hit.jit && (name = perfmap__find(hit.jit, look))) {
		sym->user_named++;
		return name;
	}
	if (!hit.m) {
		snprintf(buf, sizeof(buf), "[unmapped]+0x%" PRIx64, addr);
		return intern(sym, buf);
	}
	if (!hit.m->path) {
		snprintf(buf, sizeof(buf), "[anon]+0x%" PRIx64, addr);
		return intern(sym, buf);
	}
	st = hit_symtab(sym, &hit);
	locate(st, &hit, look, &off, &vaddr);
	name = st ? symtab__find(st, vaddr, NULL) : NULL;
	if (name) {
		sym->user_named++;
		return name;
	}
	/* Unnamed: module and the address addr2line -e wants (ELF vaddr of
	 * the original address, not the -1 used for the lookup). */
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, basename_of(hit.m->path),
		 vaddr + (addr - look));
	return intern(sym, buf);
}

const char *symbolizer__kernel(struct symbolizer *sym, uint64_t addr, bool ret_addr)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr;
	const struct ksym *ks;
	const char *name;
	uint64_t start;
	char buf[512];

	sym->kernel_frames++;
	if (!sym->ksyms_tried) {
		sym->ksyms_tried = true;
		if (ksyms__load(NULL, &sym->ksyms))
			p_warn("cannot read /proc/kallsyms: kernel frames show addresses only");
		else if (ksyms__hidden(sym->ksyms))
			p_warn("/proc/kallsyms hides addresses (kernel.kptr_restrict): run as root "
			       "or set sysctl kernel.kptr_restrict=0 for kernel names");
	}
	ks = sym->ksyms ? ksyms__find(sym->ksyms, look) : NULL;
	/* BPF programs: kallsyms has them only while they are loaded, and
	 * with no size. In a known program, kallsyms is right only at the
	 * program's own start; in none (loaded and unloaded between two
	 * polls), the [bpf] symbol below is another program's. */
	if (bpfprogs__find(sym->bpf, look, &name, &start)) {
		if (!name && ks && ks->addr == start)
			name = ks->name;
		if (name) {
			sym->kernel_named++;
			snprintf(buf, sizeof(buf), "%s [bpf]", name);
			return intern(sym, buf);
		}
		ks = NULL;
	} else if (ks && ks->module && !strcmp(ks->module, "bpf") &&
		   bpfprogs__usable(sym->bpf)) {
		ks = NULL;
	}
	if (!ks) {
		snprintf(buf, sizeof(buf), "[kernel]+0x%" PRIx64, addr);
		return intern(sym, buf);
	}
	sym->kernel_named++;
	if (!ks->module)
		return ks->name;
	snprintf(buf, sizeof(buf), "%s [%s]", ks->name, ks->module);
	return intern(sym, buf);
}

void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	struct filecache_stats fs;
	struct addrspace_stats as;

	filecache__stats(sym->fc, &fs);
	addrspace__stats(sym->as, &as);
	*out = (struct symbolizer_stats){
		.user_frames = sym->user_frames,
		.user_named = sym->user_named,
		.kernel_frames = sym->kernel_frames,
		.kernel_named = sym->kernel_named,
		.processes = as.processes,
		.files = fs.files,
		.unreadable = fs.unreadable,
		.parsed = fs.parsed,
		.shared = fs.shared,
		.debug_files = fs.debug_files,
		.symtab_bytes = fs.symtab_bytes,
		.mappings = as.mappings,
		.mappings_unopened = as.mappings_unopened,
	};
}
