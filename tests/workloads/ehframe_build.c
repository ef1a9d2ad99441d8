// SPDX-License-Identifier: GPL-2.0
/*
 * ehframe_build FILE [RUNS]: builds FILE's unwind table (ehframe__load, as
 * bpfsampler does the first time a process maps the file) RUNS times
 * (default 5) in this process and prints, on one line:
 *
 *     FILE fdes=N direct=N rows=N nonerows=N bpf_kib=N first_ms=X median_ms=X
 *
 * first_ms is the first build (libdw and the file's pages opened for the
 * first time in this process), median_ms the median of all RUNS. The file's
 * pages may already be in the page cache; tools/bench/unwind says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ehframe.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct ehframe_stats st = {};
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	struct ehframe *t;
	double *ms;
	int err = 0;

	if (argc < 2 || argc > 3 || runs < 1 || runs > 1000) {
		fprintf(stderr, "usage: ehframe_build FILE [RUNS]\n");
		return 2;
	}
	ms = calloc(runs, sizeof(*ms));
	if (!ms)
		return 1;
	for (int i = 0; i < runs; i++) {
		double t0 = now_ms();

		err = ehframe__load(argv[1], &t);
		if (err) {
			fprintf(stderr, "ehframe_build: %s: %s\n", argv[1], strerror(-err));
			goto out;
		}
		ms[i] = now_ms() - t0;
		ehframe__stats(t, &st);
		ehframe__free(t);
	}
	printf("%s fdes=%zu direct=%zu rows=%zu nonerows=%zu bpf_kib=%zu first_ms=%.2f", argv[1],
	       st.fdes, st.direct, st.rows, st.unsupported,
	       st.rows * sizeof(struct bpfs_unwind_row) / 1024, ms[0]);
	qsort(ms, runs, sizeof(*ms), cmp_double);
	printf(" median_ms=%.2f\n", ms[runs / 2]);
out:
	free(ms);
	return err ? 1 : 0;
}
