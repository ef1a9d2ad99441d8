// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksyms.h"

/* All names and module names live in one arena; syms point into it. */
struct ksyms {
	struct ksym *syms;
	size_t nr;
	char *arena;
	size_t arena_len, arena_cap;
	bool hidden;
};

static ssize_t arena_add(struct ksyms *ks, const char *s)
{
	size_t len = strlen(s) + 1;

	if (ks->arena_len + len > ks->arena_cap) {
		size_t cap = ks->arena_cap ? ks->arena_cap * 2 : 1 << 20;
		char *na;

		while (cap < ks->arena_len + len)
			cap *= 2;
		na = realloc(ks->arena, cap);
		if (!na)
			return -ENOMEM;
		ks->arena = na;
		ks->arena_cap = cap;
	}
	memcpy(ks->arena + ks->arena_len, s, len);
	ks->arena_len += len;
	return ks->arena_len - len;
}

static int cmp_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Until the arena stops moving, names are offsets; then pointers. */
static void fix_pointers(struct ksyms *ks)
{
	for (size_t i = 0; i < ks->nr; i++) {
		ks->syms[i].name = ks->arena + (uintptr_t)ks->syms[i].name;
		if (ks->syms[i].module)
			ks->syms[i].module = ks->arena + (uintptr_t)ks->syms[i].module - 1;
	}
}

static int add_line(struct ksyms *ks, char *line, size_t *cap, bool *nonzero)
{
	char type, name[512], mod[128];
	ssize_t name_off, mod_off = 0;
	uint64_t addr;
	int n;

	mod[0] = '\0';
	n = sscanf(line, "%" SCNx64 " %c %511s [%127[^]]]", &addr, &type, name, mod);
	if (n < 3)
		return 0;
	if (addr)
		*nonzero = true;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	if (ks->nr == *cap) {
		struct ksym *ns = realloc(ks->syms, (*cap ? *cap * 2 : 65536) * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		ks->syms = ns;
		*cap = *cap ? *cap * 2 : 65536;
	}
	name_off = arena_add(ks, name);
	if (name_off >= 0 && mod[0])
		mod_off = arena_add(ks, mod) + 1; /* +1: 0 means "no module" */
	if (name_off < 0 || mod_off < 0)
		return -ENOMEM;
	ks->syms[ks->nr++] = (struct ksym){ addr, (const char *)(uintptr_t)name_off,
					    (const char *)(uintptr_t)mod_off };
	return 0;
}

int ksyms__load(const char *path, struct ksyms **out)
{
	struct ksyms *ks;
	bool nonzero = false;
	size_t cap = 0, n = 0;
	char *line = NULL;
	int err = 0;
	FILE *f;

	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f)
		return -errno;
	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		fclose(f);
		return -ENOMEM;
	}
	while (!err && getline(&line, &n, f) > 0)
		err = add_line(ks, line, &cap, &nonzero);
	free(line);
	fclose(f);
	if (err) {
		ks->nr = 0;
		ksyms__free(ks);
		return err;
	}
	if (!nonzero) {
		/* kptr_restrict: every address reads 0; names would all collide */
		ks->hidden = true;
		ks->nr = 0;
	}
	fix_pointers(ks);
	qsort(ks->syms, ks->nr, sizeof(*ks->syms), cmp_addr);
	*out = ks;
	return 0;
}

const struct ksym *ksyms__find(const struct ksyms *ks, uint64_t addr)
{
	size_t lo = 0, hi = ks->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &ks->syms[lo - 1] : NULL;
}

bool ksyms__hidden(const struct ksyms *ks)
{
	return ks->hidden;
}

void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->arena);
	free(ks);
}
