// SPDX-License-Identifier: GPL-2.0
/*
 * offwait sleep SECONDS: two threads beside the main one, which waits for
 * them. "napper" runs cycles of nap_burn (10 ms of wall time on the CPU)
 * then nap_sleep (a 30 ms nanosleep); "reader" blocks in blocked_read, a
 * read() of a pipe nobody writes to, from its start until the process
 * exits after SECONDS.
 * offwait convoy SECONDS N: N threads named "convoy" take one mutex in
 * take_lock, hold it for 2 ms of wall time in hold_lock, and release it;
 * the others wait in the kernel (futex) meanwhile.
 * offwait pingpong SECONDS: two threads "ping" and "pong" pass a byte back
 * and forth over two pipes as fast as they can (a context-switch storm,
 * as perf bench sched pipe), then print "switches N" (round trips x 2).
 * offwait execwait SECONDS: the reader as above, and after SECONDS/2 the
 * main thread execs "offwait sleep SECONDS/2" (the reader's block ends by
 * the exec).
 *
 * Each thread prints "NAME TID" on stdout (flushed) when it starts. At the
 * end (sleep) the main thread prints the truth as measured here:
 * "truth napper_life_s L napper_sleep_s S reader_blocked_s R" -- the
 * napper's life, the wall time it spent in nap_sleep, the reader's time
 * from its first read to the end. On a busy machine the burn's 10 ms of
 * wall time stretch by the time it waits for a CPU, so S / L falls below
 * 75%: a profile is checked against S, not against 75%.
 *
 * GROUND TRUTH (off-CPU): napper's nap_sleep stack (kernel: the sleep
 * through the scheduler; user: nap_sleep, napper) holds ~75% of the run,
 * 30 of every 40 ms, as [off-cpu: waiting]; reader's blocked_read stack
 * holds the whole run. On-CPU: nap_burn, ~25% of the napper's wall time.
 * Convoy: the waits are under take_lock (pthread_mutex_lock, then the
 * futex wait in the kernel). The system calls are raw syscall
 * instructions inlined into the named functions, so their frames are the
 * innermost user frames whatever libc's unwind tables say.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "burn.h"

#define USAGE "offwait sleep SECONDS | offwait convoy SECONDS N | offwait execwait SECONDS | " \
	      "offwait pingpong SECONDS"

static int pipe_fds[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double end_time;
static volatile double napper_start, napper_slept, reader_start;

static void announce(const char *name)
{
	printf("%s %ld\n", name, (long)syscall(SYS_gettid));
	fflush(stdout);
	pthread_setname_np(pthread_self(), name);
}

__attribute__((noinline)) unsigned long nap_burn(void)
{
	return spin_on(CLOCK_MONOTONIC, 0.010);
}

__attribute__((noinline)) long nap_sleep(void)
{
	struct timespec ts = { 0, 30 * 1000 * 1000 };

	return raw_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
}

__attribute__((noinline)) void *napper(void *arg)
{
	announce("napper");
	napper_start = clock_s(CLOCK_MONOTONIC);
	for (;;) {
		double t;

		nap_burn();
		t = clock_s(CLOCK_MONOTONIC);
		nap_sleep();
		napper_slept += clock_s(CLOCK_MONOTONIC) - t;
	}
	return arg;
}

__attribute__((noinline)) long blocked_read(void)
{
	char c;

	return raw_syscall3(SYS_read, pipe_fds[0], (long)&c, 1);
}

__attribute__((noinline)) void *reader(void *arg)
{
	announce("reader");
	reader_start = clock_s(CLOCK_MONOTONIC);
	for (;;)
		blocked_read();
	return arg;
}

__attribute__((noinline)) unsigned long hold_lock(void)
{
	return spin_on(CLOCK_MONOTONIC, 0.002);
}

__attribute__((noinline)) int take_lock(void)
{
	return pthread_mutex_lock(&lock);
}

__attribute__((noinline)) void *convoy(void *arg)
{
	announce("convoy");
	while (now_s(CLOCK_MONOTONIC) < end_time) {
		take_lock();
		hold_lock();
		pthread_mutex_unlock(&lock);
	}
	return arg;
}

static int ping_fds[2], pong_fds[2];
static volatile unsigned long round_trips;

__attribute__((noinline)) void *pong(void *arg)
{
	char c;

	announce("pong");
	while (read(ping_fds[0], &c, 1) == 1 && write(pong_fds[1], &c, 1) == 1)
		;
	return arg;
}

static int pingpong(void)
{
	pthread_t t;
	char c = 0;

	if (pipe(ping_fds) || pipe(pong_fds) || pthread_create(&t, NULL, pong, NULL))
		return 1;
	announce("ping");
	while (now_s(CLOCK_MONOTONIC) < end_time) {
		for (int i = 0; i < 100; i++) {
			if (write(ping_fds[1], &c, 1) != 1 || read(pong_fds[0], &c, 1) != 1)
				return 1;
		}
		round_trips += 100;
	}
	printf("switches %lu\n", round_trips * 2);
	return 0;
}

static void start(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_detach(t);
}

static void wait_until(double end)
{
	while (clock_s(CLOCK_MONOTONIC) < end)
		usleep(10000);
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc > 2 ? argv[2] : NULL, USAGE);

	end_time = clock_s(CLOCK_MONOTONIC) + secs;
	if (argc > 1 && !strcmp(argv[1], "convoy")) {
		long n = arg_long(argc > 3 ? argv[3] : NULL, 2, 64, USAGE);
		pthread_t t[64];

		for (long i = 0; i < n; i++)
			pthread_create(&t[i], NULL, convoy, NULL);
		for (long i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "pingpong"))
		return pingpong();
	if (pipe(pipe_fds))
		return 1;
	if (argc > 1 && !strcmp(argv[1], "execwait")) {
		char half[32];

		start(reader);
		wait_until(clock_s(CLOCK_MONOTONIC) + secs / 2);
		snprintf(half, sizeof(half), "%g", secs / 2);
		execl("/proc/self/exe", argv[0], "sleep", half, (char *)NULL);
		perror("execl");
		return 1;
	}
	if (argc < 2 || strcmp(argv[1], "sleep"))
		usage_exit(USAGE);
	start(napper);
	start(reader);
	wait_until(end_time);
	{
		double now = clock_s(CLOCK_MONOTONIC);

		printf("truth napper_life_s %.6f napper_sleep_s %.6f reader_blocked_s %.6f\n",
		       now - napper_start, napper_slept, now - reader_start);
		fflush(stdout);
	}
	return 0;
}
