/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files that appear whole or not at all: written under a temporary name in
 * the same directory (".tmp.NAME.PID.N"), made durable, then renamed over
 * the final name, so a reader, a crash or a failed run never sees half a
 * file and an earlier file survives every failure. Used for profiles (-o),
 * the agent's spool and its metrics file.
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
	int dirfd;	/* where both names live */
	bool own_dirfd; /* opened here (from a path), closed with the file */
	int fd;		/* the temporary; -1 once committed or aborted */
	char tmp[NAME_MAX + 1];
	char name[NAME_MAX + 1];
};

/* Creates the temporary for dirfd/name with mode (set with fchmod: the
 * umask does not narrow it). With dirfd AT_FDCWD, name may be a path: its
 * directory is opened. Returns 0 or -errno. */
int atomicfile__open(struct atomicfile *af, int dirfd, const char *name, mode_t mode);
/* Writes all of buf (short writes and EINTR retried). Returns 0 or -errno. */
int atomicfile__write(struct atomicfile *af, const void *buf, size_t len);
/* fsync, close, rename over the final name, fsync the directory. On an
 * error the temporary is removed and the final name left as it was.
 * Returns 0 or -errno. */
int atomicfile__commit(struct atomicfile *af);
/* Removes the temporary (a failed write); safe to call again. */
void atomicfile__abort(struct atomicfile *af);

/*
 * The same in two steps, for many files made durable together (the agent's
 * spool, one window at a time): stage fsyncs and closes the temporary,
 * which keeps its temporary name; publish renames it over the final name
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
