// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables from .eh_frame (src/unwind/ehframe.c) against binutils'
 * own reading of the same CFI: every row `readelf --debug-dump=frames-interp`
 * prints must be the rule our table gives at that address. On a fixture
 * built -O2 -fomit-frame-pointer (tests/fixtures/fx_nofp.c) and on this
 * machine's libc. The same code built with its CFI in .debug_frame (its
 * own, or its separate debug file's) must give the very rows .eh_frame
 * gives.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "debuginfo.h"
#include "ehframe.h"
#include "unit.h"

struct cmp_stats {
	size_t rows, fdes, mismatches, plt, none;
};

/* What readelf's columns say, as a row of ours. exp_ok: an expression
 * CFA, which is either the PLT's or unsupported. */
static void expect_row(const char *cfa, const char *rbp, const char *ra,
		       struct bpfs_unwind_row *r, bool *exp_ok)
{
	long off;

	memset(r, 0, sizeof(*r));
	*exp_ok = false;
	if (!strcmp(ra, "u")) {
		r->cfa_type = BPFS_CFA_END;
		return;
	}
	if (strcmp(ra, "c-8"))
		return; /* NONE */
	if (sscanf(cfa, "rsp+%ld", &off) == 1)
		r->cfa_type = BPFS_CFA_RSP;
	else if (sscanf(cfa, "rbp+%ld", &off) == 1)
		r->cfa_type = BPFS_CFA_RBP;
	else {
		*exp_ok = !strcmp(cfa, "exp");
		return;
	}
	r->cfa_off = off;
	if (rbp && sscanf(rbp, "c%ld", &off) == 1 && !(off & 7)) {
		r->rbp_type = BPFS_RBP_CFA;
		r->rbp_off = off / 8;
	}
}

static void check_row(const struct ehframe *t, uint64_t loc, const char *cfa, const char *rbp,
		      const char *ra, struct cmp_stats *cs, const char *what)
{
	const struct bpfs_unwind_row *got = ehframe__find(t, loc);
	struct bpfs_unwind_row want;
	bool exp_ok, same;

	expect_row(cfa, rbp, ra, &want, &exp_ok);
	cs->rows++;
	if (!got) {
		cs->mismatches++;
		CHECK(got, "%s: no row at %#" PRIx64, what, loc);
		return;
	}
	if (exp_ok) {
		same = got->cfa_type == BPFS_CFA_PLT || got->cfa_type == BPFS_CFA_NONE;
		cs->plt += got->cfa_type == BPFS_CFA_PLT;
	} else {
		same = got->cfa_type == want.cfa_type &&
		       (want.cfa_type == BPFS_CFA_NONE || want.cfa_type == BPFS_CFA_END ||
			(got->cfa_off == want.cfa_off && got->rbp_type == want.rbp_type &&
			 got->rbp_off == want.rbp_off));
	}
	cs->none += got->cfa_type == BPFS_CFA_NONE;
	if (!same && cs->mismatches++ < 5)
		CHECK(same, "%s at %#" PRIx64 ": readelf says cfa %s rbp %s ra %s; ours: type %u off %d "
		      "rbp type %u off %d", what, loc, cfa, rbp ? rbp : "-", ra, got->cfa_type,
		      got->cfa_off, got->rbp_type, got->rbp_off);
}

/* Splits a readelf row into its columns; returns how many. */
static int split(char *line, char **col, int max)
{
	int n = 0;

	for (char *tok = strtok(line, " \t\n"); tok && n < max; tok = strtok(NULL, " \t\n"))
		col[n++] = tok;
	return n;
}

struct cie {
	unsigned long off;
	char cfa[32], ra[32];
};

