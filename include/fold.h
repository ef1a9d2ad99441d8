/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Samples of exited processes named while the capture goes on
 * (report__fold), so their mappings, perf maps and files are released 2-4 s
 * after they exit rather than at the end of the run or window: memory
 * follows the processes alive and the distinct stacks, not every process
 * that ever ran. The one-shot run and the agent own one each; the owner
 * takes the profiles folded so far when it writes (folder__take), and
 * report__build adds the rest to them.
 */
#ifndef BPFSAMPLER_FOLD_H
#define BPFSAMPLER_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>

#include "addrspace.h"
#include "report.h"

struct folder;
struct sampler;
struct stream;
struct symbolizer;

struct folder_opts {
	const struct report_opts *ro; /* per event, as the final build's */
	size_t nr;		      /* events */
	bool demangle;		      /* the profiles' option */
	/* Processes known below which a tick folds nothing (naming them at
	 * the end costs the same); BPFS_DEBUG_FOLD_MIN overrides it. */
	unsigned long long min_procs;
	/* Files no process holds any more are released at each fold too
	 * (symbolizer__sweep_exited); false: the owner sweeps them. */
	bool sweep_files;
	/* Called for each process released, after its samples are folded. */
	addrspace_gone_fn gone;
	void *gone_ctx;
};

/* Folding needs each key's values as they will be written: an event the
 * kernel may multiplex (not a software one) has its periods
 * scaled by the whole run's enabled/running ratio, known at the end. */
static inline bool folder__foldable(unsigned int perf_type)
{
	return perf_type == PERF_TYPE_SOFTWARE;
}
int folder__new(const struct folder_opts *o, struct folder **out);
void folder__free(struct folder *f);
/* Every FOLD_INTERVAL_S: processes found gone at two ticks are folded
 * and released. 0, or the first error (later ticks do nothing). */
int folder__tick(struct folder *f, struct sampler *s, struct stream *stream,
		 struct symbolizer *sym, double now_s);
/* Event ev's profile folded so far (NULL: none yet), for report__build
 * to add the rest to, and its stats in *folded (added to the build's by
 * the caller); the folder starts afresh for that event. */
struct profile *folder__take(struct folder *f, size_t ev, struct report_stats *folded);

#define FOLD_INTERVAL_S 2.0

#endif
