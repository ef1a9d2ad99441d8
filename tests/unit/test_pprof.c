// SPDX-License-Identifier: GPL-2.0
/* The pprof writer: a profile built by hand, encoded, gunzipped and read
 * back with a decoder of the test's own that walks the wire format, so
 * that every field pprof reads is checked by number, as profile.proto
 * numbers it. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof.h"
#include "profile.h"
#include "unit.h"
#include "writer.h"

#define MAX 512

struct field {
	uint32_t num;
	int wire;
	uint64_t v;	   /* a varint's value */
	const uint8_t *p;  /* a length-delimited field's bytes */
	size_t len;
};

struct buf {
	const uint8_t *p, *end;
};

static bool get_varint(struct buf *b, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; b->p < b->end && shift < 64; shift += 7) {
		uint8_t c = *b->p++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* The next field of b; false at the end or on bad bytes (checked by the
 * caller through b->p != b->end). */
static bool next(struct buf *b, struct field *f)
{
	uint64_t key;

	if (b->p >= b->end || !get_varint(b, &key))
		return false;
	f->num = key >> 3;
	f->wire = key & 7;
	if (f->wire == 0)
		return get_varint(b, &f->v);
	if (f->wire != 2 || !get_varint(b, &f->v) || f->v > (uint64_t)(b->end - b->p))
		return false;
	f->p = b->p;
	f->len = f->v;
	b->p += f->len;
	return true;
}

static struct buf sub(const struct field *f)
{
	return (struct buf){ f->p, f->p + f->len };
}

/* Packed varints of f into v (at most max); returns how many. */
static size_t packed(const struct field *f, uint64_t *v, size_t max)
{
	struct buf b = sub(f);
	size_t n = 0;

	while (b.p < b.end && n < max && get_varint(&b, &v[n]))
		n++;
	return n;
}

struct label {
	uint64_t key, str, num;
};

struct dsample {
	uint64_t locs[MAX], values[4];
	size_t nr_locs, nr_values;
	struct label labels[8];
	size_t nr_labels;
};

/* Message fields by number (indexes 1..15): a small message's varints. */
struct msg {
	uint64_t f[16];
	uint64_t line_fn, line_line; /* Location.line: the last one */
	uint64_t lines[4][2];	     /* the first four: function, line */
	size_t nr_lines;
};

struct decoded {
	struct { const char *p; size_t len; } strings[MAX];
	size_t nr_strings;
	struct msg types[4], mappings[8], locations[MAX], functions[8], period_type;
	size_t nr_types, nr_mappings, nr_locations, nr_functions;
	struct dsample samples[4];
	size_t nr_samples;
	uint64_t top[16]; /* the Profile's own varint fields */
	bool bad;
};

static void get_msg(const struct field *f, struct msg *m)
{
	struct buf b = sub(f);
	struct field g;

	memset(m, 0, sizeof(*m));
	while (next(&b, &g)) {
		if (g.wire == 0 && g.num < 16)
			m->f[g.num] = g.v;
		if (g.wire == 2 && g.num == 4) { /* Location.line: Line */
			struct msg line;

			get_msg(&g, &line);
			m->line_fn = line.f[1];
			m->line_line = line.f[2];
			if (m->nr_lines < 4) {
				m->lines[m->nr_lines][0] = line.f[1];
				m->lines[m->nr_lines++][1] = line.f[2];
			}
		}
	}
}

static void get_sample(const struct field *f, struct dsample *s)
{
	struct buf b = sub(f);
	struct field g;

	memset(s, 0, sizeof(*s));
	while (next(&b, &g)) {
		if (g.num == 1 && g.wire == 2)
			s->nr_locs = packed(&g, s->locs, MAX);
		else if (g.num == 2 && g.wire == 2)
			s->nr_values = packed(&g, s->values, 4);
		else if (g.num == 3 && s->nr_labels < 8) {
			struct msg m;

			get_msg(&g, &m);
			s->labels[s->nr_labels++] = (struct label){ m.f[1], m.f[2], m.f[3] };
		}
	}
}

#define ADD(arr, nr) (nr < sizeof(arr) / sizeof(arr[0]) ? &arr[nr++] : NULL)

static void decode(const uint8_t *p, size_t len, struct decoded *d)
{
	struct buf b = { p, p + len };
	struct field f;
	void *slot;

	memset(d, 0, sizeof(*d));
	while (next(&b, &f)) {
		if (f.wire == 0) {
			if (f.num < 16)
				d->top[f.num] = f.v;
			continue;
		}
		switch (f.num) {
		case 1: if ((slot = ADD(d->types, d->nr_types))) get_msg(&f, slot); break;
		case 2: if ((slot = ADD(d->samples, d->nr_samples))) get_sample(&f, slot); break;
		case 3: if ((slot = ADD(d->mappings, d->nr_mappings))) get_msg(&f, slot); break;
		case 4: if ((slot = ADD(d->locations, d->nr_locations))) get_msg(&f, slot); break;
		case 5: if ((slot = ADD(d->functions, d->nr_functions))) get_msg(&f, slot); break;
		case 6:
			if (d->nr_strings < MAX) {
				d->strings[d->nr_strings].p = (const char *)f.p;
				d->strings[d->nr_strings++].len = f.len;
			}
			break;
		case 11: get_msg(&f, &d->period_type); break;
		default: break;
		}
	}
	d->bad = b.p != b.end;
}

static bool str_is(const struct decoded *d, uint64_t id, const char *s)
{
	return id < d->nr_strings && d->strings[id].len == strlen(s) &&
	       !memcmp(d->strings[id].p, s, strlen(s));
}

static const struct label *label(const struct dsample *s, const struct decoded *d,
				 const char *key)
{
	for (size_t i = 0; i < s->nr_labels; i++)
		if (str_is(d, s->labels[i].key, key))
			return &s->labels[i];
	return NULL;
}

/* Encodes p, checks the gzip wrapper and inflates it into out. */
static uint8_t *encode_raw(const struct profile *p, size_t *len)
{
	void *gz = NULL;
	size_t gz_len = 0, cap = 1 << 20;
	uint8_t *raw = malloc(cap);
	z_stream z = {};

	CHECK(pprof__encode(p, &gz, &gz_len) == 0, "encode");
	CHECK(gz_len > 18 && ((uint8_t *)gz)[0] == 0x1f && ((uint8_t *)gz)[1] == 0x8b,
	      "gzip magic");
	inflateInit2(&z, 16 + 15);
	z.next_in = gz;
	z.avail_in = gz_len;
	z.next_out = raw;
	z.avail_out = cap;
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END, "gunzip");
	*len = z.total_out;
	inflateEnd(&z);
	free(gz);
	return raw;
}

