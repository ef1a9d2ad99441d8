// SPDX-License-Identifier: GPL-2.0
/*
 * churn DIR SECONDS RATE [MS]: starts RATE processes a second for SECONDS,
 * each an executable of DIR taken in turn (churn_child copies), run with
 * MS as its argument, and reaps them. Prints how many it started. Process
 * churn for the agent's lifetimes: every child is new, short-lived and of
 * another file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

#define MAX_EXES 4096

int main(int argc, char **argv)
{
	static char *exes[MAX_EXES];
	size_t nr = 0, started = 0;
	double end, next, gap;
	struct dirent *de;
	DIR *d;

	if (argc < 4 || !(d = opendir(argv[1]))) {
		fprintf(stderr, "usage: churn DIR SECONDS RATE [MS]\n");
		return 2;
	}
	while ((de = readdir(d)) && nr < MAX_EXES) {
		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&exes[nr], "%s/%s", argv[1], de->d_name) < 0)
			return 1;
		nr++;
	}
	closedir(d);
	if (!nr)
		return 2;
	signal(SIGCHLD, SIG_DFL);
	gap = 1.0 / atof(argv[3]);
	next = now_s(CLOCK_MONOTONIC);
	end = next + atof(argv[2]);
	while (next < end) {
		pid_t pid = fork();

		if (!pid) {
			char *args[] = { exes[started % nr], argc > 4 ? argv[4] : "5", NULL };

			execv(args[0], args);
			_exit(127);
		}
		if (pid > 0)
			started++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		next += gap;
		while (now_s(CLOCK_MONOTONIC) < next)
			usleep(200);
	}
	while (wait(NULL) > 0)
		;
	printf("%zu started from %zu executables\n", started, nr);
	return 0;
}
