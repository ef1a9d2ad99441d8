// SPDX-License-Identifier: GPL-2.0
/*
 * syscalls SECONDS: syscall_loop makes cheap system calls (getppid, which
 * glibc cannot cache, and 1-byte writes to /dev/null). Ground truth: most
 * samples have kernel frames under main;syscall_loop.
 *
 * The syscall instruction is inline: through glibc's wrappers (built
 * without frame pointers on Debian) a frame-pointer walk loses the wrapper's
 * caller, and syscall_loop would vanish from the stack.
 */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "burn.h"

static inline long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) long syscall_loop(double seconds)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;
	int fd = open("/dev/null", O_WRONLY);
	long n = 0;

	while (clock_s(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 200; i++) {
			n += raw_syscall3(SYS_getppid, 0, 0, 0);
			n += raw_syscall3(SYS_write, fd, (long)"x", 1);
		}
	}
	close(fd);
	return n;
}

int main(int argc, char **argv)
{
	return syscall_loop(arg_seconds(argv[1], "syscalls SECONDS")) < 0;
}
