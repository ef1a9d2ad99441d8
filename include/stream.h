/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The loader's side of the per-CPU rings: checks each record's sequence
 * number, keeps the stack segments the BPF side sends once, aggregates the
 * sample records (stream mode, or samples spilled from a full counts map)
 * and, for --format samples, keeps every sample. Reassembles a stack from
 * its segments. Pure: fed records, unit-tested with synthetic streams.
 */
#ifndef BPFSAMPLER_STREAM_H
#define BPFSAMPLER_STREAM_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpfsampler/sampler_abi.h"

struct stream;

/* A process seen for the first time or with a new comm (an exec); ppid is
 * 0 when unknown. */
typedef void (*stream_process_fn)(void *ctx, uint32_t pid, uint32_t ppid, uint64_t mm,
				  const char *comm);
/* A process mapped a file executable (BPFS_REC_MAP). */
typedef void (*stream_mapping_fn)(void *ctx, const struct bpfs_rec_map *r);
/* Where segments missing from the stream are looked up (the BPF map).
 * Returns 0 and fills out, or -ENOENT. */
/* The gen a sample of pid taken at time_ns names its frames after
 * (symbolizer__map_gen_at). */
typedef uint32_t (*stream_gen_fn)(void *ctx, uint32_t pid, uint32_t gen, uint64_t time_ns);
typedef int (*stream_fallback_fn)(void *ctx, uint64_t id, struct bpfs_stack *out);
typedef int (*stream_count_fn)(void *ctx, const struct bpfs_count_key *key,
			       const struct bpfs_count_val *val);

/* BPF met a CPython code object (BPFS_REC_PY_CODE, python_abi.h). */
typedef void (*stream_py_code_fn)(void *ctx, uint32_t pid, uint64_t code);

struct stream_opts {
	bool keep_samples;	       /* for --format samples */
	stream_process_fn on_process;  /* may be NULL */
	stream_mapping_fn on_mapping;  /* may be NULL */
	stream_py_code_fn on_py_code;  /* may be NULL */
	stream_gen_fn map_gen_at;      /* may be NULL */
	void *ctx;
};

struct stream_stats {
	uint64_t records;	/* well-formed records handled */
	uint64_t samples;	/* sample records */
	uint64_t gens_by_time;	/* samples given a later mapping gen by time */
	uint64_t stack_records; /* stack records */
	uint64_t duplicate_stacks; /* stack records for an id already known */
	uint64_t conflicting_stacks; /* same id, other frames: kept the first */
	uint64_t malformed;	/* too short or of unknown type: dropped */
	uint64_t gaps;		/* records missing by sequence number */
	uint64_t late;		/* records that came after a later number (nesting) */
	uint64_t reordered;	/* records seen twice or far too late: a bug */
	uint64_t completions;	/* completion records */
	uint64_t completed;	/* pending samples they completed */
	uint64_t never_completed; /* pending samples left at the end */
	uint64_t segments_forgotten; /* stack segments dropped as windows closed */
	uint64_t stacks_cleared;     /* times the BPF stacks map was emptied */
	uint64_t segments_kept;	     /* segments taken from it and kept here */
};

/* The aggregation key of a sample record. */
void stream__sample_key(const struct bpfs_rec_sample *r, struct bpfs_count_key *k);
int stream__new(const struct stream_opts *o, struct stream **out);
void stream__free(struct stream *st);
/* One ring record (the ring_buffer callback). Returns 0 or -ENOMEM. */
int stream__handle(struct stream *st, const void *data, size_t size);
/* The last sequence number CPU cpu spent: records after the last one seen
 * are counted as gaps too. Call once per CPU after the final drain. */
int stream__close_cpu(struct stream *st, uint32_t cpu, uint64_t last_seq);
/* Counts the samples still waiting for a completion with the partial stack
 * they have, marked unreadable. Call after the final drain. */
int stream__finish(struct stream *st);
/* The same for the samples of the processes gone says (while sampling:
 * an exited thread never returns to user space to complete them). */
int stream__finish_if(struct stream *st, bool (*gone)(void *ctx, uint32_t pid), void *ctx);
int stream__for_each_count(struct stream *st, stream_count_fn cb, void *ctx);
/* The same, but the counts for which take returns 1 go (take added them
 * somewhere else); 0 leaves one, < 0 stops (sampler__take_counts). */
int stream__take_counts(struct stream *st, stream_count_fn take, void *ctx);
/*
 * Windows (the agent). Samples taken at or after end_ns (CLOCK_MONOTONIC)
 * are counted apart, in the next window's counts, so a window holds
 * exactly the samples of its time span however late they are drained.
 */
int stream__set_window_end(struct stream *st, uint64_t end_ns);
/* The open window is about to be read: from now on every sample counts in
 * the next window, whatever its time (a completion of an older sample, at
 * most a window late), so the rings can be drained while it is read. */
void stream__seal(struct stream *st);
/*
 * The open window was read (stream__for_each_count) and the BPF stacks
 * map emptied: its counts go, the next window's become the ones read, and
 * stack segments not seen for two windows are forgotten, so memory stays
 * flat however many distinct stacks a long run sees.
 */
int stream__next_window(struct stream *st, uint64_t next_end_ns);
/* A segment taken out of the BPF stacks map as it is emptied (the
 * sampler_stack_fn of sampler__clear_stacks; ctx is the stream): kept
 * unless a record brought it since the last emptying, so the samples that
 * name it (counted in the kernel, or whose stack record was lost) find it
 * here. */
int stream__keep_segment(void *st, uint64_t id, const struct bpfs_stack *seg);
/* The BPF stacks map was emptied (sampler__clear_stacks): a segment sent
 * from now on under an id already known replaces it. */
void stream__stacks_cleared(struct stream *st);
/*
 * Without windows (the one-shot run, as it folds exited processes in):
 * the segments neither a stack id in used (a hashmap of ids, those the
 * kernel's counts name; filled further here) nor the stream's counts nor a
 * sample awaiting its completion names, directly or as an outer segment,
 * go once they have been here for two calls: a sample of them still on
 * its way finds them. Memory then follows the stacks of the processes
 * alive. Returns 0 or -ENOMEM.
 */
struct hashmap;
int stream__forget_segments(struct stream *st, struct hashmap *used);
/* A count callback (sampler__for_each_count, stream__for_each_count) that
 * adds a key's stack ids to the hashmap used: what stream__forget_segments
 * must keep. */
int stream__mark_ids(void *used, const struct bpfs_count_key *k, const struct bpfs_count_val *v);
/* A process exited: what the stream keeps of it goes. */
void stream__forget_process(struct stream *st, uint32_t pid);
size_t stream__nr_segments(const struct stream *st);
void stream__stats(const struct stream *st, struct stream_stats *out);
/* The kept samples, sorted by time (per CPU, seq order breaks ties). */
const struct bpfs_rec_sample *stream__samples(struct stream *st, size_t *nr);

/*
 * Frames of the stack whose innermost segment is id, innermost first, at
 * most max. Segments come from stack records, else from fb (may be NULL).
 * Returns the number of frames; *missing is set when a segment could not be
 * found anywhere (the frames found so far are returned).
 */
size_t stream__unwind(struct stream *st, uint64_t id, stream_fallback_fn fb, void *fbctx,
		      uint64_t *ips, size_t max, bool *missing);

#endif
