// SPDX-License-Identifier: GPL-2.0
/* The shared helpers: hash map (with deletion), growable array, binary
 * search. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "unit.h"
#include "vec.h"

/* Random adds and deletes against a plain array: every key still there is
 * found with its value, every deleted one is not. A weak hash crowds keys
 * into clusters that wrap around the table, where deletion is hardest. */
static uint64_t weak_hash(const void *k)
{
	return ((uintptr_t)k % 7) + 1;
}

static void test_hashmap_delete(void)
{
	enum { N = 500 };
	static int present[N];
	struct hashmap *m = hashmap__new(weak_hash, hashmap__equal_int);
	unsigned int seed = 1;
	size_t live = 0;

	CHECK(m, "new");
	for (int round = 0; round < 20000; round++) {
		int k = rand_r(&seed) % N;
		void *old = NULL;

		if (rand_r(&seed) % 3) {
			CHECK(!hashmap__set(m, (void *)(uintptr_t)(k + 1), (void *)(uintptr_t)(k + 7),
					    &old), "set");
			live += !present[k];
			present[k] = 1;
		} else {
			bool was = hashmap__delete(m, (void *)(uintptr_t)(k + 1), NULL, &old);

			CHECK(was == !!present[k], "delete %d: %d, expected %d", k, was, present[k]);
			CHECK(!was || old == (void *)(uintptr_t)(k + 7), "old value of %d", k);
			live -= present[k];
			present[k] = 0;
		}
	}
	CHECK(hashmap__size(m) == live, "size %zu, expected %zu", hashmap__size(m), live);
	for (int k = 0; k < N; k++) {
		void *v = hashmap__find(m, (void *)(uintptr_t)(k + 1));

		CHECK(present[k] ? v == (void *)(uintptr_t)(k + 7) : v == NULL, "find %d", k);
	}
	hashmap__free(m);
}

static unsigned long long key_of(const void *e)
{
	return *(const uint64_t *)e;
}

static void test_vec_and_bsearch(void)
{
	struct vec v = VEC_INIT(uint64_t);
	uint64_t more[] = { 1000, 2000 };

	for (uint64_t i = 0; i < 100; i++) {
		uint64_t *e = vec__push(&v);

		CHECK(e && *e == 0, "push zeroed");
		if (e)
			*e = i * 10;
	}
	CHECK(!vec__append(&v, more, 2) && v.nr == 102, "append");
	CHECK(*(uint64_t *)vec__at(&v, 101) == 2000, "at");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 0, key_of) == 0, "first");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 15, key_of) == 1, "between");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 990, key_of) == 99, "exact");
	CHECK(bsearch_last_le(v.data, v.nr, v.elem, 5000, key_of) == 101, "after the last");
	CHECK(bsearch_last_le(v.data, 0, v.elem, 5, key_of) == -1, "empty");
	more[0] = 5;
	CHECK(bsearch_last_le(more, 1, sizeof(uint64_t), 4, key_of) == -1, "before the first");
	vec__free(&v);
	CHECK(!v.data && !v.nr, "freed");
}

int main(void)
{
	RUN(test_hashmap_delete);
	RUN(test_vec_and_bsearch);
	UNIT_EXIT();
}
