// SPDX-License-Identifier: GPL-2.0
/*
 * threads N SECONDS: N threads named worker-0 .. worker-<N-1> (comm, set
 * with pthread_setname_np), each running the same CPU-bound thread_work
 * until SECONDS of wall time passed. The main thread only joins (sleeps).
 *
 * GROUND TRUTH: every worker's samples are ...;thread_work (start_thread
 * and the pthread frames above it, which libc builds without frame
 * pointers); equal CPU time per thread, so equal samples per thread, when
 * N <= CPUs or the scheduler is fair. The exact truth: with THREADS_REPORT
 * set in the environment each thread prints "TID CPU_SECONDS" (its own
 * CLOCK_THREAD_CPUTIME_ID) on stdout as it ends.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "burn.h"

#define USAGE "threads N SECONDS"
#define CHUNK 20000

static double end_time;	/* CLOCK_MONOTONIC */
/* With WORKLOAD_CPU set in the environment, each thread works SECONDS of
 * its own CPU time instead (the same samples on a busy host, only later). */
static double cpu_seconds;

__attribute__((noinline)) unsigned long thread_work(void)
{
	unsigned long x = 1;

	do {
		for (int i = 0; i < CHUNK; i++) {
			LCG_STEP(x);
			BARRIER(x);
		}
	} while (cpu_seconds ? now_s(CLOCK_THREAD_CPUTIME_ID) < cpu_seconds :
			       now_s(CLOCK_MONOTONIC) < end_time);
	return x;
}

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	thread_work();
	if (getenv("THREADS_REPORT")) {
		pthread_mutex_lock(&report_lock);
		printf("%ld %.6f\n", (long)syscall(SYS_gettid), clock_s(CLOCK_THREAD_CPUTIME_ID));
		fflush(stdout);
		pthread_mutex_unlock(&report_lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n;
	double seconds;
	pthread_t *t;
	int err;

	if (argc != 3)
		usage_exit(USAGE);
	n = arg_long(argv[1], 1, 10000, USAGE);
	seconds = arg_seconds(argv[2], USAGE);
	t = calloc(n, sizeof(*t));
	if (!t)
		return 1;
	end_time = clock_s(CLOCK_MONOTONIC) + seconds;
	if (getenv("WORKLOAD_CPU"))
		cpu_seconds = seconds;
	/* small stacks: 10,000 threads of 8 MiB would be 80 GiB of address space */
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (long i = 0; i < n; i++) {
		err = pthread_create(&t[i], &attr, worker, (void *)i);
		if (err) {
			fprintf(stderr, "threads: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
