// SPDX-License-Identifier: GPL-2.0
/*
 * cpuburn ITERATIONS THREADS: exactly ITERATIONS iterations of an integer
 * hash loop (burn_loop) in each of THREADS threads; prints the wall time in
 * seconds. Fixed work, so a profiler's cost shows as a longer time.
 */
#include <pthread.h>

#include "burn.h"

static long iterations;

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
	burn_loop(iterations);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *usage = "cpuburn ITERATIONS THREADS";
	long threads;
	pthread_t *t;
	double start;

	iterations = arg_long(argv[1], 1, usage);
	threads = arg_long(argc > 2 ? argv[2] : NULL, 1, usage);
	t = calloc(threads, sizeof(*t));
	start = clock_s(CLOCK_MONOTONIC);
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("%.6f\n", clock_s(CLOCK_MONOTONIC) - start);
	free(t);
	return 0;
}
