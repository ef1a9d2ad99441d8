/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the workloads: argument parsing, clocks, a spin loop.
 *
 * Every profiled function is noinline and its loop has a compiler barrier,
 * so the names in a profile are the ones in the source. The workloads read
 * their clocks with now_s(), a `syscall` instruction inlined into the
 * caller: a sample taken while the clock is read (in the kernel) still has
 * the calling function as its innermost user frame. Through glibc and the
 * vDSO (no frame pointers in libc) a frame-pointer walk would lose that
 * function and put the sample under its caller instead.
 */
#ifndef WORKLOAD_BURN_H
#define WORKLOAD_BURN_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

#define BARRIER(x) __asm__ volatile("" : "+r"(x) : : "memory")

/* One step of a 64-bit LCG: a 4-cycle dependency chain (~1.1 ns). */
#define LCG_STEP(x) ((x) = (x) * 6364136223846793005UL + 1)

/* A system call with three arguments, inlined into the caller (no libc
 * frame between it and the kernel). */
static inline __attribute__((always_inline)) long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

/* clock_gettime(clk) as a raw system call, inlined into the caller. */
static inline __attribute__((always_inline)) double now_s(clockid_t clk)
{
	struct timespec ts;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)SYS_clock_gettime), "D"((long)clk), "S"(&ts)
			 : "rcx", "r11", "memory");
	if (ret)
		return 0;
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burns CPU until clock clk has advanced by seconds, in the caller itself
 * (always inlined: the loop and the clock's system call are in the named
 * function that calls it). */
#define SPIN_CHUNK 20000
static inline __attribute__((always_inline)) unsigned long spin_on(clockid_t clk, double seconds)
{
	double end = now_s(clk) + seconds;
	unsigned long x = 1;

	do {
		for (int i = 0; i < SPIN_CHUNK; i++) {
			LCG_STEP(x);
			BARRIER(x);
		}
	} while (now_s(clk) < end);
	return x;
}

/* Through libc: for code whose frames do not matter (setup, reports). */
static inline double clock_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline __attribute__((noreturn)) void usage_exit(const char *usage)
{
	fprintf(stderr, "usage: %s\n", usage);
	exit(2);
}

/* A duration in seconds: a float > 0 (e.g. 0.5), at most a year. */
static inline double arg_seconds(const char *s, const char *usage)
{
	char *end;
	double v = s ? strtod(s, &end) : 0;

	if (!s || !*s || *end || !(v > 0 && v <= 365 * 86400.0))
		usage_exit(usage);
	return v;
}

/* An integer in [min, max]. */
static inline long arg_long(const char *s, long min, long max, const char *usage)
{
	char *end;
	long v = s ? strtol(s, &end, 10) : 0;

	if (!s || !*s || *end || v < min || v > max)
		usage_exit(usage);
	return v;
}

#endif
