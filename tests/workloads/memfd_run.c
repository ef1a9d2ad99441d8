// SPDX-License-Identifier: GPL-2.0
/*
 * memfd_run PROGRAM [ARG...]: copies PROGRAM into an anonymous memory file
 * (memfd_create) and executes that (fexecve): an executable with no path on
 * any file system, as some container runtimes and packers run theirs.
 *
 * GROUND TRUTH: PROGRAM's own (e.g. shares: ...;main;run_shares;share_fn_k),
 * under comm "memfd:bpfs-test" or the fd's name.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	char buf[65536];
	ssize_t n;
	int in, mem;

	if (argc < 2) {
		fprintf(stderr, "usage: memfd_run PROGRAM [ARG...]\n");
		return 2;
	}
	in = open(argv[1], O_RDONLY | O_CLOEXEC);
	mem = memfd_create("bpfs-test", 0);
	if (in < 0 || mem < 0) {
		fprintf(stderr, "memfd_run: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(mem, buf, n) != n)
			return 1;
	close(in);
	fexecve(mem, argv + 1, environ);
	fprintf(stderr, "memfd_run: fexecve: %s\n", strerror(errno));
	return 1;
}
