/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names for sampled addresses, in two steps. Normalization (addrspace.h):
 * (process, mapping generation, address) -> the mapping and file it was in,
 * the file's build-ID and the offset in it. Symbolization: (file, offset)
 * -> function, from the file's symbols, loaded once per build-ID
 * (filecache.h). Kernel addresses use kallsyms.
 */
#ifndef BPFSAMPLER_SYMBOLIZE_H
#define BPFSAMPLER_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addrspace.h"

struct symbolizer;
struct dw_frame;

struct symbolizer_stats {
	uint64_t user_frames;	/* user frames looked up */
	uint64_t user_named;	/* of which named by a symbol */
	uint64_t kernel_frames;
	uint64_t kernel_named;
	uint64_t processes;	/* processes whose mappings were read */
	uint64_t files;		/* distinct files opened */
	uint64_t unreadable;	/* of which no symbols could be read */
	uint64_t parsed;	/* symbol tables read from ELF files */
	uint64_t shared;	/* files that shared a build-ID's symbols */
	uint64_t debug_files;	/* separate debug files used */
	uint64_t dwarf_files;	/* files whose DWARF was opened for lines */
	uint64_t dwarf_skipped;	/* files with DWARF past the fd budget */
	uint64_t go_files;	/* Go binaries named from their .gopclntab */
	uint64_t user_lines;	/* user frames given a source line */
	uint64_t symtab_bytes;	/* memory of the symbol tables held */
	uint64_t mappings;	/* executable mappings followed as made */
	uint64_t mappings_unopened; /* of which the file could not be read */
	uint64_t reread_after_loss; /* maps re-read as side-band records were lost */
	uint64_t empty_reads;	/* maps read with no executable mapping yet */
	uint64_t procs_live;	/* processes known now */
	uint64_t procs_released; /* forgotten after they exited */
	uint64_t procs_unfollowed; /* records of processes not followed (max_procs) */
	uint64_t files_held;	/* files held now */
	uint64_t files_released; /* released when no mapping held them */
};

struct symbolizer_opts {
	const char *const *debug_dirs; /* --debug-dir roots, searched first */
	size_t nr_debug_dirs;
	bool no_lines; /* --no-lines: DWARF is not read (no source lines,
			* no inline frames) */
	size_t max_procs; /* processes known at most (addrspace__set_max_procs);
			   * 0: no bound */
};

/* Where a user address was: the normalized form, which pprof's mappings
 * and locations carry. */
struct sym_location {
	const char *path;     /* the file as mapped; NULL: not in a file */
	const char *build_id; /* lowercase hex, or NULL */
	uint64_t map_start;   /* the mapping: [map_start, map_end) */
	uint64_t map_end;
	uint64_t map_pgoff;   /* file offset of map_start */
	uint64_t file_offset; /* of the address in the file */
	uint64_t vaddr;	      /* its ELF virtual address (addr2line -e path) */
	bool has_symbols;     /* the file (or its debug file) has symbols */
};

int symbolizer__new(const struct symbolizer_opts *o, struct symbolizer **out);
void symbolizer__free(struct symbolizer *sym);
/* Process and mapping news, passed to the address spaces (addrspace.h). */
void symbolizer__note_process(struct symbolizer *sym, int pid, int ppid, uint64_t mm,
			      const char *comm);
void symbolizer__note_mapping(struct symbolizer *sym, int pid, const struct as_mapping *am);
/* The same as the stream's callbacks (stream.h: on_process, on_mapping,
 * ctx = the symbolizer): what the rings announce goes straight here. */
struct bpfs_rec_map;
void symbolizer__on_process(void *sym, uint32_t pid, uint32_t ppid, uint64_t mm,
			    const char *comm);
void symbolizer__on_mapping(void *sym, const struct bpfs_rec_map *r);
/* The sampler's side-band callbacks (sampler.h: on_mapping,
 * on_mappings_lost, map_ctx = the symbolizer). */
struct sideband_mapping;
void symbolizer__on_sideband_mapping(void *sym, const struct sideband_mapping *m, uint32_t gen);
void symbolizer__on_mappings_lost(void *sym, uint64_t n);
/* The stream's map_gen_at (addrspace__gen_at). */
uint32_t symbolizer__map_gen_at(void *sym, uint32_t pid, uint32_t gen, uint64_t time_ns);
void symbolizer__set_tracking(struct symbolizer *sym, bool on);
/* Where its separate debug files are looked for (--debug-dir): the unwind
 * tables look there too. Lives as long as sym. */
