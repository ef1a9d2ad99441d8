/* SPDX-License-Identifier: GPL-2.0 */
/* The sampling perf events, one per CPU. */
#ifndef BPFSAMPLER_PERF_EVENTS_H
#define BPFSAMPLER_PERF_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct perf_event_attr;
struct int_list;

/*
 * The cpu-clock timer at freq Hz. A fixed period (1e9/freq ns), not
 * frequency mode: the kernel refuses freq > perf_event_max_sample_rate at
 * open time and lowers that sysctl on its own when interrupts run long, and
 * a software timer needs no frequency feedback anyway. Pure: unit-tested.
 */
void perf_events__timer_attr(unsigned int freq, struct perf_event_attr *attr);
/* Samples per second that attr really gives (1e9/period for the timer). */
double perf_events__effective_rate(const struct perf_event_attr *attr);

struct perf_events;

/* Opens attr, disabled, on every CPU of cpus (NULL or empty: every online
 * CPU). Returns 0 or -errno with a message printed. */
int perf_events__open(const struct perf_event_attr *attr, const struct int_list *cpus,
		      struct perf_events **out);
int perf_events__nr(const struct perf_events *pe);
int perf_events__cpu(const struct perf_events *pe, int i);
int perf_events__fd(const struct perf_events *pe, int i);
/* The BPF link took ownership of event i's fd: perf_events__free() must
 * not close it, and the link closes it when destroyed. */
void perf_events__hand_over(struct perf_events *pe, int i);
int perf_events__enable(struct perf_events *pe);
int perf_events__disable(struct perf_events *pe);
/* Sum over CPUs of the time the events were enabled, in ns. */
uint64_t perf_events__time_enabled(const struct perf_events *pe);
void perf_events__free(struct perf_events *pe);

#endif
