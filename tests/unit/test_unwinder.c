// SPDX-License-Identifier: GPL-2.0
/*
 * The unwind tables' lifetimes (src/unwind/unwinder.c), without BPF: the
 * rows go into a plain array and the per-process map is an invalid fd (its
 * updates are counted as refused). A child process maps this test binary,
 * libc and ld.so; its tables are built once, shared, and released when it
 * is gone, and their rows are reused.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmaps.h"
#include "unwinder.h"
#include "unit.h"

static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_lifetimes(void)
{
	struct bpfs_unwind_row *rows = calloc(1 << 20, sizeof(*rows));
	struct unwinder_opts o = { .rows = rows, .max_rows = 1 << 20, .procs_fd = -1, .rows_fd = -1 };
	struct unwinder_stats st, st2;
	pid_t a = spawn_sleeper(), b = spawn_sleeper();
	struct procmaps *pa = NULL, *pb = NULL;
	struct unwinder *u = NULL;

	CHECK(rows && a > 0 && b > 0, "set-up");
	if (!rows || a <= 0 || b <= 0)
		goto out;
	CHECK(!procmaps__load(a, &pa) && !procmaps__load(b, &pb), "maps of the children");
	CHECK(!unwinder__new(&o, &u), "new");
	if (!pa || !pb || !u)
		goto out;
	unwinder__note_maps(u, a, pa);
	unwinder__stats(u, &st);
	CHECK(st.built >= 3, "tables of the binary, libc and ld.so: %llu",
	      (unsigned long long)st.built);
	CHECK(st.rows > 20000 && rows[st.rows - 1].pc, "libc's rows written: %llu",
	      (unsigned long long)st.rows);
	CHECK(st.update_errors == 1, "the (invalid) BPF map refused the entry");
	unwinder__note_maps(u, b, pb);
	unwinder__stats(u, &st2);
	CHECK(st2.built == st.built && st2.rows == st.rows && st2.processes == 2,
	      "a second process of the same files shares their tables");
	reap(a);
	CHECK(unwinder__sweep(u) == 0, "tables still held by the other process");
	reap(b);
	b = 0;
	CHECK(unwinder__sweep(u) == st.built, "every table released with the last process");
	unwinder__stats(u, &st2);
	CHECK(st2.rows == 0 && st2.tables == 0 && st2.processes == 0,
	      "back to the floor: %llu rows, %llu tables", (unsigned long long)st2.rows,
	      (unsigned long long)st2.tables);
	/* the rows are reused: the same tables fit again at the same places */
	b = spawn_sleeper();
	unwinder__note_maps(u, b, pb);
	unwinder__stats(u, &st2);
	CHECK(st2.rows == st.rows && st2.rows_peak == st.rows, "rows reused, peak %llu",
	      (unsigned long long)st2.rows_peak);
out:
	if (b > 0)
		reap(b);
	unwinder__free(u);
	procmaps__free(pa);
	procmaps__free(pb);
	free(rows);
}

/* Tables that do not fit are left out, said once, and counted. */
static void test_full(void)
{
	struct bpfs_unwind_row rows[2000];
	struct unwinder_opts o = { .rows = rows, .max_rows = 2000, .procs_fd = -1, .rows_fd = -1 };
	struct unwinder_stats st;
	struct procmaps *pm = NULL;
	struct unwinder *u = NULL;

	CHECK(!procmaps__load(getpid(), &pm) && !unwinder__new(&o, &u), "set-up");
	if (!pm || !u)
		goto out;
	unwinder__note_maps(u, getpid(), pm);
	unwinder__stats(u, &st);
	CHECK(st.full >= 1 && st.rows <= 2000, "libc does not fit in 2000 rows: %llu full",
	      (unsigned long long)st.full);
out:
	unwinder__free(u);
	procmaps__free(pm);
}

int main(void)
{
	RUN(test_lifetimes);
	RUN(test_full);
	UNIT_EXIT();
}
