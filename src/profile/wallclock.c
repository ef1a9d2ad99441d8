// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "profile.h"
#include "wallclock.h"

struct wallclock {
	struct hashmap *by_tid; /* tid + 1 -> index + 1 in v */
	struct wallclock_thread *v;
	size_t nr, cap;
	bool sorted;
};

int wallclock__new(struct wallclock **out)
{
	struct wallclock *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->by_tid = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!w->by_tid) {
		free(w);
		return -ENOMEM;
	}
	*out = w;
	return 0;
}

void wallclock__free(struct wallclock *w)
{
	if (!w)
		return;
	hashmap__free(w->by_tid);
	free(w->v);
	free(w);
}

/* The thread of sample s, made when new; NULL when memory runs out. */
static struct wallclock_thread *thread_of(struct wallclock *w, const struct profile *p,
					  const struct pf_sample *s)
{
	void *key = (void *)(uintptr_t)(s->tid + 1UL);
	uintptr_t i = (uintptr_t)hashmap__find(w->by_tid, key);
	struct wallclock_thread *t;

	if (i)
		return &w->v[i - 1];
	if (w->nr == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct wallclock_thread *v = realloc(w->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		w->v = v;
		w->cap = cap;
	}
	t = &w->v[w->nr];
	memset(t, 0, sizeof(*t));
	t->pid = s->pid;
	t->tid = s->tid;
	if (hashmap__set(w->by_tid, key, (void *)(uintptr_t)(w->nr + 1), NULL))
		return NULL;
	return &w->v[w->nr++];
}

/* The index of p's sample type in nanoseconds, or -1. */
static int ns_type(const struct profile *p)
{
	const struct pf_meta *m = profile__meta_c(p);

	for (size_t i = 0; i < m->nr_types; i++)
		if (!strcmp(profile__str(p, m->types[i].unit), "nanoseconds"))
			return (int)i;
	return -1;
}

int wallclock__add(struct wallclock *w, const struct profile *p, bool offcpu)
{
	int ns = ns_type(p);

	if (ns < 0)
		return -EINVAL;
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct pf_sample *s = profile__sample(p, i);
		struct wallclock_thread *t;
		int64_t v = s->values[ns];

		if (s->lost_reason || v <= 0)
			continue;
		t = thread_of(w, p, s);
		if (!t)
			return -ENOMEM;
		if ((uint64_t)v > t->comm_ns) {
			snprintf(t->comm, sizeof(t->comm), "%s", profile__str(p, s->comm));
			t->comm_ns = v;
		}
		*(offcpu ? &t->off_ns : &t->on_ns) += v;
		w->sorted = false;
	}
	return 0;
}

static int by_wall(const void *a, const void *b)
{
	const struct wallclock_thread *x = a, *y = b;
	uint64_t wx = x->on_ns + x->off_ns, wy = y->on_ns + y->off_ns;

	if (wx != wy)
		return wx < wy ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

const struct wallclock_thread *wallclock__threads(struct wallclock *w, size_t *nr)
{
	if (!w->sorted && w->nr) { /* none: no array, and qsort(NULL, 0) is undefined */
		/* the index no longer names positions: rebuilt on the next add */
		qsort(w->v, w->nr, sizeof(*w->v), by_wall);
		for (size_t i = 0; i < w->nr; i++)
			hashmap__set(w->by_tid, (void *)(uintptr_t)(w->v[i].tid + 1UL),
				     (void *)(uintptr_t)(i + 1), NULL);
		w->sorted = true;
	}
	*nr = w->nr;
	return w->v;
}

void wallclock__print(FILE *f, struct wallclock *w, uint64_t window_ns, size_t top)
{
	size_t nr;
	const struct wallclock_thread *t = wallclock__threads(w, &nr);

	if (!nr)
		return;
	fprintf(f, "  wall clock by thread (on-CPU from the clock's samples + off-CPU, of the "
		"%.3f s window; the %zu longest of %zu):\n", window_ns / 1e9,
		nr < top ? nr : top, nr);
	for (size_t i = 0; i < nr && i < top; i++) {
		uint64_t wall = t[i].on_ns + t[i].off_ns;

		fprintf(f, "    %7u %7u %-16s on-CPU %8.3f s + off-CPU %8.3f s = %8.3f s (%3.0f%%)\n",
			t[i].pid, t[i].tid, t[i].comm, t[i].on_ns / 1e9, t[i].off_ns / 1e9,
			wall / 1e9, window_ns ? 100.0 * wall / window_ns : 0);
	}
}
