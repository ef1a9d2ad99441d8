// SPDX-License-Identifier: GPL-2.0
/*
 * The profile model. Entries live in growable arrays indexed by id - 1; the
 * dedup indexes are hash maps whose keys are ids cast to pointers, hashed
 * and compared through the profile the map belongs to, reached from a
 * thread-local "current" pointer set before each use (the hashmap's
 * callbacks take no context). The entry being looked up has the key PROBE
 * and lives in the profile's probe_* fields.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "hashmap.h"
#include "profile.h"
#include "vec.h"

struct seq_ref {
	size_t off; /* into items */
	size_t nr;
};

/* Deduplicated sequences of uint32_t, each with an id: stacks (location
 * ids) and inline chains (struct pf_line pairs). */
struct seqs {
	struct vec refs;  /* struct seq_ref */
	struct vec items; /* uint32_t */
	struct hashmap *idx; /* id -> id */
	const uint32_t *probe; /* the sequence being looked up (id PROBE) */
	size_t probe_nr;
};

struct profile {
	struct profile_opts o;
	struct pf_meta meta;
	int err;
	struct vec strings;   /* char * */
	struct vec mappings;  /* struct pf_mapping */
	struct vec functions; /* struct pf_function */
	struct vec locations; /* struct pf_location */
	struct seqs stacks;   /* of location ids */
	struct seqs inlines;  /* of struct pf_line */
	struct vec samples;   /* struct pf_sample */
	struct hashmap *str_idx;  /* char * -> id */
	struct hashmap *map_idx, *fn_idx, *loc_idx, *sample_idx; /* id -> id */
	struct hashmap *raw_fn;	  /* raw name string id -> function id (no filename) */
	struct hashmap *pretty;	  /* raw name string id + 1 -> its demangled one's + 1 */
	struct pf_sample probe_sample;
	struct pf_mapping probe_mapping;
	struct pf_function probe_function;
	struct pf_location probe_location;
};

static __thread const struct profile *cur;
static __thread const struct seqs *cur_seqs;

#define ID_KEY(id) ((const void *)(uintptr_t)(id))
#define KEY_ID(k) ((uint32_t)(uintptr_t)(k))
/* The key that stands for the entry being looked up, not yet stored. */
#define PROBE UINT32_MAX

static const void *entry(const struct vec *v, uint32_t id, const void *probe)
{
	return id == PROBE ? probe : vec__at(v, id - 1);
}

static uint64_t hash_mapping(const void *k)
{
	const struct pf_mapping *m = entry(&cur->mappings, KEY_ID(k), &cur->probe_mapping);

	return hashmap__hash_bytes(m, sizeof(*m), 1);
}

static bool eq_mapping(const void *a, const void *b)
{
	return !memcmp(entry(&cur->mappings, KEY_ID(a), &cur->probe_mapping),
		       entry(&cur->mappings, KEY_ID(b), &cur->probe_mapping), sizeof(struct pf_mapping));
}

static uint64_t hash_function(const void *k)
{
	const struct pf_function *f = entry(&cur->functions, KEY_ID(k), &cur->probe_function);

	return hashmap__hash_bytes(f, sizeof(*f), 2);
}

static bool eq_function(const void *a, const void *b)
{
	return !memcmp(entry(&cur->functions, KEY_ID(a), &cur->probe_function),
		       entry(&cur->functions, KEY_ID(b), &cur->probe_function),
		       sizeof(struct pf_function));
}

static uint64_t hash_location(const void *k)
{
	const struct pf_location *l = entry(&cur->locations, KEY_ID(k), &cur->probe_location);

	return hashmap__hash_bytes(l, sizeof(*l), 3);
}

static bool eq_location(const void *a, const void *b)
{
	return !memcmp(entry(&cur->locations, KEY_ID(a), &cur->probe_location),
		       entry(&cur->locations, KEY_ID(b), &cur->probe_location),
		       sizeof(struct pf_location));
}

static const uint32_t *seq_of(const struct seqs *q, uint32_t id, size_t *nr)
{
	const struct seq_ref *r;

	if (id == PROBE) {
		*nr = q->probe_nr;
		return q->probe;
	}
	r = vec__at(&q->refs, id - 1);
	*nr = r->nr;
	return (const uint32_t *)q->items.data + r->off;
}

static uint64_t hash_seq(const void *k)
{
	size_t nr;
	const uint32_t *v = seq_of(cur_seqs, KEY_ID(k), &nr);

	return hashmap__hash_bytes(v, nr * sizeof(*v), 4);
}