/* Reads readelf's interpretation of path's frames and checks every row. */
static void compare_with_readelf(const char *path, struct cmp_stats *cs)
{
	char cmd[512], line[1024], hdr[16][16], *col[16];
	struct cie cies[64];
	int ncol = 0, ncies = 0, cur_cie = -1;
	struct ehframe *t;
	bool in_fde = false;
	int pending = -1; /* CIE of an FDE that has shown no row yet */
	uint64_t fde_start = 0;
	FILE *f;
	int err;

	err = ehframe__load(path, &t);
	CHECK(!err, "%s: ehframe__load: %s", path, strerror(-err));
	if (err)
		return;
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	CHECK(f, "popen readelf");
	if (!f) {
		ehframe__free(t);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long off, cie_off;
		uint64_t lo, hi;
		int n;

		if (pending >= 0 && (strstr(line, " CIE") || strstr(line, " FDE ") ||
				     strstr(line, "ZERO"))) {
			/* that FDE added no rule: its CIE's initial row holds */
			check_row(t, fde_start, cies[pending].cfa, NULL, cies[pending].ra, cs, path);
			pending = -1;
		}
		if (strstr(line, "ZERO"))
			continue;
		if (strstr(line, " CIE")) {
			/* a CIE's initial row applies to FDEs that add none */
			in_fde = false;
			if (sscanf(line, "%lx", &off) == 1 && ncies < 64) {
				cur_cie = ncies++;
				cies[cur_cie].off = off;
				cies[cur_cie].cfa[0] = cies[cur_cie].ra[0] = 0;
			}
			continue;
		}
		if (strstr(line, " FDE ")) {
			const char *pc = strstr(line, "pc="), *c = strstr(line, "cie=");

			/* the previous FDE had no rows of its own: its CIE's */
			in_fde = pc && c && sscanf(pc, "pc=%" SCNx64 "..%" SCNx64, &lo, &hi) == 2 &&
				 sscanf(c, "cie=%lx", &cie_off) == 1;
			if (!in_fde)
				continue;
			cs->fdes++;
			fde_start = lo;
			if (hi > lo + 1)
				CHECK(ehframe__func_start(t, hi - 1) == lo,
				      "%s: function at %#" PRIx64 " not found by %#" PRIx64, path, lo,
				      hi - 1);
			for (int i = 0; i < ncies; i++) {
				if (cies[i].off == cie_off && cies[i].ra[0])
					pending = i;
			}
			continue;
		}
		if (strstr(line, "LOC")) {
			n = split(line, col, 16);
			for (int i = 0; i < n; i++)
				snprintf(hdr[i], sizeof(hdr[i]), "%s", col[i]);
			ncol = n;
			continue;
		}
		n = split(line, col, 16);
		if (n < 3 || n != ncol || sscanf(col[0], "%" SCNx64, &lo) != 1)
			continue;
		{
			const char *rbp = NULL, *ra = NULL;

			for (int i = 2; i < n; i++) {
				if (!strcmp(hdr[i], "rbp"))
					rbp = col[i];
				else if (!strcmp(hdr[i], "ra"))
					ra = col[i];
			}
			if (!ra)
				continue;
			if (!in_fde) { /* a CIE's initial rule */
				if (cur_cie >= 0) {
					snprintf(cies[cur_cie].cfa, sizeof(cies[0].cfa), "%s", col[1]);
					snprintf(cies[cur_cie].ra, sizeof(cies[0].ra), "%s", ra);
				}
				continue;
			}
			pending = -1;
			check_row(t, lo, col[1], rbp, ra, cs, path);
		}
	}
	pclose(f);
	ehframe__free(t);
}

static void test_fixture_rows(void)
{
	struct cmp_stats cs = {};

	compare_with_readelf(FIXTURE_DIR "/fx_nofp", &cs);
	printf("    fx_nofp: %zu FDEs, %zu rows compared, %zu PLT, %zu unsupported\n", cs.fdes,
	       cs.rows, cs.plt, cs.none);
	CHECK(cs.fdes >= 5 && cs.rows >= 15, "too little compared: %zu FDEs, %zu rows", cs.fdes,
	      cs.rows);
	CHECK(cs.mismatches == 0, "%zu rows differ from readelf", cs.mismatches);
	CHECK(cs.plt >= 1, "the PLT's expression was not recognised");
}

/* The PLT's CFA expression is read in one pass, not left to libdw (whose
 * first lookup indexes every FDE of the file: 3.8 MB for libLLVM): every
 * function of the fixture, its PLT among them, is read directly. */
