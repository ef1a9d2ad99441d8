// SPDX-License-Identifier: GPL-2.0
/*
 * Go's .gopclntab (gopclntab.h): against the binary's own .symtab (names),
 * its DWARF (lines and inline frames) and its source (the lines marked in
 * tests/fixtures/fx_go.go), on Go binaries built at test time by Debian's
 * go (fixtures.mk: with symbols, -s -w, PIE, no section headers); and the
 * Go 1.16 and 1.20 layouts, which that go does not write, on tables built
 * by hand (fx_gopcln.h).
 *   test_gopclntab --seeds DIR   writes the fuzz target's seeds instead
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_lines.h"
#include "elf_syms.h"
#include "fx_gopcln.h"
#include "gopclntab.h"
#include "unit.h"

#define FX(name) FIXTURE_DIR "/" name

static bool have_go(void)
{
	FILE *f = fopen(FX("fx_go.version"), "r");

	if (f)
		fclose(f);
	return f != NULL;
}

/* The layout Debian's go of the fixtures writes: "1.16" for 1.16 and 1.17,
 * "1.18" for 1.18 and 1.19, else "1.20". */
static const char *expected_layout(void)
{
	FILE *f = fopen(FX("fx_go.version"), "r");
	unsigned int major = 0, minor = 0;

	if (f) {
		if (fscanf(f, "go%u.%u", &major, &minor) != 2)
			minor = 0;
		fclose(f);
	}
	return minor < 18 ? "1.16" : minor < 20 ? "1.18" : "1.20";
}

static struct gopcln *open_go(const char *path)
{
	struct gopcln *g = NULL;
	int err = gopcln__open(path, &g);

	CHECK(!err && g, "%s: %s", path, strerror(-err));
	return err ? NULL : g;
}

static void test_layout(void)
{
	struct gopcln *g;

	if (!have_go())
		SKIP_TEST("no Go fixtures: go not installed (tools/install-deps.sh installs golang-go)");
	g = open_go(FX("fx_go_stripped"));
	if (!g)
		return;
	CHECK(!strcmp(gopcln__layout(g), expected_layout()), "layout %s, want %s",
	      gopcln__layout(g), expected_layout());
	CHECK(gopcln__has_inlines(g), "the inline trees were not found");
	CHECK(gopcln__nr_funcs(g) > 500, "%zu functions", gopcln__nr_funcs(g));
	gopcln__free(g);
}

/*
 * The same function in the table and the .symtab: the same name (the
 * .symtab's without the ".abi0" Go's linker gives an assembly function's
 * ELF symbol: elf_syms.c drops it), but for one form of Go's linker, which
 * writes both: a generated array equality function's table name shortens
 * the array's length ("type..eq.[...]T" for "type..eq.[5]T"). *exact: the
 * same string.
 */
static bool same_function(const char *table, const char *sym, bool *exact)
{
	const char *dots = strstr(table, "[...]");

	*exact = !strcmp(table, sym);
	if (*exact)
		return true;
	if (!dots || strncmp(table, "type..eq.", 9) || strncmp(table, sym, dots - table))
		return false;
	sym += dots - table;
	if (*sym++ != '[' || !strchr("0123456789", *sym))
		return false;
	sym += strspn(sym, "0123456789");
	return *sym == ']' && !strcmp(sym + 1, dots + 5);
}

/* Every function of the table of `table` is named as the .symtab of
 * `symbols` names its entry: returns how many were compared. */
static size_t agree(const char *table, const char *symbols)
{
	struct symtab *st = NULL;
	struct gopcln *g = open_go(table);
	size_t same = 0, differ = 0, exact = 0, main_fns = 0;
	bool ex;

	CHECK(!symtab__load(symbols, &st) && symtab__has_symtab(st), "%s: no .symtab", symbols);
	for (size_t i = 0; g && st && i < gopcln__nr_funcs(g); i++) {
		const char *name, *sym;
		uint64_t entry, off;

		CHECK(!gopcln__func(g, i, &entry, &name) && name, "function %zu", i);
		sym = symtab__find(st, entry, &off);
		if (name && sym && !off && same_function(name, sym, &ex)) {
			same++;
			exact += ex;
			/* the program's own functions: exactly */
			main_fns += !strncmp(name, "main.", 5);
			CHECK(ex || strncmp(name, "main.", 5), "%s: %s", name, sym);
		} else if (differ++ < 5) {
			CHECK(false, "%s at %#llx: the table says %s, .symtab %s+%#llx", table,
			      (unsigned long long)entry, name ? name : "(none)",
			      sym ? sym : "(none)", (unsigned long long)off);
		}
		/* and the lookup by address answers the same, inside too */
		CHECK(!name || gopcln__name(g, entry, NULL) == name, "by address: %s", name);
	}
	CHECK(differ == 0, "%s: %zu of %zu names differ from %s's .symtab", table, differ,
	      same + differ, symbols);
	/* all but a few exactly (1182 of 1183 with go1.19.8) */
	CHECK(exact + 10 > same, "%s: %zu of %zu names exactly as the .symtab's", table,
	      exact, same);
	CHECK(main_fns == 2, "%s: %zu main.* functions (main and fxOuter; fxInlined "
	      "has no copy of its own)", table, main_fns);
	symtab__free(st);
	gopcln__free(g);
	return same;
}

