// SPDX-License-Identifier: GPL-2.0
/*
 * libwork.so, for uselib: lib_spin burns CPU inside the shared library
 * itself (the loop and the clock's system call are both in lib_spin).
 */
#include "burn.h"

#define CHUNK 20000

__attribute__((noinline)) unsigned long lib_spin(double seconds)
{
	double end = now_s(CLOCK_MONOTONIC) + seconds;
	unsigned long x = 1;

	do {
		for (int i = 0; i < CHUNK; i++) {
			LCG_STEP(x);
			BARRIER(x);
		}
	} while (now_s(CLOCK_MONOTONIC) < end);
	return x;
}
