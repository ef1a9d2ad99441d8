// SPDX-License-Identifier: GPL-2.0
/*
 * --format pprof: profile.proto (github.com/google/pprof, proto/profile.proto)
 * encoded by hand, then gzip-compressed with zlib.
 *
 * The protobuf wire format needs two things here: varints, and
 * length-delimited fields (strings, packed repeated integers, nested
 * messages). Each field starts with a varint key, field number << 3 | wire
 * type. Zero integers are left out, as proto3 readers take a missing field
 * for 0. Why not protobuf-c: docs/design.md, "pprof encoding".
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof.h"
#include "profile.h"
#include "version.h"
#include "writer.h"

enum wire_type { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* Field numbers of profile.proto, message by message. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };
enum {
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
};
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum {
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

/* Strings the model does not hold: appended after its own, so that every
 * string id of the model is its index in string_table as it is. */
enum extra_string { X_PID, X_TID, X_COMM, X_LOST_REASON, X_COMMENT, X_NR };

/* The encoded bytes. The first failed allocation sticks in err and makes
 * every later write a no-op, so the encoding reads straight through and
 * checks once at the end. */
struct pb {
	uint8_t *buf;
	size_t len, cap;
	int err;
};

static bool reserve(struct pb *b, size_t n)
{
	size_t cap;
	uint8_t *nb;

	if (b->err)
		return false;
	if (b->len + n <= b->cap)
		return true;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	nb = realloc(b->buf, cap);
	if (!nb) {
		b->err = -ENOMEM;
		return false;
	}
	b->buf = nb;
	b->cap = cap;
	return true;
}

static size_t varint(uint8_t out[10], uint64_t v)
{
	size_t n = 0;

	do {
		out[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	return n;
}

static void put_raw(struct pb *b, const void *p, size_t n)
{
	if (n && reserve(b, n)) {
		memcpy(b->buf + b->len, p, n);
		b->len += n;
	}
}

static void put_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];

	put_raw(b, tmp, varint(tmp, v));
}

static void put_key(struct pb *b, uint32_t field, enum wire_type t)
{
	put_varint(b, (uint64_t)field << 3 | t);
}

/* An integer field (int64, uint64, bool all encode the same), left out
 * when 0. */
static void put_int(struct pb *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	put_key(b, field, WIRE_VARINT);
	put_varint(b, v);
}

static void put_bytes(struct pb *b, uint32_t field, const void *p, size_t n)
{
	put_key(b, field, WIRE_LEN);
	put_varint(b, n);
	put_raw(b, p, n);
}

/*
 * A length-delimited field whose length is known only once its content is
 * written (a message, packed integers): begin returns where the content
 * starts; end moves it forward by the size of its length and writes the
 * length there. The content is small (one sample, one location), so the
 * move is cheap, and nesting works because inner fields end first.
 */
static size_t begin(struct pb *b, uint32_t field)
{
	put_key(b, field, WIRE_LEN);
	return b->len;
}

static void end(struct pb *b, size_t start)
{
	uint8_t tmp[10];
	size_t n, k;

	if (b->err)
		return;
	n = b->len - start;
	k = varint(tmp, n);
	if (!reserve(b, k))
		return;
	memmove(b->buf + start + k, b->buf + start, n);
	memcpy(b->buf + start, tmp, k);
	b->len += k;
}

static void put_value_type(struct pb *b, uint32_t field, const struct pf_value_type *t)
{
	size_t m = begin(b, field);

	put_int(b, VALUE_TYPE_TYPE, t->type);
	put_int(b, VALUE_TYPE_UNIT, t->unit);
	end(b, m);
}

static void put_label(struct pb *b, uint64_t key, uint64_t str, uint64_t num)
{
	size_t m = begin(b, SAMPLE_LABEL);

	put_int(b, LABEL_KEY, key);
	put_int(b, LABEL_STR, str);
	put_int(b, LABEL_NUM, num);
	end(b, m);
}