#define KSTART 0xffff800000000000ULL
#define BUILD_ID "0123456789abcdef0123456789abcdef01234567"

struct fixture {
	struct profile *p;
	uint32_t map, fn, loc_named, loc_bare, loc_kernel, loc_lost;
};

static void build(struct fixture *x)
{
	struct pf_meta *m;
	uint32_t stack[3], kmap;

	CHECK(profile__new(&(struct profile_opts){ .demangle = true }, &x->p) == 0, "new");
	profile__add_type(x->p, "samples", "count");
	profile__add_type(x->p, "cpu", "nanoseconds");
	m = profile__meta(x->p);
	m->default_type = 1;
	m->period_type = m->types[1];
	m->period = 10101010;
	m->time_ns = 1700000000123456789ULL;
	m->duration_ns = 2000000000;
	m->event = profile__intern(x->p, "cpu-clock");

	/* added first, yet not the main binary */
	profile__add_mapping(x->p, &(struct pf_mapping){
		.start = 0x7f0000000000, .limit = 0x7f0000100000,
		.file = profile__intern(x->p, "/usr/lib/x86_64-linux-gnu/libc.so.6") });
	x->map = profile__add_mapping(x->p, &(struct pf_mapping){
		.start = 0x400000, .limit = 0x401000, .offset = 0x1000,
		.file = profile__intern(x->p, "/usr/bin/app"),
		.build_id = profile__intern(x->p, BUILD_ID), .has_functions = true });
	kmap = profile__add_mapping(x->p, &(struct pf_mapping){
		.start = KSTART, .limit = UINT64_MAX, .kind = PF_KIND_KERNEL,
		.file = profile__intern(x->p, PF_KERNEL_FILE), .has_functions = true });
	x->fn = profile__add_function(x->p, "_ZN3foo3barEv", "foo.cc");
	x->loc_named = profile__add_location(x->p, &(struct pf_location){
		.address = 0x400123, .mapping = x->map, .function = x->fn, .line = 42 });
	x->loc_bare = profile__add_location(x->p, &(struct pf_location){
		.address = 0x400200, .mapping = x->map });
	x->loc_kernel = profile__add_location(x->p, &(struct pf_location){
		.address = 0xffffffff81001234ULL, .mapping = kmap, .kind = PF_KIND_KERNEL,
		.function = profile__add_function(x->p, "do_syscall_64", NULL) });
	stack[0] = x->loc_kernel;
	stack[1] = x->loc_named;
	stack[2] = x->loc_bare;
	profile__add_sample(x->p, &(struct pf_sample){
		.stack = profile__add_stack(x->p, stack, 3), .pid = 42, .tid = 43,
		.comm = profile__intern(x->p, "app"), .values = { 3, 30303030 } });
	x->loc_lost = profile__add_location(x->p, &(struct pf_location){
		.function = profile__add_function(x->p, "[lost]", NULL), .kind = PF_KIND_LOST });
	profile__add_sample(x->p, &(struct pf_sample){
		.stack = profile__add_stack(x->p, &x->loc_lost, 1),
		.lost_reason = profile__intern(x->p, "counts map full"),
		.values = { 5, 50505050 } });
	CHECK(profile__err(x->p) == 0, "building the profile");
}

