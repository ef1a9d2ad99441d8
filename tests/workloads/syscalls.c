// SPDX-License-Identifier: GPL-2.0
/*
 * syscalls SECONDS: main -> syscall_loop, which makes cheap system calls
 * until SECONDS of wall time passed: getppid (a raw system call, which no
 * libc can cache) and 1-byte writes to a memfd (a file with no path: a
 * test writes through nothing in /dev; a few MB over seconds).
 *
 * GROUND TRUTH: every sample is under ...;main;syscall_loop, and most of
 * them (about 3/4 on a test VM: the rest is the user-space side of the
 * loop) are in the kernel, their kernel part starting at entry_SYSCALL_64
 * right under syscall_loop.
 *
 * The syscall instruction is inline, in syscall_loop: through glibc's
 * wrappers (built without frame pointers on Debian) a frame-pointer walk
 * loses the wrapper's caller, and syscall_loop would vanish from the stack.
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "burn.h"

__attribute__((noinline)) long syscall_loop(double seconds)
{
	double end = now_s(CLOCK_MONOTONIC) + seconds;
	int fd = memfd_create("syscalls", MFD_CLOEXEC);
	long n = 0;

	if (fd < 0)
		return -1;
	do {
		for (int i = 0; i < 200; i++) {
			n += raw_syscall3(SYS_getppid, 0, 0, 0);
			n += raw_syscall3(SYS_write, fd, (long)"x", 1);
		}
	} while (now_s(CLOCK_MONOTONIC) < end);
	close(fd);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		usage_exit("syscalls SECONDS");
	return syscall_loop(arg_seconds(argv[1], "syscalls SECONDS")) < 0;
}
