// SPDX-License-Identifier: GPL-2.0
/*
 * shares SECONDS: ten functions with known CPU shares. Each round,
 * share_fn_k burns k ms of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID,
 * so preemption does not change the truth). Ground truth: share_fn_k gets
 * k/55 of the samples in share_fn_*, all under main;run_shares. The clock
 * is read every 20000 iterations (~25 us), so the system calls that read it
 * (whose samples lose the share_fn_k frame: libc and the vDSO keep no frame
 * pointer) stay a few percent.
 */
#include "burn.h"

#define UNIT_S 0.001

/* Spins for `units` ms of thread CPU time; the loop lives in each caller
 * (macro) so that the samples land in share_fn_k itself. */
#define BURN(units)                                                              \
	do {                                                                     \
		double end_ = clock_s(CLOCK_THREAD_CPUTIME_ID) + (units) * UNIT_S; \
		unsigned long x_ = 0;                                            \
		do {                                                             \
			for (int i_ = 0; i_ < 20000; i_++) {                      \
				x_ = x_ * 6364136223846793005UL + 1;             \
				BARRIER(x_);                                     \
			}                                                        \
		} while (clock_s(CLOCK_THREAD_CPUTIME_ID) < end_);               \
	} while (0)

#define SHARE_FN(k) \
	__attribute__((noinline)) void share_fn_##k(void) { BURN(k); }
SHARE_FN(1) SHARE_FN(2) SHARE_FN(3) SHARE_FN(4) SHARE_FN(5)
SHARE_FN(6) SHARE_FN(7) SHARE_FN(8) SHARE_FN(9) SHARE_FN(10)

__attribute__((noinline)) void run_shares(double seconds)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;

	while (clock_s(CLOCK_MONOTONIC) < end) {
		share_fn_1(); share_fn_2(); share_fn_3(); share_fn_4(); share_fn_5();
		share_fn_6(); share_fn_7(); share_fn_8(); share_fn_9(); share_fn_10();
	}
}

int main(int argc, char **argv)
{
	run_shares(arg_seconds(argv[1], "shares SECONDS"));
	return 0;
}
