/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Each thread's wall time in a run with --off-cpu: its on-CPU time (the
 * cpu-clock or task-clock profile's nanoseconds) plus its off-CPU time (the
 * offcpu-time profile's), summed from the profiles as they are written, and
 * shown as the summary's "wall clock by thread" table (docs/formats.md).
 * Pure: fed profiles, unit-tested.
 */
#ifndef BPFSAMPLER_WALLCLOCK_H
#define BPFSAMPLER_WALLCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct profile;
struct wallclock;

struct wallclock_thread {
	uint32_t pid, tid;
	char comm[17];	 /* of its largest sample: a thread named after it
			  * starts (pthread_setname_np) has its first
			  * samples under its creator's name */
	uint64_t comm_ns;
	uint64_t on_ns, off_ns;
};

int wallclock__new(struct wallclock **out);
void wallclock__free(struct wallclock *w);
/* Adds p's samples (their value in nanoseconds) to each thread's on-CPU or
 * off-CPU time. Lost samples have no thread: left out. -EINVAL when p has
 * no value in nanoseconds (an event that is not a clock). */
int wallclock__add(struct wallclock *w, const struct profile *p, bool offcpu);
/* The threads, the most wall time first; *nr of them. The array is w's. */
const struct wallclock_thread *wallclock__threads(struct wallclock *w, size_t *nr);
/* The table, top rows of it, against a window of window_ns. */
void wallclock__print(FILE *f, struct wallclock *w, uint64_t window_ns, size_t top);

#endif
