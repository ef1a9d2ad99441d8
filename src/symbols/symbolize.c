// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrspace.h"
#include "bpfprogs.h"
#include "debuginfo.h"
#include "dwarf_lines.h"
#include "elf_syms.h"
#include "filecache.h"
#include "gopclntab.h"
#include "hashmap.h"
#include "ksyms.h"
#include "log.h"
#include "perfmap.h"
#include "procmaps.h"
#include "pyreg.h"
#include "sideband.h"
#include "symbolize.h"
#include <linux/types.h>

#include "bpfsampler/sampler_abi.h"

struct symbolizer {
	struct addrspace *as;
	struct filecache *fc;
	struct ksyms *ksyms;
	bool ksyms_tried;
	struct bpfprogs *bpf;
	struct debuginfo_opts dbg;
	bool no_lines;
	uint64_t user_frames, user_named, kernel_frames, kernel_named, user_lines;
	/* whoever else follows mappings (the unwinder), and CPython */
	addrspace_maps_fn on_maps;
	void *on_maps_ctx;
	struct pyreg *py;
};

/* A process's mappings were read: to the unwinder, then to CPython's
 * recognition (which reads the files the unwinder has just opened). */
static void sym_on_maps(void *ctx, int pid, const struct procmaps *pm,
			const struct mapped_file *const *files)
{
	struct symbolizer *sym = ctx;

	if (sym->on_maps)
		sym->on_maps(sym->on_maps_ctx, pid, pm, files);
	if (sym->py && pid != getpid())
		pyreg__note_maps(sym->py, pid, pm);
}

int symbolizer__new(const struct symbolizer_opts *o, struct symbolizer **out)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));
	int err;

	if (!sym)
		return -ENOMEM;
	if (o) {
		sym->dbg.roots = o->debug_dirs;
		sym->dbg.nr_roots = o->nr_debug_dirs;
		sym->no_lines = o->no_lines;
	}
	err = filecache__new(&sym->dbg, &sym->fc);
	if (!err)
		filecache__set_lines(sym->fc, !(o && o->no_lines));
	if (!err)
		err = addrspace__new(sym->fc, &sym->as);
	if (!err)
		err = bpfprogs__new(&sym->bpf);
	if (!err) {
		addrspace__set_maps_hook(sym->as, sym_on_maps, sym);
		addrspace__set_max_procs(sym->as, o ? o->max_procs : 0);
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
	if (!sym)
		return;
	/* the address spaces point into the file cache: free them first */
	addrspace__free(sym->as);
	filecache__free(sym->fc);
	ksyms__free(sym->ksyms);
	bpfprogs__free(sym->bpf);
	free(sym);
}

