/* SPDX-License-Identifier: GPL-2.0 */
/* Turns what the sampler counted into the profile model (profile.h), named
 * frame by frame, and writes the summary on stderr. */
#ifndef BPFSAMPLER_REPORT_H
#define BPFSAMPLER_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct profile;
struct sampler;
struct sampler_stats;
struct symbolizer;
struct stream;
struct stream_stats;

/* The values of every sample, in this order. */
enum report_value {
	REPORT_VALUE_SAMPLES = 0, /* samples/count */
	REPORT_VALUE_PERIOD,	  /* cpu/nanoseconds, or EVENT/count */
};

struct report_opts {
	bool kernel_only;   /* user-mode samples show as [user space] */
	bool weight_period; /* the default value is the period, not samples */
	int event;	    /* only this event's samples; -1: all */
	const char *event_name; /* NULL: cpu-clock */
	bool timer;	    /* the event is a clock: periods are ns */
	bool offcpu;	    /* offcpu-time: periods are ns off the CPU, and
			     * the default value */
	uint64_t period;    /* the event's nominal period (0: frequency mode) */
	double scale;	    /* periods x this (multiplexing); 0 or 1: none */
	/* Called every REPORT_PROGRESS_KEYS keys (may be NULL): the agent
	 * drains the rings while a window is named. */
	void (*progress)(void *ctx);
	void *progress_ctx;
};

#define REPORT_PROGRESS_KEYS 128

struct report_stats {
	uint64_t samples;	/* counted in folded lines, lost lines excluded */
	uint64_t lost;		/* in [lost] lines */
	uint64_t keys;		/* (pid, tid, comm, stacks) keys read */
	uint64_t processes;	/* distinct pids */
	uint64_t stacks;	/* distinct (kernel, user) stack pairs */
	uint64_t stacks_missing; /* ids not found in the stacks map */
};

/* The profile of one event, aggregated: named stacks from the kernel's
 * counts (s, may be NULL) and the stream's, plus lost samples from stat.
 * Stack segments come from the stream, else from the sampler's map. Sets
 * out's sample types and metadata. */
int report__build(struct sampler *s, struct stream *stream, struct symbolizer *sym,
		  const struct report_opts *o, const uint64_t *stat,
		  struct profile *out, struct report_stats *rs);
/* Samples of processes gone, folded into the profiles while the run goes
 * on (the one-shot run: its memory follows the processes alive, not all
 * that ever ran): one profile, options and stats per event. */
struct report_fold {
	const struct report_opts *o;
	struct profile **p;
	struct report_stats *rs; /* summed over the folds */
	size_t nr;
};

/*
 * Takes the counts of processes pids (exited: their keys are final) out of
 * the sampler's map (s may be NULL) and the stream, and adds them to
 * f->p[event], named with the mappings the processes had, as report__build
 * would at the end. report__build then adds the rest to the same profiles.
 */
int report__fold(struct sampler *s, struct stream *stream, struct symbolizer *sym,
		 const struct report_fold *f, const int *pids, size_t nr_pids);
/* After a fold: the stack segments the stream kept that no count left
 * names go (stream__forget_segments, with the ids the kernel's counts
 * name). */
int report__forget_segments(struct sampler *s, struct stream *stream);
void report__add_stats(struct report_stats *to, const struct report_stats *from);
/* Adds every sample the stream kept (--format samples) to out one by one,
 * with its time and CPU, in time order: out is a profile of its own, not
 * report__build's, which has the same samples summed. */
int report__add_timed(struct sampler *s, struct stream *stream, struct symbolizer *sym,
		      const struct report_opts *o, struct profile *out);
/* Per-event lines of the summary: samples, losses, multiplexing. */
void report__event_summary(FILE *f, const char *name, const struct sampler_stats *st, int ev,
			   bool weight_period);
/* Human summary of a run, on f. */
void report__summary(FILE *f, const struct sampler_stats *st, const struct report_stats *rs,
		     const struct stream_stats *ss, size_t nr_lines, double seconds);

#endif
