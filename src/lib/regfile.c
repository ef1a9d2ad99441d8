// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "regfile.h"

int regfile__open(const char *path, int flags, struct stat *st)
{
	struct stat own;
	int fd;

	if (!st)
		st = &own;
	/* non-blocking: opening a FIFO without a writer returns at once (and
	 * O_NONBLOCK changes nothing for the regular file that is kept) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}
