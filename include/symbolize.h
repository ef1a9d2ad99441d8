/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names for sampled addresses. User addresses are first normalized
 * (process -> mapping -> file offset -> ELF address) and then looked up in
 * that file's symbol table, cached per file (device, inode) so a library
 * mapped by many processes is parsed once. Kernel addresses use kallsyms.
 */
#ifndef BPFSAMPLER_SYMBOLIZE_H
#define BPFSAMPLER_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct symbolizer_stats {
	uint64_t user_frames;	/* user frames looked up */
	uint64_t user_named;	/* of which named by a symbol */
	uint64_t kernel_frames;
	uint64_t kernel_named;
	uint64_t processes;	/* processes whose mappings were read */
	uint64_t files;		/* ELF files parsed */
	uint64_t debug_files;	/* separate debug files used */
	uint64_t mappings;	/* executable mappings followed as made */
	uint64_t mappings_unopened; /* of which the file could not be opened */
};

struct symbolizer_opts {
	const char *const *debug_dirs; /* --debug-dir roots, searched first */
	size_t nr_debug_dirs;
};

int symbolizer__new(const struct symbolizer_opts *o, struct symbolizer **out);
void symbolizer__free(struct symbolizer *sym);
/* A process was seen (again): read its mappings while it is alive. A new
 * address space (mm, 0: unknown) means it exec'd: the mappings are read
 * anew. ppid (0: unknown) lends
 * its mappings to a child forked without exec whose own could not be read. */
void symbolizer__note_process(struct symbolizer *sym, int pid, int ppid, uint64_t mm,
			      const char *comm);
/* Executable mappings are followed as they are made (the sampler says so
 * after it starts): symbolizer__note_mapping() is called for each, samples
 * carry their process's gen, and a process's mappings are read from /proc
 * once per address space only, for what was mapped before sampling. */
void symbolizer__set_tracking(struct symbolizer *sym, bool on);
/* A mapping change of a process, as it was made. */
struct sym_mapping {
	uint32_t gen;	/* the process's mapping generation from now on */
	bool exec;	/* an exec: nothing mapped before gen is left; the
			 * fields below but mm are unset */
	uint64_t mm;	/* the address space it was made in */
	uint64_t start; /* [start, end) of file (dev, ino) at offset pgoff */
	uint64_t end;
	uint64_t pgoff;
	uint64_t dev;	/* the kernel's encoding: major << 20 | minor */
	uint64_t ino;
};

/* Process pid mapped a file executable, or exec'd. The file is opened now,
 * while it is mapped. */
void symbolizer__note_mapping(struct symbolizer *sym, int pid, const struct sym_mapping *sm);
/* Re-reads the mappings of processes with new samples since their last read
 * (call every few hundred ms while sampling, and once at the end). */
void symbolizer__refresh(struct symbolizer *sym);
/*
 * The name of a frame of a sample of pid taken at mapping generation gen
 * (0: before any followed mapping of pid): the function, else "module+0xOFF" (ELF address in
 * that file), else "[anon]+0xADDR" / "[unmapped]+0xADDR". ret_addr: addr is
 * a return address (every frame but the leaf), so addr-1 is looked up, which
 * keeps a call at the very end of a function from naming the next one.
 * The string lives as long as sym.
 */
const char *symbolizer__user(struct symbolizer *sym, int pid, uint32_t gen, uint64_t addr,
			     bool ret_addr);
const char *symbolizer__kernel(struct symbolizer *sym, uint64_t addr, bool ret_addr);
void symbolizer__stats(const struct symbolizer *sym, struct symbolizer_stats *out);

#endif
