// SPDX-License-Identifier: GPL-2.0
/*
 * inlined SECONDS: a hot loop in a function that is inlined for certain.
 *
 * main -> run_inlined (noinline) -> inl_mix (static, always_inline), whose
 * body is the loop; until SECONDS of this thread's CPU time passed.
 *
 * GROUND TRUTH: with -g (WL_CFLAGS), nearly every sample of the process has
 * the leaf frame main;run_inlined;inl_mix (inline): the address is in
 * inl_mix's loop, lines INL_MIX_FIRST..INL_MIX_LAST of this file (the
 * markers below), inlined into run_inlined at the line marked INL_CALL.
 * Exceptions: the clock's system call (now_s, burn.h, inlined once more
 * into inl_mix: kernel samples have it as their innermost user frame),
 * process start and exit.
 */
#include "burn.h"

#define CHUNK 20000

static inline __attribute__((always_inline)) unsigned long inl_mix(unsigned long x, double end)
{
	do { /* INL_MIX_FIRST */
		for (int i = 0; i < CHUNK; i++) {
			LCG_STEP(x);
			x ^= x >> 17;
			BARRIER(x);
		}
	} while (now_s(CLOCK_THREAD_CPUTIME_ID) < end); /* INL_MIX_LAST */
	return x;
}

__attribute__((noinline)) unsigned long run_inlined(double seconds)
{
	double end = now_s(CLOCK_THREAD_CPUTIME_ID) + seconds;
	unsigned long x = 1;

	x = inl_mix(x, end); /* INL_CALL */
	BARRIER(x);
	return x;
}

int main(int argc, char **argv)
{
	const char *usage = "inlined SECONDS";
	double seconds = arg_seconds(argc == 2 ? argv[1] : NULL, usage);

	return run_inlined(seconds) == 42;
}
