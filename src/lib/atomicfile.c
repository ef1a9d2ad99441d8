// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "outpath.h"

static void release_dir(struct atomicfile *af)
{
	if (af->own_dirfd && af->dirfd >= 0)
		close(af->dirfd);
	af->dirfd = -1;
	af->own_dirfd = false;
}

/* The directory the walk ended in, as af's. A caller's dirfd is used as
 * it is when the name was in it (the spool keeps one per batch file, and
 * a batch may be long), else the walk's is kept (a symlink led elsewhere). */
static void take_dir(struct atomicfile *af, struct outpath *op, int dirfd)
{
	struct stat a, b;

	if (dirfd != AT_FDCWD && !fstat(dirfd, &a) && !fstat(op->dirfd, &b) &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		af->dirfd = dirfd;
		return;
	}
	af->dirfd = op->dirfd;
	af->own_dirfd = true;
	op->dirfd = -1;
}

static unsigned long next_seq(void)
{
	static unsigned long seq;

	return __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
}

static void name_temporary(struct atomicfile *af)
{
	snprintf(af->tmp, sizeof(af->tmp), ATOMICFILE_PREFIX "%.200s.%d.%lu", af->name,
		 (int)getpid(), next_seq());
}

/* A named temporary from the start: for file systems without O_TMPFILE. */
static int create_named(struct atomicfile *af)
{
	do {
		name_temporary(af);
		af->fd = openat(af->dirfd, af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	} while (af->fd < 0 && errno == EEXIST);
	if (af->fd < 0) {
		af->tmp[0] = '\0'; /* not ours: never unlinked */
		return -errno;
	}
	return 0;
}

static int create_temporary(struct atomicfile *af)
{
	af->fd = openat(af->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (af->fd >= 0) {
		af->anon = true;
		return 0;
	}
	/* EOPNOTSUPP: the file system has no O_TMPFILE (NFS, FUSE, vfat...);
	 * EISDIR: the kernel has none (before 3.11) and saw O_DIRECTORY */
	if (errno != EOPNOTSUPP && errno != EISDIR)
		return -errno;
	return create_named(af);
}

static int open_inplace(struct atomicfile *af, const struct outpath *op, int flags)
{
	int fd = outpath__reopen(op, O_WRONLY | O_TRUNC |
					     (flags & ATOMICFILE_NOWAIT ? O_NONBLOCK : 0));

	if (fd < 0)
		return fd;
	af->fd = fd;
	af->inplace = true;
	return 0;
}

int atomicfile__open(struct atomicfile *af, int dirfd, const char *name, mode_t mode, int flags)
{
	struct outpath op;
	int err;

	memset(af, 0, sizeof(*af));
	af->fd = af->dirfd = -1;
	/* a name in a directory of the caller's is one it chose: a symlink
	 * there was made by someone else */
	err = outpath__resolve(&op, dirfd, name, dirfd == AT_FDCWD ? 0 : OUTPATH_NOFOLLOW);
	if (err) {
		snprintf(af->why, sizeof(af->why), "%s", op.why);
		return err;
	}
	if (op.kind == OUTPATH_INPLACE && dirfd != AT_FDCWD) {
		snprintf(af->why, sizeof(af->why), "%s is a %s, not a file; remove it", name,
			 S_ISFIFO(op.st.st_mode) ? "FIFO" : "device or socket");
		err = -EINVAL;
	} else if (op.kind == OUTPATH_INPLACE) {
		err = open_inplace(af, &op, flags);
	} else {
		snprintf(af->name, sizeof(af->name), "%s", op.name);
		af->existed = op.kind == OUTPATH_REGULAR;
		take_dir(af, &op, dirfd);
		err = create_temporary(af);
		if (!err && fchmod(af->fd, mode))
			err = -errno;
		if (err)
			atomicfile__abort(af);
	}
	outpath__release(&op);
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

/* The O_TMPFILE under name in its directory. Through /proc/self/fd (any
 * user may link what it opened so); without /proc, AT_EMPTY_PATH, which
 * needs CAP_DAC_READ_SEARCH. */
static int link_anon(struct atomicfile *af, const char *name)
{
	char proc[32];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", af->fd);
	if (!linkat(AT_FDCWD, proc, af->dirfd, name, AT_SYMLINK_FOLLOW))
		return 0;
	if (errno != ENOENT)
		return -errno;
	return linkat(af->fd, "", af->dirfd, name, AT_EMPTY_PATH) ? -errno : 0;
}

/* The O_TMPFILE under a temporary name no one has. */
static int link_temporary(struct atomicfile *af)
{
	int err;

	do {
		name_temporary(af);
		err = link_anon(af, af->tmp);
	} while (err == -EEXIST);
	if (err)
		af->tmp[0] = '\0';
	return err;
}

int atomicfile__stage(struct atomicfile *af)
{
	int err = 0;

	/* data on disk before the name: else a crash after the rename can
	 * leave the final name on an empty file */
	if (fsync(af->fd))
		err = -errno;
	if (!err && af->anon)
		err = link_temporary(af);
	if (close(af->fd) && !err)
		err = -errno;
	af->fd = -1;
	if (err)
		atomicfile__discard(af);
	return err;
}

/* dirfd is the directory the walk checked (outpath.c), not the path
 * looked up again. Whatever is under the name by now, even if swapped in
 * since the check (a link, a FIFO), is a directory entry the rename
 * replaces: it is never opened or followed, so nothing is written through
 * it. */
static int rename_into_place(struct atomicfile *af)
{
	int err = 0;

	if (renameat(af->dirfd, af->tmp, af->dirfd, af->name)) {
		err = -errno;
		unlinkat(af->dirfd, af->tmp, 0);
	}
	af->tmp[0] = '\0';
	return err;
}

int atomicfile__publish(struct atomicfile *af)
{
	int err = rename_into_place(af);

	release_dir(af);
	return err;
}

/* fsync of the directory, for the new name to survive a crash. EBADF: the
 * directory could only be opened O_PATH (no read permission, outpath.c),
 * and cannot be synced. */
static int fsync_dir(struct atomicfile *af)
{
	return fsync(af->dirfd) && errno != EBADF ? -errno : 0;
}

/* Nothing was under the name: linked there directly, so that no temporary
 * name ever exists. -EEXIST: something is there now; the caller replaces
 * it as an existing file. */
static int commit_new(struct atomicfile *af)
{
	int err = fsync(af->fd) ? -errno : link_anon(af, af->name);

	if (err == -EEXIST)
		return err;
	if (close(af->fd) && !err)
		err = -errno;
	af->fd = -1;
	if (!err)
		err = fsync_dir(af);
	release_dir(af);
	return err;
}

static int close_inplace(struct atomicfile *af)
{
	int err = close(af->fd) ? -errno : 0;

	af->fd = -1;
	return err;
}

int atomicfile__commit(struct atomicfile *af)
{
	int err;

	if (af->inplace)
		return close_inplace(af);
	if (af->anon && !af->existed) {
		err = commit_new(af);
		if (err != -EEXIST)
			return err;
	}
	err = atomicfile__stage(af);
	if (!err)
		err = rename_into_place(af);
	if (!err)
		err = fsync_dir(af); /* renamed, but the rename may not survive a crash */
	release_dir(af);
	return err;
}

void atomicfile__discard(struct atomicfile *af)
{
	if (af->fd >= 0) {
		close(af->fd);
		af->fd = -1;
	}
	if (af->tmp[0] && af->dirfd >= 0) {
		unlinkat(af->dirfd, af->tmp, 0);
		af->tmp[0] = '\0';
	}
	release_dir(af);
}

void atomicfile__abort(struct atomicfile *af)
{
	atomicfile__discard(af);
}
