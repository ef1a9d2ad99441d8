// SPDX-License-Identifier: GPL-2.0
/* Output paths (outpath.h, atomicfile.h): the sticky-directory rule and
 * the kinds decided on, then real paths in a private folder: a symlink is
 * followed and stays a link, a FIFO and a pipe are written in place, a
 * directory is refused, a loop ends, a program's own directory follows no
 * link. The rules with other users' files are tests/integration/outputs.sh
 * (root). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "outpath.h"
#include "unit.h"

static char dir[] = "/tmp/bpfs-outpath.XXXXXX";

static struct stat dir_st(mode_t mode, uid_t uid)
{
	struct stat st = { .st_mode = S_IFDIR | mode, .st_uid = uid };

	return st;
}

/* fs/namei.c's rules: only a sticky directory that others may write to
 * protects, and only from entries of a third user. */
static void test_sticky_rule(void)
{
	struct stat tmp = dir_st(01777, 0), shared = dir_st(01770, 1000);
	struct stat plain = dir_st(0777, 0), sticky_ro = dir_st(01755, 0);

	CHECK(outpath__sticky_refuses(&tmp, 65534, 0), "/tmp: another's entry, root follows");
	CHECK(!outpath__sticky_refuses(&tmp, 0, 0), "/tmp: the directory owner's entry");
	CHECK(!outpath__sticky_refuses(&tmp, 1000, 1000), "/tmp: the caller's own entry");
	CHECK(outpath__sticky_refuses(&tmp, 1000, 1001), "/tmp: a third user's, non-root");
	CHECK(outpath__sticky_refuses(&shared, 1001, 0), "sticky g+w: level 2 refuses");
	CHECK(!outpath__sticky_refuses(&shared, 1000, 0), "sticky g+w: the owner's entry");
	CHECK(!outpath__sticky_refuses(&plain, 65534, 0), "not sticky: followed");
	CHECK(!outpath__sticky_refuses(&sticky_ro, 65534, 0), "sticky, only its owner writes");
}

static void test_kinds(void)
{
	enum outpath_kind k = -1;

	CHECK(!outpath__kind_of(S_IFREG | 0600, &k) && k == OUTPATH_REGULAR, "regular: %d", k);
	CHECK(!outpath__kind_of(S_IFCHR | 0666, &k) && k == OUTPATH_INPLACE, "char dev: %d", k);
	k = -1;
	CHECK(!outpath__kind_of(S_IFIFO | 0600, &k) && k == OUTPATH_INPLACE, "FIFO: %d", k);
	k = -1;
	CHECK(!outpath__kind_of(S_IFSOCK | 0600, &k) && k == OUTPATH_INPLACE, "socket: %d", k);
	CHECK(outpath__kind_of(S_IFDIR | 0755, &k) == -EISDIR, "directory refused");
	CHECK(outpath__kind_of(S_IFBLK | 0660, &k) == -EINVAL, "block device refused");
}

static void slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
}

static int write_all(const char *path, const char *text)
{
	struct atomicfile af;
	int err = atomicfile__open(&af, AT_FDCWD, path, 0600, 0);

	if (err)
		return err;
	err = atomicfile__write(&af, text, strlen(text));
	if (err) {
		atomicfile__abort(&af);
		return err;
	}
	return atomicfile__commit(&af);
}

static void test_symlinks(void)
{
	char target[256], link[256], loop[256], buf[64];
	struct outpath op;
	struct stat st;
	int dfd;

	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(loop, sizeof(loop), "%s/loop", dir);
	CHECK(!symlink("target", link) && !symlink("loop", loop), "symlinks made");
	/* dangling: the target is created, the link stays a link */
	CHECK(!outpath__resolve(&op, AT_FDCWD, link, 0) && op.kind == OUTPATH_NEW &&
		      !strcmp(op.name, "target"), "dangling link: NEW 'target', got %d '%s'",
	      op.kind, op.name);
	outpath__release(&op);
	CHECK(write_all(link, "one") == 0, "written through the link");
	slurp(target, buf, sizeof(buf));
	CHECK(!strcmp(buf, "one"), "the target has it: '%s'", buf);
	CHECK(!lstat(link, &st) && S_ISLNK(st.st_mode), "the link is still a link");
	CHECK(write_all(link, "two") == 0, "replaced through the link");
	slurp(target, buf, sizeof(buf));
	CHECK(!strcmp(buf, "two") && !lstat(link, &st) && S_ISLNK(st.st_mode),
	      "the target replaced, the link kept: '%s'", buf);
	CHECK(outpath__resolve(&op, AT_FDCWD, loop, 0) == -ELOOP && op.why[0],
	      "a loop ends: '%s'", op.why);
	/* in a directory of the program's own, no link is followed */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(outpath__resolve(&op, dfd, "link", OUTPATH_NOFOLLOW) == -ELOOP,
	      "NOFOLLOW refuses the link");
	close(dfd);
	unlink(link);
	unlink(loop);
	unlink(target);
}

