// SPDX-License-Identifier: GPL-2.0
/*
 * fork_short COUNT LIFE_MS: forks COUNT children one after another, about
 * every 40 ms; each burns LIFE_MS of CPU in child_burn and exits. Ground
 * truth: every child's samples are in main;child_burn, in processes that
 * are gone long before the profile ends.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

__attribute__((noinline)) void child_burn(double seconds)
{
	double end = clock_s(CLOCK_THREAD_CPUTIME_ID) + seconds;
	unsigned long x = 1;

	do {
		for (int i = 0; i < 20000; i++) {
			x = x * 6364136223846793005UL + 1;
			BARRIER(x);
		}
	} while (clock_s(CLOCK_THREAD_CPUTIME_ID) < end);
}

int main(int argc, char **argv)
{
	const char *usage = "fork_short COUNT LIFE_MS";
	long count = arg_long(argv[1], 1, usage);
	long life = arg_long(argc > 2 ? argv[2] : NULL, 1, usage);

	for (long i = 0; i < count; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			child_burn(life / 1000.0);
			_exit(0);
		}
		usleep(40000);
		waitpid(pid, NULL, 0);
	}
	return 0;
}
