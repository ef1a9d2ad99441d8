// SPDX-License-Identifier: GPL-2.0
/*
 * Code without frame pointers calling into Debian's libc (also built
 * without): the stacks only unwind tables can walk. Built -O2
 * -fomit-frame-pointer. nofp [SECONDS [ROUNDS]] alternates for SECONDS
 * (default 3), or until ROUNDS rounds of both are done if that comes first
 * (a fixed amount of work, whose wall time tools/bench/unwind compares
 * with and without a profiler):
 *   main -> run_qsort -> qsort (libc) -> ... -> cmp_ints
 *   main -> copy_loop -> memcpy (libc)
 * Every sample of the process has main in its stack; comparator samples
 * show run_qsort under libc's frames, memcpy samples show copy_loop.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) static void run_qsort(int *v, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245 + 12345;
		v[i] = (int)(seed >> 8);
	}
	qsort(v, n, sizeof(*v), cmp_ints);
	sink += (unsigned long)v[n / 2];
}

__attribute__((noinline)) static void copy_loop(char *dst, const char *src, size_t len, int times)
{
	for (int i = 0; i < times; i++) {
		memcpy(dst, src, len);
		__asm__ volatile("" : : "r"(dst) : "memory");
		sink += (unsigned char)dst[i % len];
	}
}

/* With WORKLOAD_CPU set in the environment, seconds of this process's CPU
 * time instead of wall time: the same samples on a busy host, only later. */
static double now(void)
{
	static int clk = -1;
	struct timespec ts;

	if (clk < 0)
		clk = getenv("WORKLOAD_CPU") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now() + (argc > 1 ? atof(argv[1]) : 3);
	long rounds = argc > 2 ? atol(argv[2]) : 0;
	size_t n = 20000, len = 1 << 20;
	int *v = malloc(n * sizeof(*v));
	char *a = malloc(len), *b = malloc(len);
	unsigned int seed = 1;

	if (!v || !a || !b)
		return 1;
	memset(a, 7, len);
	while (now() < end && (rounds <= 0 || seed <= (unsigned int)rounds)) {
		run_qsort(v, n, seed++);
		copy_loop(b, a, len, 20);
	}
	return sink == 42;
}