static void test_header(void)
{
	struct decoded *d = malloc(sizeof(*d));
	struct fixture x;
	uint8_t *raw;
	size_t len;

	build(&x);
	raw = encode_raw(x.p, &len);
	decode(raw, len, d);
	CHECK(!d->bad, "the bytes decode to their end");
	CHECK(d->nr_strings > profile__nr_strings(x.p), "strings: %zu", d->nr_strings);
	for (size_t i = 0; i < profile__nr_strings(x.p); i++)
		CHECK(str_is(d, i, profile__str(x.p, i)), "string %zu is the model's", i);
	CHECK(d->strings[0].len == 0, "string 0 is empty");
	CHECK(d->nr_types == 2 && str_is(d, d->types[0].f[1], "samples") &&
	      str_is(d, d->types[0].f[2], "count") && str_is(d, d->types[1].f[1], "cpu") &&
	      str_is(d, d->types[1].f[2], "nanoseconds"), "sample types");
	CHECK(str_is(d, d->period_type.f[1], "cpu") &&
	      str_is(d, d->period_type.f[2], "nanoseconds"), "period type");
	CHECK(d->top[12] == 10101010, "period: %llu", (unsigned long long)d->top[12]);
	CHECK(d->top[9] == 1700000000123456789ULL, "time_nanos");
	CHECK(d->top[10] == 2000000000, "duration_nanos");
	CHECK(str_is(d, d->top[14], "cpu"), "default_sample_type names the type");
	CHECK(d->top[13] && d->top[13] < d->nr_strings &&
	      !strncmp(d->strings[d->top[13]].p, "bpfsampler ", 11) &&
	      memmem(d->strings[d->top[13]].p, d->strings[d->top[13]].len, "cpu-clock", 9),
	      "comment names the profiler and the event");
	free(raw);
	free(d);
	profile__free(x.p);
}

