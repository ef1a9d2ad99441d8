// SPDX-License-Identifier: GPL-2.0
/* The wall clock by thread (--off-cpu): on-CPU from a clock's profile plus
 * off-CPU from offcpu-time's, per thread, longest first; lost samples and
 * profiles without nanoseconds left out; the table's rows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "unit.h"
#include "wallclock.h"

/* A profile with samples/count and TYPE/UNIT, one sample per (tid, ns). */
static struct profile *make(const char *type, const char *unit, const uint32_t *tids,
			    const int64_t *ns, size_t nr)
{
	struct profile *p;
	uint32_t loc;

	CHECK(profile__new(&(struct profile_opts){ 0 }, &p) == 0, "new");
	profile__add_type(p, "samples", "count");
	profile__add_type(p, type, unit);
	loc = profile__add_location(p, &(struct pf_location){
		.address = 0x1000, .function = profile__add_function(p, "f", NULL) });
	for (size_t i = 0; i < nr; i++) {
		struct pf_sample s = { .pid = 7, .tid = tids[i], .stack = profile__add_stack(p, &loc, 1),
				       .comm = profile__intern(p, tids[i] == 7 ? "main" : "worker") };

		s.values[0] = 1;
		s.values[1] = ns[i];
		CHECK(profile__add_sample(p, &s) == 0, "sample");
	}
	return p;
}

static void test_sums(void)
{
	static const uint32_t on_t[] = { 7, 8, 8 }, off_t[] = { 8, 9, 7 };
	static const int64_t on_ns[] = { 100, 200, 300 }, off_ns[] = { 1000, 5000, 50 };
	struct profile *on = make("cpu", "nanoseconds", on_t, on_ns, 3);
	struct profile *off = make("offcpu", "nanoseconds", off_t, off_ns, 3);
	struct pf_sample lost = { .lost_reason = 0 };
	const struct wallclock_thread *t;
	struct wallclock *w;
	size_t nr;

	/* a lost sample of the clock: no thread, not counted */
	lost.lost_reason = profile__intern(on, "ring full");
	lost.values[1] = 1000000;
	CHECK(profile__add_sample(on, &lost) == 0, "lost");
	CHECK(wallclock__new(&w) == 0, "new");
	CHECK(wallclock__add(w, on, false) == 0, "add on-CPU");
	CHECK(wallclock__add(w, off, true) == 0, "add off-CPU");
	t = wallclock__threads(w, &nr);
	CHECK(nr == 3, "three threads, got %zu", nr);
	CHECK(t[0].tid == 9 && t[0].off_ns == 5000 && t[0].on_ns == 0, "9 first: 5000 off");
	CHECK(t[1].tid == 8 && t[1].on_ns == 500 && t[1].off_ns == 1000, "8: 500 on + 1000 off");
	CHECK(t[2].tid == 7 && t[2].on_ns == 100 && t[2].off_ns == 50, "7: 100 on + 50 off");
	CHECK(!strcmp(t[2].comm, "main") && t[2].pid == 7, "comm and pid kept");
	/* adding after sorting still finds each thread */
	CHECK(wallclock__add(w, off, true) == 0, "add again");
	t = wallclock__threads(w, &nr);
	CHECK(nr == 3 && t[0].tid == 9 && t[0].off_ns == 10000, "sums go on after a sort");
	wallclock__free(w);
	profile__free(on);
	profile__free(off);
}

static void test_not_ns(void)
{
	static const uint32_t tids[] = { 7 };
	static const int64_t v[] = { 5 };
	struct profile *p = make("cache-misses", "count", tids, v, 1);
	struct wallclock *w;
	size_t nr;

	CHECK(wallclock__new(&w) == 0, "new");
	CHECK(wallclock__add(w, p, false) == -EINVAL, "an event that is not a clock is refused");
	wallclock__threads(w, &nr);
	CHECK(nr == 0, "nothing added");
	wallclock__free(w);
	profile__free(p);
}

static void test_print(void)
{
	static const uint32_t tids[] = { 1, 2, 3 };
	static const int64_t ns[] = { 1000000000, 500000000, 250000000 };
	struct profile *p = make("offcpu", "nanoseconds", tids, ns, 3);
	struct wallclock *w;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f && wallclock__new(&w) == 0, "new");
	CHECK(wallclock__add(w, p, true) == 0, "add");
	wallclock__print(f, w, 2000000000ULL, 2);
	fclose(f);
	CHECK(strstr(buf, "the 2 longest of 3") != NULL, "the header says how many: %s", buf);
	CHECK(strstr(buf, "off-CPU    1.000 s =    1.000 s ( 50%)") != NULL, "the first row: %s", buf);
	CHECK(strstr(buf, "0.250") == NULL, "rows past top left out");
	free(buf);
	wallclock__free(w);
	profile__free(p);
}

/* A thread that names itself after it starts (pthread_setname_np): its
 * first, short samples carry its creator's name, the rest its own. The
 * row takes the name of its largest sample, whichever came first. */
static void test_renamed_thread(void)
{
	static const char *const names[] = { "offwait", "napper", "offwait" };
	static const int64_t ns[] = { 10, 4000, 20 };
	struct profile *p;
	const struct wallclock_thread *t;
	struct wallclock *w;
	uint32_t loc;
	size_t nr;

	CHECK(profile__new(&(struct profile_opts){ 0 }, &p) == 0, "new");
	profile__add_type(p, "samples", "count");
	profile__add_type(p, "offcpu", "nanoseconds");
	loc = profile__add_location(p, &(struct pf_location){
		.address = 0x1000, .function = profile__add_function(p, "f", NULL) });
	for (size_t i = 0; i < 3; i++) {
		struct pf_sample s = { .pid = 7, .tid = 8, .stack = profile__add_stack(p, &loc, 1),
				       .comm = profile__intern(p, names[i]) };

		s.values[0] = 1;
		s.values[1] = ns[i];
		CHECK(profile__add_sample(p, &s) == 0, "sample");
	}
	CHECK(wallclock__new(&w) == 0, "new");
	CHECK(wallclock__add(w, p, true) == 0, "add");
	t = wallclock__threads(w, &nr);
	CHECK(nr == 1 && !strcmp(t[0].comm, "napper") && t[0].off_ns == 4030,
	      "one row, named napper: %s, %llu ns", nr ? t[0].comm : "-",
	      nr ? (unsigned long long)t[0].off_ns : 0ULL);
	wallclock__free(w);
	profile__free(p);
}

int main(void)
{
	RUN(test_sums);
	RUN(test_renamed_thread);
	RUN(test_not_ns);
	RUN(test_print);
	UNIT_EXIT();
}
