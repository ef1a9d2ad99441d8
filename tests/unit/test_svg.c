// SPDX-License-Identifier: GPL-2.0
/* The SVG flame graph writer: counts, escaping, frames too narrow to draw,
 * the bound on frames, and the icicle layout. */
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "unit.h"
#include "writer.h"

static struct profile *new_profile(void)
{
	struct profile *p = NULL;

	CHECK(profile__new(&(struct profile_opts){ .demangle = false }, &p) == 0, "new");
	profile__add_type(p, "samples", "count");
	profile__meta(p)->event = profile__intern(p, "cpu-clock");
	return p;
}

static uint32_t loc(struct profile *p, const char *fn, enum pf_kind kind)
{
	static uint64_t addr = 0x1000;
	struct pf_location l = { .address = addr += 16, .kind = kind,
				 .function = profile__add_function(p, fn, NULL) };

	return profile__add_location(p, &l);
}

/* locs: outermost first, as people read them. */
static void sample(struct profile *p, const char *comm, const uint32_t *locs, size_t nr,
		   int64_t v)
{
	uint32_t leaf_first[64];
	struct pf_sample s = { .comm = profile__intern(p, comm), .pid = 1, .tid = 1 };

	for (size_t i = 0; i < nr; i++)
		leaf_first[i] = locs[nr - 1 - i];
	s.stack = profile__add_stack(p, leaf_first, nr);
	s.values[0] = v;
	CHECK(profile__add_sample(p, &s) == 0, "add sample");
}

static char *render(struct profile *p, bool inverted)
{
	struct writer_opts o = { .inverted = inverted };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	CHECK(svg__write_profile(p, &o, out) == 0, "write");
	fclose(out);
	return buf;
}