static void test_plt_direct(void)
{
	struct ehframe_stats st = {};
	struct ehframe *t = NULL;

	CHECK(ehframe__load(FIXTURE_DIR "/fx_nofp", &t) == 0, "load fx_nofp");
	if (!t)
		return;
	ehframe__stats(t, &st);
	CHECK(st.fdes > 0 && st.direct == st.fdes, "%zu of %zu functions read directly",
	      st.direct, st.fdes);
	ehframe__free(t);
}

/* The shapes the fixture was written to have. */
static void test_fixture_shapes(void)
{
	struct ehframe *t;
	size_t nr, rsp_big = 0, rbp = 0, end = 0, saved_rbp = 0;
	const struct bpfs_unwind_row *r;
	int err = ehframe__load(FIXTURE_DIR "/fx_nofp", &t);

	CHECK(!err, "load: %s", strerror(-err));
	if (err)
		return;
	r = ehframe__rows(t, &nr);
	for (size_t i = 0; i < nr; i++) {
		rsp_big += r[i].cfa_type == BPFS_CFA_RSP && r[i].cfa_off > 65536;
		rbp += r[i].cfa_type == BPFS_CFA_RBP;
		end += r[i].cfa_type == BPFS_CFA_END;
		saved_rbp += r[i].rbp_type == BPFS_RBP_CFA;
		if (i)
			CHECK(r[i].pc > r[i - 1].pc, "rows not sorted at %zu", i);
	}
	CHECK(rsp_big >= 1, "no rsp-based row over 64 KiB (big_frame)");
	CHECK(rbp >= 1, "no rbp-based row (dynamic_frame)");
	CHECK(end >= 1, "no outermost-frame row (_start)");
	CHECK(saved_rbp >= 1, "no row with rbp saved");
	ehframe__free(t);
}

#define FX(name) FIXTURE_DIR "/" name

/* Every row of a equals b's, and the functions are the same. */
static void same_rows(const struct ehframe *a, const struct ehframe *b, const char *what)
{
	const struct bpfs_unwind_row *ra, *rb;
	size_t na, nb, diff = 0;

	ra = ehframe__rows(a, &na);
	rb = ehframe__rows(b, &nb);
	CHECK(na == nb, "%s: %zu rows, .eh_frame gives %zu", what, nb, na);
	for (size_t i = 0; i < na && i < nb; i++) {
		if (!memcmp(&ra[i], &rb[i], sizeof(ra[i])) &&
		    ehframe__func_start(a, ra[i].pc) == ehframe__func_start(b, rb[i].pc))
			continue;
		if (diff++ < 5)
			CHECK(0, "%s: row %zu: pc %#llx type %u off %d rbp %u/%d; "
			      ".eh_frame: pc %#llx type %u off %d rbp %u/%d", what, i,
			      (unsigned long long)rb[i].pc, rb[i].cfa_type, rb[i].cfa_off, rb[i].rbp_type, rb[i].rbp_off,
			      (unsigned long long)ra[i].pc, ra[i].cfa_type, ra[i].cfa_off, ra[i].rbp_type, ra[i].rbp_off);
	}
}

/* The fixture's code with its CFI in its own .debug_frame: the functions
 * .eh_frame lacks come from there, with the rows .eh_frame would give, and
 * readelf agrees with each. */
