// SPDX-License-Identifier: GPL-2.0
/* --format top: flat and cum per function from a profile built by hand,
 * recursion counted once, lost samples as rows, order, --top and the header. */
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "unit.h"
#include "writer.h"

struct fixture {
	struct profile *p;
	uint32_t main_, work, leaf, fib, unmapped;
};

static uint32_t fn_loc(struct profile *p, const char *name, uint64_t addr)
{
	return profile__add_location(p, &(struct pf_location){
		.address = addr, .function = profile__add_function(p, name, NULL) });
}

/* Stacks are given outermost first, as one reads them; the model wants the
 * leaf first. */
static void add(struct fixture *fx, uint32_t pid, int64_t v, const uint32_t *outer_first,
		size_t nr)
{
	uint32_t leaf_first[16];
	struct pf_sample s = { .pid = pid, .tid = pid, .comm = profile__intern(fx->p, "app") };

	for (size_t i = 0; i < nr; i++)
		leaf_first[i] = outer_first[nr - 1 - i];
	s.stack = profile__add_stack(fx->p, leaf_first, nr);
	s.values[0] = v;
	s.values[1] = v * 1000;
	CHECK(profile__add_sample(fx->p, &s) == 0, "add sample");
}

/*
 *   app;main;work;leaf        5 (pid 1) + 1 (pid 2)
 *   app;main;fib;fib;fib      3
 *   app;main;work             2
 *   app;main;[unmapped]+0xdead 1
 *   [lost] ring full          1
 */
static void build(struct fixture *fx)
{
	struct pf_meta *m;
	struct pf_sample lost = { 0 };

	CHECK(profile__new(&(struct profile_opts){ .demangle = true }, &fx->p) == 0, "new");
	profile__add_type(fx->p, "samples", "count");
	profile__add_type(fx->p, "cpu", "nanoseconds");
	m = profile__meta(fx->p);
	m->event = profile__intern(fx->p, "cpu-clock");
	fx->main_ = fn_loc(fx->p, "main", 0x1000);
	fx->work = fn_loc(fx->p, "work", 0x2000);
	fx->leaf = fn_loc(fx->p, "leaf", 0x3000);
	/* two call sites of fib: two locations, one function, one row */
	fx->fib = fn_loc(fx->p, "fib", 0x4000);
	uint32_t fib2 = fn_loc(fx->p, "fib", 0x4010);
	fx->unmapped = profile__add_location(fx->p, &(struct pf_location){ .address = 0xdead });

	add(fx, 1, 5, (uint32_t[]){ fx->main_, fx->work, fx->leaf }, 3);
	add(fx, 2, 1, (uint32_t[]){ fx->main_, fx->work, fx->leaf }, 3);
	add(fx, 1, 3, (uint32_t[]){ fx->main_, fx->fib, fib2, fib2 }, 4);
	add(fx, 1, 2, (uint32_t[]){ fx->main_, fx->work }, 2);
	add(fx, 1, 1, (uint32_t[]){ fx->main_, fx->unmapped }, 2);

	lost.stack = profile__add_stack(fx->p, (uint32_t[]){ profile__add_location(fx->p,
		&(struct pf_location){ .function = profile__add_function(fx->p, "[lost]", NULL),
				       .kind = PF_KIND_LOST }) }, 1);
	lost.lost_reason = profile__intern(fx->p, "ring full");
	lost.values[0] = 1;
	lost.values[1] = 1000;
	CHECK(profile__add_sample(fx->p, &lost) == 0, "add lost");
	CHECK(profile__err(fx->p) == 0, "no allocation failed");
}

/* For messages: printf's %s must not get NULL. */
static const char *show(const char *s)
{
	return s ? s : "(no output)";
}

static char *render(const struct profile *p, unsigned int top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct writer_opts o = { .top = top };
	const struct writer *w = writer__find("top");

	CHECK(w != NULL, "the writer table has top");
	if (w)
		CHECK(w->write(p, &o, out) == 0, "write");
	fclose(out);
	return buf;
}

static void test_table(void)
{
	struct fixture fx = { 0 };
	char *out;
	const char *want =
		"Total: 13 samples (count), event cpu-clock; showing 6 of 6 functions\n"
		"      flat   flat%    sum%        cum    cum%  name\n"
		"         6  46.15%  46.15%          6  46.15%  leaf\n"
		"         3  23.08%  69.23%          3  23.08%  fib\n"
		"         2  15.38%  84.62%          8  61.54%  work\n"
		"         1   7.69%  92.31%          1   7.69%  [lost] ring full\n"
		"         1   7.69% 100.00%          1   7.69%  [unmapped]+0xdead\n"
		"         0   0.00% 100.00%         12  92.31%  main\n";

	build(&fx);
	out = render(fx.p, 20);
	CHECK(out && !strcmp(out, want), "got:\n%s\nwant:\n%s", show(out), want);
	free(out);
	profile__free(fx.p);
}

static void test_rows_limited(void)
{
	struct fixture fx = { 0 };
	char *out, *line, *save = NULL;
	int rows = 0;

	build(&fx);
	out = render(fx.p, 2);
	CHECK(out && !strncmp(out, "Total: 13 samples (count), event cpu-clock; showing 2 of 6 "
				   "functions\n", 68), "header: %s", show(out));
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		rows++;
	CHECK(rows == 2 + 2, "header, column names and 2 rows: %d lines", rows);
	free(out);
	profile__free(fx.p);
}

/* --weight period: the default type is the second value, and its unit shows. */
static void test_default_type(void)
{
	struct fixture fx = { 0 };
	char *out;

	build(&fx);
	profile__meta(fx.p)->default_type = 1;
	out = render(fx.p, 1);
	CHECK(out && strstr(out, "Total: 13000 cpu (nanoseconds), event cpu-clock; showing 1 of 6"),
	      "header: %s", show(out));
	CHECK(out && strstr(out, "      6000  46.15%  46.15%       6000  46.15%  leaf\n"),
	      "leaf row: %s", show(out));
	free(out);
	profile__free(fx.p);
}

static void test_empty(void)
{
	struct profile *p;
	char *out;

	CHECK(profile__new(&(struct profile_opts){ 0 }, &p) == 0, "new");
	profile__add_type(p, "samples", "count");
	out = render(p, 20);
	CHECK(out && !strcmp(out, "Total: 0 samples (count); showing 0 of 0 functions\n"
				  "      flat   flat%    sum%        cum    cum%  name\n"),
	      "got:\n%s", show(out));
	free(out);
	profile__free(p);
}

int main(void)
{
	RUN(test_table);
	RUN(test_rows_limited);
	RUN(test_default_type);
	RUN(test_empty);
	UNIT_EXIT();
}
