// SPDX-License-Identifier: GPL-2.0
/*
 * cache SECONDS: cache_hostile (dependent loads over a 256 MiB random cyclic
 * permutation: nearly every load misses every cache) and cache_friendly (the
 * same loop over 16 KiB, which stays in L1) take turns, 5 ms of thread CPU
 * time each, from run_cache. Ground truth: equal cpu-clock shares; the
 * cache misses overwhelmingly in cache_hostile.
 */
#include "burn.h"

#define BIG (256UL << 20)
#define SMALL (16UL << 10)

static size_t *big, *small;

static void make_cycle(size_t *a, size_t n)
{
	unsigned long x = 88172645463325252UL;

	for (size_t i = 0; i < n; i++)
		a[i] = i;
	/* Sattolo's shuffle: one cycle through every slot */
	for (size_t i = n - 1; i > 0; i--) {
		size_t j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % i;
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

#define CHASE(arr)                                                                 \
	do {                                                                       \
		double end_ = clock_s(CLOCK_THREAD_CPUTIME_ID) + 0.005;            \
		size_t p_ = 0;                                                     \
		do {                                                               \
			for (int i_ = 0; i_ < 2000; i_++)                          \
				p_ = (arr)[p_];                                    \
			BARRIER(p_);                                               \
		} while (clock_s(CLOCK_THREAD_CPUTIME_ID) < end_);                 \
	} while (0)

__attribute__((noinline)) void cache_hostile(void)
{
	CHASE(big);
}

__attribute__((noinline)) void cache_friendly(void)
{
	CHASE(small);
}

__attribute__((noinline)) void run_cache(double seconds)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;

	while (clock_s(CLOCK_MONOTONIC) < end) {
		cache_hostile();
		cache_friendly();
	}
}

int main(int argc, char **argv)
{
	double seconds = arg_seconds(argv[1], "cache SECONDS");

	big = malloc(BIG);
	small = malloc(SMALL);
	if (!big || !small)
		return 1;
	make_cycle(big, BIG / sizeof(size_t));
	make_cycle(small, SMALL / sizeof(size_t));
	run_cache(seconds);
	return 0;
}