static bool eq_seq(const void *a, const void *b)
{
	size_t na, nb;
	const uint32_t *va = seq_of(cur_seqs, KEY_ID(a), &na), *vb = seq_of(cur_seqs, KEY_ID(b), &nb);

	return na == nb && !memcmp(va, vb, na * sizeof(*va));
}

static int seqs_init(struct seqs *q)
{
	q->refs = VEC_INIT(struct seq_ref);
	q->items = VEC_INIT(uint32_t);
	q->idx = hashmap__new(hash_seq, eq_seq);
	return q->idx ? 0 : -ENOMEM;
}

static void seqs_free(struct seqs *q)
{
	vec__free(&q->refs);
	vec__free(&q->items);
	hashmap__free(q->idx);
}

/* Samples are merged on these fields only. */
struct sample_key {
	uint32_t stack, comm, lost_reason, pid, tid;
};

static struct sample_key key_of_sample(uint32_t idx)
{
	const struct pf_sample *s = idx == PROBE ? &cur->probe_sample
						 : vec__at(&cur->samples, idx);

	return (struct sample_key){ s->stack, s->comm, s->lost_reason, s->pid, s->tid };
}

static uint64_t hash_sample(const void *k)
{
	struct sample_key sk = key_of_sample(KEY_ID(k));

	return hashmap__hash_bytes(&sk, sizeof(sk), 5);
}

static bool eq_sample(const void *a, const void *b)
{
	struct sample_key ka = key_of_sample(KEY_ID(a)), kb = key_of_sample(KEY_ID(b));

	return !memcmp(&ka, &kb, sizeof(ka));
}

int profile__new(const struct profile_opts *o, struct profile **out)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	if (o)
		p->o = *o;
	p->strings = VEC_INIT(char *);
	p->mappings = VEC_INIT(struct pf_mapping);
	p->functions = VEC_INIT(struct pf_function);
	p->locations = VEC_INIT(struct pf_location);
	p->samples = VEC_INIT(struct pf_sample);
	p->str_idx = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	p->map_idx = hashmap__new(hash_mapping, eq_mapping);
	p->fn_idx = hashmap__new(hash_function, eq_function);
	p->loc_idx = hashmap__new(hash_location, eq_location);
	p->sample_idx = hashmap__new(hash_sample, eq_sample);
	p->raw_fn = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	p->pretty = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!p->str_idx || !p->map_idx || !p->fn_idx || !p->loc_idx || seqs_init(&p->stacks) ||
	    seqs_init(&p->inlines) || !p->sample_idx || !p->raw_fn || !p->pretty ||
	    (profile__intern(p, ""), p->err)) {
		profile__free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->strings.nr; i++)
		free(*(char **)vec__at(&p->strings, i));
	vec__free(&p->strings);
	vec__free(&p->mappings);
	vec__free(&p->functions);
	vec__free(&p->locations);
	seqs_free(&p->stacks);
	seqs_free(&p->inlines);
	vec__free(&p->samples);
	hashmap__free(p->str_idx);
	hashmap__free(p->map_idx);
	hashmap__free(p->fn_idx);
	hashmap__free(p->loc_idx);
	hashmap__free(p->sample_idx);
	hashmap__free(p->raw_fn);
	hashmap__free(p->pretty);
	free(p);
}

int profile__err(const struct profile *p)
{
	return p->err;
}

static uint32_t oom(struct profile *p)
{
	p->err = -ENOMEM;
	return 0;
}

/* String ids are 0-based as in pprof's string table: the first string
 * stored is "" and gets id 0. */
uint32_t profile__intern(struct profile *p, const char *s)
{
	void *id;
	char *copy, **slot;

	if (!s)
		s = "";
	id = hashmap__find(p->str_idx, s);
	if (id)
		return KEY_ID(id) - 1;
	copy = strdup(s);
	slot = copy ? vec__push(&p->strings) : NULL;
	if (!slot) {
		free(copy);
		return oom(p);
	}
	*slot = copy;
	if (hashmap__set(p->str_idx, copy, (void *)(uintptr_t)p->strings.nr, NULL)) {
		p->strings.nr--;
		free(copy);
		return oom(p);
	}
	return p->strings.nr - 1;
}

const char *profile__str(const struct profile *p, uint32_t id)
{
	return id < p->strings.nr ? *(char **)vec__at(&p->strings, id) : "";
}

