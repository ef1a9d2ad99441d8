// SPDX-License-Identifier: GPL-2.0
/*
 * shares SECONDS: ten functions with known CPU shares.
 *
 * main -> run_shares -> share_fn_1 .. share_fn_10, in rounds until SECONDS
 * of wall time passed. In each round share_fn_k burns k ms of this thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID: preemption and other load on the
 * machine do not change the truth).
 *
 * GROUND TRUTH: share_fn_k gets k/55 of the process's samples (cpu-clock,
 * task-clock or cycles), every one with the user stack
 * ...;main;run_shares;share_fn_k. Exceptions: process start and exit and
 * the call/return between two share_fn_k, well under 0.1% together.
 *
 * How exact: each function spins until a CPU-time deadline that advances by
 * k ms per call from the previous deadline (not from "now"), so what one
 * call overshoots (at most one 20000-step chunk, ~22 us) the next call gets
 * less: no function gains in the long run. The clock is a system call
 * inlined into share_fn_k (burn.h), so its kernel samples (~2% of all)
 * keep share_fn_k as their innermost user frame.
 *
 * Built twice: shares (non-PIE) and shares-pie.
 */
#include "burn.h"

#define UNIT_S 0.001
#define CHUNK 20000

static double deadline;	/* thread CPU time where the current call ends */

/* The loop lives in each share_fn_k (macro) so its samples land there. */
#define BURN(units)                                                       \
	do {                                                              \
		unsigned long x_ = 1;                                     \
		deadline += (units) * UNIT_S;                             \
		do {                                                      \
			for (int i_ = 0; i_ < CHUNK; i_++) {              \
				LCG_STEP(x_);                             \
				BARRIER(x_);                              \
			}                                                 \
		} while (now_s(CLOCK_THREAD_CPUTIME_ID) < deadline);      \
	} while (0)

#define SHARE_FN(k) \
	__attribute__((noinline)) void share_fn_##k(void) { BURN(k); }
SHARE_FN(1) SHARE_FN(2) SHARE_FN(3) SHARE_FN(4) SHARE_FN(5)
SHARE_FN(6) SHARE_FN(7) SHARE_FN(8) SHARE_FN(9) SHARE_FN(10)

/* SECONDS of wall time; with WORKLOAD_CPU set in the environment, of this
 * thread's CPU time: the same number of samples however busy the host is
 * (the tests' known shares need enough of them), only later. */
static clockid_t end_clock = CLOCK_MONOTONIC;

__attribute__((noinline)) void run_shares(double seconds)
{
	double end = now_s(end_clock) + seconds;

	deadline = now_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		share_fn_1(); share_fn_2(); share_fn_3(); share_fn_4(); share_fn_5();
		share_fn_6(); share_fn_7(); share_fn_8(); share_fn_9(); share_fn_10();
		__asm__ volatile("" ::: "memory");
	} while (now_s(end_clock) < end);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		usage_exit("shares SECONDS");
	if (getenv("WORKLOAD_CPU"))
		end_clock = CLOCK_THREAD_CPUTIME_ID;
	run_shares(arg_seconds(argv[1], "shares SECONDS"));
	return 0;
}
