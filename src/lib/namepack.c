// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "namepack.h"

/* A compressed block's names: at least this many bytes (or one name) */
#define BLOCK_BYTES 2048
#define CACHE_SLOTS 16

/* A compressed block: its first name's ref and where its bytes start.
 * One more entry ends the last block. */
struct block {
	uint32_t start;
	uint32_t off;
};

struct namepack {
	char *data; /* plain: the names; compressed: the blocks in turn */
	size_t len, cap;
	struct block *blocks; /* compressed sets only */
	size_t nblocks, blocks_cap;
	uint32_t total; /* bytes of names added */
	bool packed;
	uint64_t id; /* the cache's key: never reused */
};

/* Blocks decompressed by this thread, the oldest replaced first. */
struct slot {
	uint64_t id;
	size_t block;
	char *buf;
	size_t cap;
};

static __thread struct slot cache[CACHE_SLOTS];
static __thread unsigned int cache_next;
static uint64_t last_id;

static int reserve(char **p, size_t *cap, size_t need, size_t first)
{
	size_t n = *cap ? *cap : first;
	char *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int push_block(struct namepack *np, uint32_t start, size_t off)
{
	if (np->nblocks == np->blocks_cap) {
		size_t cap = np->blocks_cap ? np->blocks_cap * 2 : 64;
		struct block *nb = realloc(np->blocks, cap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		np->blocks = nb;
		np->blocks_cap = cap;
	}
	if (off > UINT32_MAX)
		return -E2BIG;
	np->blocks[np->nblocks++] = (struct block){ start, (uint32_t)off };
	return 0;
}

int namepack__begin(struct namepack_build *b, size_t expected)
{
	*b = (struct namepack_build){};
	b->np = calloc(1, sizeof(*b->np));
	if (!b->np)
		return b->err = -ENOMEM;
	b->np->packed = expected >= NAMEPACK_PLAIN_MAX;
	return 0;
}

/* The block being filled, compressed onto the end of the set. */
static int flush(struct namepack_build *b)
{
	struct namepack *np = b->np;
	uLongf n = compressBound(b->cur_len);
	int err;

	if (!b->cur_len)
		return 0;
	err = reserve(&np->data, &np->cap, np->len + n, 4096);
	if (!err)
		err = push_block(np, b->cur_start, np->len);
	if (err)
		return err;
	if (compress2((Bytef *)np->data + np->len, &n, (const Bytef *)b->cur, b->cur_len, 1) != Z_OK)
		return -EIO;
	np->len += n;
	b->cur_start += b->cur_len;
	b->cur_len = 0;
	return 0;
}

static int add_plain(struct namepack *np, const char *s, size_t len, uint32_t *ref)
{
	int err = reserve(&np->data, &np->cap, np->len + len + 1, 4096);

	if (err)
		return err;
	memcpy(np->data + np->len, s, len);
	np->data[np->len + len] = '\0';
	*ref = np->total;
	np->len += len + 1;
	return 0;
}

static int add_packed(struct namepack_build *b, const char *s, size_t len, uint32_t *ref)
{
	int err = 0;

	if (b->cur_len && b->cur_len + len + 1 > BLOCK_BYTES)
		err = flush(b);
	if (!err)
		err = reserve(&b->cur, &b->cur_cap, b->cur_len + len + 1, BLOCK_BYTES);
	if (err)
		return err;
	memcpy(b->cur + b->cur_len, s, len);
	b->cur[b->cur_len + len] = '\0';
	*ref = b->cur_start + (uint32_t)b->cur_len;
	b->cur_len += len + 1;
	return 0;
}

int namepack__add(struct namepack_build *b, const char *s, size_t len, uint32_t *ref)
{
	if (b->err)
		return b->err;
	if ((uint64_t)b->np->total + len + 1 > UINT32_MAX)
		return b->err = -E2BIG;
	b->err = b->np->packed ? add_packed(b, s, len, ref) : add_plain(b->np, s, len, ref);
	if (!b->err)
		b->np->total += len + 1;
	return b->err;
}

void namepack__abandon(struct namepack_build *b)
{
	namepack__free(b->np);
	free(b->cur);
	*b = (struct namepack_build){};
}

int namepack__finish(struct namepack_build *b, struct namepack **out)
{
	struct namepack *np = b->np;
	int err = b->err;

	if (!err && np->packed && !(err = flush(b)))
		err = push_block(np, np->total, np->len); /* the end */
	if (err) {
		namepack__abandon(b);
		return err;
	}
	/* cut to size: kept for as long as the file is */
	if (np->len && np->len < np->cap) {
		char *d = realloc(np->data, np->len);

		np->data = d ? d : np->data;
	}
	if (np->nblocks && np->nblocks < np->blocks_cap) {
		struct block *bk = realloc(np->blocks, np->nblocks * sizeof(*bk));

		np->blocks = bk ? bk : np->blocks;
	}
	np->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
	free(b->cur);
	*b = (struct namepack_build){};
	*out = np;
	return 0;
}

/* The block holding ref: the last one starting at or below it. */
static long find_block(const struct namepack *np, uint32_t ref)
{
	size_t lo = 0, hi = np->nblocks ? np->nblocks - 1 : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (np->blocks[mid].start <= ref)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (long)lo - 1 : -1;
}

static const struct slot *decompressed(const struct namepack *np, size_t i)
{
	const struct block *bk = &np->blocks[i];
	uLongf raw = bk[1].start - bk[0].start;
	struct slot *s;

	for (size_t k = 0; k < CACHE_SLOTS; k++)
		if (cache[k].id == np->id && cache[k].block == i)
			return &cache[k];
	s = &cache[cache_next++ % CACHE_SLOTS];
	s->id = 0;
	if (reserve(&s->buf, &s->cap, raw, BLOCK_BYTES * 2))
		return NULL;
	if (uncompress((Bytef *)s->buf, &raw, (const Bytef *)np->data + bk[0].off,
		       bk[1].off - bk[0].off) != Z_OK || raw != bk[1].start - bk[0].start)
		return NULL;
	s->id = np->id;
	s->block = i;
	return s;
}

const char *namepack__get(const struct namepack *np, uint32_t ref)
{
	const struct slot *s;
	long i;

	if (!np || ref >= np->total)
		return NULL;
	if (!np->packed)
		return np->data + ref;
	i = find_block(np, ref);
	if (i < 0 || !(s = decompressed(np, (size_t)i)))
		return NULL;
	return s->buf + (ref - np->blocks[i].start);
}

size_t namepack__bytes(const struct namepack *np)
{
	return np ? sizeof(*np) + np->len + np->nblocks * sizeof(*np->blocks) : 0;
}

void namepack__free(struct namepack *np)
{
	if (!np)
		return;
	free(np->data);
	free(np->blocks);
	free(np);
}