size_t profile__nr_strings(const struct profile *p)
{
	return p->strings.nr;
}

int profile__add_type(struct profile *p, const char *type, const char *unit)
{
	struct pf_value_type *t;

	if (p->meta.nr_types >= PF_MAX_TYPES)
		return -E2BIG;
	t = &p->meta.types[p->meta.nr_types];
	t->type = profile__intern(p, type);
	t->unit = profile__intern(p, unit);
	return p->err ? p->err : (int)p->meta.nr_types++;
}

struct pf_meta *profile__meta(struct profile *p)
{
	return &p->meta;
}

const struct pf_meta *profile__meta_c(const struct profile *p)
{
	return &p->meta;
}

/* Finds the probe in idx, else stores it (push) under a new id. */
static uint32_t find_or_add(struct profile *p, struct hashmap *idx, struct vec *v,
			    const void *probe)
{
	void *found, *e;

	cur = p;
	found = hashmap__find(idx, ID_KEY(PROBE));
	if (found)
		return KEY_ID(found);
	e = vec__push(v);
	if (!e)
		return oom(p);
	memcpy(e, probe, v->elem);
	if (hashmap__set(idx, ID_KEY(v->nr), (void *)(uintptr_t)v->nr, NULL)) {
		v->nr--;
		return oom(p);
	}
	return v->nr;
}

uint32_t profile__add_mapping(struct profile *p, const struct pf_mapping *m)
{
	struct pf_mapping *pm = &p->probe_mapping;

	memset(pm, 0, sizeof(*pm)); /* padding is hashed and compared too */
	pm->start = m->start;
	pm->limit = m->limit;
	pm->offset = m->offset;
	pm->file = m->file;
	pm->build_id = m->build_id;
	pm->kind = m->kind;
	pm->has_functions = m->has_functions;
	return find_or_add(p, p->map_idx, &p->mappings, pm);
}

uint32_t profile__add_function(struct profile *p, const char *raw, const char *filename)
{
	return profile__add_function_at(p, raw, filename, 0);
}

uint32_t profile__add_function_at(struct profile *p, const char *raw, const char *filename,
				  uint32_t start_line)
{
	uint32_t raw_id = profile__intern(p, raw), name_id = raw_id;
	bool bare = !filename && !start_line; /* as a symbol table names it */
	void *known;
	char *pretty;

	if (bare && (known = hashmap__find(p->raw_fn, ID_KEY(raw_id + 1))))
		return KEY_ID(known);
	/* demangled once per distinct raw name, however many files it has */
	if ((known = hashmap__find(p->pretty, ID_KEY(raw_id + 1)))) {
		name_id = KEY_ID(known) - 1;
	} else {
		if (p->o.demangle && (pretty = demangle(raw))) {
			name_id = profile__intern(p, pretty);
			free(pretty);
		}
		if (hashmap__set(p->pretty, ID_KEY(raw_id + 1), (void *)(uintptr_t)(name_id + 1),
				 NULL))
			return oom(p);
	}
	p->probe_function = (struct pf_function){ .name = name_id,
					       .system_name = raw_id,
					       .filename = profile__intern(p, filename),
					       .start_line = start_line };
	if (p->err)
		return 0;
	uint32_t id = find_or_add(p, p->fn_idx, &p->functions, &p->probe_function);

	if (id && bare &&
	    hashmap__set(p->raw_fn, ID_KEY(raw_id + 1), (void *)(uintptr_t)id, NULL))
		return oom(p);
	return id;
}

uint32_t profile__add_location(struct profile *p, const struct pf_location *l)
{
	struct pf_location *pl = &p->probe_location;

	memset(pl, 0, sizeof(*pl));
	pl->address = l->address;
	pl->elf_addr = l->elf_addr;
	pl->mapping = l->mapping;
	pl->function = l->function;
	pl->line = l->line;
	pl->inlines = l->inlines;
	pl->kind = l->kind;
	return find_or_add(p, p->loc_idx, &p->locations, pl);
}