static void test_debug_frame_rows(void)
{
	struct ehframe *eh = NULL, *df = NULL;
	struct ehframe_stats st;
	struct cmp_stats cs = {};
	int err;

	err = ehframe__load(FX("fx_nofp"), &eh);
	CHECK(!err, "fx_nofp: %s", strerror(-err));
	err = ehframe__load(FX("fx_nofp_df"), &df);
	CHECK(!err, "fx_nofp_df: %s", strerror(-err));
	if (!eh || !df)
		goto out;
	ehframe__stats(df, &st);
	printf("    fx_nofp_df: %zu functions, %zu from .debug_frame; .eh_frame covers %" PRIu64
	       " of %" PRIu64 " bytes of code\n", st.fdes, st.debug_fdes, st.eh_bytes,
	       st.code_bytes);
	CHECK(st.has_debug_frame && st.debug_fdes >= 5 && !st.debug_file,
	      "main, cmp, big_frame, dynamic_frame, sort_some from .debug_frame: %zu",
	      st.debug_fdes);
	CHECK(st.eh_bytes * 2 < st.code_bytes, ".eh_frame covers only the C runtime");
	same_rows(eh, df, "fx_nofp_df");
	compare_with_readelf(FX("fx_nofp_df"), &cs);
	CHECK(cs.fdes >= 8 && cs.mismatches == 0, "readelf: %zu FDEs, %zu rows differ", cs.fdes,
	      cs.mismatches);
out:
	ehframe__free(eh);
	ehframe__free(df);
}

/* The address of symbol name in path, from binutils' nm; 0 if none. */
static uint64_t nm_addr(const char *path, const char *name)
{
	char cmd[512], sym[128], type;
	uint64_t addr, found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm --defined-only '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	while (f && fscanf(f, "%" SCNx64 " %c %127s", &addr, &type, sym) == 3)
		if (!strcmp(sym, name))
			found = addr;
	if (f)
		pclose(f);
	return found;
}

/* Stripped of its .debug_frame: the C runtime's rows only (its code is not
 * invented); with its debug file, found by build-ID, the whole table. */
static void test_debug_file_rows(void)
{
	const char *roots[] = { FX("dfroot") }, *zroots[] = { FX("dfzroot") };
	const char *wrong[] = { FX("dfwrong") };
	struct debuginfo_opts o = { .roots = roots, .nr_roots = 1 };
	struct ehframe *eh = NULL, *bare = NULL, *dbg = NULL;
	uint64_t main_pc = nm_addr(FX("fx_nofp_df"), "main");
	const struct bpfs_unwind_row *main_row;
	struct ehframe_stats st;
	char path[4096];
	int err;

	err = ehframe__load(FX("fx_nofp"), &eh);
	CHECK(!err, "fx_nofp: %s", strerror(-err));
	err = ehframe__load(FX("fx_nofp_df_stripped"), &bare);
	CHECK(!err, "stripped: %s", strerror(-err));
	if (!eh || !bare)
		goto out;
	ehframe__stats(bare, &st);
	CHECK(!st.has_debug_frame && st.debug_fdes == 0 && st.eh_bytes * 2 < st.code_bytes,
	      "stripped: .eh_frame of the C runtime only (%" PRIu64 " of %" PRIu64 " bytes)",
	      st.eh_bytes, st.code_bytes);
	main_row = ehframe__find(bare, main_pc);
	CHECK(main_pc && (!main_row || main_row->cfa_type == BPFS_CFA_NONE),
	      "stripped: no rule for main at %#" PRIx64, main_pc);
	CHECK(main_pc && ehframe__func_start(bare, main_pc) == 0, "stripped: no function at main");
	err = debuginfo__find(FX("fx_nofp_df_stripped"), FX("fx_nofp_df_stripped"), &o,
			      ".debug_frame", path, sizeof(path));
	CHECK(!err, "debug file by build-ID: %s", strerror(-err));
	if (err)
		goto out;
	CHECK(strstr(path, "/dfroot/.build-id/df/00df"), "found %s", path);
	err = ehframe__load_debug(FX("fx_nofp_df_stripped"), path, &dbg);
	CHECK(!err, "rows from the debug file: %s", strerror(-err));
	if (err)
		goto out;
	ehframe__stats(dbg, &st);
	CHECK(st.debug_file && st.debug_fdes >= 5, "%zu functions from the debug file",
	      st.debug_fdes);
	same_rows(eh, dbg, "fx_nofp_df_stripped + debug file");
	ehframe__free(dbg);
	dbg = NULL;
	/* the same with its sections compressed (SHF_COMPRESSED) */
	o.roots = zroots;
	err = debuginfo__find(FX("fx_nofp_df_stripped"), FX("fx_nofp_df_stripped"), &o,
			      ".debug_frame", path, sizeof(path));
	CHECK(!err, "compressed debug file by build-ID: %s", strerror(-err));
	err = err ? err : ehframe__load_debug(FX("fx_nofp_df_stripped"), path, &dbg);
	CHECK(!err, "rows from the compressed debug file: %s", strerror(-err));
	if (dbg)
		same_rows(eh, dbg, "fx_nofp_df_stripped + compressed debug file");
	/* another build's debug file under this build-ID: refused */
	o.roots = wrong;
	err = debuginfo__find(FX("fx_nofp_df_stripped"), FX("fx_nofp_df_stripped"), &o,
			      ".debug_frame", path, sizeof(path));
	CHECK(err == -ENOENT, "another build's debug file refused: %d %s", err,
	      err ? "" : path);
	/* a debug file without the section asked for is no answer */
	o.roots = roots;
	err = debuginfo__find(FX("fx_nofp_df_stripped"), FX("fx_nofp_df_stripped"), &o,
			      ".no_such_section", path, sizeof(path));
	CHECK(err == -ENOENT, "a debug file without the section: %d", err);
out:
	ehframe__free(eh);
	ehframe__free(bare);
	ehframe__free(dbg);
}

