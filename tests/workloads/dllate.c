// SPDX-License-Identifier: GPL-2.0
/*
 * dllate SECONDS: spins in its own code (frame pointers) for SECONDS of
 * its CPU time, then dlopens libnofp_late.so (found beside it), built
 * without frame pointers, and runs late_outer -> late_mid -> late_spin in
 * it for SECONDS more.
 *
 * GROUND TRUTH: the second half's samples are
 * ...;main;run_late;late_outer;late_mid;late_spin. Only the library's
 * unwind table gives its frames (a frame-pointer step from late_spin skips
 * to main's caller), and that table comes in while the process is being
 * sampled: a profiler that keeps what it knew of the process's mappings
 * (bpfsampler's per-CPU copy of them, bpf/unwind.bpf.h) must learn of it.
 */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "burn.h"

typedef unsigned long (*late_fn)(double);

__attribute__((noinline)) unsigned long early_spin(double seconds)
{
	unsigned long r = spin_on(CLOCK_THREAD_CPUTIME_ID, seconds);

	BARRIER(r);
	return r;
}

__attribute__((noinline)) unsigned long run_late(late_fn fn, double seconds)
{
	unsigned long r = fn(seconds);

	BARRIER(r);
	return r + 1;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX];
	double seconds;
	void *h, *fn;
	ssize_t n;

	if (argc != 2)
		usage_exit("dllate SECONDS");
	seconds = arg_seconds(argv[1], "dllate SECONDS");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	early_spin(seconds);
	snprintf(path, sizeof(path), "%s/libnofp_late.so", dirname(self));
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	fn = h ? dlsym(h, "late_outer") : NULL;
	if (!fn) {
		fprintf(stderr, "dllate: %s\n", dlerror());
		return 1;
	}
	run_late((late_fn)fn, seconds);
	return 0;
}
