// SPDX-License-Identifier: GPL-2.0
/*
 * forkstorm SECONDS [PROCS]: PROCS forkers (default 2) each fork children as
 * fast as they can for SECONDS; a child exits at once, every 8th after an
 * exec of /bin/true. Prints "N processes in S s" on stdout. A fork storm for
 * the profiler's accounting: every fork and exec runs BPF programs in task
 * context that a sample can interrupt.
 *
 * GROUND TRUTH: nothing about the stacks; thousands of processes a second.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

#define USAGE "forkstorm SECONDS [PROCS]"

static long storm(double seconds)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;
	long n = 0;

	while (clock_s(CLOCK_MONOTONIC) < end) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("forkstorm: fork");
			break;
		}
		if (pid == 0) {
			if (n % 8 == 7)
				execl("/bin/true", "true", (char *)NULL);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	long procs = 2, *total;
	double seconds;

	if (argc < 2 || argc > 3)
		usage_exit(USAGE);
	seconds = arg_seconds(argv[1], USAGE);
	if (argc == 3)
		procs = arg_long(argv[2], 1, 64, USAGE);
	total = mmap(NULL, sizeof(*total) * procs, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (total == MAP_FAILED)
		return 1;
	for (long i = 0; i < procs; i++) {
		if (fork() == 0) {
			total[i] = storm(seconds);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	long sum = 0;

	for (long i = 0; i < procs; i++)
		sum += total[i];
	printf("%ld processes in %.1f s\n", sum, seconds);
	return 0;
}
