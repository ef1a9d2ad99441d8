// SPDX-License-Identifier: GPL-2.0
/*
 * uselib SECONDS: main -> run_uselib -> lib_spin (in libwork.so). Ground
 * truth: the samples are in lib_spin of libwork.so under main;run_uselib.
 */
#include "burn.h"

unsigned long lib_spin(double seconds);

__attribute__((noinline)) unsigned long run_uselib(double seconds)
{
	unsigned long r = lib_spin(seconds);

	BARRIER(r);
	return r;
}

int main(int argc, char **argv)
{
	return run_uselib(arg_seconds(argv[1], "uselib SECONDS")) == 0;
}