/* x: the string id of the first extra string. */
static void put_sample(struct pb *b, const struct profile *p, const struct pf_sample *s,
		       uint64_t x)
{
	size_t nr, m = begin(b, PROFILE_SAMPLE), k;
	const uint32_t *locs = profile__stack(p, s->stack, &nr);

	if (nr) {
		k = begin(b, SAMPLE_LOCATION_ID); /* packed, as proto3 repeats */
		for (size_t i = 0; i < nr; i++)
			put_varint(b, locs[i]);
		end(b, k);
	}
	k = begin(b, SAMPLE_VALUE);
	for (size_t t = 0; t < profile__meta_c(p)->nr_types; t++)
		put_varint(b, (uint64_t)s->values[t]);
	end(b, k);
	/* A lost sample has no thread: only why it was lost. */
	if (s->lost_reason) {
		put_label(b, x + X_LOST_REASON, s->lost_reason, 0);
	} else {
		put_label(b, x + X_PID, 0, s->pid);
		put_label(b, x + X_TID, 0, s->tid);
		if (s->comm)
			put_label(b, x + X_COMM, s->comm, 0);
	}
	end(b, m);
}

static void put_mapping(struct pb *b, uint32_t id, const struct pf_mapping *pm)
{
	size_t m = begin(b, PROFILE_MAPPING);

	put_int(b, MAPPING_ID, id);
	put_int(b, MAPPING_MEMORY_START, pm->start);
	put_int(b, MAPPING_MEMORY_LIMIT, pm->limit);
	put_int(b, MAPPING_FILE_OFFSET, pm->offset);
	put_int(b, MAPPING_FILENAME, pm->file);
	put_int(b, MAPPING_BUILD_ID, pm->build_id);
	put_int(b, MAPPING_HAS_FUNCTIONS, pm->has_functions);
	end(b, m);
}

static void put_line(struct pb *b, uint32_t function, uint32_t line)
{
	size_t k = begin(b, LOCATION_LINE);

	put_int(b, LINE_FUNCTION_ID, function);
	put_int(b, LINE_LINE, line);
	end(b, k);
}

static void put_location(struct pb *b, const struct profile *p, uint32_t id,
			 const struct pf_location *l)
{
	size_t m = begin(b, PROFILE_LOCATION), nr;
	const struct pf_line *inl = profile__inlines(p, l->inlines, &nr);

	put_int(b, LOCATION_ID, id);
	put_int(b, LOCATION_MAPPING_ID, l->mapping);
	put_int(b, LOCATION_ADDRESS, l->address);
	/* profile.proto: one Line per inlined function, innermost first, the
	 * caller last. No symbol: no line, and pprof shows the address. */
	for (size_t i = 0; i < nr; i++)
		put_line(b, inl[i].function, inl[i].line);
	if (l->function)
		put_line(b, l->function, l->line);
	end(b, m);
}

static void put_function(struct pb *b, uint32_t id, const struct pf_function *f)
{
	size_t m = begin(b, PROFILE_FUNCTION);

	put_int(b, FUNCTION_ID, id);
	put_int(b, FUNCTION_NAME, f->name);
	put_int(b, FUNCTION_SYSTEM_NAME, f->system_name);
	put_int(b, FUNCTION_FILENAME, f->filename);
	put_int(b, FUNCTION_START_LINE, f->start_line);
	end(b, m);
}

/* Every string, "" at 0 included: its index is its id. */
static void put_strings(struct pb *b, const struct profile *p)
{
	const struct pf_meta *meta = profile__meta_c(p);
	const char *extra[X_NR] = {
		[X_PID] = "pid", [X_TID] = "tid", [X_COMM] = "comm",
		[X_LOST_REASON] = "lost_reason",
	};
	char comment[256];

	snprintf(comment, sizeof(comment), "bpfsampler %s, event %s", BPFSAMPLER_VERSION,
		 profile__str(p, meta->event));
	extra[X_COMMENT] = comment;
	for (size_t i = 0; i < profile__nr_strings(p); i++) {
		const char *s = profile__str(p, i);

		put_bytes(b, PROFILE_STRING_TABLE, s, strlen(s));
	}
	for (size_t i = 0; i < X_NR; i++)
		put_bytes(b, PROFILE_STRING_TABLE, extra[i], strlen(extra[i]));
}

/*
 * pprof takes the first mapping for the main binary (its "File:" line, the
 * binary it symbolizes against). Ids are explicit, so the order is free:
 * the first user mapping of a file that is no shared library ("*.so*") and
 * no pseudo-file ("[anon]"); 0 if there is none.
 */
