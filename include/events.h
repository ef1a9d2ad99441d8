/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sampling events spelled as perf spells them: "cpu-clock", "cycles:u",
 * "L1-dcache-load-misses", "r003c:pp", "cycles/period=100000/", several at
 * once separated by commas. Turning a spec into a perf_event_attr is pure
 * and unit-tested field by field, as perf's tests/attr do.
 */
#ifndef BPFSAMPLER_EVENTS_H
#define BPFSAMPLER_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>

#define EVENT_NAME_LEN 64
#define EVENTS_MAX 8

/* The kernel runs a clock event's hrtimer at most every 10 us
 * (perf_swevent_start_hrtimer), whatever period is asked. */
#define EVENTS_MIN_TIMER_PERIOD_NS 10000

struct event {
	char name[EVENT_NAME_LEN]; /* as given, e.g. "cycles:u" */
	struct perf_event_attr attr;
	bool timer;	     /* cpu-clock/task-clock: period in ns */
	bool offcpu;	     /* offcpu-time (--off-cpu): no perf event, the
			      * off-CPU unit counts it (src/capture/offcpu.c) */
	bool rate_from_term; /* /period=N/ or /freq=N/, not -c or -F */
	unsigned long freq;  /* the rate asked in Hz (-F, freq=), 0 for a period */
};

struct event_list {
	struct event v[EVENTS_MAX];
	size_t nr;
};

/*
 * Appends the events of spec (comma-separated) to list. Each samples every
 * `period` events when period != 0, else at `freq` Hz: the timers with a
 * fixed period of 1e9/freq ns, the others in frequency mode as perf does.
 * A "/period=N/" or "/freq=N/" term overrides both for that event. On error
 * returns -EINVAL and writes why (naming the event) into err.
 */
int events__parse(const char *spec, unsigned int freq, unsigned long period,
		  struct event_list *list, char *err, size_t errlen);
/*
 * Whether the kernel can sample e at the rate asked, given
 * kernel.perf_event_max_sample_rate (max_rate; <= 0: unknown): a rate above
 * it is throttled (period mode) or refused at open (frequency mode), and a
 * clock cannot tick faster than EVENTS_MIN_TIMER_PERIOD_NS. A clock's -c 1
 * is refused rather than clamped: the run would sample at a rate other than
 * the one asked while the summary's expectations used the one asked. A
 * period on a hardware event has no rate to check here. Returns 0, or
 * -ERANGE with why (naming the limit and the fix) in err.
 */
int events__check_rate(const struct event *e, long max_rate, char *err, size_t errlen);
/* A file name for event e from pattern: "%e" becomes the event's name with
 * ':' and '/' made safe. Returns 0, or -EINVAL without "%e". */
int events__output_name(const char *pattern, const struct event *e, char *out, size_t len);

#endif
