/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sampler owns the BPF skeleton and the perf events, and shows its
 * lifecycle: new (open, size maps, set rodata, load) -> add_filter ->
 * start (open events, attach, enable) -> poll... -> stop (disable, final
 * drain) -> read counts, stacks and stats -> free.
 */
#ifndef BPFSAMPLER_SAMPLER_H
#define BPFSAMPLER_SAMPLER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "bpfsampler/sampler_abi.h"

struct int_list;

typedef void (*sampler_new_key_fn)(void *ctx, uint32_t pid, uint32_t tid, const char *comm);
typedef int (*sampler_count_fn)(void *ctx, const struct bpfs_count_key *key, uint64_t count);

struct sampler_opts {
	unsigned int freq;
	const struct int_list *cpus;	 /* NULL/empty: every online CPU */
	enum bpfs_filter_mode filter_mode;
	const struct int_list *filter_ids; /* tgids or tids */
	bool follow_children;		 /* add forked children of filtered tgids */
	bool include_idle;
	bool user_stacks;
	bool kernel_stacks;
	unsigned int max_depth;
	unsigned int map_entries;
	unsigned int stack_entries;
	unsigned int stack_id_bits;	 /* testing aid: 0 = full 64-bit ids */
	sampler_new_key_fn on_new_key; /* first sample of a new key (may be NULL) */
	void *ctx;
};

struct sampler_stats {
	uint64_t stat[BPFS_STAT_NR]; /* summed over CPUs */
	uint64_t enabled_ns;	     /* summed over CPUs */
	uint64_t expected;	     /* enabled time x rate */
	double rate;		     /* effective Hz per CPU */
	int nr_cpus;		     /* CPUs sampled */
};

struct sampler;

int sampler__new(const struct sampler_opts *o, struct sampler **out);
int sampler__add_filter(struct sampler *s, uint32_t id);
int sampler__start(struct sampler *s);
/* Drains pending notifications, waiting up to timeout_ms. Returns >= 0, or
 * -errno (an interrupted wait returns 0). */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Disables the events and drains what is left. Counts no longer change. */
int sampler__stop(struct sampler *s);
int sampler__stats(struct sampler *s, struct sampler_stats *out);
int sampler__for_each_count(struct sampler *s, sampler_count_fn cb, void *ctx);
/* -ENOENT when id is not in the stacks map. */
int sampler__read_stack(struct sampler *s, uint64_t id, struct bpfs_stack *out);
void sampler__free(struct sampler *s);

#endif