/* The data-v of the frame whose title starts with name and " (". */
static long long value_of(const char *svg, const char *name)
{
	char key[256];
	const char *at;

	snprintf(key, sizeof(key), "<title>%s (", name);
	at = strstr(svg, key);
	if (!at)
		return -1;
	while (at > svg && strncmp(at, "data-v=\"", 8))
		at--;
	return strtoll(at + 8, NULL, 10);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

static void test_counts_and_escaping(void)
{
	struct profile *p = new_profile();
	uint32_t m = loc(p, "main", PF_KIND_USER), w = loc(p, "work<int>&\"x\"", PF_KIND_USER);
	uint32_t k = loc(p, "do_syscall_64", PF_KIND_KERNEL);
	struct pf_sample lost = { .lost_reason = profile__intern(p, "counts map full") };
	char *svg;

	sample(p, "app", (uint32_t[]){ m, w }, 2, 600);
	sample(p, "app", (uint32_t[]){ m, w, k }, 3, 200);
	sample(p, "app<2>", (uint32_t[]){ m }, 1, 150);
	lost.values[0] = 50;
	profile__add_sample(p, &lost);
	svg = render(p, false);

	CHECK(value_of(svg, "all") == 1000, "root: %lld", value_of(svg, "all"));
	CHECK(value_of(svg, "app") == 800, "comm app: %lld", value_of(svg, "app"));
	CHECK(value_of(svg, "app&lt;2&gt;") == 150, "escaped comm: %lld",
	      value_of(svg, "app&lt;2&gt;"));
	CHECK(value_of(svg, "work&lt;int&gt;&amp;&quot;x&quot;") == 800, "escaped template: %lld",
	      value_of(svg, "work&lt;int&gt;&amp;&quot;x&quot;"));
	CHECK(value_of(svg, "do_syscall_64") == 200, "kernel: %lld",
	      value_of(svg, "do_syscall_64"));
	CHECK(value_of(svg, "[lost]") == 50 && value_of(svg, "[counts map full]") == 50,
	      "lost as [lost];[reason]");
	/* "all" + app, app<2>, [lost] + main x2 + work + kernel + reason */
	CHECK(count(svg, "<g class=\"f\" data-v") == 9, "9 frames, got %zu",
	      count(svg, "<g class=\"f\" data-v"));
	CHECK(!strstr(svg, "work<int>") && !strstr(svg, "\"x\"\""), "nothing unescaped");
	CHECK(strstr(svg, "cpu-clock, 1,000 samples"), "default title");
	CHECK(strstr(svg, "]]></script>\n</svg>\n"), "ends with the script");
	free(svg);
	profile__free(p);
}

/* Frames under 0.1 px are left out, their value counted in their parent. */
static void test_narrow_frames_merged(void)
{
	struct profile *p = new_profile();
	uint32_t m = loc(p, "main", PF_KIND_USER), big = loc(p, "big", PF_KIND_USER);
	uint32_t tiny = loc(p, "tiny", PF_KIND_USER);
	char *svg;

	sample(p, "app", (uint32_t[]){ m, big }, 2, 100000);
	sample(p, "app", (uint32_t[]){ m, tiny }, 2, 5); /* 0.06 px of 1180 */
	svg = render(p, false);
	CHECK(!strstr(svg, "tiny"), "tiny left out");
	CHECK(value_of(svg, "main") == 100005, "main keeps tiny's samples: %lld",
	      value_of(svg, "main"));
	CHECK(value_of(svg, "big") == 100000, "big: %lld", value_of(svg, "big"));
	free(svg);
	profile__free(p);
}

/* However many distinct stacks, at most 30000 frames are drawn. */
static void test_frames_bounded(void)
{
	struct profile *p = new_profile();
	uint32_t locs[15];
	char name[32];
	char *svg;
	size_t n;

	for (int i = 0; i < 3000; i++) {
		for (int d = 0; d < 15; d++) {
			snprintf(name, sizeof(name), "f%d_%d", i, d);
			locs[d] = loc(p, name, PF_KIND_USER);
		}
		sample(p, "app", locs, 15, 1);
	}
	svg = render(p, false);
	n = count(svg, "<g class=\"f\" data-v");
	CHECK(n <= 30000 && n > 20000, "frames: %zu", n);
	CHECK(value_of(svg, "all") == 3000, "root keeps every sample");
	CHECK(strlen(svg) < 30000 * 400, "size %zu", strlen(svg));
	free(svg);
	profile__free(p);
}

/* The fill of the frame whose title starts with name and " (": r, g, b. */
static bool fill_of(const char *svg, const char *name, int rgb[3])
{
	char key[256];
	const char *at;

	snprintf(key, sizeof(key), "<title>%s (", name);
	at = strstr(svg, key);
	at = at ? strstr(at, " fill=\"rgb(") : NULL;
	return at && sscanf(at, " fill=\"rgb(%d,%d,%d)", &rgb[0], &rgb[1], &rgb[2]) == 3;
}

static bool in(int v, int lo, int hi)
{
	return v >= lo && v <= hi;
}

/* Each kind has its palette (svg.c's put_colour), varied by name only
 * within it: user red, kernel orange, JIT green, markers grey, lost dark
 * red, the root and comms blue-grey. Several names per kind, so that the
 * variation is seen to stay inside the palette. */
static void test_colours_by_kind(void)
{
	static const char *const names[] = { "a", "zeta", "geo::Grid_d::relax(int)", "q9" };
	struct profile *p = new_profile();
	struct pf_sample lost = { .lost_reason = profile__intern(p, "ring full") };
	char user[32], kern[32], jit[32], mark[32];
	char *svg;
	int c[3];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(user, sizeof(user), "u_%s", names[i]);
		snprintf(kern, sizeof(kern), "k_%s", names[i]);
		snprintf(jit, sizeof(jit), "j_%s", names[i]);
		snprintf(mark, sizeof(mark), "[m_%s]", names[i]);
		sample(p, "app", (uint32_t[]){ loc(p, mark, PF_KIND_MARKER), loc(p, user, PF_KIND_USER),
					      loc(p, jit, PF_KIND_JIT), loc(p, kern, PF_KIND_KERNEL) },
		       4, 100);
	}
	lost.values[0] = 100;
	profile__add_sample(p, &lost);
	svg = render(p, false);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(user, sizeof(user), "u_%s", names[i]);
		snprintf(kern, sizeof(kern), "k_%s", names[i]);
		snprintf(jit, sizeof(jit), "j_%s", names[i]);
		snprintf(mark, sizeof(mark), "[m_%s]", names[i]);
		CHECK(fill_of(svg, user, c) && in(c[0], 200, 255) && c[1] == c[2] &&
		      in(c[1], 50, 130), "user %s red: %d,%d,%d", names[i], c[0], c[1], c[2]);
		CHECK(fill_of(svg, kern, c) && in(c[0], 200, 255) && in(c[1], 110, 180) &&
		      c[2] == 0, "kernel %s orange: %d,%d,%d", names[i], c[0], c[1], c[2]);
		CHECK(fill_of(svg, jit, c) && in(c[0], 50, 110) && in(c[1], 190, 255) &&
		      c[2] == c[0], "JIT %s green: %d,%d,%d", names[i], c[0], c[1], c[2]);
		CHECK(fill_of(svg, mark, c) && c[0] == c[1] && c[1] == c[2] && in(c[0], 170, 210),
		      "marker %s grey: %d,%d,%d", names[i], c[0], c[1], c[2]);
	}
	CHECK(fill_of(svg, "[lost]", c) && in(c[0], 160, 190) && c[1] == c[2] && in(c[1], 20, 40),
	      "[lost] dark red: %d,%d,%d", c[0], c[1], c[2]);
	CHECK(fill_of(svg, "[ring full]", c) && in(c[0], 160, 190) && c[1] == c[2] &&
	      in(c[1], 20, 40), "[ring full] dark red: %d,%d,%d", c[0], c[1], c[2]);
	CHECK(fill_of(svg, "all", c) && c[0] == c[1] && in(c[0], 170, 200) && in(c[2], 220, 255),
	      "root blue-grey: %d,%d,%d", c[0], c[1], c[2]);
	CHECK(fill_of(svg, "app", c) && c[0] == c[1] && in(c[0], 170, 200) && in(c[2], 220, 255),
	      "comm blue-grey: %d,%d,%d", c[0], c[1], c[2]);
	/* a name keeps its colour: the same in a second rendering */
	{
		char *again = render(p, false);
		int d[3];

		CHECK(fill_of(svg, "u_zeta", c) && fill_of(again, "u_zeta", d) && c[0] == d[0] &&
		      c[1] == d[1] && c[2] == d[2], "colour stable across renderings");
		free(again);
	}
	free(svg);
	profile__free(p);
}

