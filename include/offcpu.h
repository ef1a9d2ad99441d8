/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The off-CPU unit (--off-cpu, the event offcpu-time): owns the offcpu BPF
 * skeleton, which shares the sampler's maps by fd, so its blocks are counted
 * in the sampler's counts and stacks and reported like any event. Lifecycle:
 * new (after sampler__new: open, share the maps, load) -> start (after
 * sampler__start: attach to sched_switch, record the threads already off
 * the CPU) -> stop (before sampler__stop: detach, count the blocks still
 * open up to now) -> stats -> free. docs/design.md, "Off-CPU time".
 */
#ifndef BPFSAMPLER_OFFCPU_H
#define BPFSAMPLER_OFFCPU_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "bpfsampler/offcpu_abi.h"
#include "int_list.h"

struct sampler;

/* Defaults, stated in --help and the man page. */
#define OFFCPU_DEFAULT_MIN_NS 0ULL	 /* every block counted */
#define OFFCPU_DEFAULT_WALKS 4000ULL	 /* stack walks a second, all CPUs: at ~5 us
					  * a walk, 2% of one CPU at most */
#define OFFCPU_DEFAULT_THREADS 32768U	 /* threads off the CPU at once */

struct offcpu_opts {
	uint32_t event;		/* index of offcpu-time among the events */
	uint64_t min_ns;	/* blocks shorter are not counted (counted apart) */
	uint64_t walks_per_s;	/* stack walks a second on all CPUs; 0: no bound */
	unsigned int threads;	/* `offstart` entries */
	const struct int_list *cpus; /* -C: switch-outs on these only; NULL or
				      * empty: every CPU */
};

struct offcpu_stats {
	uint64_t stat[BPFS_OFF_STAT_NR]; /* summed over CPUs */
	const char *attach;		 /* "tp_btf" or "raw_tp" */
	uint64_t left;			 /* starts no task claimed at the end */
	uint64_t window_ns;		 /* from the attach to the detach */
};

struct offcpu;

int offcpu__new(struct sampler *s, const struct offcpu_opts *o, struct offcpu **out);
int offcpu__start(struct offcpu *oc);
/* Detaches, then counts every block still open up to now (before the
 * sampler's last drain: in stream mode they are records). */
int offcpu__stop(struct offcpu *oc);
/* A window ends (the agent): every block still open is counted up to now
 * and goes on from now. */
int offcpu__cut(struct offcpu *oc);
int offcpu__stats(struct offcpu *oc, struct offcpu_stats *out);
/* The summary's off-CPU lines, on f; the accounting line when verbose or
 * when it does not balance. */
void offcpu__summary(FILE *f, const struct offcpu_stats *st, bool verbose);
/* How far the counters are from balancing: 0 when every switch-out and
 * every block is accounted for. */
int64_t offcpu__unbalanced(const struct offcpu_stats *st);
void offcpu__free(struct offcpu *oc);

#endif
