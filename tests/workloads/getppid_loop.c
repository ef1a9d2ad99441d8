// SPDX-License-Identifier: GPL-2.0
/*
 * getppid_loop N [ROUNDS]: makes N getppid() system calls ROUNDS times
 * (default 1) and prints, for each round, the nanoseconds per call of the
 * thread's CPU time, then of wall time:
 *
 *     getppid_loop: 212.4 ns/call cpu 213.0 ns/call wall
 *
 * The syscall-tax workload (tests/integration/syscall_tax.sh,
 * tools/bench/bench): a profiler that puts tasks on the system call slow
 * path (an enabled syscall tracepoint) makes every call dearer, whatever it
 * samples. CPU time is the figure to compare on a shared machine: time the
 * thread waited for a CPU does not count in it.
 *
 * The call is a raw `syscall` instruction: no libc can cache getppid, and
 * the loop is the same whatever the libc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

static double clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) static long getppid_calls(long n)
{
	long sum = 0;

	for (long i = 0; i < n; i++) {
		long ret;

		__asm__ volatile("syscall"
				 : "=a"(ret)
				 : "a"((long)SYS_getppid)
				 : "rcx", "r11", "memory");
		sum += ret;
	}
	return sum;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	int rounds = argc > 2 ? atoi(argv[2]) : 1;

	if (n <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: getppid_loop N [ROUNDS]: N > 0 getppid calls per round\n");
		return 2;
	}
	for (int r = 0; r < rounds; r++) {
		double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = clock_ns(CLOCK_MONOTONIC);
		long sum = getppid_calls(n);
		double c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w1 = clock_ns(CLOCK_MONOTONIC);

		if (sum == 0)
			fprintf(stderr, "getppid_loop: getppid returned 0 every time\n");
		printf("getppid_loop: %.1f ns/call cpu %.1f ns/call wall\n", (c1 - c0) / n,
		       (w1 - w0) / n);
		fflush(stdout);
	}
	return 0;
}
