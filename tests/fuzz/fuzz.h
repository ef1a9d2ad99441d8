/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c): the parsers that
 * take a path get the input through one scratch file, and the loader's
 * messages (every bad input prints one) are formatted but not printed
 * (LOG_OFF), so that libFuzzer's own output stays readable and the runs
 * stay fast.
 */
#ifndef BPFSAMPLER_FUZZ_H
#define BPFSAMPLER_FUZZ_H

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* A private directory per fuzzing process (libFuzzer's -jobs/-fork run
 * several), under $TMPDIR, removed at exit. A crash exits without atexit:
 * the suite sets TMPDIR to a folder of its own, which goes with it. */
static char fuzz_dir[PATH_MAX];
static char fuzz_path[PATH_MAX + 8];

static void fuzz_cleanup(void)
{
	unlink(fuzz_path);
	rmdir(fuzz_dir);
}

static void fuzz_setup(void)
{
	const char *tmp = getenv("TMPDIR");

	log_set_level(LOG_OFF);
	if ((size_t)snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/bpfs-fuzz-XXXXXX",
			     tmp && *tmp ? tmp : "/tmp") >= sizeof(fuzz_dir) ||
	    !mkdtemp(fuzz_dir)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	snprintf(fuzz_path, sizeof(fuzz_path), "%s/input", fuzz_dir);
	atexit(fuzz_cleanup);
}

/* Writes data to the scratch file and returns its path. */
static const char *fuzz_file(const uint8_t *data, size_t size)
{
	int fd = open(fuzz_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
		perror("fuzz: writing the input file");
		abort();
	}
	close(fd);
	return fuzz_path;
}

/* A NUL-terminated copy of data (the string parsers); free() it. */
static char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
