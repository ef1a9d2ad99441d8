// SPDX-License-Identifier: GPL-2.0
/*
 * execer SECONDS PROGRAM [ARG...]: runs pre_exec_spin for SECONDS, then
 * execs PROGRAM. Built without PIE, like shares: both images are mapped at
 * the same fixed addresses (0x400000 up), so a sample of the first image
 * named after the second image's mappings gets a share_fn_* name.
 *
 * GROUND TRUTH: for SECONDS the samples are ...;main;pre_exec_spin, after
 * the exec they are PROGRAM's; no sample has both pre_exec_spin and a
 * frame of PROGRAM.
 */
#include <unistd.h>

#include "burn.h"


__attribute__((noinline)) unsigned long pre_exec_spin(double seconds)
{
	return spin_on(CLOCK_MONOTONIC, seconds);
}

int main(int argc, char **argv)
{
	unsigned long r;

	if (argc < 3)
		usage_exit("execer SECONDS PROGRAM [ARG...]");
	r = pre_exec_spin(arg_seconds(argv[1], "execer SECONDS PROGRAM [ARG...]"));
	BARRIER(r);
	execv(argv[2], argv + 2);
	perror("execer: execv");
	return 1;
}
