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
#include <stddef.h>
#include <stdint.h>

#include "bpfsampler/sampler_abi.h"
#include "bpfsampler/python_abi.h"

struct int_list;
struct event_list;
struct sideband_mapping;
struct sideband_stats;

/* Every record of every CPU's ring, as it is drained. */
typedef int (*sampler_record_fn)(void *ctx, const void *data, size_t size);
/* A file mapping a process made, and the gen its samples carry from now on. */
typedef void (*sampler_mapping_fn)(void *ctx, const struct sideband_mapping *m, uint32_t gen);
/* n side-band records lost: mappings made meanwhile were not seen. */
typedef void (*sampler_lost_fn)(void *ctx, uint64_t n);
typedef int (*sampler_count_fn)(void *ctx, const struct bpfs_count_key *key,
				const struct bpfs_count_val *val);

struct sampler_opts {
	enum bpfs_mode mode;
	const struct event_list *events; /* what to sample on (-e) */
	const struct int_list *cpus;	 /* NULL/empty: every online CPU */
	enum bpfs_filter_mode filter_mode;
	const struct int_list *filter_ids; /* tgids or tids */
	bool follow_children;		 /* add forked children of filtered tgids */
	bool include_idle;
	bool user_stacks;
	bool kernel_stacks;
	unsigned int max_depth;
	unsigned int irq_depth;	 /* user frames walked in the interrupt (0: all) */
	bool completion;	 /* finish walks at return to user space, if
				  * the kernel can (features__has_task_work) */
	bool follow_mappings;	 /* follow mmap and exec, if the kernel can
				  * (features__has_mmap_tracking) and
				  * on_mapping is set */
	unsigned int sideband_size;	 /* side-band ring per CPU, bytes */
	bool batched_wakeups;		 /* the agent: side-band records and
					  * process announcements wait for the
					  * next drain (its 100 ms timer), not
					  * a wake-up each */
	sampler_mapping_fn on_mapping;	 /* file mappings, in time order */
	sampler_lost_fn on_mappings_lost; /* may be NULL */
	void *map_ctx;
	enum bpfs_unwind_mode unwind; /* --unwind */
	unsigned int unwind_rows;     /* rows the unwind tables may hold */
	unsigned int map_entries;
	unsigned int stack_entries;
	unsigned int stack_id_bits;	 /* testing aid: 0 = full 64-bit ids */
	unsigned int ring_size;		 /* bytes per CPU, a power of 2 */
	bool python;			 /* walk CPython frames
					  * (features__has_python_walk) */
	sampler_record_fn on_record;	 /* may be NULL */
	void *ctx;
};

struct sampler_event_stats {
	uint64_t stat[BPFS_STAT_NR]; /* this event's sample buckets */
	uint64_t enabled_ns;	     /* summed over CPUs */
	uint64_t running_ns;	     /* less than enabled when multiplexed */
	uint64_t expected;	     /* timers: enabled time x rate, else 0 */
	double rate;		     /* timers: Hz per CPU, else 0 */
};

struct sampler_stats {
	uint64_t stat[BPFS_STAT_NR]; /* summed over CPUs and events */
	uint64_t enabled_ns;	     /* of the first event, summed over CPUs */
	uint64_t expected;	     /* timers: enabled time x rate */
	double rate;		     /* first event if a timer: Hz per CPU */
	int nr_cpus;		     /* CPUs sampled */
	int nr_events;
	struct sampler_event_stats ev[BPFS_MAX_EVENTS];
	/* segments taken out of the stacks map by an emptying but not kept:
	 * keeping them failed (memory) */
	uint64_t stacks_dropped;
};

/* What the sizes asked cost the kernel, preallocated at load (estimates:
 * the hash maps' element headers are the kernel's business). */
struct sampler_memory {
	unsigned long long counts; /* --map-entries */
	unsigned long long stacks; /* --stack-entries */
	unsigned long long rings;  /* --ring-size, times nr_rings */
	unsigned long long total;
};

void sampler__memory(const struct sampler_opts *o, int nr_rings, struct sampler_memory *out);

struct sampler;

int sampler__new(const struct sampler_opts *o, struct sampler **out);
/* Selects tgid or tid id; after_exec: only from its next exec on (the
 * command, forked by bpfsampler and not yet exec'd). */
int sampler__add_filter(struct sampler *s, uint32_t id, bool after_exec);
int sampler__start(struct sampler *s);
/* How user stacks are walked: the --unwind asked for, or frame pointers
 * where the kernel runs the compat program (no unwind tables there). */