static uint32_t seqs_add(struct profile *p, struct seqs *q, const uint32_t *v, size_t nr)
{
	struct seq_ref *r;
	void *found;

	if (!nr)
		return 0;
	cur_seqs = q;
	q->probe = v;
	q->probe_nr = nr;
	found = hashmap__find(q->idx, ID_KEY(PROBE));
	if (found)
		return KEY_ID(found);
	r = vec__push(&q->refs);
	if (!r)
		return oom(p);
	r->off = q->items.nr;
	r->nr = nr;
	if (vec__append(&q->items, v, nr) ||
	    hashmap__set(q->idx, ID_KEY(q->refs.nr), (void *)(uintptr_t)q->refs.nr, NULL)) {
		q->refs.nr--;
		q->items.nr = r->off;
		return oom(p);
	}
	return q->refs.nr;
}

static const uint32_t *seqs_get(const struct seqs *q, uint32_t id, size_t *nr)
{
	if (!id || id > q->refs.nr) {
		*nr = 0;
		return NULL;
	}
	return seq_of(q, id, nr);
}

uint32_t profile__add_stack(struct profile *p, const uint32_t *locs, size_t nr)
{
	return seqs_add(p, &p->stacks, locs, nr);
}

uint32_t profile__add_inlines(struct profile *p, const struct pf_line *lines, size_t nr)
{
	/* two uint32_t each, no padding */
	return seqs_add(p, &p->inlines, (const uint32_t *)lines, nr * 2);
}

int profile__add_sample(struct profile *p, const struct pf_sample *s)
{
	struct pf_sample *e;
	void *found;

	if (p->err)
		return p->err;
	cur = p;
	if (!s->time_ns) {
		p->probe_sample = *s;
		/* sample indexes are 0-based: stored in the map as index + 1 */
		found = hashmap__find(p->sample_idx, ID_KEY(PROBE));
		if (found) {
			e = vec__at(&p->samples, KEY_ID(found) - 1);
			for (size_t i = 0; i < PF_MAX_TYPES; i++)
				e->values[i] += s->values[i];
			return 0;
		}
	}
	e = vec__push(&p->samples);
	if (!e)
		return oom(p);
	*e = *s;
	if (!s->time_ns && hashmap__set(p->sample_idx, ID_KEY(p->samples.nr - 1),
					(void *)(uintptr_t)p->samples.nr, NULL)) {
		p->samples.nr--;
		return oom(p);
	}
	return 0;
}

size_t profile__nr_mappings(const struct profile *p)
{
	return p->mappings.nr;
}

const struct pf_mapping *profile__mapping(const struct profile *p, uint32_t id)
{
	return id && id <= p->mappings.nr ? vec__at(&p->mappings, id - 1) : NULL;
}

size_t profile__nr_functions(const struct profile *p)
{
	return p->functions.nr;
}

const struct pf_function *profile__function(const struct profile *p, uint32_t id)
{
	return id && id <= p->functions.nr ? vec__at(&p->functions, id - 1) : NULL;
}

size_t profile__nr_locations(const struct profile *p)
{
	return p->locations.nr;
}

const struct pf_location *profile__location(const struct profile *p, uint32_t id)
{
	return id && id <= p->locations.nr ? vec__at(&p->locations, id - 1) : NULL;
}

size_t profile__nr_stacks(const struct profile *p)
{
	return p->stacks.refs.nr;
}

const uint32_t *profile__stack(const struct profile *p, uint32_t id, size_t *nr)
{
	return seqs_get(&p->stacks, id, nr);
}

const struct pf_line *profile__inlines(const struct profile *p, uint32_t id, size_t *nr)
{
	const uint32_t *v = seqs_get(&p->inlines, id, nr);

	*nr /= 2;
	return (const struct pf_line *)v;
}

size_t profile__nr_samples(const struct profile *p)
{
	return p->samples.nr;
}

