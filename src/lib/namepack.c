// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "namepack.h"

/* A compressed block's names: at least this many bytes (or one name) */
#define BLOCK_BYTES 2048
#define CACHE_SLOTS 64

/* A compressed block: its first name's ref and where its bytes start.
 * One more entry ends the last block. */
struct block {
	uint32_t start;
	uint32_t off;
};

struct namepack {
	struct vec data;   /* bytes: plain, the names; compressed, the blocks in turn */
	struct vec blocks; /* struct block: compressed sets only */
	uint32_t total;	   /* bytes of names added */
	bool packed;
	uint64_t id; /* the cache's key: never reused */
};

/* Blocks decompressed by this thread, each in the slot its set and
 * block hash to (64 slots of ~2 KiB: the hot blocks of the kernel's names
 * and of a few large files stay). */
struct slot {
	uint64_t id;
	size_t block;
	struct vec buf; /* bytes */
};

static __thread struct slot cache[CACHE_SLOTS];
static uint64_t last_id;
static bool compress_large;

void namepack__compress_large(void)
{
	compress_large = true;
}

static int push_block(struct namepack *np, uint32_t start)
{
	struct block *b;

	if (np->data.nr > UINT32_MAX)
		return -E2BIG;
	b = vec__push(&np->blocks);
	if (!b)
		return -ENOMEM;
	*b = (struct block){ start, (uint32_t)np->data.nr };
	return 0;
}

/* Raw deflate (no header, no checksum): the blocks are ours, in memory.
 * A block is ~2 KiB, so a 2 KiB window and a small hash lose nothing and
 * keep each block's reset cheap; fixed Huffman codes (no tables built
 * per block) halve the time to decompress one, for 0.32 of the size where
 * dynamic codes give 0.29 (libLLVM's names). */
#define RAW_BITS (-11)
#define MEM_LEVEL 2

/* One compressor for all of a set's blocks: made once, reset per block. */
static z_stream *new_deflater(void)
{
	z_stream *z = calloc(1, sizeof(*z));

	if (z && deflateInit2(z, 1, Z_DEFLATED, RAW_BITS, MEM_LEVEL, Z_FIXED) != Z_OK) {
		free(z);
		z = NULL;
	}
	return z;
}

int namepack__begin(struct namepack_build *b, size_t expected)
{
	*b = (struct namepack_build){ .cur = VEC_INIT(char) };
	b->np = calloc(1, sizeof(*b->np));
	if (!b->np)
		return b->err = -ENOMEM;
	b->np->data = VEC_INIT(char);
	b->np->blocks = VEC_INIT(struct block);
	b->np->packed = compress_large && expected >= NAMEPACK_PLAIN_MAX;
	if (b->np->packed && !(b->z = new_deflater())) {
		namepack__abandon(b);
		return b->err = -ENOMEM;
	}
	return 0;
}

static int deflate_block(z_stream *z, const struct vec *in, struct vec *out)
{
	if (deflateReset(z) != Z_OK)
		return -EIO;
	z->next_in = in->data;
	z->avail_in = (uInt)in->nr;
	z->next_out = vec__at(out, out->nr);
	z->avail_out = (uInt)(out->cap - out->nr);
	if (deflate(z, Z_FINISH) != Z_STREAM_END)
		return -EIO;
	out->nr = out->cap - z->avail_out;
	return 0;
}

/* The block being filled, compressed onto the end of the set. */
static int flush(struct namepack_build *b)
{
	struct namepack *np = b->np;
	int err;

	if (!b->cur.nr)
		return 0;
	err = vec__reserve(&np->data, np->data.nr + deflateBound(b->z, b->cur.nr));
	if (!err)
		err = push_block(np, b->cur_start);
	if (!err)
		err = deflate_block(b->z, &b->cur, &np->data);
	if (err)
		return err;
	b->cur_start += b->cur.nr;
	vec__clear(&b->cur);
	return 0;
}

/* The name and its terminator (a zeroed element) onto the end of v. */
static int append(struct vec *v, const char *s, size_t len)
{
	return vec__append(v, s, len) || !vec__push(v) ? -ENOMEM : 0;
}

int namepack__add(struct namepack_build *b, const char *s, size_t len, uint32_t *ref)
{
	struct namepack *np = b->np;

	if (b->err)
		return b->err;
	if ((uint64_t)np->total + len + 1 > UINT32_MAX)
		return b->err = -E2BIG;
	/* a compressed set's name goes into the block being filled, which
	 * is closed first when the name would take it past its size */
	if (np->packed && b->cur.nr && b->cur.nr + len + 1 > BLOCK_BYTES)
		b->err = flush(b);
	if (!b->err)
		b->err = append(np->packed ? &b->cur : &np->data, s, len);
	if (b->err)
		return b->err;
	*ref = np->total;
	np->total += len + 1;
	return 0;
}

