// SPDX-License-Identifier: GPL-2.0
/* The profile model: deduplication, merged samples, the frame names every
 * writer shows, and the folded and samples writers reading it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "unit.h"
#include "writer.h"

struct fixture {
	struct profile *p;
	uint32_t main_loc, work_loc, unnamed_loc, kern_loc, mod_loc, anon_loc, unmapped_loc;
};

static void build(struct fixture *fx, bool demangle)
{
	struct profile *p;
	uint32_t exe, kern, mod, anon;

	CHECK(!profile__new(&(struct profile_opts){ .demangle = demangle }, &fx->p), "new");
	p = fx->p;
	CHECK(profile__add_type(p, "samples", "count") == 0, "type 0");
	CHECK(profile__add_type(p, "cpu", "nanoseconds") == 1, "type 1");
	exe = profile__add_mapping(p, &(struct pf_mapping){
		.start = 0x400000, .limit = 0x401000, .file = profile__intern(p, "/usr/bin/app"),
		.build_id = profile__intern(p, "abcd"), .has_functions = true });
	CHECK(exe == profile__add_mapping(p, &(struct pf_mapping){
		.start = 0x400000, .limit = 0x401000, .file = profile__intern(p, "/usr/bin/app"),
		.build_id = profile__intern(p, "abcd"), .has_functions = true }), "mapping dedup");
	kern = profile__add_mapping(p, &(struct pf_mapping){
		.file = profile__intern(p, PF_KERNEL_FILE), .kind = PF_KIND_KERNEL });
	mod = profile__add_mapping(p, &(struct pf_mapping){
		.file = profile__intern(p, "bpf"), .kind = PF_KIND_KERNEL });
	anon = profile__add_mapping(p, &(struct pf_mapping){
		.start = 0x7000, .limit = 0x8000, .file = profile__intern(p, PF_ANON_FILE) });
	fx->main_loc = profile__add_location(p, &(struct pf_location){
		.address = 0x400100, .mapping = exe, .function = profile__add_function(p, "main", NULL) });
	fx->work_loc = profile__add_location(p, &(struct pf_location){
		.address = 0x400200, .mapping = exe,
		.function = profile__add_function(p, "_ZN3geo4GridIdE5relaxEi", NULL) });
	fx->unnamed_loc = profile__add_location(p, &(struct pf_location){
		.address = 0x400300, .elf_addr = 0x1300, .mapping = exe });
	fx->kern_loc = profile__add_location(p, &(struct pf_location){
		.address = 0xffffffff81000000, .mapping = kern, .kind = PF_KIND_KERNEL,
		.function = profile__add_function(p, "do_syscall_64", NULL) });
	fx->mod_loc = profile__add_location(p, &(struct pf_location){
		.address = 0xffffffffa0000000, .mapping = mod, .kind = PF_KIND_KERNEL,
		.function = profile__add_function(p, "bpf_prog_1_spin", NULL) });
	fx->anon_loc = profile__add_location(p, &(struct pf_location){
		.address = 0x7010, .mapping = anon });
	fx->unmapped_loc = profile__add_location(p, &(struct pf_location){ .address = 0x99 });
}

static void test_dedup_and_names(void)
{
	struct fixture fx;
	char buf[128];
	uint32_t again;

	build(&fx, true);
	again = profile__add_location(fx.p, &(struct pf_location){
		.address = 0x400100, .mapping = 1,
		.function = profile__add_function(fx.p, "main", NULL) });
	CHECK(again == fx.main_loc, "location dedup: %u vs %u", again, fx.main_loc);
	CHECK(profile__nr_mappings(fx.p) == 4, "mappings %zu", profile__nr_mappings(fx.p));
	CHECK(!strcmp(profile__str(fx.p, 0), ""), "string 0 is empty");
	CHECK(!strcmp(profile__frame_name(fx.p, fx.work_loc, buf, sizeof(buf)),
		      "geo::Grid<double>::relax(int)"), "demangled: %s",
	      profile__frame_name(fx.p, fx.work_loc, buf, sizeof(buf)));
	CHECK(!strcmp(profile__str(fx.p, profile__function(fx.p, 2)->system_name),
		      "_ZN3geo4GridIdE5relaxEi"), "system name kept raw");
	CHECK(!strcmp(profile__frame_name(fx.p, fx.unnamed_loc, buf, sizeof(buf)), "app+0x1300"),
	      "unnamed: %s", buf);
	CHECK(!strcmp(profile__frame_name(fx.p, fx.kern_loc, buf, sizeof(buf)), "do_syscall_64"),
	      "kernel");
	CHECK(!strcmp(profile__frame_name(fx.p, fx.mod_loc, buf, sizeof(buf)),
		      "bpf_prog_1_spin [bpf]"), "module: %s", buf);
	CHECK(!strcmp(profile__frame_name(fx.p, fx.anon_loc, buf, sizeof(buf)), "[anon]+0x7010"),
	      "anon: %s", buf);
	CHECK(!strcmp(profile__frame_name(fx.p, fx.unmapped_loc, buf, sizeof(buf)),
		      "[unmapped]+0x99"), "unmapped: %s", buf);
	CHECK(!profile__err(fx.p), "no error");
	profile__free(fx.p);

	build(&fx, false);
	CHECK(!strcmp(profile__frame_name(fx.p, fx.work_loc, buf, sizeof(buf)),
		      "_ZN3geo4GridIdE5relaxEi"), "--no-demangle: %s", buf);
	profile__free(fx.p);
}

static char *write_with(const struct profile *p, const char *format, bool annotate)
{
	struct writer_opts wo = { .annotate = annotate };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f && !writer__find(format)->write(p, &wo, f), "write %s", format);
	fclose(f);
	return text;
}

static void test_samples_merge_and_folded(void)
{
	struct fixture fx;
	uint32_t st1[3], st2[2], lost_loc, lost_st;
	char *text;

	build(&fx, true);
	st1[0] = fx.kern_loc, st1[1] = fx.work_loc, st1[2] = fx.main_loc; /* leaf first */
	st2[0] = fx.unnamed_loc, st2[1] = fx.main_loc;
	uint32_t s1 = profile__add_stack(fx.p, st1, 3), s2 = profile__add_stack(fx.p, st2, 2);

	CHECK(s1 != s2 && s1 == profile__add_stack(fx.p, st1, 3), "stack dedup");
	uint32_t comm = profile__intern(fx.p, "app");
	/* two threads of one stack: two samples; the same thread twice: merged */
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = s1, .comm = comm, .pid = 5,
		.tid = 5, .values = { 2, 20 } }), "add");
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = s1, .comm = comm, .pid = 5,
		.tid = 5, .values = { 3, 30 } }), "add");
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = s1, .comm = comm, .pid = 5,
		.tid = 6, .values = { 1, 10 } }), "add");
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = s2, .comm = comm, .pid = 5,
		.tid = 5, .values = { 4, 40 } }), "add");
	lost_loc = profile__add_location(fx.p, &(struct pf_location){
		.function = profile__add_function(fx.p, "[lost]", NULL), .kind = PF_KIND_LOST });
	lost_st = profile__add_stack(fx.p, &lost_loc, 1);
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = lost_st,
		.lost_reason = profile__intern(fx.p, "ring full"), .values = { 7, 70 } }), "lost");
	CHECK(profile__nr_samples(fx.p) == 4, "samples %zu", profile__nr_samples(fx.p));
	CHECK(profile__sample(fx.p, 0)->values[0] == 5 && profile__sample(fx.p, 0)->values[1] == 50,
	      "merged values");
	CHECK(profile__total(fx.p) == 17, "total %lld", (long long)profile__total(fx.p));

	text = write_with(fx.p, "folded", false);
	CHECK(text && !strcmp(text, "[lost];[ring full] 7\n"
				    "app;main;app+0x1300 4\n"
				    "app;main;geo::Grid<double>::relax(int);do_syscall_64 6\n"),
	      "folded:\n%s", text);
	free(text);
	text = write_with(fx.p, "folded", true);
	CHECK(text && strstr(text, "relax(int);do_syscall_64_[k] 6\n"), "annotated:\n%s", text);
	free(text);
	profile__meta(fx.p)->default_type = 1;
	text = write_with(fx.p, "folded", false);
	CHECK(text && strstr(text, "app;main;app+0x1300 40\n"), "by period:\n%s", text);
	free(text);

	/* timed samples are kept one by one, in order, and only they are
	 * written as samples */
	profile__meta(fx.p)->event = profile__intern(fx.p, "cpu-clock");
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = s2, .comm = comm, .pid = 5,
		.tid = 5, .cpu = 1, .time_ns = 2000000001, .values = { 1, 250000 } }), "timed");
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = s2, .comm = comm, .pid = 5,
		.tid = 5, .cpu = 1, .time_ns = 2000000001, .values = { 1, 250000 } }), "timed");
	text = write_with(fx.p, "samples", false);
	CHECK(text && !strcmp(text, "2.000000001 1 5 5 250000 cpu-clock app;main;app+0x1300\n"
				    "2.000000001 1 5 5 250000 cpu-clock app;main;app+0x1300\n"),
	      "samples:\n%s", text);
	free(text);
	profile__free(fx.p);
}

