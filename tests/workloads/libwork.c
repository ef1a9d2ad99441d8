// SPDX-License-Identifier: GPL-2.0
/* libwork.so: lib_spin burns CPU inside the shared library. */
#include "burn.h"

__attribute__((noinline)) unsigned long lib_spin(double seconds)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;
	unsigned long x = 1;

	while (clock_s(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 4000; i++) {
			x = x * 6364136223846793005UL + 1;
			BARRIER(x);
		}
	}
	return x;
}