/* CFI in both sections: .eh_frame's is used, .debug_frame's left out. */
static void test_eh_frame_first(void)
{
	struct ehframe *eh = NULL, *both = NULL;
	struct ehframe_stats st;
	int err;

	err = ehframe__load(FX("fx_nofp"), &eh);
	CHECK(!err, "fx_nofp: %s", strerror(-err));
	err = ehframe__load(FX("fx_nofp_both"), &both);
	CHECK(!err, "fx_nofp_both: %s", strerror(-err));
	if (!eh || !both)
		goto out;
	ehframe__stats(both, &st);
	CHECK(st.has_debug_frame && st.debug_fdes == 0 && st.debug_shadowed >= 5,
	      "%zu functions from .debug_frame, %zu left out", st.debug_fdes, st.debug_shadowed);
	same_rows(eh, both, "fx_nofp_both");
out:
	ehframe__free(eh);
	ehframe__free(both);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_libc_rows(void)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct cmp_stats cs = {};
	struct ehframe_stats st;
	struct ehframe *t;
	double t0;
	int err;

	t0 = now_ms();
	err = ehframe__load(libc, &t);
	if (err == -ENOENT)
		SKIP_TEST("no libc.so.6 at the Debian path");
	CHECK(!err, "load libc: %s", strerror(-err));
	if (err)
		return;
	ehframe__stats(t, &st);
	printf("    libc: %zu functions, %zu rows (%zu unsupported), %zu KiB, built in %.1f ms\n",
	       st.fdes, st.rows, st.unsupported, ehframe__mem_bytes(t) >> 10, now_ms() - t0);
	CHECK(st.rows > 10000, "only %zu rows for libc", st.rows);
	ehframe__free(t);
	compare_with_readelf(libc, &cs);
	printf("    libc: %zu rows of readelf compared\n", cs.rows);
	CHECK(cs.mismatches == 0, "%zu rows differ from readelf", cs.mismatches);
}

/* Both readers of .eh_frame (one pass per function, and libdw's one
 * address at a time) give the very same rows, over the fixtures and the
 * system's libraries and programs; and nearly every function of them is
 * read in one pass (a reader that gave up on everything would pass the
 * first check, and cost six times as much). */
