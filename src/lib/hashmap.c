// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

struct slot {
	const void *key;
	void *value;
	uint64_t hash; /* 0: empty */
};

struct hashmap {
	hashmap_hash_fn hash;
	hashmap_equal_fn equal;
	struct slot *slots;
	size_t cap; /* power of two */
	size_t size;
};

struct hashmap *hashmap__new(hashmap_hash_fn hash, hashmap_equal_fn equal)
{
	struct hashmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->hash = hash;
	m->equal = equal;
	return m;
}

void hashmap__free(struct hashmap *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static uint64_t slot_hash(const struct hashmap *m, const void *key)
{
	uint64_t h = m->hash(key);

	return h ? h : 1; /* 0 marks an empty slot */
}

static struct slot *lookup(const struct hashmap *m, const void *key, uint64_t h)
{
	size_t mask = m->cap - 1;

	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct slot *s = &m->slots[i];

		if (!s->hash || (s->hash == h && m->equal(s->key, key)))
			return s;
	}
}

void *hashmap__find(const struct hashmap *m, const void *key)
{
	struct slot *s;

	if (!m->size)
		return NULL;
	s = lookup(m, key, slot_hash(m, key));
	return s->hash ? s->value : NULL;
}

static int grow(struct hashmap *m)
{
	size_t old_cap = m->cap, new_cap = old_cap ? old_cap * 2 : 16;
	struct slot *old = m->slots;

	m->slots = calloc(new_cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = new_cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].hash)
			*lookup(m, old[i].key, old[i].hash) = old[i];
	free(old);
	return 0;
}

int hashmap__set(struct hashmap *m, const void *key, void *value, void **old)
{
	struct slot *s;
	uint64_t h;

	/* Keep the load under 3/4 so probes stay short. */
	if ((m->size + 1) * 4 > m->cap * 3 && grow(m))
		return -ENOMEM;
	h = slot_hash(m, key);
	s = lookup(m, key, h);
	if (old)
		*old = s->hash ? s->value : NULL;
	if (!s->hash)
		m->size++;
	s->hash = h;
	s->key = key;
	s->value = value;
	return 0;
}

/* Linear probing: the entries after a removed one that probed past it move
 * back into the hole, so no tombstones are needed and lookups stay short. */
bool hashmap__delete(struct hashmap *m, const void *key, const void **old_key, void **old_value)
{
	size_t mask = m->cap - 1, hole, i;
	struct slot *s;

	if (!m->size)
		return false;
	s = lookup(m, key, slot_hash(m, key));
	if (!s->hash)
		return false;
	if (old_key)
		*old_key = s->key;
	if (old_value)
		*old_value = s->value;
	hole = s - m->slots;
	for (i = (hole + 1) & mask; m->slots[i].hash; i = (i + 1) & mask) {
		size_t home = m->slots[i].hash & mask;

		/* the entry at i may fill the hole if its home is not in (hole, i] */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	m->slots[hole].hash = 0;
	m->size--;
	return true;
}

size_t hashmap__size(const struct hashmap *m)
{
	return m->size;
}

bool hashmap__next(const struct hashmap *m, size_t *pos, const void **key, void **value)
{
	for (; *pos < m->cap; (*pos)++) {
		struct slot *s = &m->slots[*pos];

		if (s->hash) {
			if (key)
				*key = s->key;
			if (value)
				*value = s->value;
			(*pos)++;
			return true;
		}
	}
	return false;
}

uint64_t hashmap__hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed; /* FNV-1a, then a final mix */

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

uint64_t hashmap__hash_str(const void *key)
{
	return hashmap__hash_bytes(key, strlen(key), 0);
}

bool hashmap__equal_str(const void *a, const void *b)
{
	return strcmp(a, b) == 0;
}

uint64_t hashmap__hash_int(const void *key)
{
	uint64_t h = (uintptr_t)key;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

bool hashmap__equal_int(const void *a, const void *b)
{
	return a == b;
}