static void test_names_agree_with_symtab(void)
{
	size_t n;

	if (!have_go())
		SKIP_TEST("no Go fixtures: go not installed (tools/install-deps.sh installs golang-go)");
	n = agree(FX("fx_go"), FX("fx_go"));
	CHECK(n > 500, "%zu names compared", n);
	/* -s -w changes no address: the stripped table names as the .symtab */
	n = agree(FX("fx_go_stripped"), FX("fx_go"));
	CHECK(n > 500, "%zu names compared (stripped)", n);
	n = agree(FX("fx_go_pie"), FX("fx_go_pie"));
	CHECK(n > 500, "%zu names compared (PIE)", n);
}

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "(none)";
}

/* Every address of main.fxOuter: the table's frames (stripped build) are
 * the DWARF's (the build with it): functions, files, lines. */
static void test_frames_agree_with_dwarf(void)
{
	struct gopcln *g = have_go() ? open_go(FX("fx_go_stripped")) : NULL;
	struct dwlines *dl = NULL;
	uint64_t entry = 0, end = 0, inl = 0;
	size_t compared = 0;

	if (!have_go())
		SKIP_TEST("no Go fixtures: go not installed (tools/install-deps.sh installs golang-go)");
	CHECK(!dwlines__open(FX("fx_go"), &dl), "fx_go: no DWARF");
	for (size_t i = 0; g && i + 1 < gopcln__nr_funcs(g); i++) {
		const char *name;

		gopcln__func(g, i, &entry, &name);
		if (name && !strcmp(name, "main.fxOuter")) {
			gopcln__func(g, i + 1, &end, &name);
			break;
		}
	}
	CHECK(entry && end > entry, "main.fxOuter not found");
	for (uint64_t a = entry; dl && g && a < end; a++) {
		const struct dw_frame *gf, *df;
		size_t gn, dn;

		CHECK(!gopcln__find(g, a, &gf, &gn), "find");
		if (dwlines__find(dl, a, &df, &dn) || !dn || !df[0].line)
			continue; /* padding: the DWARF has no line either */
		compared++;
		CHECK(gn == dn, "%#llx: %zu frames, DWARF %zu", (unsigned long long)a, gn, dn);
		for (size_t k = 0; k < gn && k < dn; k++) {
			CHECK(gf[k].function && df[k].function &&
				      !strcmp(gf[k].function, df[k].function),
			      "%#llx frame %zu: %s, DWARF %s", (unsigned long long)a, k,
			      gf[k].function ? gf[k].function : "(none)",
			      df[k].function ? df[k].function : "(none)");
			CHECK(gf[k].line == df[k].line && !strcmp(base(gf[k].file), base(df[k].file)),
			      "%#llx frame %zu: %s:%u, DWARF %s:%u", (unsigned long long)a, k,
			      base(gf[k].file), gf[k].line, base(df[k].file), df[k].line);
		}
		if (gn == 2 && !inl)
			inl = a;
	}
	CHECK(compared > 16, "%zu addresses compared", compared);
	CHECK(inl, "no inline frame in main.fxOuter");
	dwlines__free(dl);
	gopcln__free(g);
}

/* The line of the source file path that holds mark, or 0. */
static unsigned int marked_line(const char *path, const char *mark)
{
	FILE *f = path ? fopen(path, "r") : NULL;
	unsigned int n = 0, found = 0;
	char line[512];

	while (f && !found && fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, mark))
			found = n;
	}
	if (f)
		fclose(f);
	return found;
}

/* main.fxInlined inlined into main.fxOuter: the inline frame at the line
 * of its body, its caller at the line of the call, as the source says. */