static void test_direct_same_as_libdw(void)
{
	static const char *const fixed[] = {
		"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/bin/bash",
	};
	size_t files = 0, rows = 0, fdes = 0, direct = 0, differ = 0;
	double ms_libdw = 0, ms_direct = 0;
	char path[4096];
	FILE *ls;

	ls = popen("ls " FX("") "* /usr/lib/x86_64-linux-gnu/lib*.so.* /usr/bin/* 2>/dev/null "
		   "| head -600", "r");
	CHECK(ls != NULL, "list files");
	for (size_t i = 0; ls; i++) {
		struct ehframe *a = NULL, *b = NULL;
		struct ehframe_stats sa, sb;
		const struct bpfs_unwind_row *ra, *rb;
		size_t na, nb;
		int ea, eb;
		double t0;

		if (i < sizeof(fixed) / sizeof(fixed[0])) {
			snprintf(path, sizeof(path), "%s", fixed[i]);
		} else {
			if (!fgets(path, sizeof(path), ls))
				break;
			path[strcspn(path, "\n")] = 0;
		}
		t0 = now_ms();
		ea = ehframe__load_flags(path, NULL, EHFRAME_LIBDW_ONLY, &a);
		ms_libdw += now_ms() - t0;
		t0 = now_ms();
		eb = ehframe__load_flags(path, NULL, 0, &b);
		ms_direct += now_ms() - t0;
		if (ea != eb) {
			CHECK(false, "%s: libdw %d, one pass %d", path, ea, eb);
			differ++;
		} else if (!ea) {
			ra = ehframe__rows(a, &na);
			rb = ehframe__rows(b, &nb);
			ehframe__stats(a, &sa);
			ehframe__stats(b, &sb);
			if (na != nb || memcmp(ra, rb, na * sizeof(*ra)) ||
			    sa.unsupported != sb.unsupported || sa.eh_bytes != sb.eh_bytes) {
				CHECK(false, "%s: %zu rows from libdw, %zu in one pass", path, na, nb);
				differ++;
			}
			CHECK(sa.direct == 0, "%s: libdw only, yet %zu read directly", path, sa.direct);
			files++;
			rows += na;
			fdes += sb.fdes;
			direct += sb.direct;
		}
		ehframe__free(a);
		ehframe__free(b);
	}
	if (ls)
		pclose(ls);
	printf("    %zu files, %zu rows, %zu of %zu functions in one pass; libdw %.0f ms, "
	       "one pass %.0f ms\n", files, rows, direct, fdes, ms_libdw, ms_direct);
	CHECK(differ == 0, "%zu files differ", differ);
	CHECK(files >= 4, "only %zu files compared", files);
	CHECK(direct * 100 >= fdes * 95, "only %zu of %zu functions read in one pass", direct, fdes);
}

