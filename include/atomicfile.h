/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files that appear whole or not at all, written where the path leads
 * under the rules of outpath.h (a symlink or file another user put in a
 * sticky directory is refused, a directory or block device too).
 *
 * A regular file, or a name with nothing under it, is written as a new
 * file in the same directory and renamed over the name once complete and
 * durable, so a reader, a crash or a failed run never sees half a file and
 * an earlier file survives every failure. The new file is an O_TMPFILE:
 * it has no name while it is written, so a killed process leaves nothing
 * behind. It is linked under the final name at once when nothing is there
 * (linkat never replaces), else under a temporary name (".tmp.NAME.PID.N")
 * renamed over the old file in the next system call: only a kill between
 * those two calls leaves that temporary. On a file system without
 * O_TMPFILE the new file has its temporary name from the start, and a kill
 * while writing leaves it; such names are safe to delete (the agent's
 * spool removes them when it opens).
 *
 * A character device, FIFO, socket or what /dev/fd/N names is opened and
 * written in place: no temporary, no rename, no fsync, its mode untouched.
 * Used for profiles (-o), the agent's spool and its metrics file.
 */
#ifndef BPFSAMPLER_ATOMICFILE_H
#define BPFSAMPLER_ATOMICFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Names that start so are temporaries; a spool removes them at start. */
#define ATOMICFILE_PREFIX ".tmp."

struct atomicfile {
	int dirfd;	/* where both names live; -1 when written in place */
	bool own_dirfd; /* opened here (from a path), closed with the file */
	int fd;		/* the new file, or what is written in place; -1 once
			 * committed or aborted */
	bool inplace;	/* a device, FIFO, socket, pipe: no rename */
	bool anon;	/* fd is an O_TMPFILE with no name yet */
	bool existed;	/* a regular file was under the name when opened */
	char tmp[NAME_MAX + 1]; /* the temporary name while it has one, else "" */
	char name[NAME_MAX + 1];
	char why[512];	/* a refusal of the path: what and the next step */
};

/* Creates the new file for dirfd/name with mode (set with fchmod: the
 * umask does not narrow it), or opens in place what is there. With dirfd
 * AT_FDCWD, name may be a path, walked under the rules of outpath.h. With
 * a dirfd of the caller's, name is one the program chose in its own
 * directory: only a regular file there may be replaced. Returns 0 or
 * -errno; af->why says why when the path was refused. flags: 0, or
 * ATOMICFILE_NOWAIT. */
int atomicfile__open(struct atomicfile *af, int dirfd, const char *name, mode_t mode, int flags);
/* A FIFO with no reader fails (-ENXIO) instead of waiting for one, and a
 * full one fails the write (-EAGAIN): for the agent, which must not stop
 * sampling for a file it writes on the side (its metrics). */
#define ATOMICFILE_NOWAIT 1
/* Writes all of buf (short writes and EINTR retried). Returns 0 or -errno. */
int atomicfile__write(struct atomicfile *af, const void *buf, size_t len);
/* fsync, put in place under the final name, fsync the directory (in
 * place: close only). On an error the new file is removed and the final
 * name left as it was. Returns 0 or -errno. */
int atomicfile__commit(struct atomicfile *af);
/* Removes the new file (a failed write); safe to call again, and from a
 * signal handler. */
void atomicfile__abort(struct atomicfile *af);

/*
 * The same in two steps, for many files made durable together (the agent's
 * spool, one window at a time): stage fsyncs the new file, gives it its
 * temporary name and closes it; publish renames it over the final name
 * and does NOT fsync the directory: the caller does, once for the batch,
 * and a rename is durable only after that. A staged file that is not to
 * be published is removed with discard. af must have a dirfd of the
 * caller's (not AT_FDCWD), which must stay open until publish or discard.
 * Each returns 0 or -errno; on an error the temporary is removed.
 */
int atomicfile__stage(struct atomicfile *af);
int atomicfile__publish(struct atomicfile *af);
void atomicfile__discard(struct atomicfile *af);

#endif