const struct pf_sample *profile__sample(const struct profile *p, size_t i)
{
	return i < p->samples.nr ? vec__at(&p->samples, i) : NULL;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

const char *profile__frame_name(const struct profile *p, uint32_t loc, char *buf, size_t size)
{
	const struct pf_location *l = profile__location(p, loc);
	const struct pf_function *f;
	const struct pf_mapping *m;
	const char *file;

	if (!l)
		return "[no frame]";
	f = profile__function(p, l->function);
	m = profile__mapping(p, l->mapping);
	file = m ? profile__str(p, m->file) : NULL;
	if (f) {
		const char *name = profile__str(p, f->name);

		/* kernel modules and BPF programs: "name [module]" as perf */
		if (l->kind == PF_KIND_KERNEL && file && strcmp(file, PF_KERNEL_FILE)) {
			snprintf(buf, size, "%s [%s]", name, file);
			return buf;
		}
		return name;
	}
	if (l->kind == PF_KIND_KERNEL)
		snprintf(buf, size, "[kernel]+0x%" PRIx64, l->address);
	else if (!m)
		snprintf(buf, size, "[unmapped]+0x%" PRIx64, l->address);
	else if (!strcmp(file, PF_ANON_FILE))
		snprintf(buf, size, "[anon]+0x%" PRIx64, l->address);
	else
		snprintf(buf, size, "%s+0x%" PRIx64, basename_of(file), l->elf_addr);
	return buf;
}

const char *profile__inline_function(const struct profile *p, const struct pf_line *l)
{
	const struct pf_function *f = profile__function(p, l->function);

	return f ? profile__str(p, f->name) : "[unknown]";
}

int64_t profile__value(const struct profile *p, const struct pf_sample *s)
{
	return s->values[p->meta.default_type];
}

int64_t profile__total(const struct profile *p)
{
	int64_t total = 0;

	for (size_t i = 0; i < p->samples.nr; i++)
		total += profile__value(p, vec__at(&p->samples, i));
	return total;
}

static uint32_t copy_string(struct profile *dst, const struct profile *src, uint32_t id)
{
	return id ? profile__intern(dst, profile__str(src, id)) : 0;
}

/* A function is added by its raw name: demangled again, once. */
static uint32_t copy_function(struct profile *dst, const struct profile *src, uint32_t id)
{
	const struct pf_function *f = profile__function(src, id);

	return profile__add_function_at(dst, profile__str(src, f->system_name),
					f->filename ? profile__str(src, f->filename) : NULL,
					f->start_line);
}

static uint32_t copy_location(struct profile *dst, const struct profile *src, uint32_t id)
{
	const struct pf_location *l = profile__location(src, id);
	const struct pf_mapping *m = profile__mapping(src, l->mapping);
	const struct pf_function *f = profile__function(src, l->function);
	struct pf_location nl = *l;

	if (m) {
		struct pf_mapping nm = *m;

		nm.file = copy_string(dst, src, m->file);
		nm.build_id = copy_string(dst, src, m->build_id);
		nl.mapping = profile__add_mapping(dst, &nm);
	}
	if (f)
		nl.function = copy_function(dst, src, l->function);
	if (l->inlines) {
		struct pf_line lines[PF_COPY_MAX_INLINES];
		size_t nr;
		const struct pf_line *sl = profile__inlines(src, l->inlines, &nr);

		if (nr > PF_COPY_MAX_INLINES)
			nr = PF_COPY_MAX_INLINES;
		for (size_t i = 0; i < nr; i++)
			lines[i] = (struct pf_line){ copy_function(dst, src, sl[i].function),
						     sl[i].line };
		nl.inlines = profile__add_inlines(dst, lines, nr);
	}
	return profile__add_location(dst, &nl);
}

int profile__copy_sample(struct profile *dst, const struct profile *src,
			 const struct pf_sample *s)
{
	uint32_t locs[PF_COPY_MAX_FRAMES];
	size_t nr;
	const uint32_t *src_locs = profile__stack(src, s->stack, &nr);
	struct pf_sample ns = *s;

	if (nr > PF_COPY_MAX_FRAMES)
		nr = PF_COPY_MAX_FRAMES;
	for (size_t i = 0; i < nr; i++)
		locs[i] = copy_location(dst, src, src_locs[i]);
	ns.stack = profile__add_stack(dst, locs, nr);
	ns.comm = copy_string(dst, src, s->comm);
	ns.lost_reason = copy_string(dst, src, s->lost_reason);
	return profile__err(dst) ? profile__err(dst) : profile__add_sample(dst, &ns);
}

int profile__copy_meta(struct profile *dst, const struct profile *src)
{
	const struct pf_meta *m = &src->meta;
	struct pf_meta *d = &dst->meta;

	for (size_t i = 0; i < m->nr_types; i++) {
		d->types[i].type = copy_string(dst, src, m->types[i].type);
		d->types[i].unit = copy_string(dst, src, m->types[i].unit);
	}
	d->nr_types = m->nr_types;
	d->default_type = m->default_type;
	d->period_type.type = copy_string(dst, src, m->period_type.type);
	d->period_type.unit = copy_string(dst, src, m->period_type.unit);
	d->period = m->period;
	d->time_ns = m->time_ns;
	d->duration_ns = m->duration_ns;
	d->event = copy_string(dst, src, m->event);
	return dst->err;
}