static void check_inline_at_source(const char *path)
{
	struct gopcln *g = open_go(path);
	const struct dw_frame *f;
	uint64_t entry, off;
	bool seen = false;
	size_t n;

	for (size_t i = 0; g && i < gopcln__nr_funcs(g) && !seen; i++) {
		const char *name;

		gopcln__func(g, i, &entry, &name);
		if (!name || strcmp(name, "main.fxOuter"))
			continue;
		for (uint64_t a = entry; a < entry + 0x100 && !seen; a++) {
			if (gopcln__find(g, a, &f, &n) || n != 2)
				continue;
			seen = true;
			CHECK(f[0].function && !strcmp(f[0].function, "main.fxInlined"), "%s", f[0].function);
			CHECK(f[1].function && !strcmp(f[1].function, "main.fxOuter"), "%s", f[1].function);
			CHECK(!strcmp(base(f[0].file), "fx_go.go") && !strcmp(base(f[1].file), "fx_go.go"),
			      "%s, %s", f[0].file, f[1].file);
			CHECK(f[0].line == marked_line(f[0].file, "FX_INLINED_LINE") && f[0].line,
			      "inlined at line %u", f[0].line);
			CHECK(f[1].line == marked_line(f[1].file, "FX_CALL_LINE") && f[1].line,
			      "called at line %u", f[1].line);
			CHECK(gopcln__name(g, a, &off) == f[1].function && off == a - entry,
			      "the name of the address is the real function's");
		}
	}
	CHECK(seen, "%s: no address of main.fxOuter with an inline frame", path);
	gopcln__free(g);
}

static void test_inline_frames_at_source(void)
{
	if (!have_go())
		SKIP_TEST("no Go fixtures: go not installed (tools/install-deps.sh installs golang-go)");
	check_inline_at_source(FX("fx_go_stripped"));
	check_inline_at_source(FX("fx_go_pie"));
	check_inline_at_source(FX("fx_go_nosh"));
}

/* No section headers: the table found by its header is the same table. */
static void test_no_section_headers(void)
{
	struct gopcln *a, *b;

	if (!have_go())
		SKIP_TEST("no Go fixtures: go not installed (tools/install-deps.sh installs golang-go)");
	a = open_go(FX("fx_go_stripped"));
	b = open_go(FX("fx_go_nosh"));
	if (!a || !b)
		goto out;
	CHECK(gopcln__nr_funcs(a) == gopcln__nr_funcs(b), "%zu, %zu functions",
	      gopcln__nr_funcs(a), gopcln__nr_funcs(b));
	CHECK(gopcln__has_inlines(b), "the inline trees were not found");
	for (size_t i = 0; i < gopcln__nr_funcs(a) && i < gopcln__nr_funcs(b); i++) {
		const char *na, *nb;
		uint64_t ea, eb;

		gopcln__func(a, i, &ea, &na);
		gopcln__func(b, i, &eb, &nb);
		if (ea != eb || !na || !nb || strcmp(na, nb)) {
			CHECK(false, "function %zu: %s at %#llx, %s at %#llx", i, na, (unsigned long long)ea,
			      nb, (unsigned long long)eb);
			break;
		}
	}
out:
	gopcln__free(a);
	gopcln__free(b);
}

static void test_not_go(void)
{
	struct gopcln *g = NULL;

	CHECK(gopcln__open(FX("fx_nopie"), &g) == -ENOENT && !g, "a C program has no Go table");
	CHECK(gopcln__open(FX("fx_nopie.nm"), &g) == -ENOEXEC && !g, "not ELF");
	CHECK(gopcln__open(FX("no such file"), &g) == -ENOENT && !g, "no file");
}

static struct gopcln *parse_fxg(const struct fxg *t, int *err)
{
	struct gopcln *g = NULL;

	*err = gopcln__parse(&(struct gopcln_image){ .tab = t->tab, .tab_size = t->tab_size,
						     .tab_addr = FXG_TAB, .data = t->data,
						     .data_size = t->data_size,
						     .data_addr = FXG_DATA, .gofunc = FXG_DATA },
			     &g);
	return g;
}

static void check_frame(const struct dw_frame *f, const char *fn, const char *file,
			unsigned int line, const char *what)
{
	CHECK(f->function && !strcmp(f->function, fn), "%s: function %s, want %s", what,
	      f->function ? f->function : "(none)", fn);
	CHECK(f->file && !strcmp(f->file, file), "%s: file %s, want %s", what,
	      f->file ? f->file : "(none)", file);
	CHECK(f->line == line, "%s: line %u, want %u", what, f->line, line);
}

