// SPDX-License-Identifier: GPL-2.0
/*
 * libdlswap_a.so and libdlswap_b.so, for dlswap: the same code built twice
 * with a different name for the one function (DLSWAP_FN: swap_a_spin or
 * swap_b_spin, names of the same length), so both libraries have the same
 * layout and the function sits at the same offset in each. A profiler that
 * names a sample after the wrong library prints the other name.
 */
#include "burn.h"


__attribute__((noinline)) unsigned long DLSWAP_FN(double seconds)
{
	return spin_on(CLOCK_MONOTONIC, seconds);
}
