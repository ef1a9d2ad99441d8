// SPDX-License-Identifier: GPL-2.0
/*
 * cpuburn ITERATIONS THREADS: a fixed amount of deterministic CPU work, to
 * measure what a profiler costs. Each of THREADS threads runs burn_loop:
 * exactly ITERATIONS steps of xorshift64 (a 3-cycle dependency chain, no
 * memory traffic, no system calls). Prints the wall time from the first
 * thread's start to the last one's end, in seconds with 6 decimals, on
 * stdout. Run it alone and under a profiler: the ratio of the two times is
 * the slowdown (tools/bench calibrates ITERATIONS to a few seconds).
 *
 * GROUND TRUTH: all samples of the workers are ...;burn_loop.
 */
#include <pthread.h>
#include <string.h>

#include "burn.h"

#define USAGE "cpuburn ITERATIONS THREADS"

static long iterations;
static volatile unsigned long sink;

__attribute__((noinline)) unsigned long burn_loop(long n)
{
	unsigned long x = 1;

	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		BARRIER(x);
	}
	return x;
}

static void *worker(void *arg)
{
	sink = burn_loop(iterations);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads;
	pthread_t *t;
	double start;
	int err;

	if (argc != 3)
		usage_exit(USAGE);
	iterations = arg_long(argv[1], 1, 1L << 50, USAGE);
	threads = arg_long(argv[2], 1, 4096, USAGE);
	t = calloc(threads, sizeof(*t));
	if (!t)
		return 1;
	start = clock_s(CLOCK_MONOTONIC);
	for (long i = 0; i < threads; i++) {
		err = pthread_create(&t[i], NULL, worker, NULL);
		if (err) {
			fprintf(stderr, "cpuburn: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("%.6f\n", clock_s(CLOCK_MONOTONIC) - start);
	free(t);
	return 0;
}