static void test_tables(void)
{
	struct decoded *d = malloc(sizeof(*d));
	const struct msg *m, *k, *fn;
	struct fixture x;
	uint8_t *raw;
	size_t len;

	build(&x);
	raw = encode_raw(x.p, &len);
	decode(raw, len, d);
	CHECK(d->nr_mappings == 3 && d->nr_locations == 4 && d->nr_functions == 3,
	      "%zu mappings, %zu locations, %zu functions", d->nr_mappings, d->nr_locations,
	      d->nr_functions);
	m = &d->mappings[0];
	CHECK(m->f[1] == x.map, "the main binary's mapping comes first, not libc's");
	CHECK(m->f[1] == x.map && m->f[2] == 0x400000 && m->f[3] == 0x401000 &&
	      m->f[4] == 0x1000, "mapping id and range");
	CHECK(str_is(d, m->f[5], "/usr/bin/app"), "mapping file");
	CHECK(str_is(d, m->f[6], BUILD_ID), "mapping build-ID");
	CHECK(m->f[7] == 1, "has_functions");
	k = &d->mappings[2];
	CHECK(k->f[2] == KSTART && k->f[3] == UINT64_MAX && str_is(d, k->f[5], PF_KERNEL_FILE),
	      "kernel mapping: 64-bit varints round-trip");

	m = &d->locations[x.loc_named - 1];
	CHECK(m->f[1] == x.loc_named && m->f[2] == x.map && m->f[3] == 0x400123 &&
	      m->line_fn == x.fn && m->line_line == 42, "named location");
	m = &d->locations[x.loc_bare - 1];
	CHECK(m->f[1] == x.loc_bare && m->f[3] == 0x400200 && !m->line_fn,
	      "a location with no function has no line");
	CHECK(d->locations[x.loc_kernel - 1].f[3] == 0xffffffff81001234ULL, "kernel address");

	fn = &d->functions[x.fn - 1];
	CHECK(fn->f[1] == x.fn && str_is(d, fn->f[2], "foo::bar()") &&
	      str_is(d, fn->f[3], "_ZN3foo3barEv") && str_is(d, fn->f[4], "foo.cc"),
	      "function: demangled name, mangled system_name, filename");
	free(raw);
	free(d);
	profile__free(x.p);
}

/* Inline frames: one Line per function inlined at the address, innermost
 * first, the function it is all in last (profile.proto), and functions
 * with their file and start line. */
static void test_inline_lines(void)
{
	struct decoded *d = malloc(sizeof(*d));
	struct profile *p = NULL;
	uint32_t outer, mid, inner, loc, stack;
	const struct msg *m;
	uint8_t *raw;
	size_t len;

	CHECK(!profile__new(&(struct profile_opts){ .demangle = true }, &p), "new");
	profile__add_type(p, "samples", "count");
	outer = profile__add_function_at(p, "run", "/src/a.c", 30);
	mid = profile__add_function_at(p, "_ZN2ns3midEv", "/src/a.h", 10);
	inner = profile__add_function_at(p, "inner", "/src/b.h", 3);
	struct pf_line chain[] = { { inner, 5 }, { mid, 12 } };
	loc = profile__add_location(p, &(struct pf_location){
		.address = 0x1234, .function = outer, .line = 37,
		.inlines = profile__add_inlines(p, chain, 2) });
	/* the same chain again is the same id */
	CHECK(profile__add_inlines(p, chain, 2) == profile__location(p, loc)->inlines,
	      "inline chains are deduplicated");
	stack = profile__add_stack(p, &loc, 1);
	profile__add_sample(p, &(struct pf_sample){ .stack = stack, .pid = 1, .values = { 7 } });
	CHECK(!profile__err(p), "building");
	raw = encode_raw(p, &len);
	decode(raw, len, d);
	CHECK(!d->bad && d->nr_locations == 1, "decoded, %zu locations", d->nr_locations);
	m = &d->locations[0];
	CHECK(m->nr_lines == 3, "%zu lines", m->nr_lines);
	CHECK(m->lines[0][0] == inner && m->lines[0][1] == 5, "innermost first: %llu:%llu",
	      (unsigned long long)m->lines[0][0], (unsigned long long)m->lines[0][1]);
	CHECK(m->lines[1][0] == mid && m->lines[1][1] == 12, "then its caller");
	CHECK(m->lines[2][0] == outer && m->lines[2][1] == 37, "the real function last");
	CHECK(d->nr_functions == 3, "%zu functions", d->nr_functions);
	if (d->nr_functions == 3) {
		m = &d->functions[mid - 1];
		CHECK(str_is(d, m->f[2], "ns::mid()") && str_is(d, m->f[3], "_ZN2ns3midEv") &&
			      str_is(d, m->f[4], "/src/a.h") && m->f[5] == 10,
		      "inlined function: demangled, file, start_line %llu",
		      (unsigned long long)m->f[5]);
	}
	free(raw);
	free(d);
	profile__free(p);
}

