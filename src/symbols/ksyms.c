// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksyms.h"
#include "namepack.h"
#include "vec.h"

/* The kept names live in a compressed name set (3 MB of names become
 * 1), the modules' in a plain one; entries hold refs into them. 16 bytes
 * a symbol: a kernel has 120,000 or more, and the agent keeps them for its
 * life. */
struct kent {
	uint64_t addr;
	uint32_t name; /* ref in names */
	uint32_t mod;  /* 0: vmlinux; else ref in mods + 1 */
};

struct ksyms {
	struct kent *syms; /* sorted by addr, one per address */
	size_t nr;
	struct namepack *names;
	struct namepack *mods; /* NULL: module names are in names */
	bool hidden;
};

struct kentry {
	uint64_t addr;
	uint32_t name_off;
	uint32_t mod_off; /* 0: vmlinux; else offset + 1 */
	uint32_t seq;	  /* line order, the last tie-break */
	int32_t rank;	  /* alias preference, lower wins */
};

struct loader {
	struct kentry *ents;
	size_t nr, cap;
	char *arena;
	size_t arena_len, arena_cap;
	size_t last_mod; /* module lines come in runs: intern the name */
	size_t parsed;	 /* lines of any type that parsed */
	bool nonzero;	 /* some address (any type) is not 0 */
};

static int arena_add(struct loader *ld, const char *s, size_t len, size_t *off)
{
	if (ld->arena_len + len + 1 > UINT32_MAX)
		return -E2BIG; /* 4 GiB of names: not a kallsyms */
	if (ld->arena_len + len + 1 > ld->arena_cap) {
		size_t cap = ld->arena_cap ? ld->arena_cap * 2 : 1 << 21;
		char *na;

		while (cap < ld->arena_len + len + 1)
			cap *= 2;
		na = realloc(ld->arena, cap);
		if (!na)
			return -ENOMEM;
		ld->arena = na;
		ld->arena_cap = cap;
	}
	memcpy(ld->arena + ld->arena_len, s, len);
	ld->arena[ld->arena_len + len] = '\0';
	*off = ld->arena_len;
	ld->arena_len += len + 1;
	return 0;
}

/* Aliases at one address (memcpy/__memcpy) keep one name, chosen the same way
 * every run: global text, then weak, then local, then file order. */
static int type_rank(char type)
{
	switch (type) {
	case 'T': return 0;
	case 'W': return 1;
	case 't': return 2;
	case 'w': return 3;
	default: return -1; /* not text: data, bss, rodata, absolute... */
	}
}

static int add_module(struct loader *ld, const char *mod, size_t len, size_t *mod_off)
{
	size_t off;
	int err;

	if (ld->last_mod && strncmp(ld->arena + ld->last_mod - 1, mod, len) == 0 &&
	    ld->arena[ld->last_mod - 1 + len] == '\0') {
		*mod_off = ld->last_mod;
		return 0;
	}
	err = arena_add(ld, mod, len, &off);
	if (err)
		return err;
	*mod_off = ld->last_mod = off + 1;
	return 0;
}

/* "ffffffff81000000 T _stext" or "ffffffffc0a01000 t foo\t[mod]". Lines that
 * do not parse are skipped: the format has grown before (module tags, BPF
 * and ftrace trampolines) and one odd line must not cost every name. */
