// SPDX-License-Identifier: GPL-2.0
/*
 * branch SECONDS: main -> run_branch -> branch_unpredictable and
 * branch_predictable in turns, 5 ms of thread CPU time each per round,
 * until SECONDS of wall time passed.
 *
 * Both run the same loop: a xorshift64 step, then a conditional jump (jnz)
 * on a value b:
 *   branch_unpredictable  b = low bit of the xorshift value: taken or not
 *                         at random, mispredicted about half the time;
 *   branch_predictable    b = 1: always taken, never mispredicted.
 * The jump is an asm goto, so the compiler cannot turn it into a cmov or
 * drop it. The clock is checked after a chunk of about the same time in
 * both (~20 us), the deadline advancing from the previous deadline (as
 * in shares.c), so neither gains from overshooting.
 *
 * GROUND TRUTH: cpu-clock/task-clock samples split equally between the two
 * (both under ...;main;run_branch); branch misses overwhelmingly in
 * branch_unpredictable.
 */
#include "burn.h"

#define USAGE "branch SECONDS"
#define TURN_S 0.005
#ifndef UNPREDICTABLE_CHUNK
#define UNPREDICTABLE_CHUNK 4096
#endif
#ifndef PREDICTABLE_CHUNK
#define PREDICTABLE_CHUNK 12288
#endif

static double deadline;	/* thread CPU time where the current turn ends */

#define BRANCHY(x, pattern, chunk)                                                \
	do {                                                                      \
		unsigned long n_ = 0;                                             \
		deadline += TURN_S;                                               \
		do {                                                              \
			for (int i_ = 0; i_ < (chunk); i_++) {                    \
				(x) ^= (x) << 13;                                 \
				(x) ^= (x) >> 7;                                  \
				(x) ^= (x) << 17;                                 \
				BARRIER(x);                                       \
				unsigned long b_ = (pattern);                     \
				__asm__ goto("test %0, %0\n\tjnz %l[taken]"       \
					     : : "r"(b_) : "cc" : taken);         \
				n_++;                                             \
			taken:;                                                   \
			}                                                         \
			BARRIER(n_);                                              \
		} while (now_s(CLOCK_THREAD_CPUTIME_ID) < deadline);              \
	} while (0)

__attribute__((noinline)) unsigned long branch_unpredictable(unsigned long x)
{
	BRANCHY(x, x & 1, UNPREDICTABLE_CHUNK);
	return x;
}

__attribute__((noinline)) unsigned long branch_predictable(unsigned long x)
{
	BRANCHY(x, 1UL, PREDICTABLE_CHUNK);
	return x;
}

__attribute__((noinline)) void run_branch(double seconds)
{
	double end = now_s(CLOCK_MONOTONIC) + seconds;
	unsigned long u = 0x9e3779b97f4a7c15UL, p = 0x2545f4914f6cdd1dUL;

	deadline = now_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		u = branch_unpredictable(u);
		p = branch_predictable(p);
	} while (now_s(CLOCK_MONOTONIC) < end);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		usage_exit(USAGE);
	run_branch(arg_seconds(argv[1], USAGE));
	return 0;
}