/* A window split per service: the copy writes the same folded text. */
static void test_copy(void)
{
	struct fixture fx;
	struct profile *dst;
	uint32_t st[2];
	char *a, *b;

	build(&fx, true);
	st[0] = fx.work_loc, st[1] = fx.main_loc;
	CHECK(!profile__add_sample(fx.p, &(struct pf_sample){ .stack = profile__add_stack(fx.p, st, 2),
		.comm = profile__intern(fx.p, "app"), .pid = 5, .tid = 5, .values = { 3, 30 } }),
	      "add");
	CHECK(!profile__new(&(struct profile_opts){ .demangle = true }, &dst), "new");
	CHECK(!profile__copy_meta(dst, fx.p), "meta");
	for (size_t i = 0; i < profile__nr_samples(fx.p); i++)
		CHECK(!profile__copy_sample(dst, fx.p, profile__sample(fx.p, i)), "copy");
	a = write_with(fx.p, "folded", false);
	b = write_with(dst, "folded", false);
	CHECK(a && b && !strcmp(a, b), "same folded:\n%s\nvs\n%s", a, b);
	CHECK(profile__nr_mappings(dst) == 1, "only the mappings used: %zu", profile__nr_mappings(dst));
	CHECK(profile__meta_c(dst)->nr_types == 2, "types");
	free(a);
	free(b);
	profile__free(dst);
	profile__free(fx.p);
}

