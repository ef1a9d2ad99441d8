// SPDX-License-Identifier: GPL-2.0
/*
 * The unwind tables' lifetimes (src/unwind/unwinder.c), without BPF: the
 * rows go into a plain array and the per-process map is an invalid fd (its
 * updates are counted as refused). A child process maps this test binary,
 * libc and ld.so; its tables are built once, shared, and released when it
 * is gone, and their rows are reused. Files without .eh_frame for their
 * code get their table from .debug_frame: their own, or their debug
 * file's when the debug roots hold it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debuginfo.h"
#include "ehframe.h"
#include "elf_syms.h"
#include "filecache.h"
#include "procmaps.h"
#include "unwinder.h"
#include "unit.h"

static void test_lifetimes(void)
{
	struct bpfs_unwind_row *rows = calloc(1 << 20, sizeof(*rows));
	struct unwinder_opts o = { .rows = rows, .max_rows = 1 << 20, .procs_fd = -1, .rows_fd = -1 };
	struct unwinder_stats st, st2;
	pid_t a = unit_sleeper(), b = unit_sleeper();
	struct procmaps *pa = NULL, *pb = NULL;
	struct unwinder *u = NULL;

	CHECK(rows && a > 0 && b > 0, "set-up");
	if (!rows || a <= 0 || b <= 0)
		goto out;
	CHECK(!procmaps__load(a, &pa) && !procmaps__load(b, &pb), "maps of the children");
	CHECK(!unwinder__new(&o, &u), "new");
	if (!pa || !pb || !u)
		goto out;
	unwinder__note_maps(u, a, pa, NULL);
	unwinder__stats(u, &st);
	CHECK(st.built >= 3, "tables of the binary, libc and ld.so: %llu",
	      (unsigned long long)st.built);
	CHECK(st.rows > 20000 && rows[st.rows - 1].pc, "libc's rows written: %llu",
	      (unsigned long long)st.rows);
	CHECK(st.update_errors == 1, "the (invalid) BPF map refused the entry");
	unwinder__note_maps(u, b, pb, NULL);
	unwinder__stats(u, &st2);
	CHECK(st2.built == st.built && st2.rows == st.rows && st2.processes == 2,
	      "a second process of the same files shares their tables");
	unit_reap(a);
	CHECK(unwinder__sweep(u) == 0, "tables still held by the other process");
	unit_reap(b);
	b = 0;
	CHECK(unwinder__sweep(u) == st.built, "every table released with the last process");
	unwinder__stats(u, &st2);
	CHECK(st2.rows == 0 && st2.tables == 0 && st2.processes == 0,
	      "back to the floor: %llu rows, %llu tables", (unsigned long long)st2.rows,
	      (unsigned long long)st2.tables);
	/* the rows are reused: the same tables fit again at the same places */
	b = unit_sleeper();
	unwinder__note_maps(u, b, pb, NULL);
	unwinder__stats(u, &st2);
	CHECK(st2.rows == st.rows && st2.rows_peak == st.rows, "rows reused, peak %llu",
	      (unsigned long long)st2.rows_peak);
out:
	if (b > 0)
		unit_reap(b);
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
	unwinder__note_maps(u, getpid(), pm, NULL);
	unwinder__stats(u, &st);
	CHECK(st.full >= 1 && st.rows <= 2000, "libc does not fit in 2000 rows: %llu full",
	      (unsigned long long)st.full);
out:
	unwinder__free(u);
	procmaps__free(pm);
}

/* Maps the executable segment of the ELF file at path, as a loader would
 * (enough for /proc/PID/maps to name it). */
static int map_code(const char *path)
{
	const struct ehframe_seg *seg;
	struct ehframe *t;
	size_t nr;
	off_t off;
	void *p;
	int fd;

	if (ehframe__load(path, &t))
		return -1;
	seg = ehframe__segs(t, &nr);
	off = nr ? (off_t)(seg->offset & ~4095ULL) : -1;
	ehframe__free(t);
	fd = open(path, O_RDONLY);
	if (fd < 0 || off < 0)
		return -1;
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, off);
	close(fd);
	return p == MAP_FAILED ? -1 : 0;
}