static double y_of(const char *svg, const char *name)
{
	char key[256];
	const char *at;

	snprintf(key, sizeof(key), "<title>%s (", name);
	at = strstr(svg, key);
	at = at ? strstr(at, " y=\"") : NULL;
	return at ? strtod(at + 4, NULL) : -1;
}

static void test_inverted(void)
{
	struct profile *p = new_profile();
	uint32_t m = loc(p, "main", PF_KIND_USER);
	char *flame, *icicle;

	sample(p, "app", (uint32_t[]){ m }, 1, 10);
	flame = render(p, false);
	icicle = render(p, true);
	CHECK(y_of(flame, "all") > y_of(flame, "main"), "flame: root at the bottom");
	CHECK(y_of(icicle, "all") >= 0 && y_of(icicle, "all") < y_of(icicle, "main"),
	      "icicle: root at the top");
	free(flame);
	free(icicle);
	profile__free(p);
}

static void test_empty(void)
{
	struct profile *p = new_profile();
	char *svg = render(p, false);

	CHECK(svg && strstr(svg, "</svg>") && !strstr(svg, "<g class=\"f\" data-v"), "empty graph");
	free(svg);
	profile__free(p);
}

int main(void)
{
	RUN(test_counts_and_escaping);
	RUN(test_narrow_frames_merged);
	RUN(test_frames_bounded);
	RUN(test_colours_by_kind);
	RUN(test_inverted);
	RUN(test_empty);
	UNIT_EXIT();
}
