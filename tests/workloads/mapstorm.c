// SPDX-License-Identifier: GPL-2.0
/*
 * mapstorm N SECONDS: maps 1 MiB of its own binary executable and unmaps it,
 * N times (each mapping is a side-band record for a profiler that follows
 * mappings, all at about the same address), then dlopens libwork.so (found
 * beside it), which the dynamic loader maps where the storm's mappings
 * were, and runs lib_spin in it for SECONDS.
 *
 * GROUND TRUTH: almost every sample after the storm is
 * ...;main;run_lib;lib_spin, in libwork.so. A profiler whose side-band ring
 * overflowed during the storm missed some mappings (maybe libwork.so's
 * own): it must still name lib_spin from the maps it reads, not after a
 * storm mapping of mapstorm that lay at the same address.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "burn.h"

__attribute__((noinline)) static int storm(long n)
{
	int fd = open("/proc/self/exe", O_RDONLY);

	if (fd < 0)
		return -1;
	for (long i = 0; i < n; i++) {
		void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED)
			return -1;
		munmap(p, 1 << 20);
	}
	close(fd);
	return 0;
}

__attribute__((noinline)) static int run_lib(const char *dir, double seconds)
{
	unsigned long (*spin)(double);
	char path[PATH_MAX];
	void *h;

	snprintf(path, sizeof(path), "%s/libwork.so", dir);
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "mapstorm: %s\n", dlerror());
		return -1;
	}
	spin = (unsigned long (*)(double))dlsym(h, "lib_spin");
	if (!spin)
		return -1;
	spin(seconds);
	return 0;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	ssize_t n;

	if (argc != 3) {
		fprintf(stderr, "usage: mapstorm N SECONDS\n");
		return 2;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	if (storm(atol(argv[1]))) {
		perror("mapstorm: storm");
		return 1;
	}
	return run_lib(dirname(self), atof(argv[2])) ? 1 : 0;
}