/* The tables of a child that maps file, with the debug roots dbg. */
/* A child that maps file's code and waits; -1 when it could not. */
static pid_t spawn_mapper(const char *file)
{
	int pipefd[2];
	pid_t pid;
	char ok = 0;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		ok = !map_code(file);
		if (write(pipefd[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	if (pid > 0 && (read(pipefd[0], &ok, 1) != 1 || !ok)) {
		unit_reap(pid);
		pid = -1;
	}
	close(pipefd[0]);
	close(pipefd[1]);
	return pid;
}

static int tables_of(const char *file, const struct debuginfo_opts *dbg, struct unwinder_stats *st)
{
	struct bpfs_unwind_row *rows = calloc(1 << 20, sizeof(*rows));
	struct unwinder_opts o = { .rows = rows, .max_rows = 1 << 20, .procs_fd = -1,
				   .rows_fd = -1, .dbg = dbg };
	struct procmaps *pm = NULL;
	struct unwinder *u = NULL;
	pid_t pid = -1;
	int err = -1;

	if (!rows)
		goto out;
	pid = spawn_mapper(file);
	if (pid > 0 && !procmaps__load(pid, &pm) && !unwinder__new(&o, &u)) {
		unwinder__note_maps(u, pid, pm, NULL);
		unwinder__stats(u, st);
		err = 0;
	}
out:
	if (pid > 0)
		unit_reap(pid);
	unwinder__free(u);
	procmaps__free(pm);
	free(rows);
	return err;
}

/* The fixture built with .debug_frame (tests/unit/unit.mk) gets its table
 * from it; its copy stripped of it, from its debug file when a debug root
 * holds it (by build-ID), else only .eh_frame's few rows. */
static void test_debug_frame_source(void)
{
	const char *roots[] = { FIXTURE_DIR "/dfroot" };
	struct debuginfo_opts dbg = { .roots = roots, .nr_roots = 1 };
	const struct {
		const char *file;
		const struct debuginfo_opts *dbg;
		unsigned int debug_frame, debug_files;
	} c[] = {
		{ FIXTURE_DIR "/fx_nofp_df", NULL, 1, 0 },
		{ FIXTURE_DIR "/fx_nofp_df_stripped", NULL, 0, 0 },
		{ FIXTURE_DIR "/fx_nofp_df_stripped", &dbg, 1, 1 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct unwinder_stats st = {};

		CHECK(!tables_of(c[i].file, c[i].dbg, &st), "%s: a child that maps it", c[i].file);
		CHECK(st.debug_frame == c[i].debug_frame && st.debug_files == c[i].debug_files,
		      "%s, %s debug root: %llu tables from .debug_frame, %llu from debug files",
		      c[i].file, c[i].dbg ? "with" : "without", (unsigned long long)st.debug_frame,
		      (unsigned long long)st.debug_files);
	}
}

/* --unwind-keep: a table no process holds is kept (by build-ID), taken up
 * again by the next process of its file without a build, and given up for
 * a new table's rows when there is no other room. */
static void test_kept(void)
{
	struct bpfs_unwind_row *rows = calloc(1 << 20, sizeof(*rows));
	struct unwinder_opts o = { .rows = rows, .max_rows = 1 << 20, .procs_fd = -1,
				   .rows_fd = -1, .keep_ns = 3600 * 1000000000ULL };
	const char *fx = FIXTURE_DIR "/fx_nofp_df";
	struct unwinder_stats st, st2;
	struct procmaps *pa = NULL, *pc = NULL;
	struct unwinder *u = NULL;
	pid_t a = unit_sleeper(), c = -1;
	size_t k;

	CHECK(rows && a > 0 && !procmaps__load(a, &pa) && !unwinder__new(&o, &u), "set-up");
	if (!rows || !pa || !u)
		goto out;
	unwinder__note_maps(u, a, pa, NULL);
	unwinder__stats(u, &st);
	unit_reap(a);
	a = -1;
	CHECK(unwinder__sweep(u) == 0, "nothing released with the process");
	unwinder__stats(u, &st2);
	CHECK(st2.idle == st.tables && st2.idle_rows == st.rows && st2.rows == st.rows,
	      "%llu of %llu tables kept, %llu rows", (unsigned long long)st2.idle,
	      (unsigned long long)st.tables, (unsigned long long)st2.idle_rows);
	/* the same files again (pa: the maps are the same at the same places) */
	a = unit_sleeper();
	unwinder__note_maps(u, a, pa, NULL);
	unwinder__stats(u, &st2);
	CHECK(st2.built == st.built && st2.reused == st.tables && st2.idle == 0,
	      "taken up again, not built: %llu built, %llu reused",
	      (unsigned long long)st2.built, (unsigned long long)st2.reused);
	unit_reap(a);
	a = -1;
	unwinder__sweep(u);
	unwinder__free(u);
	u = NULL;

	/* Room for exactly those tables: kept, they give their rows to the
	 * fixture's new one (the fixture's mapping alone is noted). */
	memset(rows, 0, sizeof(*rows));
	o.max_rows = st.rows;
	a = unit_sleeper();
	c = spawn_mapper(fx);
	CHECK(!unwinder__new(&o, &u) && c > 0 && !procmaps__load(c, &pc), "set-up, small");
	if (!u || !pc)
		goto out;
	unwinder__note_maps(u, a, pa, NULL);
	unit_reap(a);
	a = -1;
	unwinder__sweep(u);
	for (k = 0; k < pc->nr && !(pc->maps[k].path && strstr(pc->maps[k].path, "fx_nofp_df")); k++)
		;
	CHECK(k < pc->nr, "the fixture is mapped");
	if (k == pc->nr)
		goto out;
	{
		struct procmap tmp = pc->maps[0];
		size_t nr = pc->nr;

		pc->maps[0] = pc->maps[k];
		pc->maps[k] = tmp;
		pc->nr = 1;
		unwinder__note_maps(u, c, pc, NULL);
		pc->nr = nr;
	}
	unwinder__stats(u, &st2);
	CHECK(st2.evicted >= 1 && st2.full == 0 && st2.built == st.built + 1,
	      "a kept table evicted for the new one: %llu evicted, %llu full, %llu built",
	      (unsigned long long)st2.evicted, (unsigned long long)st2.full,
	      (unsigned long long)st2.built);
out:
	if (a > 0)
		unit_reap(a);
	if (c > 0)
		unit_reap(c);
	unwinder__free(u);
	procmaps__free(pa);
	procmaps__free(pc);
	free(rows);
}

/* The files of pm as the file cache gives them: their build-IDs. */
static void files_of(const struct procmaps *pm, struct mapped_file *f, char (*ids)[129],
		     const struct mapped_file **out)
{
	for (size_t i = 0; i < pm->nr; i++) {
		const char *path = pm->maps[i].path;

		f[i] = (struct mapped_file){ .path = path };
		if (path && path[0] == '/' && !elf_build_id__read(path, ids[i], 129))
			f[i].build_id = ids[i];
		out[i] = &f[i];
	}
}

/* A process gone before its maps are noted (a compiler's cc1 lives 50
 * ms): its files' tables are neither built nor kept as files without
 * one, so the next process of the files builds them; and a table kept
 * under a build-ID is taken up for a gone process's file without the
 * file being opened again. */
static void test_gone(void)
{
	struct bpfs_unwind_row *rows = calloc(1 << 20, sizeof(*rows));
	struct unwinder_opts o = { .rows = rows, .max_rows = 1 << 20, .procs_fd = -1,
				   .rows_fd = -1, .keep_ns = 3600 * 1000000000ULL };
	static struct mapped_file f[512];
	static const struct mapped_file *files[512];
	static char ids[512][129];
	struct unwinder_stats st, st2;
	struct procmaps *pa = NULL;
	struct unwinder *u = NULL;
	pid_t a = unit_sleeper(), b;

	CHECK(rows && a > 0 && !procmaps__load(a, &pa) && !unwinder__new(&o, &u), "set-up");
	if (!rows || !pa || !u || pa->nr > 512)
		goto out;
	unit_reap(a);
	unwinder__note_maps(u, a, pa, NULL);
	unwinder__stats(u, &st);
	CHECK(st.built == 0 && st.no_table == 0 && st.tables == 0,
	      "a gone process: nothing built, nothing kept (%llu built, %llu without a table)",
	      (unsigned long long)st.built, (unsigned long long)st.no_table);
	b = unit_sleeper();
	unwinder__note_maps(u, b, pa, NULL); /* the same files, at the same places */
	unwinder__stats(u, &st);
	CHECK(st.built >= 3, "the next process of the files builds their tables: %llu",
	      (unsigned long long)st.built);
	unit_reap(b);
	unwinder__sweep(u); /* kept, idle */
	files_of(pa, f, ids, files);
	unwinder__note_maps(u, a, pa, files);
	unwinder__stats(u, &st2);
	CHECK(st2.built == st.built && st2.reused >= 3,
	      "a gone process's files, known by build-ID: kept tables taken up (%llu reused)",
	      (unsigned long long)st2.reused);
out:
	unwinder__free(u);
	procmaps__free(pa);
	free(rows);
}

int main(void)
{
	RUN(test_lifetimes);
	RUN(test_full);
	RUN(test_kept);
	RUN(test_gone);
	RUN(test_debug_frame_source);
	UNIT_EXIT();
}
