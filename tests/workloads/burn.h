/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by the workloads: argument parsing and CPU-time clocks. Every
 * profiled function is noinline and its loop has a compiler barrier, so the
 * names in a profile are the ones in the source. */
#ifndef WORKLOAD_BURN_H
#define WORKLOAD_BURN_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BARRIER(x) __asm__ volatile("" : "+r"(x) : : "memory")

static inline double clock_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double arg_seconds(const char *s, const char *usage)
{
	char *end;
	double v = s ? strtod(s, &end) : 0;

	if (!s || *end || v <= 0) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(2);
	}
	return v;
}

static inline long arg_long(const char *s, long min, const char *usage)
{
	char *end;
	long v = s ? strtol(s, &end, 10) : 0;

	if (!s || *end || v < min) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(2);
	}
	return v;
}

#endif
