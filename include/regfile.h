/* SPDX-License-Identifier: GPL-2.0 */
/* Opening files that someone else may have put there. */
#ifndef BPFSAMPLER_REGFILE_H
#define BPFSAMPLER_REGFILE_H

#include <sys/stat.h>

/* Opens path read-only if it is a regular file: a FIFO would block the
 * open or the read forever, a device (/dev/zero behind a symlink) would
 * never end. flags adds to the open's (O_NOFOLLOW); st, if not NULL, gets
 * what was opened. Returns the fd, -EINVAL for anything but a regular
 * file, or -errno (-ELOOP: a symlink with O_NOFOLLOW). */
int regfile__open(const char *path, int flags, struct stat *st);

#endif