static uint32_t main_mapping(const struct profile *p)
{
	for (uint32_t id = 1; id <= profile__nr_mappings(p); id++) {
		const struct pf_mapping *m = profile__mapping(p, id);
		const char *file = profile__str(p, m->file), *base = strrchr(file, '/');

		base = base ? base + 1 : file;
		if (m->kind == PF_KIND_USER && *base && *base != '[' && !strstr(base, ".so"))
			return id;
	}
	return 0;
}

static void put_profile(struct pb *b, const struct profile *p)
{
	const struct pf_meta *meta = profile__meta_c(p);
	uint64_t x = profile__nr_strings(p);
	uint32_t first;

	for (size_t t = 0; t < meta->nr_types; t++)
		put_value_type(b, PROFILE_SAMPLE_TYPE, &meta->types[t]);
	for (size_t i = 0; i < profile__nr_samples(p); i++)
		put_sample(b, p, profile__sample(p, i), x);
	first = main_mapping(p);
	if (first)
		put_mapping(b, first, profile__mapping(p, first));
	for (uint32_t id = 1; id <= profile__nr_mappings(p); id++)
		if (id != first)
			put_mapping(b, id, profile__mapping(p, id));
	for (uint32_t id = 1; id <= profile__nr_locations(p); id++)
		put_location(b, p, id, profile__location(p, id));
	for (uint32_t id = 1; id <= profile__nr_functions(p); id++)
		put_function(b, id, profile__function(p, id));
	put_strings(b, p);
	put_int(b, PROFILE_TIME_NANOS, meta->time_ns);
	put_int(b, PROFILE_DURATION_NANOS, meta->duration_ns);
	if (meta->period_type.type)
		put_value_type(b, PROFILE_PERIOD_TYPE, &meta->period_type);
	put_int(b, PROFILE_PERIOD, (uint64_t)meta->period);
	put_int(b, PROFILE_COMMENT, x + X_COMMENT);
	/* pprof names the default by its type's string, not by index */
	if (meta->nr_types)
		put_int(b, PROFILE_DEFAULT_SAMPLE_TYPE, meta->types[meta->default_type].type);
}

/* in as a gzip member (RFC 1952) in *out. */
static int gzip(const uint8_t *in, size_t len, void **out, size_t *out_len)
{
	z_stream z = {};
	uint8_t *buf = NULL;
	size_t cap;
	int ret, err = 0;

	/* windowBits 16 + 15: the gzip wrapper around deflate's largest window */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, len);
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	z.next_in = (Bytef *)in;
	z.next_out = buf;
	/* avail_in and avail_out are 32-bit: feed what they hold, in turns */
	do {
		size_t in_left = len - ((const uint8_t *)z.next_in - in);
		size_t out_left = cap - (z.next_out - buf);

		z.avail_in = in_left > UINT_MAX ? UINT_MAX : in_left;
		z.avail_out = out_left > UINT_MAX ? UINT_MAX : out_left;
		ret = deflate(&z, z.avail_in == in_left ? Z_FINISH : Z_NO_FLUSH);
	} while (ret == Z_OK);
	if (ret != Z_STREAM_END) {
		/* not with deflateBound's room: zlib itself failed */
		err = ret == Z_MEM_ERROR ? -ENOMEM : -EIO;
		goto cleanup;
	}
	*out = buf;
	*out_len = z.total_out;
	buf = NULL;
cleanup:
	free(buf);
	deflateEnd(&z);
	return err;
}

int pprof__encode(const struct profile *p, void **gz, size_t *len)
{
	struct pb b = {};
	int err;

	put_profile(&b, p);
	err = b.err;
	if (!err)
		err = gzip(b.buf, b.len, gz, len);
	free(b.buf);
	return err;
}

int pprof__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f)
{
	void *gz = NULL;
	size_t len;
	int err = pprof__encode(p, &gz, &len);

	if (err)
		return err;
	errno = 0;
	if (fwrite(gz, 1, len, f) != len || fflush(f) || ferror(f))
		err = errno ? -errno : -EIO;
	free(gz);
	return err;
}
