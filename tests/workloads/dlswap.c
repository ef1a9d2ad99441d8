// SPDX-License-Identifier: GPL-2.0
/*
 * dlswap SECONDS: dlopens libdlswap_a.so, runs swap_a_spin in it for
 * SECONDS, dlcloses it (unmapped: nothing else holds it), dlopens
 * libdlswap_b.so, which the dynamic loader maps at the same address, and
 * runs swap_b_spin for SECONDS. Prints "dlswap: a at ADDR, b at ADDR" to
 * stderr and exits 3 when b did not land where a was (the test needs the
 * same address to mean anything).
 *
 * GROUND TRUTH: about half the samples are ...;main;run_lib;swap_a_spin
 * (the first SECONDS), the other half ...;main;run_lib;swap_b_spin; a
 * profiler that names every sample after the mappings at the end calls
 * them all swap_b_spin.
 */
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "burn.h"

typedef unsigned long (*spin_fn)(double);

__attribute__((noinline)) unsigned long run_lib(spin_fn fn, double seconds)
{
	unsigned long r = fn(seconds);

	BARRIER(r);
	return r + 1;
}

/* Opens DIR/libdlswap_X.so, runs its function, returns its address. */
static void *phase(const char *dir, char x, double seconds)
{
	char path[PATH_MAX], name[16];
	void *h, *fn;

	snprintf(path, sizeof(path), "%s/libdlswap_%c.so", dir, x);
	snprintf(name, sizeof(name), "swap_%c_spin", x);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	fn = h ? dlsym(h, name) : NULL;
	if (!fn) {
		fprintf(stderr, "dlswap: %s\n", dlerror());
		exit(1);
	}
	run_lib((spin_fn)fn, seconds);
	if (dlclose(h)) {
		fprintf(stderr, "dlswap: dlclose: %s\n", dlerror());
		exit(1);
	}
	return fn;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	const char *dir;
	double seconds;
	void *a, *b;
	ssize_t n;

	if (argc != 2)
		usage_exit("dlswap SECONDS");
	seconds = arg_seconds(argv[1], "dlswap SECONDS");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	dir = dirname(self);
	a = phase(dir, 'a', seconds);
	b = phase(dir, 'b', seconds);
	fprintf(stderr, "dlswap: a at %p, b at %p\n", a, b);
	return a == b ? 0 : 3;
}