/* Inline frames: folded only shows them with --inline ("NAME (inline)",
 * after the frame they are inlined into, outermost first), top counts
 * the innermost as flat, and a copy keeps them. */
static void test_inlines(void)
{
	struct writer_opts wo = { .inlines = true, .top = 3 };
	struct profile *p, *dst;
	uint32_t outer, loc, st, mainf, mainloc, locs[2];
	char *a, *b, *text = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(!profile__new(&(struct profile_opts){ .demangle = true }, &p), "new");
	profile__add_type(p, "samples", "count");
	outer = profile__add_function_at(p, "run", "/src/a.c", 30);
	struct pf_line chain[] = { { profile__add_function_at(p, "inner", "/src/a.c", 3), 5 },
				   { profile__add_function_at(p, "_ZN2ns3midEv", "/src/a.h", 9), 12 } };
	loc = profile__add_location(p, &(struct pf_location){
		.address = 0x1234, .function = outer, .line = 37,
		.inlines = profile__add_inlines(p, chain, 2) });
	mainf = profile__add_function(p, "main", NULL);
	mainloc = profile__add_location(p, &(struct pf_location){ .address = 0x1000,
								  .function = mainf });
	locs[0] = loc, locs[1] = mainloc;
	st = profile__add_stack(p, locs, 2);
	CHECK(!profile__add_sample(p, &(struct pf_sample){ .stack = st, .pid = 1,
		.comm = profile__intern(p, "app"), .values = { 4 } }), "add");

	a = write_with(p, "folded", false);
	CHECK(a && !strcmp(a, "app;main;run 4\n"), "without --inline:\n%s", a);
	f = open_memstream(&text, &len);
	CHECK(f && !writer__find("folded")->write(p, &wo, f), "write");
	fclose(f);
	CHECK(text && !strcmp(text, "app;main;run;ns::mid() (inline);inner (inline) 4\n"),
	      "--inline:\n%s", text);
	free(text);
	text = NULL;
	f = open_memstream(&text, &len);
	CHECK(f && !writer__find("top")->write(p, &wo, f), "write top");
	fclose(f);
	CHECK(text && strstr(text, "         4 100.00% 100.00%          4 100.00%  inner (inline)\n"),
	      "top --inline:\n%s", text);
	free(text);

	CHECK(!profile__new(&(struct profile_opts){ .demangle = true }, &dst), "new");
	CHECK(!profile__copy_meta(dst, p), "meta");
	CHECK(!profile__copy_sample(dst, p, profile__sample(p, 0)), "copy");
	text = NULL;
	f = open_memstream(&text, &len);
	CHECK(f && !writer__find("folded")->write(dst, &wo, f), "write copy");
	fclose(f);
	b = text;
	CHECK(b && !strcmp(b, "app;main;run;ns::mid() (inline);inner (inline) 4\n"),
	      "copy keeps the inline frames:\n%s", b);
	const struct pf_location *cl = profile__location(dst, profile__stack(dst, 1, &len)[0]);
	const struct pf_function *cf = profile__function(dst, cl->function);
	CHECK(cl->line == 37 && cf->start_line == 30 &&
		      !strcmp(profile__str(dst, cf->filename), "/src/a.c"),
	      "copy keeps line, file and start line");
	free(a);
	free(b);
	profile__free(dst);
	profile__free(p);
}

int main(void)
{
	RUN(test_dedup_and_names);
	RUN(test_samples_merge_and_folded);
	RUN(test_copy);
	RUN(test_inlines);
	UNIT_EXIT();
}
