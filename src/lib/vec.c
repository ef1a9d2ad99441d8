// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

int vec__reserve(struct vec *v, size_t n)
{
	size_t cap = v->cap ? v->cap : 8;
	void *data;

	if (n <= v->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	data = realloc(v->data, cap * v->elem);
	if (!data)
		return -ENOMEM;
	v->data = data;
	v->cap = cap;
	return 0;
}

void *vec__push(struct vec *v)
{
	void *e;

	if (vec__reserve(v, v->nr + 1))
		return NULL;
	e = vec__at(v, v->nr++);
	memset(e, 0, v->elem);
	return e;
}

int vec__append(struct vec *v, const void *src, size_t n)
{
	if (!n) /* an empty vector has no data to point into */
		return 0;
	if (vec__reserve(v, v->nr + n))
		return -ENOMEM;
	memcpy(vec__at(v, v->nr), src, n * v->elem);
	v->nr += n;
	return 0;
}

void vec__shrink(struct vec *v)
{
	void *data;

	if (!v->nr || v->nr == v->cap)
		return;
	data = realloc(v->data, v->nr * v->elem);
	if (!data)
		return; /* kept as it was: still right, only larger */
	v->data = data;
	v->cap = v->nr;
}

void vec__free(struct vec *v)
{
	free(v->data);
	v->data = NULL;
	v->nr = v->cap = 0;
}

long bsearch_last_le(const void *base, size_t nr, size_t size, unsigned long long key,
		     vec_key_fn key_of)
{
	size_t lo = 0, hi = nr; /* answer in [lo - 1, hi) */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_of((const char *)base + mid * size) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}
