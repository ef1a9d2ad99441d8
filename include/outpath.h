/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where an output path leads, decided before anything is written, so that
 * a run as root can never be turned into a write over a file it was not
 * meant to touch (docs/design.md, "Output files"; docs/bpfsampler.8, FILES).
 *
 * The path is walked one component at a time with O_PATH | O_NOFOLLOW:
 * every symlink is checked against the directory it sits in before it is
 * followed, and the last component is decided on from the fstat of the
 * descriptor opened, never from a second lookup of the name. The result is
 * a directory fd and a name in it (for a file to create or replace), or an
 * O_PATH fd of what is to be written in place.
 */
#ifndef BPFSAMPLER_OUTPATH_H
#define BPFSAMPLER_OUTPATH_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

enum outpath_kind {
	OUTPATH_NEW,	 /* nothing under the name: a file is created */
	OUTPATH_REGULAR, /* a regular file: replaced whole (or appended to) */
	OUTPATH_INPLACE, /* a character device, FIFO, socket, or what a /proc
			  * fd link (/dev/fd/N, /dev/stdout) leads to: opened
			  * and written where it is, never renamed over */
};

struct outpath {
	enum outpath_kind kind;
	int dirfd;	/* owns: the directory the name is in; -1 for what a
			 * /proc link led to (it has no directory entry to use) */
	int fd;		/* owns: O_PATH fd of what is under the name; -1 if NEW */
	int own_fd;	/* the path was /proc/self/fd/N (/dev/fd/N): N, written
			 * through a dup of it; -1 otherwise */
	struct stat st; /* of fd */
	char name[NAME_MAX + 1];
	char why[512];	/* on a refusal: what was found, and the next step */
};

/* Where path leads, looked up from dirfd (AT_FDCWD: the working directory)
 * under the rules above. Returns 0, or -errno with op->why set when the
 * path was refused: -EACCES (a symlink, FIFO or file another user put in
 * a sticky directory), -EISDIR (a directory), -EINVAL (a block device),
 * -ELOOP (too many links). op is released on an error. */
int outpath__resolve(struct outpath *op, int dirfd, const char *path, int flags);
/* flags of outpath__resolve: */
enum {
	OUTPATH_NOFOLLOW = 1 << 0, /* a symlink is refused (-ELOOP): in a
				    * directory of the program's own, where
				    * none is ever made */
	OUTPATH_DIR = 1 << 1,	   /* the last component may be a directory */
};
/* A writable fd of what op->fd is (OUTPATH_INPLACE or OUTPATH_REGULAR;
 * flags: O_WRONLY and the like), reached through that fd (/proc/self/fd),
 * not the name: a dup for our own /dev/fd/N, a connection for a socket.
 * A FIFO's open waits for its reader, as a shell's does. Returns the fd
 * or -errno. */
int outpath__reopen(const struct outpath *op, int flags);
/* Opens path for appending (a log): created with mode when missing, a
 * regular file appended to, a device or FIFO written in place; the rules
 * of outpath__resolve. why (size bytes) gets the reason of a refusal.
 * Returns the fd or -errno. */
int outpath__open_append(const char *path, mode_t mode, char *why, size_t size);
/* Opens directory path (O_RDONLY), walked under the same rules; one that
 * another user made in a sticky directory is refused too. Returns the fd
 * or -errno; why as for outpath__open_append. */
int outpath__open_dir(const char *path, char *why, size_t size);
void outpath__release(struct outpath *op);

/*
 * The decision itself, for tests. The kernel's fs.protected_* rules
 * (fs/namei.c), applied here because these sysctls may be 0:
 * may_follow_link (protected_symlinks) and may_create_in_sticky
 * (protected_fifos, protected_regular at level 2). In a sticky directory
 * that others than its owner may write to (o+w, or g+w), an entry owned by
 * neither the directory's owner nor the caller is refused: a symlink is
 * not followed, a FIFO or file is not opened. Returns true to refuse.
 */
bool outpath__sticky_refuses(const struct stat *dir, uid_t owner, uid_t caller);
/* The kind of what is under a name, from its mode: -EISDIR for a
 * directory, -EINVAL for a block device, 0 otherwise. */
int outpath__kind_of(mode_t mode, enum outpath_kind *kind);

#endif