const struct debuginfo_opts *symbolizer__debuginfo(const struct symbolizer *sym)
{
	return &sym->dbg;
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

void symbolizer__on_process(void *sym, uint32_t pid, uint32_t ppid, uint64_t mm,
			    const char *comm)
{
	symbolizer__note_process(sym, pid, ppid, mm, comm);
}

void symbolizer__on_mapping(void *sym, const struct bpfs_rec_map *r)
{
	symbolizer__note_mapping(sym, r->pid,
				 &(struct as_mapping){ .gen = r->gen,
							.time_ns = r->time_ns,
							.exec = r->flags & BPFS_MAP_F_EXEC,
							.mm = r->mm,
							.start = r->start,
							.end = r->end,
							.pgoff = r->pgoff,
							.dev = r->dev,
							.ino = r->ino });
}

void symbolizer__on_sideband_mapping(void *ctx, const struct sideband_mapping *m, uint32_t gen)
{
	struct symbolizer *sym = ctx;

	if (m->exec) {
		addrspace__note_exec_start(sym->as, m->pid, m->time_ns);
		return;
	}
	symbolizer__note_mapping(sym, m->pid,
				 &(struct as_mapping){ .gen = gen,
							.time_ns = m->time_ns,
							.start = m->start,
							.end = m->end,
							.pgoff = m->pgoff,
							.dev = m->dev,
							.ino = m->ino,
							.path = m->path });
}

void symbolizer__on_mappings_lost(void *ctx, uint64_t n)
{
	struct symbolizer *sym = ctx;

	(void)n; /* which processes lost mappings is not known: all of them */
	addrspace__mappings_lost(sym->as);
}

uint32_t symbolizer__map_gen_at(void *ctx, uint32_t pid, uint32_t gen, uint64_t time_ns)
{
	struct symbolizer *sym = ctx;

	return addrspace__gen_at(sym->as, pid, gen, time_ns);
}

void symbolizer__read_announced(struct symbolizer *sym)
{
	addrspace__read_announced(sym->as);
	/* after the maps: a new process's interpreter is known by then */
	pyreg__read_pending(sym->py);
}

void symbolizer__set_tracking(struct symbolizer *sym, bool on)
{
	addrspace__set_tracking(sym->as, on);
}

void symbolizer__set_maps_hook(struct symbolizer *sym, addrspace_maps_fn fn, void *ctx)
{
	sym->on_maps = fn;
	sym->on_maps_ctx = ctx;
}

void symbolizer__set_python(struct symbolizer *sym, struct pyreg *py)
{
	sym->py = py;
}

struct pyreg *symbolizer__python(const struct symbolizer *sym)
{
	return sym->py;
}

void symbolizer__on_py_code(void *ctx, uint32_t pid, uint64_t code)
{
	struct symbolizer *sym = ctx;

	if (sym->py)
		pyreg__on_code(sym->py, pid, code);
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

/* A JIT's name for look, in an anonymous mapping or none: from the perf
 * map held, else from the map read again where it changed (a JIT appends
 * to it after the mappings were read). */
static const char *jit_name(struct symbolizer *sym, int pid, const struct as_hit *hit,
			    uint64_t look)
{
	const char *name = hit->jit ? perfmap__find(hit->jit, look) : NULL;
	const struct perfmap *again;

	if (name || !hit->m)
		return name;
	again = addrspace__jit_again(sym->as, pid);
	return again ? perfmap__find(again, look) : NULL;
}

void symbolizer__user(struct symbolizer *sym, int pid, uint32_t gen, uint64_t addr,
		      bool ret_addr, struct sym_frame *out)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr, off, vaddr;
	const struct symtab *st;
	struct as_hit hit;
	const char *name;

	*out = (struct sym_frame){ .kind = SYM_UNMAPPED };
	sym->user_frames++;
	addrspace__find(sym->as, pid, gen, look, &hit);
	if (hit.m) {
		out->loc.map_start = hit.m->start;
		out->loc.map_end = hit.m->end;
	}
	if ((!hit.m || !hit.m->path) && (name = jit_name(sym, pid, &hit, look))) {
		sym->user_named++;
		out->kind = SYM_JIT;
		out->name = name;
		return;
	}
	if (!hit.m)
		return;
	if (!hit.m->path) {
		out->kind = SYM_ANON;
		return;
	}
	out->kind = SYM_FILE;
	st = hit_symtab(sym, &hit);
	locate(st, &hit, look, &off, &vaddr);
	out->loc.path = hit.m->path;
	out->loc.build_id = hit.file ? hit.file->build_id : NULL;
	out->loc.map_pgoff = hit.m->pgoff;
	out->loc.has_symbols = (st && symtab__nr_syms(st) > 0) || (hit.file && hit.file->go);
	out->loc.file_offset = off + (addr - look);
	out->loc.vaddr = vaddr + (addr - look);
	out->elf_addr = out->loc.vaddr;
	out->name = st ? symtab__find(st, vaddr, &out->sym_offset) : NULL;
	/* a stripped Go binary: its runtime's own table names it */
	if (!out->name && hit.file && hit.file->go)
		out->name = gopcln__name(hit.file->go, vaddr, &out->sym_offset);
	if (out->name) {
		sym->user_named++;
	} else if (hit.file) {
		/* no symbol: named by the start of its function (its FDE), so
		 * a stripped function's samples stay in one place */
		uint64_t start = filecache__func_start(sym->fc, hit.file, pid, hit.m, vaddr);

		if (start)
			out->elf_addr = start;
	}
	/* the looked-up address: a return address's call instruction */
	if (hit.file && hit.file->lines)
		dwlines__find(hit.file->lines, vaddr, &out->lines, &out->nr_lines);
	/* no DWARF (go build -ldflags=-w): the Go table's lines and inline
	 * frames, in the DWARF's form */
	if (!out->nr_lines && hit.file && hit.file->go && !sym->no_lines)
		gopcln__find(hit.file->go, vaddr, &out->lines, &out->nr_lines);
	if (out->nr_lines)
		sym->user_lines++;
}

static void load_ksyms(struct symbolizer *sym)
{
	sym->ksyms_tried = true;
	if (ksyms__load(NULL, &sym->ksyms))
		p_warn("cannot read /proc/kallsyms: kernel frames show addresses only");
	else if (ksyms__hidden(sym->ksyms))
		p_warn("/proc/kallsyms hides addresses (kernel.kptr_restrict): run as root "
		       "or set sysctl kernel.kptr_restrict=0 for kernel names");
}

void symbolizer__kernel(struct symbolizer *sym, uint64_t addr, bool ret_addr,
			struct sym_frame *out)
{
	uint64_t look = ret_addr && addr ? addr - 1 : addr;
	const struct ksym *ks = NULL;
	struct ksym found;
	const char *name;
	uint64_t start;

	*out = (struct sym_frame){ .kind = SYM_KERNEL };
	sym->kernel_frames++;
	if (!sym->ksyms_tried)
		load_ksyms(sym);
	if (sym->ksyms && ksyms__find(sym->ksyms, look, &found))
		ks = &found;
	/* BPF programs: kallsyms has them only while they are loaded, and
	 * with no size. In a known program, kallsyms is right only at the
	 * program's own start; in none (loaded and unloaded between two
	 * polls), the [bpf] symbol below is another program's. */
	if (bpfprogs__find(sym->bpf, look, &name, &start)) {
		if (!name && ks && ks->addr == start)
			name = ks->name;
		if (name) {
			sym->kernel_named++;
			out->name = name;
			out->module = "bpf";
			out->sym_offset = look - start;
		}
		return;
	}
	if (!ks || (ks->module && !strcmp(ks->module, "bpf") && bpfprogs__usable(sym->bpf)))
		return;
	sym->kernel_named++;
	out->name = ks->name;
	out->module = ks->module;
	out->sym_offset = look - ks->addr;
}

/* Sweeps an exited process must survive before it is forgotten: its last
 * samples may still be in a completion, or in the next window. */
#define PROC_GRACE_SWEEPS 2
/* Sweeps a file no mapping holds is kept: a short-lived process that maps
 * it again soon (a shell loop) finds it parsed. */
#define FILE_IDLE_SWEEPS 2

void symbolizer__sweep(struct symbolizer *sym, addrspace_gone_fn gone, void *ctx)
{
	symbolizer__sweep_exited(sym, NULL, gone, ctx);
}

/* A process forgotten: its Python names go too, then the caller hears. */
struct sweep_ctx {
	struct symbolizer *sym;
	addrspace_dying_fn dying;
	addrspace_gone_fn gone;
	void *ctx;
};

static void sym_dying(void *ctx, const int *pids, size_t nr)
{
	struct sweep_ctx *sc = ctx;

	if (sc->dying)
		sc->dying(sc->ctx, pids, nr);
}

static void sym_gone(void *ctx, int pid)
{
	struct sweep_ctx *sc = ctx;

	pyreg__forget(sc->sym->py, pid);
	if (sc->gone)
		sc->gone(sc->ctx, pid);
}

void symbolizer__sweep_processes(struct symbolizer *sym, addrspace_dying_fn dying,
				 addrspace_gone_fn gone, void *ctx)
{
	struct sweep_ctx sc = { sym, dying, gone, ctx };

	addrspace__sweep_exited(sym->as, PROC_GRACE_SWEEPS, sym_dying, sym_gone, &sc);
}

void symbolizer__sweep_exited(struct symbolizer *sym, addrspace_dying_fn dying,
			      addrspace_gone_fn gone, void *ctx)
{
	symbolizer__sweep_processes(sym, dying, gone, ctx);
	filecache__sweep(sym->fc, FILE_IDLE_SWEEPS);
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
		.dwarf_files = fs.dwarf_files,
		.dwarf_skipped = fs.dwarf_skipped,
		.go_files = fs.go_files,
		.user_lines = sym->user_lines,
		.symtab_bytes = fs.symtab_bytes,
		.mappings = as.mappings,
		.mappings_unopened = as.mappings_unopened,
		.reread_after_loss = as.reread_after_loss,
		.empty_reads = as.empty_reads,
		.procs_live = as.live,
		.procs_released = as.released,
		.procs_unfollowed = as.unfollowed,
		.files_held = fs.held,
		.files_released = fs.released,
	};
}
