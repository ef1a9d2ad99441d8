/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one growable array: elements of a fixed size, contiguous, doubled as
 * they grow. Pointers into it move when it grows; keep indexes instead.
 */
#ifndef BPFSAMPLER_VEC_H
#define BPFSAMPLER_VEC_H

#include <stddef.h>

struct vec {
	void *data;
	size_t nr;   /* elements in use */
	size_t cap;  /* elements allocated */
	size_t elem; /* size of one element */
};

#define VEC_INIT(type) ((struct vec){ .elem = sizeof(type) })

/* A new zeroed element at the end, or NULL when out of memory (v is left
 * as it was). */
void *vec__push(struct vec *v);
/* Appends n elements copied from src. Returns 0 or -ENOMEM. */
int vec__append(struct vec *v, const void *src, size_t n);
/* Makes room for at least n elements in all. Returns 0 or -ENOMEM. */
int vec__reserve(struct vec *v, size_t n);
static inline void *vec__at(const struct vec *v, size_t i)
{
	return (char *)v->data + i * v->elem;
}
/* Cuts the memory to the elements in use: for an array kept long after
 * it is made. */
void vec__shrink(struct vec *v);
/* Forgets the elements, keeps the memory. */
static inline void vec__clear(struct vec *v)
{
	v->nr = 0;
}
void vec__free(struct vec *v);

/*
 * The one binary search: the index of the last of nr sorted elements whose
 * key (key_of) is <= key, or -1 when the first is already above it. Tables
 * of ranges sorted by start (symbols, mappings) find the candidate this way.
 */
typedef unsigned long long (*vec_key_fn)(const void *elem);
long bsearch_last_le(const void *base, size_t nr, size_t size, unsigned long long key,
		     vec_key_fn key_of);

#endif