struct debuginfo_opts;
const struct debuginfo_opts *symbolizer__debuginfo(const struct symbolizer *sym);
/* Called after each read of a process's mappings (addrspace.h). */
void symbolizer__set_maps_hook(struct symbolizer *sym, addrspace_maps_fn fn, void *ctx);
/* CPython (pyreg.h): recognised as mappings are read, its code objects read
 * after each drain, forgotten with its process. Not owned; NULL: none. */
struct pyreg;
void symbolizer__set_python(struct symbolizer *sym, struct pyreg *py);
struct pyreg *symbolizer__python(const struct symbolizer *sym);
/* The stream's on_py_code (ctx = the symbolizer). */
void symbolizer__on_py_code(void *ctx, uint32_t pid, uint64_t code);
/* Reads the processes announced since (addrspace__read_announced): after
 * every drain of the rings. */
void symbolizer__read_announced(struct symbolizer *sym);
/* Re-reads the mappings of processes announced since, and notes BPF
 * programs loaded since (call every few hundred ms while sampling, and once
 * at the end). */
void symbolizer__refresh(struct symbolizer *sym);
/* Sampling has ended: a last refresh, then what may wait on the network
 * (debug files from debuginfod servers), before the frames are named. */
void symbolizer__finish(struct symbolizer *sym);
/*
 * Normalizes addr of pid at mapping generation gen (0: before any followed
 * mapping of pid). Returns 0, or -ENOENT when addr is in no file mapping
 * (loc->path NULL).
 */
int symbolizer__normalize(struct symbolizer *sym, int pid, uint32_t gen, uint64_t addr,
			  struct sym_location *loc);
/* What a frame is. */
enum sym_kind {
	SYM_FILE = 0,	/* in a file mapping (loc says which) */
	SYM_ANON,	/* in anonymous executable memory */
	SYM_JIT,	/* named from the process's perf map */
	SYM_UNMAPPED,	/* in no mapping known */
	SYM_KERNEL,	/* kernel text, a module or a BPF program */
};

/* A frame, symbolized: structured, for the profile model to keep. */
struct sym_frame {
	enum sym_kind kind;
	const char *name;   /* the symbol as in the symbol table (mangled), or
			     * NULL when none covers the address */
	const char *module; /* SYM_KERNEL: the module ("bpf" for BPF
			     * programs), NULL for the kernel image */
	uint64_t sym_offset; /* of the address in the symbol, when named */
	uint64_t elf_addr;  /* SYM_FILE: the address as an ELF virtual address
			     * of loc.path (addr2line -e), else 0 */
	struct sym_location loc; /* SYM_FILE: the mapping; SYM_ANON/JIT: the
				  * mapping's bounds only */
	/* SYM_FILE whose file (or debug file) has DWARF, or a Go binary's
	 * .gopclntab (gopclntab.h, in the same form): the source, innermost
	 * first (dwarf_lines.h): lines[0] is the address's own line, in the
	 * innermost function inlined there; the last is the function the code
	 * is in (name), at the line where the others were inlined. Valid until
	 * the next call. nr_lines 0: unknown. */
	const struct dw_frame *lines;
	size_t nr_lines;
};

/*
 * Frame addr of a sample of pid at mapping generation gen. ret_addr: addr
 * is a return address (every frame but the leaf), so addr - 1 is looked up,
 * which keeps a call at the very end of a function from naming the next
 * one; elf_addr is still that of addr. Strings live as long as sym.
 */
void symbolizer__user(struct symbolizer *sym, int pid, uint32_t gen, uint64_t addr,
		      bool ret_addr, struct sym_frame *out);
void symbolizer__kernel(struct symbolizer *sym, uint64_t addr, bool ret_addr,
			struct sym_frame *out);
/*
 * Lifetimes, between windows of a long run: forgets processes that exited
 * (gone is called for each, may be NULL), then files no live process maps
 * any more and the symbols only they used. Memory then follows what runs
 * now, not what ever ran.
 */
void symbolizer__sweep(struct symbolizer *sym, addrspace_gone_fn gone, void *ctx);
/* The same, with dying called first with every process about to go, while
 * its frames can still be named (the one-shot run folds their samples into
 * the profile then: addrspace__sweep_exited). */
void symbolizer__sweep_exited(struct symbolizer *sym, addrspace_dying_fn dying,
			      addrspace_gone_fn gone, void *ctx);
/* The processes only: the files they held stay until the next sweep of
 * either kind above (the agent's, at the end of each window: a file met
 * again within a window or two is not parsed again). */
void symbolizer__sweep_processes(struct symbolizer *sym, addrspace_dying_fn dying,
				 addrspace_gone_fn gone, void *ctx);
void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out);

#endif