static void test_samples(void)
{
	struct decoded *d = malloc(sizeof(*d));
	const struct dsample *s, *l;
	const struct label *lb;
	struct fixture x;
	uint8_t *raw;
	uint64_t fid;
	size_t len;

	build(&x);
	raw = encode_raw(x.p, &len);
	decode(raw, len, d);
	CHECK(d->nr_samples == 2, "samples: %zu", d->nr_samples);
	s = &d->samples[0];
	CHECK(s->nr_locs == 3 && s->locs[0] == x.loc_kernel && s->locs[1] == x.loc_named &&
	      s->locs[2] == x.loc_bare, "locations leaf first");
	CHECK(s->nr_values == 2 && s->values[0] == 3 && s->values[1] == 30303030, "values");
	lb = label(s, d, "pid");
	CHECK(lb && lb->num == 42 && !lb->str, "pid label");
	lb = label(s, d, "tid");
	CHECK(lb && lb->num == 43, "tid label");
	lb = label(s, d, "comm");
	CHECK(lb && str_is(d, lb->str, "app"), "comm label");
	CHECK(!label(s, d, "lost_reason"), "a kept sample has no lost_reason");

	l = &d->samples[1];
	CHECK(l->nr_locs == 1 && l->locs[0] == x.loc_lost, "lost: one location");
	fid = d->locations[x.loc_lost - 1].line_fn;
	CHECK(fid && fid <= d->nr_functions && str_is(d, d->functions[fid - 1].f[2], "[lost]"),
	      "lost: the location is [lost]");
	lb = label(l, d, "lost_reason");
	CHECK(lb && str_is(d, lb->str, "counts map full"), "lost_reason label");
	CHECK(!label(l, d, "pid") && l->values[0] == 5 && l->values[1] == 50505050,
	      "lost: no thread, its values");
	free(raw);
	free(d);
	profile__free(x.p);
}

/* Messages longer than 127 bytes: their length takes two bytes. */
static void test_deep_stack(void)
{
	struct decoded *d = malloc(sizeof(*d));
	uint32_t locs[300];
	struct profile *p;
	uint8_t *raw;
	size_t len;
	bool ok = true;

	profile__new(&(struct profile_opts){}, &p);
	profile__add_type(p, "samples", "count");
	for (int i = 0; i < 300; i++)
		locs[i] = profile__add_location(p, &(struct pf_location){ .address = 0x1000 + i });
	profile__add_sample(p, &(struct pf_sample){ .stack = profile__add_stack(p, locs, 300),
						    .pid = 7, .tid = 7, .values = { 1 } });
	raw = encode_raw(p, &len);
	decode(raw, len, d);
	CHECK(!d->bad && d->nr_samples == 1 && d->samples[0].nr_locs == 300, "300 frames: %zu",
	      d->samples[0].nr_locs);
	for (int i = 0; i < 300; i++)
		ok &= d->samples[0].locs[i] == locs[i];
	CHECK(ok, "frames in order");
	CHECK(d->nr_locations == 300 && d->locations[299].f[3] == 0x1000 + 299, "locations");
	free(raw);
	free(d);
	profile__free(p);
}

/* A stream that takes nothing, as a full disk: a cookie, not /dev/full
 * (a test writes through no path in /dev). */
static ssize_t full_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie, (void)buf, (void)size;
	errno = ENOSPC;
	return -1;
}

static void test_enospc(void)
{
	FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = full_write });
	struct fixture x;
	int err;

	CHECK(f, "fopencookie");
	if (!f)
		return;
	build(&x);
	err = pprof__write_profile(x.p, &(struct writer_opts){}, f);
	CHECK(err == -ENOSPC, "got %d (%s)", err, strerror(-err));
	fclose(f);
	profile__free(x.p);
}

int main(void)
{
	RUN(test_header);
	RUN(test_tables);
	RUN(test_samples);
	RUN(test_inline_lines);
	RUN(test_deep_stack);
	RUN(test_enospc);
	UNIT_EXIT();
}