static int add_line(struct loader *ld, const char *line)
{
	const char *name, *end, *mod = NULL;
	size_t mod_len = 0, name_off, mod_off = 0;
	struct kentry *e;
	uint64_t addr;
	char *p;
	int rank, err;

	addr = strtoull(line, &p, 16);
	if (p == line || p[0] != ' ' || !p[1] || p[2] != ' ')
		return 0;
	ld->parsed++;
	if (addr)
		ld->nonzero = true;
	rank = type_rank(p[1]);
	if (rank < 0)
		return 0;
	name = p + 3;
	end = name + strcspn(name, "\t \n");
	if (end == name)
		return 0;
	if (*end == '\t' && end[1] == '[') {
		mod = end + 2;
		mod_len = strcspn(mod, "]\n");
	}
	if (ld->nr == UINT32_MAX)
		return -E2BIG;
	if (ld->nr == ld->cap) {
		size_t cap = ld->cap ? ld->cap * 2 : 1 << 16;
		struct kentry *ne = realloc(ld->ents, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		ld->ents = ne;
		ld->cap = cap;
	}
	err = arena_add(ld, name, end - name, &name_off);
	if (!err && mod)
		err = add_module(ld, mod, mod_len, &mod_off);
	if (err)
		return err;
	e = &ld->ents[ld->nr];
	*e = (struct kentry){ addr, (uint32_t)name_off, (uint32_t)mod_off, (uint32_t)ld->nr, rank };
	ld->nr++;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct kentry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts and keeps the preferred entry per address. */
static size_t keep_preferred(struct loader *ld)
{
	size_t k = 0;

	if (ld->nr)
		qsort(ld->ents, ld->nr, sizeof(*ld->ents), cmp_entry);
	for (size_t i = 0; i < ld->nr; i++)
		if (!k || ld->ents[k - 1].addr != ld->ents[i].addr)
			ld->ents[k++] = ld->ents[i];
	return k;
}

/* The modules' names as kept: their symbols come in runs, so one copy
 * per run. */
struct mod_run {
	struct namepack_build b;
	uint32_t old, ref; /* the run's module: loader offset + 1, ref + 1 */
};

static int keep_module(const struct loader *ld, struct mod_run *mr, uint32_t old, uint32_t *out)
{
	const char *m = ld->arena + old - 1;
	uint32_t ref;

	if (old != mr->old) {
		if (namepack__add(&mr->b, m, strlen(m), &ref))
			return mr->b.err;
		mr->old = old;
		mr->ref = ref + 1;
	}
	*out = mr->ref;
	return 0;
}

static int keep_entries(const struct loader *ld, size_t k, struct namepack_build *names,
			struct mod_run *mr, struct kent *syms)
{
	int err = 0;

	for (size_t i = 0; i < k && !err; i++) {
		const struct kentry *e = &ld->ents[i];
		const char *name = ld->arena + e->name_off;

		syms[i] = (struct kent){ .addr = e->addr };
		err = namepack__add(names, name, strlen(name), &syms[i].name);
		if (!err && e->mod_off)
			err = keep_module(ld, mr, e->mod_off, &syms[i].mod);
	}
	return err;
}

/* The kept entries made in place, over the loader's (16 bytes each
 * where those are 24), and taken by ks. */
static void take_entries(struct loader *ld, size_t k, struct ksyms *ks)
{
	char *base = (char *)ld->ents;

	/* entry i is read whole before kept i is written, and kept i ends
	 * before entry i + 1 starts; memcpy, as the two types share bytes */
	for (size_t i = 0; i < k; i++) {
		struct kentry e;
		struct kent kept;

		memcpy(&e, base + i * sizeof(e), sizeof(e));
		kept = (struct kent){ e.addr, e.name_off, e.mod_off };
		memcpy(base + i * sizeof(kept), &kept, sizeof(kept));
	}
	ks->syms = k ? realloc(base, k * sizeof(*ks->syms)) : NULL;
	if (!ks->syms)
		ks->syms = (struct kent *)base; /* as it was: right, only larger */
	ks->nr = k;
	ld->ents = NULL;
}

/* The kept entries, with their names in ks's sets: the loader's arena
 * itself where the set stays plain (the CLI: a copy made the kernel's 3
 * MB of names 6 at the end of a profile), else compressed copies. */
static int finish(struct loader *ld, struct ksyms *ks)
{
	struct namepack_build names;
	struct mod_run mr = {};
	size_t k = keep_preferred(ld);
	int err;

	if (ld->arena && !namepack__adopt(ld->arena, ld->arena_len, &ks->names)) {
		ld->arena = NULL; /* the set's now; module names are refs in it too */
		take_entries(ld, k, ks);
		return 0;
	}
	ks->syms = malloc((k ? k : 1) * sizeof(*ks->syms));
	if (!ks->syms || namepack__begin(&names, ld->arena_len))
		return -ENOMEM;
	if (namepack__begin(&mr.b, 0)) {
		namepack__abandon(&names);
		return -ENOMEM;
	}
	ks->nr = k;
	err = keep_entries(ld, k, &names, &mr, ks->syms);
	if (!err)
		err = namepack__finish(&names, &ks->names);
	else
		namepack__abandon(&names);
	if (!err)
		return namepack__finish(&mr.b, &ks->mods);
	namepack__abandon(&mr.b);
	return err;
}

int ksyms__load(const char *path, struct ksyms **out)
{
	struct loader ld = {};
	struct ksyms *ks = NULL;
	char *line = NULL;
	size_t n = 0;
	int err = 0;
	FILE *f;

	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f)
		return -errno;
	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		err = -ENOMEM;
		goto out;
	}
	while (getline(&line, &n, f) > 0) {
		err = add_line(&ld, line);
		if (err)
			goto out;
	}
	if (ferror(f)) {
		err = errno ? -errno : -EIO;
		goto out;
	}
	if (ld.parsed && !ld.nonzero) {
		/* kptr_restrict: every address reads 0, and zeroes name nothing */
		ks->hidden = true;
		ld.nr = 0;
	}
	err = finish(&ld, ks);
out:
	free(line);
	free(ld.ents);
	free(ld.arena);
	fclose(f);
	if (err) {
		ksyms__free(ks);
		return err;
	}
	*out = ks;
	return 0;
}

static unsigned long long ksym_addr(const void *e)
{
	return ((const struct kent *)e)->addr;
}

bool ksyms__find(const struct ksyms *ks, uint64_t addr, struct ksym *out)
{
	/* the last symbol at or below addr contains it */
	long i = bsearch_last_le(ks->syms, ks->nr, sizeof(*ks->syms), addr, ksym_addr);
	const struct kent *e = i >= 0 ? &ks->syms[i] : NULL;

	if (!e)
		return false;
	out->addr = e->addr;
	out->name = namepack__get(ks->names, e->name);
	out->module = e->mod ? namepack__get(ks->mods ? ks->mods : ks->names, e->mod - 1) : NULL;
	return out->name != NULL;
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
	namepack__free(ks->names);
	namepack__free(ks->mods);
	free(ks);
}