static void test_refused(void)
{
	char sub[256], buf[300];
	struct outpath op;

	snprintf(sub, sizeof(sub), "%s/sub", dir);
	CHECK(!mkdir(sub, 0700), "mkdir");
	CHECK(outpath__resolve(&op, AT_FDCWD, sub, 0) == -EISDIR && strstr(op.why, "directory"),
	      "a directory refused: '%s'", op.why);
	snprintf(buf, sizeof(buf), "%s/", sub);
	CHECK(outpath__resolve(&op, AT_FDCWD, buf, 0) == -EISDIR, "'dir/' refused");
	CHECK(write_all(sub, "x") == -EISDIR, "atomicfile refuses it too");
	snprintf(buf, sizeof(buf), "%s/nothere/x", dir);
	CHECK(outpath__resolve(&op, AT_FDCWD, buf, 0) == -ENOENT, "missing directory: ENOENT");
	rmdir(sub);
}

/* A FIFO with a reader: written in place, and still a FIFO. */
static void test_fifo(void)
{
	char fifo[256], buf[64] = "";
	struct stat st;
	int rfd;
	ssize_t n;

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK(!mkfifo(fifo, 0600), "mkfifo");
	rfd = open(fifo, O_RDONLY | O_NONBLOCK); /* the reader the writer's open waits for */
	CHECK(rfd >= 0, "reader");
	CHECK(write_all(fifo, "through") == 0, "written");
	n = read(rfd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(!strcmp(buf, "through"), "the reader got it: '%s'", buf);
	CHECK(!lstat(fifo, &st) && S_ISFIFO(st.st_mode), "still a FIFO");
	close(rfd);
	unlink(fifo);
}

/* /dev/fd/N of a pipe of ours: the pipe itself (a shell's >(...)). */
static void test_dev_fd(void)
{
	char path[64], buf[64] = "";
	struct outpath op;
	int p[2];
	ssize_t n;

	CHECK(!pipe(p), "pipe");
	snprintf(path, sizeof(path), "/dev/fd/%d", p[1]);
	CHECK(!outpath__resolve(&op, AT_FDCWD, path, 0) && op.kind == OUTPATH_INPLACE &&
		      op.own_fd == p[1], "/dev/fd/N: in place, our fd %d (got %d)", p[1],
	      op.own_fd);
	outpath__release(&op);
	CHECK(write_all(path, "piped") == 0, "written");
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(!strcmp(buf, "piped"), "the pipe got it: '%s'", buf);
	close(p[0]);
}

/* The log's open: created, then appended to, through a link too; a
 * spool's directory: opened, with or without a trailing slash. */
static void test_append_and_dir(void)
{
	char log[256], link[256], why[512], buf[64];
	int fd;

	snprintf(log, sizeof(log), "%s/log", dir);
	snprintf(link, sizeof(link), "%s/log.link", dir);
	CHECK(!symlink("log", link), "symlink");
	fd = outpath__open_append(link, 0640, why, sizeof(why));
	CHECK(fd >= 0 && write(fd, "a", 1) == 1, "created through the link: %d", fd);
	close(fd);
	fd = outpath__open_append(log, 0640, why, sizeof(why));
	CHECK(fd >= 0 && write(fd, "b", 1) == 1, "opened again: %d", fd);
	close(fd);
	slurp(log, buf, sizeof(buf));
	CHECK(!strcmp(buf, "ab"), "appended, not truncated: '%s'", buf);
	CHECK(outpath__open_append(dir, 0640, why, sizeof(why)) == -EISDIR && why[0],
	      "a directory refused: '%s'", why);
	fd = outpath__open_dir(dir, why, sizeof(why));
	CHECK(fd >= 0, "open_dir: %d", fd);
	close(fd);
	snprintf(buf, sizeof(buf), "%s//", dir);
	fd = outpath__open_dir(buf, why, sizeof(why));
	CHECK(fd >= 0, "open_dir with slashes: %d", fd);
	close(fd);
	CHECK(outpath__open_dir(log, why, sizeof(why)) == -ENOTDIR, "open_dir of a file");
	unlink(link);
	unlink(log);
}

int main(void)
{
	RUN(test_sticky_rule);
	RUN(test_kinds);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_symlinks);
	RUN(test_refused);
	RUN(test_fifo);
	RUN(test_dev_fd);
	RUN(test_append_and_dir);
	if (rmdir(dir)) {
		printf("FAIL cleanup: %s not empty\n", dir);
		unit_tests_failed++;
	}
	UNIT_EXIT();
}
