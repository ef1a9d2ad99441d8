// SPDX-License-Identifier: GPL-2.0
/*
 * Output paths (include/outpath.h): the path walked a component at a time
 * under the kernel's protected_* rules, and the descriptors the walk leaves.
 * A walk of our own, and not open(2) with the sysctls: on these machines
 * fs.protected_symlinks, protected_fifos and protected_regular all read 0,
 * and a profiler that runs as root must not depend on them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "outpath.h"

/* The kernel's MAXSYMLINKS: a walk that follows more is a loop. */
#define MAX_LINKS 40
/* walk_step: the last component was decided on. */
#define WALK_DONE 1

struct walk {
	int dirfd;	     /* owns: where the next component is looked up */
	struct stat dir;     /* of dirfd */
	char rest[PATH_MAX]; /* what is left of the path */
	int links;	     /* symlinks followed so far */
	uid_t caller;	     /* the kernel compares the fsuid; ours is the euid */
	int flags;	     /* OUTPATH_* */
};

/*
 * Mirrors fs/namei.c. may_follow_link (fs.protected_symlinks = 1): a
 * symlink is followed when the follower owns it, or its directory is not
 * sticky and world-writable, or the directory's owner owns the link.
 * may_create_in_sticky (fs.protected_fifos and protected_regular = 2): an
 * existing FIFO or regular file is opened when its directory is not sticky,
 * or the file's owner is the directory's owner or the caller, or the
 * directory is neither world- nor group-writable. One rule here for all
 * three and for any other entry (a device, a socket): sticky and writable
 * by o or g, owned by neither. The symlink rule is thereby one step
 * stricter than the kernel's (g+w too): refusing is the safe side.
 */
bool outpath__sticky_refuses(const struct stat *dir, uid_t owner, uid_t caller)
{
	if (!(dir->st_mode & S_ISVTX) || !(dir->st_mode & (S_IWOTH | S_IWGRP)))
		return false;
	return owner != caller && owner != dir->st_uid;
}

int outpath__kind_of(mode_t mode, enum outpath_kind *kind)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		*kind = OUTPATH_REGULAR;
		return 0;
	case S_IFDIR:
		return -EISDIR;
	case S_IFBLK:
		return -EINVAL;
	default: /* character device, FIFO, socket */
		*kind = OUTPATH_INPLACE;
		return 0;
	}
}

__attribute__((format(printf, 3, 4)))
static int refuse(struct outpath *op, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(op->why, sizeof(op->why), fmt, ap);
	va_end(ap);
	return err;
}

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "FIFO";
	case S_IFREG:
		return "file";
	case S_IFCHR:
		return "character device";
	case S_IFSOCK:
		return "socket";
	default:
		return "entry";
	}
}

static int refuse_sticky(struct outpath *op, const struct walk *w, const char *name,
			 const struct stat *st)
{
	const char *rule = S_ISLNK(st->st_mode)	 ? "protected_symlinks"
			   : S_ISFIFO(st->st_mode) ? "protected_fifos"
						   : "protected_regular";

	return refuse(op, -EACCES,
		      "%s is a %s owned by uid %u in a sticky directory others may write to (owned "
		      "by uid %u); refused, as the kernel's fs.%s rule would: someone else may "
		      "have put it there. Remove it, or write to a directory only you can write",
		      name, type_name(st->st_mode), (unsigned)st->st_uid, (unsigned)w->dir.st_uid,
		      rule);
}

static int walk_cd(struct walk *w, int fd)
{
	if (w->dirfd >= 0)
		close(w->dirfd);
	w->dirfd = fd;
	return fstat(fd, &w->dir) ? -errno : 0;
}

static int walk_root(struct walk *w)
{
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : walk_cd(w, fd);
}

static int walk_start(struct walk *w, int dirfd, const char *path)
{
	int fd;

	if (!*path)
		return -ENOENT;
	if (strlen(path) >= sizeof(w->rest))
		return -ENAMETOOLONG;
	strcpy(w->rest, path);
	if (path[0] == '/')
		return walk_root(w);
	if (dirfd == AT_FDCWD)
		fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	else
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : walk_cd(w, fd);
}

/* The next component of w->rest into comp (taken off rest); *last when
 * nothing follows it. -EISDIR: only slashes were left ("dir/", "/"). */
static int walk_next(struct walk *w, char *comp, bool *last)
{
	char *p = w->rest, *end;
	size_t n;

	while (*p == '/')
		p++;
	if (!*p)
		return -EISDIR;
	end = strchr(p, '/');
	n = end ? (size_t)(end - p) : strlen(p);
	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(comp, p, n);
	comp[n] = '\0';
	*last = !end;
	memmove(w->rest, p + n, strlen(p + n) + 1);
	return 0;
}

/* The directory the name is in, for op: readable if it can be (an fsync
 * needs it), else the O_PATH fd the walk holds (the fsync is then skipped). */
