// SPDX-License-Identifier: GPL-2.0
/*
 * vdso_clock SECONDS: reads CLOCK_MONOTONIC through glibc's clock_gettime,
 * which the vDSO serves in user space, in a loop, for SECONDS.
 *
 * GROUND TRUTH: most samples end in the vDSO's code (__vdso_clock_gettime
 * and what it calls), a mapping with no file: its names come from the
 * kernel's vDSO image. The frames between main and the vDSO are glibc's,
 * built without frame pointers, so the walk may lose main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static long read_clock(double seconds)
{
	struct timespec ts;
	double end;
	long sum = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
	do {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += ts.tv_nsec;
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	return sum;
}

int main(int argc, char **argv)
{
	if (argc != 2 || atof(argv[1]) <= 0) {
		fprintf(stderr, "usage: vdso_clock SECONDS\n");
		return 2;
	}
	return read_clock(atof(argv[1])) == 1;
}
