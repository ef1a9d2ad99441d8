// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"

static void release_dir(struct atomicfile *af)
{
	if (af->own_dirfd && af->dirfd >= 0)
		close(af->dirfd);
	af->dirfd = -1;
	af->own_dirfd = false;
}

/* The directory and the name within it: dirfd as given, or with AT_FDCWD
 * the directory of the path ("." for a bare name), opened here. */
static int split_path(struct atomicfile *af, int dirfd, const char *name)
{
	const char *slash = dirfd == AT_FDCWD ? strrchr(name, '/') : NULL;
	const char *base = slash ? slash + 1 : name;
	char dir[PATH_MAX] = ".";

	if (!*base)
		return -EISDIR; /* "dir/": no file name */
	if (strlen(base) >= sizeof(af->name) || (slash && slash - name >= PATH_MAX))
		return -ENAMETOOLONG;
	snprintf(af->name, sizeof(af->name), "%s", base);
	if (dirfd != AT_FDCWD) {
		af->dirfd = dirfd;
		return 0;
	}
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash == name ? 1 : slash - name), name);
	af->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (af->dirfd < 0)
		return -errno;
	af->own_dirfd = true;
	return 0;
}

int atomicfile__open(struct atomicfile *af, int dirfd, const char *name, mode_t mode)
{
	static unsigned long seq;
	int err;

	memset(af, 0, sizeof(*af));
	af->fd = -1;
	err = split_path(af, dirfd, name);
	if (err)
		goto fail;
	do {
		snprintf(af->tmp, sizeof(af->tmp), ATOMICFILE_PREFIX "%.200s.%d.%lu", af->name,
			 (int)getpid(), __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
		af->fd = openat(af->dirfd, af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	} while (af->fd < 0 && errno == EEXIST);
	if (af->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (fchmod(af->fd, mode)) {
		err = -errno;
		atomicfile__abort(af);
		return err;
	}
	return 0;
fail:
	af->tmp[0] = '\0'; /* not ours: never unlinked */
	release_dir(af);
	return err;
}

int atomicfile__write(struct atomicfile *af, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(af->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

int atomicfile__stage(struct atomicfile *af)
{
	int err = 0;

	/* data on disk before the name: else a crash after the rename can
	 * leave the final name on an empty file */
	if (fsync(af->fd))
		err = -errno;
	if (close(af->fd) && !err)
		err = -errno;
	af->fd = -1;
	if (err)
		atomicfile__discard(af);
	return err;
}

int atomicfile__publish(struct atomicfile *af)
{
	int err = 0;

	if (renameat(af->dirfd, af->tmp, af->dirfd, af->name)) {
		err = -errno;
		unlinkat(af->dirfd, af->tmp, 0);
	}
	af->tmp[0] = '\0';
	return err;
}

int atomicfile__commit(struct atomicfile *af)
{
	int err = atomicfile__stage(af);

	if (!err)
		err = atomicfile__publish(af);
	if (!err && fsync(af->dirfd))
		err = -errno; /* renamed, but the rename may not survive a crash */
	release_dir(af);
	return err;
}

void atomicfile__discard(struct atomicfile *af)
{
	if (af->fd >= 0) {
		close(af->fd);
		af->fd = -1;
	}
	if (af->tmp[0]) {
		unlinkat(af->dirfd, af->tmp, 0);
		af->tmp[0] = '\0';
	}
	release_dir(af);
}

void atomicfile__abort(struct atomicfile *af)
{
	atomicfile__discard(af);
}
