// SPDX-License-Identifier: GPL-2.0
/*
 * fork_short COUNT LIFE_MS: forks COUNT children, one after another, a new
 * one about every 40 ms (or when the previous one ended, if LIFE_MS > 40).
 * Each child execs nothing: it burns LIFE_MS ms of its CPU time in
 * child_burn and exits; the parent waits for each.
 *
 * GROUND TRUTH: every child's samples are ...;main;child_burn (the clock's
 * system call is inlined into child_burn, burn.h), in processes that are
 * gone long before the profile ends; COUNT * LIFE_MS ms of CPU in all.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

#define USAGE "fork_short COUNT LIFE_MS"

__attribute__((noinline)) unsigned long child_burn(double seconds)
{
	return spin_on(CLOCK_THREAD_CPUTIME_ID, seconds);
}

int main(int argc, char **argv)
{
	long count, life;

	if (argc != 3)
		usage_exit(USAGE);
	count = arg_long(argv[1], 1, 1000000, USAGE);
	life = arg_long(argv[2], 1, 3600 * 1000, USAGE);
	for (long i = 0; i < count; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork_short: fork");
			return 1;
		}
		if (pid == 0) {
			child_burn(life / 1000.0);
			_exit(0);
		}
		usleep(40000);
		waitpid(pid, NULL, 0);
	}
	return 0;
}
