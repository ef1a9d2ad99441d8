// SPDX-License-Identifier: GPL-2.0
/*
 * recurse DEPTH SECONDS: main -> run_recurse -> recurse x DEPTH ->
 * recurse_leaf, which spins. Ground truth: every sample's user stack is
 * ...;main;run_recurse;recurse (DEPTH times);recurse_leaf.
 */
#include "burn.h"

static double end_time;

__attribute__((noinline)) unsigned long recurse_leaf(void)
{
	unsigned long x = 1;

	while (clock_s(CLOCK_MONOTONIC) < end_time) {
		for (int i = 0; i < 4000; i++) {
			x = x * 6364136223846793005UL + 1;
			BARRIER(x);
		}
	}
	return x;
}

/* The result is used after the call, so this is no tail call. */
__attribute__((noinline)) unsigned long recurse(long depth)
{
	unsigned long r = depth > 1 ? recurse(depth - 1) : recurse_leaf();

	BARRIER(r);
	return r + 1;
}

__attribute__((noinline)) unsigned long run_recurse(long depth, double seconds)
{
	end_time = clock_s(CLOCK_MONOTONIC) + seconds;
	return recurse(depth) + 1;
}

int main(int argc, char **argv)
{
	const char *usage = "recurse DEPTH SECONDS";
	long depth = arg_long(argv[1], 1, usage);
	double seconds = arg_seconds(argc > 2 ? argv[2] : NULL, usage);

	return run_recurse(depth, seconds) == 0;
}
