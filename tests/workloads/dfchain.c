// SPDX-License-Identifier: GPL-2.0
/*
 * Code whose CFI is only in .debug_frame: built -O2 -fomit-frame-pointer
 * -fno-asynchronous-unwind-tables -fno-unwind-tables -g, so .eh_frame holds
 * only the C runtime's functions and a frame-pointer walk cannot get out of
 * spin. Spins for SECONDS (default 3) in
 *   main -> df_a -> df_b -> df_spin
 * so every sample of the process has main in its stack. dfchain-stripped is
 * the same file without .debug_frame (its debug file in the workloads'
 * dfroot, by build-ID): walked only when that debug file is found.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

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

__attribute__((noinline)) static void df_spin(double end)
{
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink += i;
}

/* a frame of its own on the stack (rsp-based CFA that moves) */
__attribute__((noinline)) static void df_b(double end)
{
	volatile char pad[200];

	pad[0] = 1;
	df_spin(end);
	sink += pad[0];
}

__attribute__((noinline)) static void df_a(double end)
{
	df_b(end);
	sink++;
}

int main(int argc, char **argv)
{
	df_a(now() + (argc > 1 ? atof(argv[1]) : 3));
	return sink == 42;
}
