/* SPDX-License-Identifier: GPL-2.0 */
/* Turns what the sampler counted into named folded stacks, and the
 * summary on stderr. */
#ifndef BPFSAMPLER_REPORT_H
#define BPFSAMPLER_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct folded;
struct sampler;
struct sampler_stats;
struct symbolizer;
struct stream;
struct stream_stats;
struct bpfs_rec_sample;

struct report_opts {
	bool annotate;	    /* kernel frames get the _[k] suffix */
	bool kernel_only;   /* user-mode samples show as [user space] */
	bool weight_period; /* counts are sums of periods, not samples */
	int event;	    /* only this event's samples; -1: all */
	double scale;	    /* periods x this (multiplexing); 0 or 1: none */
};

struct report_stats {
	uint64_t samples;	/* counted in folded lines, lost lines excluded */
	uint64_t lost;		/* in [lost] lines */
	uint64_t keys;		/* (pid, tid, comm, stacks) keys read */
	uint64_t processes;	/* distinct pids */
	uint64_t stacks;	/* distinct (kernel, user) stack pairs */
	uint64_t stacks_missing; /* ids not found in the stacks map */
};

/* Named folded stacks from the kernel's counts (s, may be NULL) and the
 * stream's, plus [lost] lines from st. Stack segments come from the stream,
 * else from the sampler's map. */
int report__build(struct sampler *s, struct stream *stream, struct symbolizer *sym,
		  const struct report_opts *o, const uint64_t *stat,
		  struct folded *out, struct report_stats *rs);
/* One line of --format samples: "SECONDS.NS CPU PID TID PERIOD EVENT frames". */
int report__write_sample(struct sampler *s, struct stream *stream, struct symbolizer *sym,
			 const struct report_opts *o, const struct bpfs_rec_sample *r,
			 const char *event, FILE *f);
/* Per-event lines of the summary: samples, losses, multiplexing. */
void report__event_summary(FILE *f, const char *name, const struct sampler_stats *st, int ev,
			   bool weight_period);
/* Human summary of a run, on f. */
void report__summary(FILE *f, const struct sampler_stats *st, const struct report_stats *rs,
		     const struct stream_stats *ss, size_t nr_lines, double seconds);

#endif
