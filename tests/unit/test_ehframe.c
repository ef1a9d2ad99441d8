// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables from .eh_frame (src/unwind/ehframe.c) against binutils'
 * own reading of the same CFI: every row `readelf --debug-dump=frames-interp`
 * prints must be the rule our table gives at that address. On a fixture
 * built -O2 -fomit-frame-pointer (tests/fixtures/fx_nofp.c) and on this
 * machine's libc.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void test_bad_input(void)
{
	struct ehframe *t;

	CHECK(ehframe__load("/nonexistent/file", &t) == -ENOENT, "missing file");
	CHECK(ehframe__load("/etc/passwd", &t) == -EINVAL, "not an ELF file");
}

int main(void)
{
	RUN(test_fixture_rows);
	RUN(test_fixture_shapes);
	RUN(test_libc_rows);
	RUN(test_bad_input);
	UNIT_EXIT();
}
