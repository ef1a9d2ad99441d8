// SPDX-License-Identifier: GPL-2.0
/*
 * libwork.so, for uselib: lib_spin burns CPU inside the shared library
 * itself (the loop and the clock's system call are both in lib_spin).
 */
#include "burn.h"


__attribute__((noinline)) unsigned long lib_spin(double seconds)
{
	return spin_on(CLOCK_MONOTONIC, seconds);
}