static void take_dir(struct walk *w, struct outpath *op)
{
	op->dirfd = openat(w->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (op->dirfd < 0) {
		op->dirfd = w->dirfd;
		w->dirfd = -1;
	}
}

/* A symlink outside /proc: checked, then its target put in front of what
 * is left of the path. */
static int walk_link(struct walk *w, struct outpath *op, int fd, const struct stat *st,
		     const char *comp)
{
	char target[PATH_MAX];
	size_t rest = strlen(w->rest);
	ssize_t n;

	if (outpath__sticky_refuses(&w->dir, st->st_uid, w->caller))
		return refuse_sticky(op, w, comp, st);
	if (++w->links > MAX_LINKS)
		return refuse(op, -ELOOP, "more than %d symlinks on the way (a loop?)", MAX_LINKS);
	n = readlinkat(fd, "", target, sizeof(target));
	if (n < 0)
		return -errno;
	if ((size_t)n + rest >= sizeof(w->rest))
		return -ENAMETOOLONG;
	memmove(w->rest + n, w->rest, rest + 1);
	memcpy(w->rest, target, n);
	return target[0] == '/' ? walk_root(w) : 0;
}

/* Is w->dirfd our own /proc/self/fd? Then name N there is our fd N. */
static int own_fd_number(const struct walk *w, const char *comp)
{
	struct stat self;
	char *end;
	long n = strtol(comp, &end, 10);

	if (*end || end == comp || n < 0 || n > INT_MAX || stat("/proc/self/fd", &self) ||
	    self.st_dev != w->dir.st_dev || self.st_ino != w->dir.st_ino)
		return -1;
	return (int)n;
}

/* A link in /proc (/proc/self, /proc/self/fd/N): its text is no path
 * ("pipe:[123]"), so the kernel follows it. No sticky directory there. */
static int walk_magic(struct walk *w, struct outpath *op, const char *comp, bool last)
{
	int fd = openat(w->dirfd, comp, O_PATH | O_CLOEXEC), err;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!last) {
		if (S_ISDIR(st.st_mode))
			return walk_cd(w, fd);
		close(fd);
		return -ENOTDIR;
	}
	if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode)) {
		close(fd);
		return refuse(op, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			      "leads to a %s; give a file name", S_ISDIR(st.st_mode) ? "directory" :
			      "block device");
	}
	/* whatever it is, written where it is: there is no name to rename over */
	op->kind = OUTPATH_INPLACE;
	op->fd = fd;
	op->st = st;
	op->own_fd = own_fd_number(w, comp);
	snprintf(op->name, sizeof(op->name), "%s", comp);
	return WALK_DONE;
}

static int walk_last(struct walk *w, struct outpath *op, int fd, const struct stat *st,
		     const char *comp)
{
	int err = outpath__kind_of(st->st_mode, &op->kind);

	if (err == -EISDIR)
		err = refuse(op, err, "is a directory; give a file name in it (DIR/NAME)");
	else if (err)
		err = refuse(op, err, "is a block device: a profile written there would overwrite "
			     "what the device holds; give a file name");
	else if (outpath__sticky_refuses(&w->dir, st->st_uid, w->caller))
		err = refuse_sticky(op, w, comp, st);
	if (err) {
		close(fd);
		return err;
	}
	op->fd = fd;
	op->st = *st;
	snprintf(op->name, sizeof(op->name), "%s", comp);
	take_dir(w, op);
	return WALK_DONE;
}

/* OUTPATH_DIR: a directory to keep files in (the agent's spool). One
 * that another user put in a sticky directory is theirs to fill with
 * links: refused as a FIFO or file there would be. */
static int walk_dir(struct walk *w, struct outpath *op, int fd, const struct stat *st,
		    const char *comp)
{
	if (outpath__sticky_refuses(&w->dir, st->st_uid, w->caller)) {
		close(fd);
		return refuse(op, -EACCES, "%s is a directory owned by uid %u in a sticky directory "
			      "others may write to (owned by uid %u): someone else may have made "
			      "it; remove it, or use a directory only you can write",
			      comp, (unsigned)st->st_uid, (unsigned)w->dir.st_uid);
	}
	op->kind = OUTPATH_REGULAR;
	op->fd = fd;
	op->st = *st;
	snprintf(op->name, sizeof(op->name), "%s", comp);
	take_dir(w, op);
	return WALK_DONE;
}

static bool on_proc(int fd)
{
	struct statfs sf;

	return !fstatfs(fd, &sf) && sf.f_type == PROC_SUPER_MAGIC;
}

/* One component: looked up without following, then decided on from the
 * fstat of what was opened. 0: go on; WALK_DONE: op is filled. */
