// SPDX-License-Identifier: GPL-2.0
/*
 * recurse DEPTH SECONDS [CHUNKS]: main -> run_recurse -> recurse (DEPTH frames
 * of it, each a real call whose result is used after it returns: no tail
 * call, no loop) -> recurse_leaf, which spins until SECONDS of wall time
 * passed, or until it did CHUNKS chunks of 20000 steps if that comes first
 * (a fixed amount of work, whose wall time tools/bench/unwind compares
 * with and without a profiler).
 *
 * GROUND TRUTH: every sample's user stack is
 *   (libc start frames);main;run_recurse;recurse x DEPTH;recurse_leaf
 * including the samples taken in the kernel while recurse_leaf reads the
 * clock (the system call is inlined into it, burn.h). A recurse frame is
 * 16 bytes (return address and saved rbp), so DEPTH up to the cap of
 * 100000 needs 1.6 MB of the default 8 MB stack.
 */
#include "burn.h"

#define USAGE "recurse DEPTH SECONDS [CHUNKS]"
#define CHUNK 20000

static double end_time;	/* CLOCK_MONOTONIC */
static long chunks;	/* 0: no limit */

__attribute__((noinline)) unsigned long recurse_leaf(void)
{
	unsigned long x = 1;
	long done = 0;

	do {
		for (int i = 0; i < CHUNK; i++) {
			LCG_STEP(x);
			BARRIER(x);
		}
	} while (now_s(CLOCK_MONOTONIC) < end_time && (!chunks || ++done < chunks));
	return x;
}

/* depth frames of recurse, the last one calls recurse_leaf */
__attribute__((noinline)) unsigned long recurse(long depth)
{
	unsigned long r = depth > 1 ? recurse(depth - 1) : recurse_leaf();

	BARRIER(r);	/* r is used after the call: not a tail call */
	return r + 1;
}

__attribute__((noinline)) unsigned long run_recurse(long depth, double seconds)
{
	unsigned long r;

	end_time = now_s(CLOCK_MONOTONIC) + seconds;
	r = recurse(depth);
	BARRIER(r);
	return r + 1;
}

int main(int argc, char **argv)
{
	long depth;
	double seconds;

	if (argc != 3 && argc != 4)
		usage_exit(USAGE);
	depth = arg_long(argv[1], 1, 100000, USAGE);
	seconds = arg_seconds(argv[2], USAGE);
	if (argc == 4)
		chunks = arg_long(argv[3], 1, 1L << 40, USAGE);
	return run_recurse(depth, seconds) == 0;
}