/* What the build holds besides the set. */
static void build_free(struct namepack_build *b)
{
	if (b->z) {
		deflateEnd(b->z);
		free(b->z);
	}
	vec__free(&b->cur);
	*b = (struct namepack_build){};
}

void namepack__abandon(struct namepack_build *b)
{
	namepack__free(b->np);
	build_free(b);
}

int namepack__finish(struct namepack_build *b, struct namepack **out)
{
	struct namepack *np = b->np;
	int err = b->err;

	if (!err && np->packed && !(err = flush(b)))
		err = push_block(np, np->total); /* the end */
	if (err) {
		namepack__abandon(b);
		return err;
	}
	/* cut to size: kept for as long as the file is */
	vec__shrink(&np->data);
	vec__shrink(&np->blocks);
	np->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
	build_free(b);
	*out = np;
	return 0;
}

int namepack__adopt(char *data, size_t len, struct namepack **out)
{
	struct namepack *np;
	char *cut;

	if (compress_large && len >= NAMEPACK_PLAIN_MAX)
		return -EOPNOTSUPP;
	if (len > UINT32_MAX)
		return -E2BIG;
	np = calloc(1, sizeof(*np));
	if (!np)
		return -ENOMEM;
	cut = len ? realloc(data, len) : NULL;
	np->data = VEC_INIT(char);
	np->data.data = cut ? cut : data;
	np->data.nr = np->data.cap = len;
	np->blocks = VEC_INIT(struct block);
	np->total = (uint32_t)len;
	np->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
	*out = np;
	return 0;
}

static unsigned long long block_start(const void *b)
{
	return ((const struct block *)b)->start;
}

/* This thread's decompressor, made once and reset per block; it stays
 * for the thread's life. */
static __thread z_stream *inflater;

static int inflate_block(const struct namepack *np, const struct block *bk, struct vec *out)
{
	size_t raw = bk[1].start - bk[0].start;

	if (!inflater && (inflater = calloc(1, sizeof(*inflater))) &&
	    inflateInit2(inflater, RAW_BITS) != Z_OK) {
		free(inflater);
		inflater = NULL;
	}
	if (!inflater || vec__reserve(out, raw) || inflateReset(inflater) != Z_OK)
		return -ENOMEM;
	inflater->next_in = (Bytef *)vec__at(&np->data, bk[0].off);
	inflater->avail_in = bk[1].off - bk[0].off;
	inflater->next_out = out->data;
	inflater->avail_out = (uInt)raw;
	if (inflate(inflater, Z_FINISH) != Z_STREAM_END || inflater->avail_out)
		return -EIO;
	return 0;
}

static const struct slot *decompressed(const struct namepack *np, size_t i)
{
	const struct block *bk = vec__at(&np->blocks, i);
	struct slot *s;

	s = &cache[((np->id * 0x9E3779B97F4A7C15ULL) ^ i) % CACHE_SLOTS];
	if (s->id == np->id && s->block == i)
		return s;
	s->id = 0;
	s->buf.elem = 1;
	if (inflate_block(np, bk, &s->buf))
		return NULL;
	s->id = np->id;
	s->block = i;
	return s;
}

const char *namepack__get(const struct namepack *np, uint32_t ref)
{
	const struct block *bk;
	const struct slot *s;
	long i;

	if (!np || ref >= np->total)
		return NULL;
	if (!np->packed)
		return vec__at(&np->data, ref);
	/* the last block starting at or below ref (the end entry is past it) */
	i = bsearch_last_le(np->blocks.data, np->blocks.nr - 1, sizeof(*bk), ref, block_start);
	if (i < 0 || !(s = decompressed(np, (size_t)i)))
		return NULL;
	bk = vec__at(&np->blocks, (size_t)i);
	return (const char *)s->buf.data + (ref - bk->start);
}

size_t namepack__bytes(const struct namepack *np)
{
	return np ? sizeof(*np) + np->data.cap + np->blocks.cap * sizeof(struct block) : 0;
}

void namepack__free(struct namepack *np)
{
	if (!np)
		return;
	vec__free(&np->data);
	vec__free(&np->blocks);
	free(np);
}