static int walk_step(struct walk *w, struct outpath *op, const char *comp, bool last)
{
	int fd = openat(w->dirfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC), err;
	struct stat st;

	if (fd < 0 && errno == ENOENT && last) {
		op->kind = OUTPATH_NEW;
		snprintf(op->name, sizeof(op->name), "%s", comp);
		take_dir(w, op);
		return WALK_DONE;
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (S_ISLNK(st.st_mode) && (w->flags & OUTPATH_NOFOLLOW)) {
		close(fd);
		return refuse(op, -ELOOP, "%s is a symlink where bpfsampler keeps its own files; "
			      "remove it", comp);
	}
	if (S_ISLNK(st.st_mode)) {
		err = on_proc(w->dirfd) ? walk_magic(w, op, comp, last)
					: walk_link(w, op, fd, &st, comp);
		close(fd);
		return err;
	}
	if (last && S_ISDIR(st.st_mode) && (w->flags & OUTPATH_DIR))
		return walk_dir(w, op, fd, &st, comp);
	if (!last && S_ISDIR(st.st_mode))
		return walk_cd(w, fd);
	if (!last) {
		close(fd);
		return -ENOTDIR;
	}
	return walk_last(w, op, fd, &st, comp);
}

int outpath__resolve(struct outpath *op, int dirfd, const char *path, int flags)
{
	struct walk w = { .dirfd = -1, .caller = geteuid(), .flags = flags };
	char comp[NAME_MAX + 1];
	bool last = false;
	int err;

	memset(op, 0, sizeof(*op));
	op->dirfd = op->fd = op->own_fd = -1;
	err = walk_start(&w, dirfd, path);
	while (!err && !(err = walk_next(&w, comp, &last)))
		err = walk_step(&w, op, comp, last);
	if (err == -EISDIR && !op->why[0])
		refuse(op, err, "names a directory; give a file name in it (DIR/NAME)");
	if (w.dirfd >= 0)
		close(w.dirfd);
	if (err == WALK_DONE)
		return 0;
	outpath__release(op);
	return err;
}

/* A socket on a file system: connected to, through the fd (a path of
 * /proc/self/fd/N is the inode that was checked, not a second lookup). */
static int connect_socket(const struct outpath *op)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int err = -EPROTOTYPE;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", op->fd);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]) && err == -EPROTOTYPE; i++) {
		int s = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);

		if (s < 0)
			return -errno;
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			return s;
		err = -errno;
		close(s);
	}
	return err;
}

/* Without /proc: the name again, and only what was checked is kept. */
static int reopen_by_name(const struct outpath *op, int flags)
{
	int fd = openat(op->dirfd, op->name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_dev != op->st.st_dev || st.st_ino != op->st.st_ino) {
		close(fd);
		return -ESTALE; /* replaced since it was checked */
	}
	return fd;
}

int outpath__reopen(const struct outpath *op, int flags)
{
	char proc[32];
	int fd;

	if (op->own_fd >= 0) { /* /dev/fd/N of ours: the fd itself, as a shell does */
		fd = fcntl(op->own_fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	if (S_ISSOCK(op->st.st_mode))
		return connect_socket(op);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", op->fd);
	fd = open(proc, flags | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT || op->dirfd < 0)
		return -errno;
	return reopen_by_name(op, flags);
}

int outpath__open_append(const char *path, mode_t mode, char *why, size_t size)
{
	struct outpath op;
	int fd = -EEXIST;

	/* a file made between the walk and the create is decided on again */
	for (int tries = 0; tries < 3 && fd == -EEXIST; tries++) {
		fd = outpath__resolve(&op, AT_FDCWD, path, 0);
		if (fd) {
			if (why && size)
				snprintf(why, size, "%s", op.why);
			return fd;
		}
		if (op.kind == OUTPATH_NEW)
			fd = openat(op.dirfd, op.name,
				    O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    mode);
		else
			fd = outpath__reopen(&op, O_WRONLY | O_APPEND);
		if (fd < 0 && op.kind == OUTPATH_NEW)
			fd = -errno;
		outpath__release(&op);
	}
	if (why && size)
		why[0] = '\0';
	return fd;
}

void outpath__release(struct outpath *op)
{
	if (op->fd >= 0)
		close(op->fd);
	if (op->dirfd >= 0)
		close(op->dirfd);
	op->fd = op->dirfd = -1;
}

int outpath__open_dir(const char *path, char *why, size_t size)
{
	char dir[PATH_MAX];
	size_t n = strlen(path);
	struct outpath op;
	int err, fd;

	while (n > 1 && path[n - 1] == '/') /* "spool/": the directory itself */
		n--;
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%.*s", (int)n, path);
	err = outpath__resolve(&op, AT_FDCWD, dir, OUTPATH_DIR);
	if (err) {
		snprintf(why, size, "%s", op.why);
		return err;
	}
	why[0] = '\0';
	if (op.kind == OUTPATH_NEW || !S_ISDIR(op.st.st_mode)) {
		snprintf(why, size, "%s", op.kind == OUTPATH_NEW ? "does not exist (removed meanwhile?)"
								 : "is not a directory");
		outpath__release(&op);
		return op.kind == OUTPATH_NEW ? -ENOENT : -ENOTDIR;
	}
	fd = openat(op.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	outpath__release(&op);
	return fd;
}