static void check_layout(enum fxg_layout l, const char *name)
{
	const struct dw_frame *f;
	struct fxg t;
	struct gopcln *g;
	uint64_t off;
	size_t n;
	int err;

	fxg_build(&t, l);
	g = parse_fxg(&t, &err);
	CHECK(!err && g, "Go %s layout: %s", name, strerror(-err));
	if (!g)
		return;
	CHECK(!strcmp(gopcln__layout(g), name), "layout %s, want %s", gopcln__layout(g), name);
	CHECK(gopcln__nr_funcs(g) == 2, "%zu functions", gopcln__nr_funcs(g));
	CHECK(!gopcln__name(g, FXG_TEXT - 1, NULL) && !gopcln__name(g, FXG_TEXT + 0x60, NULL),
	      "outside the text");
	CHECK(gopcln__name(g, FXG_TEXT + 0x4f, &off) && off == 0xf &&
		      !strcmp(gopcln__name(g, FXG_TEXT + 0x4f, NULL), "main.other"), "main.other");
	gopcln__find(g, FXG_TEXT + 0x4, &f, &n);
	CHECK(n == 1, "+0x4: %zu frames", n);
	if (n == 1)
		check_frame(f, "main.outer", "/src/a.go", 10, name);
	gopcln__find(g, FXG_TEXT + 0x18, &f, &n);
	CHECK(n == 2, "+0x18: %zu frames", n);
	if (n == 2) {
		check_frame(&f[0], "main.inl", "/src/b.go", 20, name);
		check_frame(&f[1], "main.outer", "/src/a.go", 10, name);
		CHECK(f[0].fn_line == (l == FXG_120 ? 19u : 0u) &&
			      f[1].fn_line == (l == FXG_120 ? 9u : 0u),
		      "%s: start lines %u, %u", name, f[0].fn_line, f[1].fn_line);
	}
	gopcln__find(g, FXG_TEXT + 0x30, &f, &n);
	CHECK(n == 1 && f[0].line == 12, "+0x30: %zu frames, line %u", n, n ? f[0].line : 0);
	gopcln__find(g, FXG_TEXT + 0x5f, &f, &n);
	CHECK(n == 1, "+0x5f: %zu frames", n);
	if (n == 1)
		check_frame(f, "main.other", "/src/b.go", 30, name);
	gopcln__free(g);
}

static void test_layouts_by_hand(void)
{
	check_layout(FXG_116, "1.16");
	check_layout(FXG_118, "1.18");
	check_layout(FXG_120, "1.20");
}

/* Tables that do not hold together are refused, or name nothing: never
 * a read outside them (the fuzz target tries many more). */
static void test_bad_tables(void)
{
	struct gopcln *g;
	uint64_t pcln;
	struct fxg t;
	int err;

	fxg_build(&t, FXG_118);
	t.tab[0] = 0xfb; /* Go 1.2-1.15 */
	g = parse_fxg(&t, &err);
	CHECK(err == -ENOTSUP && !g, "Go 1.2 layout: %d", err);
	fxg_build(&t, FXG_118);
	t.tab[7] = 4; /* 32-bit */
	g = parse_fxg(&t, &err);
	CHECK(err == -ENOTSUP && !g, "32-bit: %d", err);
	fxg_build(&t, FXG_118);
	memcpy(&pcln, t.tab + 64, 8);
	t.tab_size = pcln + 12; /* the function table cut */
	g = parse_fxg(&t, &err);
	CHECK(err == -EINVAL && !g, "cut: %d", err);
	fxg_build(&t, FXG_116);
	memset(t.tab + 8, 0xff, 8); /* nfunc */
	g = parse_fxg(&t, &err);
	CHECK(err == -EINVAL && !g, "nfunc: %d", err);
	/* the inline tree out of the data held: the frame of the real
	 * function only */
	fxg_build(&t, FXG_120);
	t.data_size = 0x18;
	g = parse_fxg(&t, &err);
	if (g) {
		const struct dw_frame *f;
		size_t n;

		gopcln__find(g, FXG_TEXT + 0x18, &f, &n);
		CHECK(n == 1 && f[0].function && !strcmp(f[0].function, "main.outer"),
		      "%zu frames", n);
	}
	CHECK(g, "a cut inline tree: %d", err);
	gopcln__free(g);
}

/* The fuzz target's input: the table's size (4 bytes), the table, then the
 * bytes of the inline trees (tests/fuzz/fuzz_gopclntab.c). */
static int write_seeds(const char *dir)
{
	static const char *const names[] = { "go116", "go118", "go120" };

	for (int l = 0; l < 3; l++) {
		char path[4096];
		struct fxg t;
		uint32_t size;
		FILE *f;

		fxg_build(&t, (enum fxg_layout)l);
		size = (uint32_t)t.tab_size;
		snprintf(path, sizeof(path), "%s/%s", dir, names[l]);
		f = fopen(path, "w");
		if (!f || fwrite(&size, 4, 1, f) != 1 || fwrite(t.tab, 1, size, f) != size ||
		    fwrite(t.data, 1, t.data_size, f) != t.data_size) {
			perror(path);
			return 1;
		}
		fclose(f);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--seeds"))
		return write_seeds(argv[2]);
	RUN(test_layout);
	RUN(test_names_agree_with_symtab);
	RUN(test_frames_agree_with_dwarf);
	RUN(test_inline_frames_at_source);
	RUN(test_no_section_headers);
	RUN(test_not_go);
	RUN(test_layouts_by_hand);
	RUN(test_bad_tables);
	UNIT_EXIT();
}
