// SPDX-License-Identifier: GPL-2.0
/*
 * swevents: known numbers of software events, each made in one known
 * function, for the counter path (-e page-faults, -c, --weight period) on
 * machines without a PMU.
 *
 *   swevents faults N     main -> fault_pages: maps N fresh anonymous pages
 *                         (MAP_PRIVATE|MAP_ANONYMOUS, no MAP_POPULATE, no
 *                         huge pages) and writes one byte to each: N minor
 *                         page faults, all with fault_pages as the
 *                         innermost frame.
 *   swevents switches N   main -> switch_loop: N sleeps of 50 us, each one
 *                         voluntary context switch, the system call made
 *                         inline in switch_loop.
 *   swevents migrate N    main -> migrate_loop: moves itself N times between
 *                         the first two allowed CPUs (sched_setaffinity,
 *                         inline): N CPU migrations.
 *
 * GROUND TRUTH, printed on stdout at the end, measured by the process
 * itself (getrusage, /proc/self/sched) around the loop and for the whole
 * process: "loop FAULTS MINFLT_IN_LOOP", "total minflt M nvcsw V nivcsw I
 * migrations G". The system calls are inline (as in burn.h): through
 * glibc's wrappers (no frame pointers) the walk would lose the caller.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "burn.h"

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* se.nr_migrations from /proc/self/sched (CONFIG_SCHED_DEBUG), or -1. */
static long migrations(void)
{
	char line[256];
	long n = -1;
	FILE *f = fopen("/proc/self/sched", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "se.nr_migrations", 16))
			n = strtol(strchr(line, ':') + 1, NULL, 10);
	fclose(f);
	return n;
}

__attribute__((noinline)) long fault_pages(long n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	/* one fault per page, not one per 2 MiB */
	madvise(p, n * page, MADV_NOHUGEPAGE);
	for (long i = 0; i < n; i++) {
		p[i * page] = 1;
		BARRIER(p);
	}
	return n;
}

__attribute__((noinline)) long switch_loop(long n)
{
	struct timespec ts = { 0, 50000 };

	for (long i = 0; i < n; i++)
		raw_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	return n;
}

__attribute__((noinline)) long migrate_loop(long n)
{
	cpu_set_t allowed, one;
	int cpus[2], k = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -1;
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[k++] = c;
	if (k < 2)
		return -1;
	for (long i = 0; i < n; i++) {
		CPU_ZERO(&one);
		CPU_SET(cpus[i & 1], &one);
		if (raw_syscall3(SYS_sched_setaffinity, 0, sizeof(one), (long)&one))
			return -1;
	}
	sched_setaffinity(0, sizeof(allowed), &allowed);
	return n;
}

int main(int argc, char **argv)
{
	const char *usage = "swevents faults|switches|migrate N";
	struct rusage ru;
	long n, done, before;
	char *end;

	if (argc != 3)
		usage_exit(usage);
	n = strtol(argv[2], &end, 10);
	if (*end || n <= 0 || n > 10000000)
		usage_exit(usage);
	before = minflt();
	if (!strcmp(argv[1], "faults"))
		done = fault_pages(n);
	else if (!strcmp(argv[1], "switches"))
		done = switch_loop(n);
	else if (!strcmp(argv[1], "migrate"))
		done = migrate_loop(n);
	else
		usage_exit(usage);
	if (done < 0) {
		perror("swevents");
		return 1;
	}
	printf("loop %ld %ld\n", done, minflt() - before);
	getrusage(RUSAGE_SELF, &ru);
	printf("total minflt %ld nvcsw %ld nivcsw %ld migrations %ld\n", ru.ru_minflt, ru.ru_nvcsw,
	       ru.ru_nivcsw, migrations());
	return 0;
}
