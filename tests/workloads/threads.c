// SPDX-License-Identifier: GPL-2.0
/*
 * threads N SECONDS: N threads named worker-0..worker-N-1, each running the
 * same CPU-bound thread_work for SECONDS. Ground truth: equal CPU per thread;
 * with THREADS_REPORT=1 in the environment each thread prints
 * "TID CPU_SECONDS" at its end, the truth to compare samples per thread with.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "burn.h"

static double seconds;

__attribute__((noinline)) void thread_work(void)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;
	unsigned long x = 1;

	while (clock_s(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 4000; i++) {
			x = x * 6364136223846793005UL + 1;
			BARRIER(x);
		}
	}
}

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	thread_work();
	if (getenv("THREADS_REPORT"))
		printf("%ld %.6f\n", (long)syscall(SYS_gettid), clock_s(CLOCK_THREAD_CPUTIME_ID));
	return NULL;
}

int main(int argc, char **argv)
{
	const char *usage = "threads N SECONDS";
	long n = arg_long(argv[1], 1, usage);
	pthread_t *t = calloc(n, sizeof(*t));

	seconds = arg_seconds(argc > 2 ? argv[2] : NULL, usage);
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
