// SPDX-License-Identifier: GPL-2.0
/*
 * libnofp_late.so, dlopened by dllate once it has run a while: three frames
 * built with -fomit-frame-pointer, walked only through the library's
 * .eh_frame (see dllate.c).
 */
#include "burn.h"

__attribute__((noinline)) static unsigned long late_spin(double seconds)
{
	unsigned long r = spin_on(CLOCK_THREAD_CPUTIME_ID, seconds);

	BARRIER(r);
	return r;
}

__attribute__((noinline)) static unsigned long late_mid(double seconds)
{
	unsigned long r = late_spin(seconds);

	BARRIER(r);
	return r + 1;
}

__attribute__((noinline)) unsigned long late_outer(double seconds)
{
	unsigned long r = late_mid(seconds);

	BARRIER(r);
	return r + 2;
}
