// SPDX-License-Identifier: GPL-2.0
/*
 * uselib SECONDS: main -> run_uselib -> lib_spin, which is in libwork.so
 * (found through an rpath of $ORIGIN: both live in the same directory).
 *
 * GROUND TRUTH: nearly every sample is ...;main;run_uselib;lib_spin with
 * lib_spin in libwork.so (the PLT stub between them is a jmp, no frame).
 * Exceptions: process start (the dynamic loader) and exit.
 */
#include "burn.h"

unsigned long lib_spin(double seconds);

__attribute__((noinline)) unsigned long run_uselib(double seconds)
{
	unsigned long r = lib_spin(seconds);

	BARRIER(r);
	return r + 1;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		usage_exit("uselib SECONDS");
	return run_uselib(arg_seconds(argv[1], "uselib SECONDS")) == 0;
}