static void test_bad_input(void)
{
	struct ehframe *t;

	char dir[] = "/tmp/bpfs-ehframe.XXXXXX", fifo[sizeof(dir) + 8];

	CHECK(ehframe__load("/nonexistent/file", &t) == -ENOENT, "missing file");
	CHECK(ehframe__load("/etc/passwd", &t) == -EINVAL, "not an ELF file");
	/* a FIFO put where a binary was: refused, not opened (an open of a
	 * FIFO without a writer blocks forever); devices likewise */
	if (!mkdtemp(dir)) {
		CHECK(false, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
	alarm(20); /* a loader that opens it blocks: killed, the test fails */
	CHECK(ehframe__load(fifo, &t) == -EINVAL, "a FIFO: refused");
	alarm(0);
	CHECK(ehframe__load("/dev/zero", &t) == -EINVAL, "a device: refused");
	unlink(fifo);
	rmdir(dir);
}

static int cancel_asks;
static bool cancel_always(void)
{
	cancel_asks++;
	return true;
}

/* A build the caller gives up (the run ends) returns -ECANCELED and keeps
 * nothing; without a hook, the same file loads whole. */
static void test_cancel(void)
{
	struct ehframe *t = NULL;
	int err;

	ehframe__set_cancel(cancel_always);
	err = ehframe__load(FX("fx_nofp"), &t);
	ehframe__set_cancel(NULL);
	CHECK(err == -ECANCELED, "abandoned build: %d", err);
	CHECK(cancel_asks >= 1, "the hook was asked");
	err = ehframe__load(FX("fx_nofp"), &t);
	CHECK(err == 0 && t, "without the hook: %d", err);
	ehframe__free(t);
}

/* EHFRAME_FUNCS_ONLY (what naming a stripped function needs) gives every
 * address the same function start as the whole table, with no rows and a
 * fraction of its memory. */
static void test_funcs_only(void)
{
	static const char *const files[] = {
		FX("fx_nofp"), "/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/bin/bash",
	};
	size_t probes = 0, differ = 0;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct ehframe *full = NULL, *fo = NULL;
		const struct bpfs_unwind_row *r;
		struct ehframe_stats st;
		size_t nr, nr_fo;

		if (ehframe__load(files[i], &full))
			continue;
		CHECK(!ehframe__load_flags(files[i], NULL, EHFRAME_FUNCS_ONLY, &fo),
		      "%s: funcs only", files[i]);
		if (!fo) {
			ehframe__free(full);
			continue;
		}
		r = ehframe__rows(full, &nr);
		ehframe__rows(fo, &nr_fo);
		CHECK(nr_fo == 0, "%s: %zu rows kept with EHFRAME_FUNCS_ONLY", files[i], nr_fo);
		ehframe__stats(fo, &st);
		CHECK(ehframe__mem_bytes(fo) <= 4096 + st.fdes * 12,
		      "%s: %zu bytes for the ranges of %zu functions (12 a function)", files[i],
		      ehframe__mem_bytes(fo), st.fdes);
		CHECK(ehframe__mem_bytes(fo) * 2 < ehframe__mem_bytes(full) ||
		      ehframe__mem_bytes(full) < 4096, /* a fixture's few functions */
		      "%s: %zu bytes funcs only, %zu whole", files[i], ehframe__mem_bytes(fo),
		      ehframe__mem_bytes(full));
		for (size_t k = 0; k < nr; k++)
			for (uint64_t d = 0; d < 3; d++) {
				uint64_t pc = r[k].pc + d;

				probes++;
				if (ehframe__func_start(full, pc) != ehframe__func_start(fo, pc))
					differ++;
			}
		ehframe__free(full);
		ehframe__free(fo);
	}
	printf("    funcs only: %zu addresses probed, %zu differ\n", probes, differ);
	CHECK(probes > 10000 && differ == 0, "%zu of %zu function starts differ", differ, probes);
}

/* A sink that keeps what it is handed, to compare with a whole build. */
struct collect {
	struct bpfs_unwind_row *rows;
	size_t nr, calls;
	bool out_of_order;
};

static int collect_rows(void *ctx, size_t at, const struct bpfs_unwind_row *rows, size_t n)
{
	struct collect *c = ctx;
	struct bpfs_unwind_row *m = realloc(c->rows, (at + n) * sizeof(*m));

	if (!m)
		return -ENOMEM;
	c->out_of_order |= at != c->nr;
	memcpy(m + at, rows, n * sizeof(*m));
	c->rows = m;
	c->nr = at + n;
	c->calls++;
	return 0;
}

static int refuse_rows(void *ctx, size_t at, const struct bpfs_unwind_row *rows, size_t n)
{
	return -EIO;
}

/* ehframe__load_sink hands on the very rows of a whole build, in order, a
 * chunk at a time, holding no more than a chunk; counting alone gives
 * their number; a sink's error ends the build. */
static void test_streamed(void)
{
	const char *path = "/lib/x86_64-linux-gnu/libc.so.6";
	struct collect c = {};
	struct ehframe_sink sink = { .fn = collect_rows, .ctx = &c, .chunk = 1000 };
	struct ehframe *whole = NULL, *streamed = NULL, *counted = NULL;
	const struct bpfs_unwind_row *r;
	struct ehframe_stats st, stc;
	size_t nr, kept;

	CHECK(!ehframe__load(path, &whole), "whole");
	CHECK(!ehframe__load_sink(path, &sink, &streamed), "streamed");
	if (!whole || !streamed)
		return;
	r = ehframe__rows(whole, &nr);
	ehframe__rows(streamed, &kept);
	ehframe__stats(streamed, &st);
	CHECK(nr > 10000 && c.nr == nr && st.rows == nr && !c.out_of_order,
	      "%zu rows handed on (stats %zu), %zu whole", c.nr, st.rows, nr);
	CHECK(c.nr == nr && !memcmp(c.rows, r, nr * sizeof(*r)), "the same rows");
	CHECK(kept == 0 && c.calls >= nr / 1000 &&
	      ehframe__mem_bytes(streamed) < ehframe__mem_bytes(whole) / 4,
	      "%zu calls; %zu bytes held streamed, %zu whole", c.calls,
	      ehframe__mem_bytes(streamed), ehframe__mem_bytes(whole));
	sink.fn = NULL;
	CHECK(!ehframe__load_sink(path, &sink, &counted), "counted");
	if (counted) {
		ehframe__stats(counted, &stc);
		CHECK(stc.rows == nr, "counted %zu of %zu", stc.rows, nr);
	}
	ehframe__free(counted);
	ehframe__free(streamed);
	streamed = NULL;
	sink.fn = collect_rows;
	sink.chunk = 0;
	CHECK(ehframe__load_sink(path, &sink, &streamed) == -EINVAL, "a chunk of 0 refused");
	sink = (struct ehframe_sink){ .fn = refuse_rows, .chunk = 1000 };
	CHECK(ehframe__load_sink(path, &sink, &streamed) == -EIO, "a sink's error ends it");
	ehframe__free(whole);
	free(c.rows);
}

/* not_fp and unsupported of path's table, whole or streamed. */
static bool fp_counts(const char *path, bool streamed, struct ehframe_stats *st)
{
	struct ehframe_sink sink = { .fn = NULL, .chunk = 1000 };
	struct ehframe *t = NULL;
	int err = streamed ? ehframe__load_sink(path, &sink, &t) : ehframe__load(path, &t);

	CHECK(!err, "load %s: %s", path, strerror(-err));
	if (err)
		return false;
	ehframe__stats(t, st);
	ehframe__free(t);
	return true;
}

/* Code built with frame pointers is told from code built without it
 * (BPFS_UMAP_FP: past the innermost frame, the walk steps by frame
 * pointers there without a row lookup): the fixtures built with them have
 * no row such a step would walk wrong (their PLTs and the gaps between
 * functions included); fx_nofp (-fomit-frame-pointer) and libc have many.
 * Streamed (rows counted as they are handed on), the same counts. */
static void test_fp_built(void)
{
	const char *fp[] = { FX("fx_pie"), FX("fx_nopie"), FX("libfx.so") };
	const char *nofp[] = { FX("fx_nofp"), "/lib/x86_64-linux-gnu/libc.so.6" };
	struct ehframe_stats st, ss;

	for (size_t i = 0; i < sizeof(fp) / sizeof(fp[0]); i++)
		if (fp_counts(fp[i], false, &st))
			CHECK(st.rows > 10 && ehframe_stats__fp(&st),
			      "%s: %zu of %zu rows not the frame-pointer step's, %zu unsupported",
			      fp[i], st.not_fp, st.rows, st.unsupported);
	for (size_t i = 0; i < sizeof(nofp) / sizeof(nofp[0]); i++) {
		if (!fp_counts(nofp[i], false, &st) || !fp_counts(nofp[i], true, &ss))
			continue;
		printf("    %s: %zu of %zu rows not the frame-pointer step's\n", nofp[i],
		       st.not_fp, st.rows);
		CHECK(st.not_fp > st.rows / 10, "%s: only %zu of %zu rows", nofp[i], st.not_fp,
		      st.rows);
		CHECK(ss.not_fp == st.not_fp, "%s streamed: %zu, whole %zu", nofp[i], ss.not_fp,
		      st.not_fp);
	}
}

int main(void)
{
	RUN(test_fixture_rows);
	RUN(test_plt_direct);
	RUN(test_fixture_shapes);
	RUN(test_debug_frame_rows);
	RUN(test_debug_file_rows);
	RUN(test_eh_frame_first);
	RUN(test_libc_rows);
	RUN(test_direct_same_as_libdw);
	RUN(test_funcs_only);
	RUN(test_streamed);
	RUN(test_fp_built);
	RUN(test_bad_input);
	RUN(test_cancel);
	UNIT_EXIT();
}
