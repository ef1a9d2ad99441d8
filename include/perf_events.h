/* SPDX-License-Identifier: GPL-2.0 */
/* The sampling perf events, one per CPU. */
#ifndef BPFSAMPLER_PERF_EVENTS_H
#define BPFSAMPLER_PERF_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct perf_event_attr;
struct int_list;
struct event_list;

struct perf_events;

/* Opens every event of evs, disabled, on every CPU of cpus (NULL or empty:
 * every online CPU). Returns 0, -ENODEV when an event cannot be sampled on
 * this machine (message printed: the event and what to use instead), or
 * -errno with a message printed. */
int perf_events__open(const struct event_list *evs, const struct int_list *cpus,
		      struct perf_events **out);
int perf_events__nr(const struct perf_events *pe);
int perf_events__cpu(const struct perf_events *pe, int i);
/* Index in evs of the event of fd i. */
int perf_events__event(const struct perf_events *pe, int i);
/* Summed over CPUs for event ev: time enabled and time running (less when
 * the PMU multiplexes more events than it has counters), in ns. */
void perf_events__times(const struct perf_events *pe, int ev, uint64_t *enabled,
			uint64_t *running);
int perf_events__fd(const struct perf_events *pe, int i);
/* The BPF link took ownership of event i's fd: perf_events__free() must
 * not close it, and the link closes it when destroyed. */
void perf_events__hand_over(struct perf_events *pe, int i);
int perf_events__enable(struct perf_events *pe);
int perf_events__disable(struct perf_events *pe);
void perf_events__free(struct perf_events *pe);

#endif
