/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Normalization: what a process had mapped at an address when a sample was
 * taken. Each process's executable mappings are known from /proc/PID/maps
 * (read while it lives: when it is first seen, execs, or its mappings
 * change) and, where the kernel lets BPF follow them, from the mappings it
 * makes as it makes them (each with a generation that its later samples
 * carry). The files behind the mappings are opened at once, through the
 * file cache, so a process that exits keeps its names.
 */
#ifndef BPFSAMPLER_ADDRSPACE_H
#define BPFSAMPLER_ADDRSPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "procmaps.h"

struct filecache;
struct mapped_file;
struct perfmap;
struct procmap;
struct procmaps;
struct addrspace;

/* A mapping change of a process, as it was made. */
struct as_mapping {
	uint32_t gen;	/* the process's mapping generation from now on */
	uint64_t time_ns; /* when, CLOCK_MONOTONIC */
	bool exec;	/* an exec: nothing mapped before gen is left; the
			 * fields below but mm are unset */
	uint64_t mm;	/* the address space it was made in */
	uint64_t start; /* [start, end) of file (dev, ino) at offset pgoff */
	uint64_t end;
	uint64_t pgoff;
	uint64_t dev;	/* the kernel's encoding: major << 20 | minor */
	uint64_t ino;
	const char *path; /* as the kernel named it, or NULL; used while the
			   * call runs, when map_files cannot say */
};

/* Where an address was. */
struct as_hit {
	const struct procmap *m;	 /* NULL: in no mapping known */
	const struct mapped_file *file;	 /* m's file, NULL when m is not one */
	const struct perfmap *jit;	 /* the process's perf map, or NULL */
};

struct addrspace_stats {
	uint64_t processes;	    /* processes whose mappings were read */
	uint64_t mappings;	    /* executable mappings followed as made */
	uint64_t mappings_unopened; /* of which the file could not be read */
	uint64_t released;	    /* processes forgotten after they exited */
	uint64_t live;		    /* processes known (after the last sweep) */
	uint64_t reread_after_loss; /* maps re-read as side-band records were lost */
	uint64_t empty_reads;	    /* reads that found no executable mapping yet
				     * (in exec), read again later */
	uint64_t unfollowed;	    /* records (announcements, execs, mappings) of
				     * processes not known while max_procs were: not
				     * followed (addrspace__set_max_procs) */
};

typedef void (*addrspace_gone_fn)(void *ctx, int pid);
/* The processes about to be forgotten, while their mappings are still
 * known (addrspace__sweep_exited). */
typedef void (*addrspace_dying_fn)(void *ctx, const int *pids, size_t nr);
/* A process's executable mappings were read from /proc (pm: all of them,
 * now). */
/* files[i]: the file of pm->maps[i] as the file cache knows it (its
 * build-ID), or NULL. */
struct mapped_file;
typedef void (*addrspace_maps_fn)(void *ctx, int pid, const struct procmaps *pm,
				  const struct mapped_file *const *files);

/* fc is used, not owned. */
int addrspace__new(struct filecache *fc, struct addrspace **out);
void addrspace__free(struct addrspace *as);
/* Mappings are followed as they are made (the sampler says so once it has
 * started): addrspace__note_mapping() is called for each. */
void addrspace__set_tracking(struct addrspace *as, bool on);
/* How mappings are read (NULL: procmaps__load, from /proc); for tests. */
void addrspace__set_maps_reader(struct addrspace *as, procmaps_load_fn load);
/* At most n processes known at once (0: no bound, the default): one
 * announced when n are known is not followed (no maps read, its samples'
 * user frames not named), each of its records counted in
 * stats.unfollowed, until exited ones are forgotten. The agent's bound on what it holds when it falls
 * behind a host that starts processes faster than it can read them. */
void addrspace__set_max_procs(struct addrspace *as, size_t n);
/* fn (NULL: none) is called after each read of a process's mappings
 * (the unwind tables follow them). */
void addrspace__set_maps_hook(struct addrspace *as, addrspace_maps_fn fn, void *ctx);
/* A process was seen (again): its mappings are read while it is alive
 * (addrspace__read_announced). A new
 * address space (mm, 0: unknown) means it exec'd. ppid (0: unknown) lends
 * its mappings to a child forked without exec whose own could not be read. */
void addrspace__note_process(struct addrspace *as, int pid, int ppid, uint64_t mm,
			     const char *comm);
/* Reads the mappings of the processes announced since the last call (call
 * after each drain of the rings: a short-lived process must be read while
 * it lives, but not from inside the drain, where I/O would slow it). */
void addrspace__read_announced(struct addrspace *as);
/* Process pid mapped a file executable, or exec'd. The file is opened now,
 * while it is mapped. */
void addrspace__note_mapping(struct addrspace *as, int pid, const struct as_mapping *am);
/* The side-band saw pid begin an exec at time_ns: the mappings it made
 * from then on are of the new image, though they may have taken their gens
 * before the BPF side's exec (at its end) took its own. */
void addrspace__note_exec_start(struct addrspace *as, int pid, uint64_t time_ns);
/* The gen a sample of pid taken at time_ns (CLOCK_MONOTONIC) should have
 * carried: gen, or a followed mapping's made before the sample but given its
 * gen after it (the loader gives side-band mappings theirs as it reads
 * them). Stream mode, where samples have a time. */
uint32_t addrspace__gen_at(const struct addrspace *as, int pid, uint32_t gen, uint64_t time_ns);
/* Side-band records were lost: mappings made meanwhile were not followed.
 * Every live process's maps are read again at the next refresh, so the
 * samples after the lost mappings are named from /proc. */
void addrspace__mappings_lost(struct addrspace *as);
/* Re-reads the mappings of processes announced since their last read (call
 * every few hundred ms while sampling, and once at the end). */
void addrspace__refresh(struct addrspace *as);
/* pid's perf map read again if it changed since it was read (at most
 * once a second a process): for a frame in anonymous code its map did not
 * name. The map pid holds now (hit->jit's, maybe freed), or NULL. */
const struct perfmap *addrspace__jit_again(struct addrspace *as, int pid);
/* What pid had mapped at addr when its mapping generation was gen (0:
 * before any followed mapping of pid). Returns 0, or -ENOENT with hit->m
 * NULL (hit->jit may still be set). */
int addrspace__find(struct addrspace *as, int pid, uint32_t gen, uint64_t addr,
		    struct as_hit *hit);
/*
 * Forgets the processes found exited by `grace` sweeps in a row (their
 * mappings, perf map, and their hold on the files), calling gone (may be
 * NULL) for each. Call between windows, after the window's frames were
 * named: a process that exited in it is still named there. Returns how
 * many went.
 */
size_t addrspace__sweep(struct addrspace *as, unsigned int grace, addrspace_gone_fn gone,
			void *ctx);
/* The same, calling dying (may be NULL) once with all the processes about
 * to go, before any is forgotten. A process that a known child forked
 * without exec stays while the child is known: the child's first samples
 * are named by its mappings. */
size_t addrspace__sweep_exited(struct addrspace *as, unsigned int grace,
			       addrspace_dying_fn dying, addrspace_gone_fn gone, void *ctx);
void addrspace__stats(const struct addrspace *as, struct addrspace_stats *out);

#endif
