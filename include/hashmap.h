/* SPDX-License-Identifier: GPL-2.0 */
/* An open-addressing hash map from opaque keys to pointers. Keys and values
 * are owned by the caller; the map stores the pointers only. */
#ifndef BPFSAMPLER_HASHMAP_H
#define BPFSAMPLER_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t (*hashmap_hash_fn)(const void *key);
typedef bool (*hashmap_equal_fn)(const void *a, const void *b);

struct hashmap;

struct hashmap *hashmap__new(hashmap_hash_fn hash, hashmap_equal_fn equal);
void hashmap__free(struct hashmap *m);
/* The value stored under key, or NULL. */
void *hashmap__find(const struct hashmap *m, const void *key);
/* Adds or replaces; *old (may be NULL) gets the replaced value or NULL.
 * Returns 0 or -ENOMEM. */
int hashmap__set(struct hashmap *m, const void *key, void *value, void **old);
/* Removes key; *old_key and *old_value (may be NULL) get what was stored,
 * for the caller to free. Returns whether it was there. Not while
 * iterating: entries move; collect the keys first. */
bool hashmap__delete(struct hashmap *m, const void *key, const void **old_key, void **old_value);
size_t hashmap__size(const struct hashmap *m);
/* Iteration: for (size_t i = 0; hashmap__next(m, &i, &k, &v);) */
bool hashmap__next(const struct hashmap *m, size_t *pos, const void **key, void **value);

/* Ready-made key kinds. */
uint64_t hashmap__hash_str(const void *key);
bool hashmap__equal_str(const void *a, const void *b);
/* Keys that are integers cast to pointers: (void *)(uintptr_t)n. */
uint64_t hashmap__hash_int(const void *key);
bool hashmap__equal_int(const void *a, const void *b);
uint64_t hashmap__hash_bytes(const void *data, size_t len, uint64_t seed);

#endif
