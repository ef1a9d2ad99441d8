// SPDX-License-Identifier: GPL-2.0
/* The folded writer: merging, order, sanitizing, and what flamegraph.pl
 * needs from each line. */
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "unit.h"

static char *render(struct folded *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	CHECK(folded__write(f, out) == 0, "write");
	fclose(out);
	return buf;
}

static void test_merge_and_sort(void)
{
	const char *a[] = { "app", "main", "work" };
	const char *b[] = { "app", "main", "idle" };
	struct folded *f;
	char *out;

	CHECK(folded__new(&f) == 0, "new");
	folded__add(f, a, 3, 5);
	folded__add(f, b, 3, 1);
	folded__add(f, a, 3, 2);
	CHECK(folded__nr_lines(f) == 2, "two distinct stacks, got %zu", folded__nr_lines(f));
	out = render(f);
	CHECK(out && strcmp(out, "app;main;idle 1\napp;main;work 7\n") == 0, "got:\n%s", out);
	free(out);
	folded__free(f);
}

static void test_sanitize(void)
{
	const char *a[] = { "my;comm", "op<int;2>", "", "line\nbreak" };
	struct folded *f;
	char *out;

	folded__new(&f);
	folded__add(f, a, 4, 3);
	out = render(f);
	CHECK(out && strcmp(out, "my:comm;op<int:2>;[empty];line?break 3\n") == 0, "got:\n%s",
	      out);
	free(out);
	folded__free(f);
}

static void test_spaces_kept(void)
{
	/* flamegraph.pl splits at the last run of spaces: names may hold some. */
	const char *a[] = { "kworker/0:1", "func [mod]" };
	struct folded *f;
	char *out;

	folded__new(&f);
	folded__add(f, a, 2, 1);
	out = render(f);
	CHECK(out && strcmp(out, "kworker/0:1;func [mod] 1\n") == 0, "got:\n%s", out);
	free(out);
	folded__free(f);
}

static void test_many(void)
{
	struct folded *f;
	char name[32];
	const char *fr[2] = { "x", name };
	unsigned long long sum = 0;
	char *out, *line, *save = NULL;

	folded__new(&f);
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "f%d", i % 1000);
		folded__add(f, fr, 2, i);
	}
	CHECK(folded__nr_lines(f) == 1000, "1000 lines, got %zu", folded__nr_lines(f));
	out = render(f);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		sum += strtoull(strrchr(line, ' ') + 1, NULL, 10);
	CHECK(sum == 5000ULL * 4999 / 2, "no count lost: %llu", sum);
	free(out);
	folded__free(f);
}

int main(void)
{
	RUN(test_merge_and_sort);
	RUN(test_sanitize);
	RUN(test_spaces_kept);
	RUN(test_many);
	UNIT_EXIT();
}
