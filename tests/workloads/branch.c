// SPDX-License-Identifier: GPL-2.0
/*
 * branch SECONDS: branch_unpredictable (a conditional branch on random bits)
 * and branch_predictable (the same loop on a constant pattern) take turns,
 * 5 ms of thread CPU time each, from run_branch. Ground truth: equal
 * cpu-clock shares; the branch misses overwhelmingly in branch_unpredictable.
 * The branch is an asm goto, so the compiler cannot turn it into a cmov.
 */
#include "burn.h"

#define BRANCHY(pattern)                                                           \
	do {                                                                       \
		double end_ = clock_s(CLOCK_THREAD_CPUTIME_ID) + 0.005;            \
		unsigned long x_ = 0x9e3779b97f4a7c15UL, n_ = 0;                   \
		do {                                                               \
			for (int i_ = 0; i_ < 4000; i_++) {                        \
				x_ ^= x_ << 13;                                    \
				x_ ^= x_ >> 7;                                     \
				x_ ^= x_ << 17;                                    \
				unsigned long b_ = (pattern);                      \
				__asm__ goto("test %0, %0\n\tjz %l[skip]"          \
					     : : "r"(b_) : "cc" : skip);           \
				n_++;                                              \
			skip:;                                                     \
			}                                                          \
			BARRIER(n_);                                               \
		} while (clock_s(CLOCK_THREAD_CPUTIME_ID) < end_);                 \
	} while (0)

__attribute__((noinline)) void branch_unpredictable(void)
{
	BRANCHY(x_ & 1);
}

__attribute__((noinline)) void branch_predictable(void)
{
	BRANCHY(1UL);
}

__attribute__((noinline)) void run_branch(double seconds)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;

	while (clock_s(CLOCK_MONOTONIC) < end) {
		branch_unpredictable();
		branch_predictable();
	}
}

int main(int argc, char **argv)
{
	run_branch(arg_seconds(argv[1], "branch SECONDS"));
	return 0;
}