enum bpfs_unwind_mode sampler__unwind(const struct sampler *s);
/* Whether executable mappings are followed as they are made (after start):
 * on_mapping is called for file mappings, BPFS_REC_MAP records come for
 * execs, and samples carry their process's map_gen. */
bool sampler__tracks_mappings(const struct sampler *s);
/* The side-band's counters; false when mappings are not followed. */
/* Whether pid's samples may be kept (-p, -- command: selected; never our
 * own): whose mappings and unwind tables are worth following. */
bool sampler__follows(struct sampler *s, uint32_t pid);
bool sampler__sideband_stats(const struct sampler *s, struct sideband_stats *out,
			     uint64_t *mapgens_failed);
/* Drains pending notifications, waiting up to timeout_ms. Returns >= 0, or
 * -errno (an interrupted wait returns 0). */
int sampler__poll(struct sampler *s, int timeout_ms);
/* The unwind-table maps (after new): the rows array (mmapable,
 * unwind_rows entries), the per-process hash, and the counter to bump
 * after each change to that hash (the BPF side's per-CPU copies of its
 * entries are then stale). -ENOENT with --unwind fp. */
int sampler__unwind_maps(struct sampler *s, int *rows_fd, int *procs_fd,
			 uint64_t **procs_epoch);
/* The BPF map of CPython processes (python_abi.h), or -ENOENT when Python
 * frames are not walked (--no-python, a kernel without). */
int sampler__python_map(struct sampler *s, int *procs_fd);
/* Called after each process added to that map (the BPF side remembers
 * pids without an entry until then). */
void sampler__python_added(struct sampler *s);
/* The BPF side's Python counters (enum bpfs_py_stat), summed over CPUs. */
int sampler__python_stats(struct sampler *s, uint64_t out[BPFS_PY_STAT_NR]);
/* Disables the events only: sampling ends, nothing is drained. Safe from
 * another thread while the loader drains (ioctls on the events' fds). */
int sampler__disable(struct sampler *s);
/* Disables the events and drains what is left. Counts no longer change. */
int sampler__stop(struct sampler *s);
int sampler__stats(struct sampler *s, struct sampler_stats *out);
int sampler__for_each_count(struct sampler *s, sampler_count_fn cb, void *ctx);
/* The same walk, but the keys for which take returns 1 (it added them
 * somewhere else) are deleted from the map once read; 0 leaves a key, < 0
 * stops. Only for keys that no longer change (their process exited): an
 * update between the read and the delete would be lost. */
int sampler__take_counts(struct sampler *s, sampler_count_fn take, void *ctx);
/* The last sequence number each CPU spent (after sampler__stop): records
 * lost after the last one received leave no gap to see. seqs has
 * sampler__nr_rings() entries. */
int sampler__final_seqs(struct sampler *s, uint64_t *seqs, int nr);
int sampler__nr_rings(const struct sampler *s);
/* -ENOENT when id is not in the stacks map. */
int sampler__read_stack(struct sampler *s, uint64_t id, struct bpfs_stack *out);
/* A segment taken out of the stacks map (sampler__clear_stacks). */
typedef int (*sampler_stack_fn)(void *ctx, uint64_t id, const struct bpfs_stack *seg);
/* Segments BPF stored in the stacks map since it was last emptied (its
 * per-CPU count, summed: exact, those whose stack record was lost
 * included): the map is emptied when this reaches half of --stack-entries. */
uint64_t sampler__stacks_since_clear(const struct sampler *s);
/* Empties the stacks map while sampling (a window closed, or the map half
 * full): BPF stores, and in stream mode sends, each segment again the next
 * time it is seen, so the map never fills on a long run. Each segment
 * taken out is handed to keep first (may be NULL), so a sample counted in
 * the kernel or sent before still finds its stack. Once keep fails (out of
 * memory), the rest of the emptying's segments are dropped, counted
 * (sampler_stats.stacks_dropped) and warned of; the map is still emptied.
 * Returns the map operations' error only. */
int sampler__clear_stacks(struct sampler *s, sampler_stack_fn keep, void *ctx, size_t *cleared);
void sampler__free(struct sampler *s);

/* The loaded BPF object, for a unit that shares its maps by fd (the
 * off-CPU unit, src/capture/offcpu.c); owned by the sampler. */
struct bpf_object;
struct bpf_object *sampler__bpf_object(struct sampler *s);

#endif
