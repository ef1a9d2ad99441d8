/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unwind tables the BPF walk reads, kept in step with the processes:
 * one table per file (by build-ID, else device and inode), built from
 * .eh_frame, or .debug_frame where .eh_frame leaves the code out (the
 * file's own or its debug file's: ehframe.h), the first time a process maps
 * the file, written into the BPF rows array, and shared by every process
 * that maps it; each process's executable mappings go into the BPF
 * per-process map with the slice of rows of their file. A table no live
 * process maps any more (unwinder__sweep) is kept for --unwind-keep when
 * its file has a build-ID, for the next process of the same file, then
 * released and its rows reused (kept tables give their rows up first when
 * a new table needs room).
 */
#ifndef BPFSAMPLER_UNWINDER_H
#define BPFSAMPLER_UNWINDER_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpfsampler/sampler_abi.h"

struct debuginfo_opts;
struct procmaps;
struct sampler;
struct symbolizer;
struct unwinder;

/* Rows held by default (--unwind-rows): 16 bytes each, 16 MiB of kernel
 * memory. Debian's libc takes 28k rows, python3.11 65k, libLLVM-14 949k. */
#define UNWINDER_DEFAULT_ROWS (1U << 20)

struct unwinder_opts {
	/* Where rows go: the BPF array's fd (rows_fd >= 0: each table is
	 * written through a mapping of its own pages only, so the array's
	 * 16 MiB never sit in the profiler's RSS), or memory (tests). */
	int rows_fd;
	struct bpfs_unwind_row *rows;
	uint32_t max_rows;
	int procs_fd;		      /* the BPF per-process hash */
	/* bumped after each change to procs_fd's entries (the BPF side's
	 * per-CPU copies); NULL: none (tests) */
	uint64_t *procs_epoch;
	/* where separate debug files are looked for (.debug_frame of a file
	 * built without .eh_frame); NULL: the standard places only */
	const struct debuginfo_opts *dbg;
	/* How long the table of a file no process maps any more is kept
	 * (--unwind-keep): a program that runs again, a cron job, a build's
	 * compiler, finds it built. Only tables known by build-ID are kept
	 * (a device and inode may name another file tomorrow); kept tables
	 * give their rows up first when a new one needs room. 0: released at
	 * the next sweep. */
	uint64_t keep_ns;
};

/* --unwind-keep's default, in seconds. */
#define UNWINDER_DEFAULT_KEEP_S 600

struct unwinder_stats {
	uint64_t tables;	/* tables held now */
	uint64_t built;		/* tables built */
	uint64_t streamed;	/* of which streamed: a large file's, never
				 * whole in memory */
	uint64_t debug_frame;	/* of which with rows from a .debug_frame */
	uint64_t debug_files;	/* of those, from a separate debug file's */
	uint64_t no_table;	/* files with neither .eh_frame nor .debug_frame */
	uint64_t full;		/* tables not loaded: the rows were full */
	uint64_t abandoned;	/* builds given up: the run was ending */
	uint64_t released;	/* tables released (no process maps the file) */
	uint64_t idle;		/* of the tables held, kept with no process */
	uint64_t idle_rows;	/* their rows */
	uint64_t reused;	/* kept tables a new process took up again */
	uint64_t evicted;	/* kept tables released early for a new one's rows */
	uint64_t rows;		/* rows in use now (kept tables' included) */
	uint64_t rows_peak;	/* the most rows ever in use at once */
	uint64_t max_rows;
	uint64_t build_ns;	/* time spent building tables */
	uint64_t processes;	/* processes with tables now */
	uint64_t maps_left_out; /* mappings over BPFS_UNWIND_MAPS per process */
	uint64_t update_errors; /* per-process entries the kernel refused */
};

int unwinder__new(const struct unwinder_opts *o, struct unwinder **out);
/* Removes every process entry it wrote; NULL is a no-op. */
void unwinder__free(struct unwinder *u);
/* pm: the executable mappings pid has now (read from /proc while it
 * lives). Tables of files not seen before are built now. */
struct mapped_file;
void unwinder__note_maps(struct unwinder *u, int pid, const struct procmaps *pm,
			 const struct mapped_file *const *files);
/* Builds the tables of the C library and the dynamic loader (ours: the
 * system's), kept for the processes to come, nearly all of which map them:
 * a process's first samples, in ld.so before its tables are loaded, are
 * walked by them sooner. Nothing with --unwind-keep 0. */
void unwinder__preload_common(struct unwinder *u);
/* Forgets exited processes, and releases the tables no process holds.
 * Returns how many tables went. */
size_t unwinder__sweep(struct unwinder *u);
void unwinder__stats(const struct unwinder *u, struct unwinder_stats *out);
/* The usual set-up: tables in the sampler's BPF maps (sampler__new done,
 * --unwind not fp), following every process the symbolizer reads but
 * ourselves. Unhook with symbolizer__set_maps_hook(sym, NULL, NULL)
 * before unwinder__free. */
int unwinder__start(struct sampler *s, struct symbolizer *sym, uint32_t max_rows,
		    unsigned int keep_s, struct unwinder **out);

#endif
