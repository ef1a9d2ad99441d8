/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny unit-test harness. Each test prints "PASS name" or "FAIL name" (with
 * the failed checks above it); tests/run counts those lines. A test binary
 * exits 1 when any test failed.
 */
#ifndef BPFSAMPLER_UNIT_H
#define BPFSAMPLER_UNIT_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int unit_checks_failed;
static int unit_tests_failed;
static const char *unit_skip_why;

/* Ends the current test as skipped (only where the machine lacks what it
 * needs: say what). */
#define SKIP_TEST(why)                                                        \
	do {                                                                  \
		unit_skip_why = (why);                                        \
		return;                                                       \
	} while (0)

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("    %s:%d: check failed: %s: ", __FILE__,    \
			       __LINE__, #cond);                              \
			printf(__VA_ARGS__);                                  \
			putchar('\n');                                        \
			unit_checks_failed++;                                 \
		}                                                             \
	} while (0)

#define RUN(fn)                                                               \
	do {                                                                  \
		int before_ = unit_checks_failed;                             \
		unit_skip_why = NULL;                                         \
		fn();                                                         \
		if (unit_skip_why && unit_checks_failed == before_) {         \
			printf("SKIP %s: %s\n", #fn, unit_skip_why);          \
		} else if (unit_checks_failed == before_) {                   \
			printf("PASS %s\n", #fn);                             \
		} else {                                                      \
			printf("FAIL %s\n", #fn);                             \
			unit_tests_failed++;                                  \
		}                                                             \
		fflush(stdout);                                               \
	} while (0)

#define UNIT_EXIT() return unit_tests_failed ? 1 : 0

/* A child that waits in pause() until unit_reap(): a live process (a copy
 * of the test's address space) to point at. -1 when fork failed. */
static inline pid_t unit_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

/* Ends and reaps a child: its pid is gone (kill(pid, 0): ESRCH) after. */
static inline void unit_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

#endif
