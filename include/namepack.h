/* SPDX-License-Identifier: GPL-2.0 */
/* Names kept for a long time and read rarely: a symbol table's. In a
 * process that asks for it (the agent: months of memory against a few
 * milliseconds per file), large sets are compressed in blocks of ~2 KiB (a
 * C++ library's mangled names shrink to under a third: libLLVM's 2.7 MB
 * to 0.8); otherwise, and for small sets, names are kept as they are. A
 * name is known by its ref, its offset among the names as added. */
#ifndef BPFSAMPLER_NAMEPACK_H
#define BPFSAMPLER_NAMEPACK_H

#include <stddef.h>
#include <stdint.h>

#include "vec.h"

/* Sets of fewer bytes of names are kept plain: their lookups return a
 * pointer into the set, with no decompression. */
#define NAMEPACK_PLAIN_MAX (64 * 1024)

/* From now on, sets of NAMEPACK_PLAIN_MAX bytes or more are compressed
 * (process-wide, like the allocator's policy: compressing libLLVM's names
 * costs ~40 ms at load and 1-2 us a lookup that misses the cache, which a
 * one-shot profile would pay at its end for nothing). */
void namepack__compress_large(void);

struct namepack;

/* A set of names being added to: expected (the bytes of the names with
 * their terminators, or an estimate) chooses plain or compressed. */
struct namepack_build {
	struct namepack *np;
	struct vec cur;	    /* the block being filled (compressed sets), bytes */
	uint32_t cur_start; /* its first byte's ref */
	void *z;	    /* the compressor, one for every block */
	int err;
};

int namepack__begin(struct namepack_build *b, size_t expected);
/* Adds the len bytes at s as one name (a terminator is added); *ref says
 * where it is. Errors stay in b->err (and are returned). */
int namepack__add(struct namepack_build *b, const char *s, size_t len, uint32_t *ref);
/* The set, ready to read; b is empty after (the set is the caller's). */
int namepack__finish(struct namepack_build *b, struct namepack **out);
void namepack__abandon(struct namepack_build *b);
/* A set made of len bytes of names already laid out as namepack__add
 * lays them out (each followed by its terminator, a name's ref its
 * offset), taken without a copy: data is the set's from then on (cut to
 * len). -EOPNOTSUPP, with data still the caller's, when a set that large
 * is to be compressed. */
int namepack__adopt(char *data, size_t len, struct namepack **out);

/* The name at ref: valid until the next namepack__get of a compressed
 * set by this thread (64 blocks are kept decompressed per thread), or
 * until the set is freed. NULL for a ref past the names, or when its
 * block cannot be read. */
const char *namepack__get(const struct namepack *np, uint32_t ref);
size_t namepack__bytes(const struct namepack *np);
void namepack__free(struct namepack *np);

#endif
