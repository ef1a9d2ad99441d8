// SPDX-License-Identifier: GPL-2.0
/*
 * The same inner frames under two callers whose frames are alike: the tail
 * memo's check (bpf/tailmemo.bpf.h). Built -O2 -fomit-frame-pointer
 * without sibling calls, so only unwind tables walk it and every function
 * keeps its frame. tailswap [SECONDS] spins for SECONDS (default 3) of its
 * own CPU time, three quarters of it under path_a, one under path_b, in
 * turns of ~3 and ~1 ms:
 *   main -> path_a -> outer -> middle -> inner -> spin
 *   main -> path_b -> outer -> middle -> inner -> spin
 * path_a and path_b are the same code, so outer's frame and everything
 * inward of it sit at the same addresses with the same registers in both:
 * a walk from there differs only in the return address outer's frame holds.
 * A memo of the outer frames taken under one path and used under the
 * other would give the other's samples the wrong caller.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double until)
{
	while (cpu_now() < until)
		for (int i = 0; i < 2000; i++)
			sink += i;
}

__attribute__((noinline)) static void inner(double until)
{
	spin(until);
	sink++;
}

__attribute__((noinline)) static void middle(double until)
{
	inner(until);
	sink++;
}

__attribute__((noinline)) static void outer(double until)
{
	middle(until);
	sink++;
}

__attribute__((noinline)) static void path_a(double until)
{
	outer(until);
	sink++;
}

__attribute__((noinline)) static void path_b(double until)
{
	outer(until);
	sink++;
}

int main(int argc, char **argv)
{
	double end = cpu_now() + (argc > 1 ? atof(argv[1]) : 3);

	while (cpu_now() < end) {
		path_a(cpu_now() + 0.003);
		path_b(cpu_now() + 0.001);
	}
	return sink == 42;
}
