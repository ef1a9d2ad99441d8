// SPDX-License-Identifier: GPL-2.0
/* The folded writer: merging, order, sanitizing, and what flamegraph.pl
 * needs from each line. */
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "profile.h"
#include "unit.h"
#include "writer.h"

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

/* A name of n characters: "long_" then letters, no ';' to sanitize. */
static char *long_name(const char *prefix, size_t n)
{
	char *s = malloc(n + 1);
	size_t k = strlen(prefix);

	memcpy(s, prefix, k);
	for (size_t i = k; i < n; i++)
		s[i] = 'a' + i % 26;
	s[n] = '\0';
	return s;
}

static char *write_with(int (*write)(const struct profile *, const struct writer_opts *, FILE *),
			const struct profile *p, const struct writer_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	CHECK(write(p, o, out) == 0, "write");
	fclose(out);
	return buf;
}

/* Long names stay whole in folded, samples and top: a 3000-character
 * function, a 3000-character function inlined into it (with --inline), a
 * 500-character kernel module function (with _[k]), and the samples
 * format's frames writer with a 10000-character name. */
static void test_long_names_whole(void)
{
	char *fn = long_name("user_", 3000), *inl = long_name("inl_", 3000);
	char *kfn = long_name("kfn_", 500), *big = long_name("big_", 10000);
	char *want, *out;
	struct profile *p = NULL;
	struct writer_opts o = { .annotate = true, .inlines = true };
	struct pf_mapping km = { .start = 0xffffffff80000000, .limit = 0xffffffffffffffff,
				 .kind = PF_KIND_KERNEL };
	struct pf_sample s = { .pid = 1, .tid = 1, .time_ns = 1000000000 };
	uint32_t locs[2];
	size_t len = 0;
	FILE *f;

	CHECK(profile__new(&(struct profile_opts){ .demangle = false }, &p) == 0, "new");
	profile__add_type(p, "samples", "count");
	profile__meta(p)->event = profile__intern(p, "cpu-clock");
	km.file = profile__intern(p, "some_module");
	locs[0] = profile__add_location(p, &(struct pf_location){
		.address = 0xffffffff81000000, .kind = PF_KIND_KERNEL,
		.mapping = profile__add_mapping(p, &km), .function = profile__add_function(p, kfn, NULL) });
	locs[1] = profile__add_location(p, &(struct pf_location){
		.address = 0x1000, .kind = PF_KIND_USER, .function = profile__add_function(p, fn, NULL),
		.inlines = profile__add_inlines(p, &(struct pf_line){
			.function = profile__add_function(p, inl, NULL) }, 1) });
	s.comm = profile__intern(p, "app");
	s.stack = profile__add_stack(p, locs, 2); /* leaf first */
	s.values[0] = 3;
	CHECK(profile__add_sample(p, &s) == 0, "add sample");

	CHECK(asprintf(&want, "app;%s;%s (inline);%s [some_module]_[k] 3\n", fn, inl, kfn) > 0,
	      "want");
	out = write_with(folded__write_profile, p, &o);
	CHECK(out && !strcmp(out, want), "folded whole: %zu bytes, want %zu", out ? strlen(out) : 0,
	      strlen(want));
	free(out);
	out = write_with(samples__write_profile, p, &o);
	*strrchr(want, ' ') = '\0';
	CHECK(out && strstr(out, want + 4) && strchr(out, '\n')[1] == '\0',
	      "samples whole: %.200s", out);
	free(out);
	free(want);
	out = write_with(top__write_profile, p, &o);
	CHECK(asprintf(&want, "  %s (inline)\n", inl) > 0 && out && strstr(out, want) &&
	      strstr(out, fn), "top whole: %.300s", out);
	free(want);
	free(out);

	out = NULL;
	f = open_memstream(&out, &len);
	folded__put_frames(f, (const char *[]){ "app", big, "x;y" }, 3);
	fclose(f);
	CHECK(len == 4 + 10000 + 4 && !strncmp(out, "app;big_", 8) && !strcmp(out + 4 + 10000, ";x:y"),
	      "put_frames whole: %zu bytes", len);
	free(out);
	profile__free(p);
	free(fn);
	free(inl);
	free(kfn);
	free(big);
}

int main(void)
{
	RUN(test_merge_and_sort);
	RUN(test_sanitize);
	RUN(test_spaces_kept);
	RUN(test_many);
	RUN(test_long_names_whole);
	UNIT_EXIT();
}
