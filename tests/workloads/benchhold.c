// SPDX-License-Identifier: GPL-2.0
/*
 * libbenchhold.so: preloaded (LD_PRELOAD) into a program tools/bench/unwind
 * times under each profiler, Debian's xz and python3 as well as ours. With
 * BENCH_HOLD_FD=W,R in the environment (two pipe ends), the process
 *   - stops itself (SIGSTOP) before main, once its libraries are mapped:
 *     the bench attaches the profiler to the pid, then sends SIGCONT, so
 *     the profiler sees all of the work and none of its own start-up;
 *   - at exit, after the program's atexit handlers, writes "done\n" to W
 *     (the end of the work, for its wall time) and waits for EOF on R: the
 *     process keeps its mappings while the profiler stops and names its
 *     frames (BCC reads /proc/PID/maps only then: an exited process's
 *     frames come out [unknown], which is naming, not unwinding).
 * Without BENCH_HOLD_FD it does nothing.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int hold_w = -1, hold_r = -1;

__attribute__((constructor)) static void hold_start(void)
{
	const char *s = getenv("BENCH_HOLD_FD");

	if (!s || sscanf(s, "%d,%d", &hold_w, &hold_r) != 2) {
		hold_w = hold_r = -1;
		return;
	}
	raise(SIGSTOP);
}

__attribute__((destructor)) static void hold_end(void)
{
	char c;

	if (hold_w < 0)
		return;
	if (write(hold_w, "done\n", 5) != 5)
		return;
	while (read(hold_r, &c, 1) > 0)
		;
}
