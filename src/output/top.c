// SPDX-License-Identifier: GPL-2.0
/*
 * --format top: the functions with the most samples, as `go tool pprof -top`
 * prints them. flat is what a function spent itself (it was the leaf), cum
 * what it and what it called spent (it was anywhere in the stack, counted
 * once per sample however deep it recursed). A function is a frame name as
 * profile__frame_name gives it, the name every other writer shows, so a row
 * here is a frame of the flame graph summed. With --inline the functions
 * inlined at a frame are rows too ("NAME (inline)"), the innermost one
 * taking the flat count, as in go tool pprof -top.
 *
 * Lost samples are rows of their own ("[lost] REASON", flat = cum) and
 * samples without frames one "[no frames]" row: the flat column sums to the
 * total in the header, as in the folded output.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "profile.h"
#include "writer.h"

struct row {
	int64_t flat;
	int64_t cum;
	size_t seen; /* 1 + the last sample counted in cum: recursion counts once */
	char name[]; /* also the hashmap key */
};

struct top {
	const struct profile *p;
	bool inlines;		/* --inline: inlined functions are rows too */
	struct hashmap *rows;	/* name -> struct row */
	struct row **by_loc;	/* location id -> its row, filled as met */
};

static struct row *row_of(struct top *t, const char *name)
{
	struct row *r = hashmap__find(t->rows, name);
	size_t len;

	if (r)
		return r;
	len = strlen(name);
	r = calloc(1, sizeof(*r) + len + 1);
	if (!r)
		return NULL;
	memcpy(r->name, name, len + 1);
	if (hashmap__set(t->rows, r->name, r, NULL)) {
		free(r);
		return NULL;
	}
	return r;
}

/* The row of location loc: frame names are made once per location. */
static struct row *row_of_loc(struct top *t, uint32_t loc)
{
	char buf[PF_FRAME_NAME_BYTES];

	if (!t->by_loc[loc])
		t->by_loc[loc] = row_of(t, profile__frame_name(t->p, loc, buf, sizeof(buf)));
	return t->by_loc[loc];
}

static void count(struct row *r, int64_t v, size_t idx, bool leaf)
{
	if (leaf)
		r->flat += v;
	if (r->seen != idx + 1) {
		r->seen = idx + 1;
		r->cum += v;
	}
}

static int add_sample(struct top *t, const struct pf_sample *s, size_t idx)
{
	int64_t v = profile__value(t->p, s);
	const uint32_t *locs;
	struct row *r;
	size_t nr;

	if (s->lost_reason) {
		char name[256];

		snprintf(name, sizeof(name), "[lost] %s", profile__str(t->p, s->lost_reason));
		r = row_of(t, name);
		if (!r)
			return -ENOMEM;
		r->flat += v;
		r->cum += v;
		return 0;
	}
	locs = profile__stack(t->p, s->stack, &nr);
	if (!nr) {
		r = row_of(t, "[no frames]");
		if (!r)
			return -ENOMEM;
		r->flat += v;
		r->cum += v;
		return 0;
	}
	for (size_t i = 0; i < nr; i++) {
		size_t ni = 0;
		const struct pf_line *inl = NULL;

		if (t->inlines)
			inl = profile__inlines(t->p, profile__location(t->p, locs[i])->inlines, &ni);
		/* innermost first: the leaf's innermost inlined function is flat */
		for (size_t k = 0; k <= ni; k++) {
			char *name = NULL;

			if (k < ni) {
				/* whole, however long the name */
				if (asprintf(&name, "%s" PF_INLINE_SUFFIX,
					     profile__inline_function(t->p, &inl[k])) < 0)
					return -ENOMEM;
				r = row_of(t, name);
				free(name);
			} else {
				r = row_of_loc(t, locs[i]);
			}
			if (!r)
				return -ENOMEM;
			count(r, v, idx, i == 0 && k == 0);
		}
	}
	return 0;
}

/* flat descending, then name: the same table for the same profile. */
static int cmp_rows(const void *a, const void *b)
{
	const struct row *ra = *(const struct row *const *)a;
	const struct row *rb = *(const struct row *const *)b;

	if (ra->flat != rb->flat)
		return ra->flat > rb->flat ? -1 : 1;
	return strcmp(ra->name, rb->name);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* "Total: 1234 samples (count), event cpu-clock; showing 20 of 57 functions" */
static void put_header(const struct profile *p, int64_t total, size_t shown, size_t nr, FILE *f)
{
	const struct pf_meta *m = profile__meta_c(p);
	const char *type = "samples", *unit = "count", *event = NULL;

	if (m->nr_types > m->default_type) {
		type = profile__str(p, m->types[m->default_type].type);
		unit = profile__str(p, m->types[m->default_type].unit);
	}
	if (m->event)
		event = profile__str(p, m->event);
	fprintf(f, "Total: %" PRId64 " %s (%s)", total, type, unit);
	if (event && *event)
		fprintf(f, ", event %s", event);
	fprintf(f, "; showing %zu of %zu functions\n", shown, nr);
	fprintf(f, "%10s %7s %7s %10s %7s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "name");
}

static int put_table(struct top *t, unsigned int top, FILE *f)
{
	size_t n = hashmap__size(t->rows), k = 0, shown;
	int64_t total = profile__total(t->p), sum = 0;
	struct row **sorted = calloc(n ? n : 1, sizeof(*sorted));
	void *val;

	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; hashmap__next(t->rows, &i, NULL, &val);)
		sorted[k++] = val;
	qsort(sorted, n, sizeof(*sorted), cmp_rows);
	shown = top && top < n ? top : n;
	put_header(t->p, total, shown, n, f);
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = sorted[i];

		sum += r->flat;
		fprintf(f, "%10" PRId64 " %6.2f%% %6.2f%% %10" PRId64 " %6.2f%%  %s\n", r->flat,
			pct(r->flat, total), pct(sum, total), r->cum, pct(r->cum, total), r->name);
	}
	free(sorted);
	return 0;
}

static void top_free(struct top *t)
{
	void *val;

	if (t->rows) {
		for (size_t i = 0; hashmap__next(t->rows, &i, NULL, &val);)
			free(val);
		hashmap__free(t->rows);
	}
	free(t->by_loc);
}

int top__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f)
{
	struct top t = { .p = p, .inlines = o->inlines };
	int err = 0;

	t.rows = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	t.by_loc = calloc(profile__nr_locations(p) + 1, sizeof(*t.by_loc));
	if (!t.rows || !t.by_loc)
		err = -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++)
		err = add_sample(&t, profile__sample(p, i), i);
	if (!err)
		err = put_table(&t, o->top, f);
	if (!err && (fflush(f) || ferror(f)))
		err = errno ? -errno : -EIO;
	top_free(&t);
	return err;
}
