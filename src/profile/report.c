// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_lines.h"
#include "hashmap.h"
#include "log.h"
#include "profile.h"
#include "pyreg.h"
#include "report.h"
#include "sampler.h"
#include "bpfsampler/offcpu_abi.h"
#include "stream.h"
#include "symbolize.h"
#include "bpfsampler/python_abi.h"

/* markers + user frames + kernel frames */
#define MAX_FRAMES (BPFS_MAX_USER_DEPTH + BPFS_SEG_FRAMES + 8)
/* Inline frames kept per location (as many as dwarf_lines gives) */
#define MAX_INLINES 32
/* The kernel's half of x86-64's address space: where kernel frames are. */
#define KERNEL_START 0xffff800000000000ULL

struct build_ctx {
	struct sampler *s;
	struct stream *stream;
	struct symbolizer *sym;
	const struct report_opts *o;
	struct profile *p;
	struct report_stats *rs;
	struct hashmap *pids; /* distinct pids */
	struct hashmap *stack_pairs; /* distinct (kernel, user) stack ids */
	/* What a stack's frames were named as, by what names them: a
	 * timed profile names each distinct stack once, not each sample.
	 * NULL where each key is distinct anyway (the counts). */
	struct hashmap *named; /* struct stack_ref * -> profile stack id + 1 */
	uint64_t ips[BPFS_MAX_USER_DEPTH];
	uint32_t fr[MAX_FRAMES]; /* location ids, outermost first */
	uint32_t leaf_first[MAX_FRAMES];
};

/* Lost samples: what flame graphs show for what the BPF side dropped. */
static const struct {
	enum bpfs_stat stat;
	const char *reason;
} lost_reasons[] = {
	{ BPFS_STAT_LOST_COUNTS_FULL, "counts map full" },
	{ BPFS_STAT_LOST_STACKS_FULL, "stacks map full" },
	{ BPFS_STAT_LOST_COLLISION, "stack id collision" },
	{ BPFS_STAT_LOST_BUSY, "map busy" },
	{ BPFS_STAT_LOST_RING_FULL, "ring full" },
};

static int read_segment(void *ctx, uint64_t id, struct bpfs_stack *out)
{
	return ctx ? sampler__read_stack(ctx, id, out) : -ENOENT;
}

/* Frames of stack id, innermost first, into c->ips. */
static size_t unwind(struct build_ctx *c, uint64_t id, bool *missing)
{
	size_t n = stream__unwind(c->stream, id, read_segment, c->s, c->ips,
				  BPFS_MAX_USER_DEPTH, missing);

	if (*missing)
		c->rs->stacks_missing++;
	return n;
}

/* A frame of the profiler's own ([truncated], ...): a function and nothing
 * else. */
static uint32_t marker(struct profile *p, const char *text)
{
	return profile__add_location(p, &(struct pf_location){
		.function = profile__add_function(p, text, NULL),
		.kind = PF_KIND_MARKER });
}

/* A function of the DWARF, with where it is declared. */
static uint32_t dw_function(struct profile *p, const struct dw_frame *d, const char *name)
{
	return profile__add_function_at(p, name, d->fn_file ? d->fn_file : d->file, d->fn_line);
}

/*
 * What the DWARF says of f into l: the function the code is in keeps the
 * symbol table's name (the one every other frame and format shows: "foo"
 * for the DWARF's "foo" in "foo.cold"), with its file and the line; the
 * functions inlined into it become l's inline chain, innermost first.
 */
static void add_source(struct profile *p, const struct sym_frame *f, struct pf_location *l)
{
	struct pf_line inl[MAX_INLINES];
	const struct dw_frame *outer = &f->lines[f->nr_lines - 1];
	const char *name = f->name ? f->name : outer->function;
	size_t n = 0;

	if (name)
		l->function = dw_function(p, outer, name);
	l->line = outer->line;
	for (size_t i = 0; i + 1 < f->nr_lines && n < MAX_INLINES; i++) {
		if (!f->lines[i].function)
			continue;
		inl[n++] = (struct pf_line){ dw_function(p, &f->lines[i], f->lines[i].function),
					     f->lines[i].line };
	}
	l->inlines = profile__add_inlines(p, inl, n);
}

static uint32_t user_location(struct build_ctx *c, const struct sym_frame *f, uint64_t addr)
{
	struct profile *p = c->p;
	struct pf_location l = { .address = addr, .elf_addr = f->elf_addr };
	struct pf_mapping m = { .start = f->loc.map_start, .limit = f->loc.map_end };

	switch (f->kind) {
	case SYM_FILE:
		m.offset = f->loc.map_pgoff;
		m.file = profile__intern(p, f->loc.path);
		m.build_id = profile__intern(p, f->loc.build_id);
		m.has_functions = f->loc.has_symbols;
		l.mapping = profile__add_mapping(p, &m);
		break;
	case SYM_JIT:
		l.kind = PF_KIND_JIT;
		/* fallthrough */
	case SYM_ANON:
		if (m.limit) {
			m.file = profile__intern(p, PF_ANON_FILE);
			l.mapping = profile__add_mapping(p, &m);
		}
		break;
	default:
		break;
	}
	if (f->nr_lines)
		add_source(p, f, &l);
	else if (f->name)
		l.function = profile__add_function(p, f->name, NULL);
	return profile__add_location(p, &l);
}

static uint32_t kernel_location(struct build_ctx *c, const struct sym_frame *f, uint64_t addr)
{
	struct profile *p = c->p;
	struct pf_mapping m = { .start = KERNEL_START, .limit = UINT64_MAX,
				.kind = PF_KIND_KERNEL, .has_functions = true };

	m.file = profile__intern(p, f->module ? f->module : PF_KERNEL_FILE);
	return profile__add_location(p, &(struct pf_location){
		.address = addr,
		.mapping = profile__add_mapping(p, &m),
		.function = f->name ? profile__add_function(p, f->name, NULL) : 0,
		.kind = PF_KIND_KERNEL });
}

/*
 * Frames read by a frame-pointer walk that no table checked (--unwind fp,
 * or a process's first samples before its tables load: flagged
 * unchecked): a return address in no mapping of the process is not a frame but
 * a word of stack or data read as one, and so is everything outward of
 * it. The frames from there are cut (the table walk ends there in BPF);
 * with no reason flagged yet, as a bad frame. Returns the frames kept.
 */
static size_t cut_unmapped(struct build_ctx *c, const struct bpfs_count_key *k, size_t nr,
			   bool *cut)
{
	struct sym_frame f;

	*cut = false;
	if (!(k->flags & BPFS_F_USTACK_UNCHECKED))
		return nr;
	for (size_t i = 1; i < nr; i++) {
		if (BPFS_PY_IS_FRAME(c->ips[i]))
			return nr; /* BPF's Python frames: the native walk ended before */
		symbolizer__user(c->sym, k->pid, k->map_gen, c->ips[i], true, &f);
		if (f.kind == SYM_UNMAPPED) {
			*cut = true;
			return i;
		}
	}
	return nr;
}

/* A CPython frame (python_abi.h): its qualified name, declared in its file
 * at its first line, at the line of its instruction; a marker where the
 * walk of the interpreter's frames ended early. No mapping: the code
 * object is data, not an address of a file. */
static uint32_t python_location(struct build_ctx *c, uint32_t pid, uint64_t word)
{
	struct pyreg_frame f;

	pyreg__name(symbolizer__python(c->sym), pid, word, &f);
	if (f.marker)
		return marker(c->p, f.name);
	return profile__add_location(c->p, &(struct pf_location){
		.function = profile__add_function_at(c->p, f.name, f.file, f.first_line),
		.line = f.line,
		.kind = PF_KIND_USER });
}

/* An off-CPU block's root frames: why it was off the CPU, then what was
 * not taken (docs/formats.md, "Off-CPU time"). */
static size_t add_offcpu_marks(struct build_ctx *c, const struct bpfs_count_key *k, size_t n)
{
	if (k->flags & BPFS_F_OFF_WAIT)
		c->fr[n++] = marker(c->p, "[off-cpu: waiting]");
	if (k->flags & BPFS_F_OFF_PREEMPTED)
		c->fr[n++] = marker(c->p, "[off-cpu: preempted]");
	if (k->flags & BPFS_F_OFF_NOWALK)
		c->fr[n++] = marker(c->p, "[off-cpu: stack not taken: --off-cpu-walks]");
	if ((k->flags & BPFS_F_OFF_NOUSER) && !(k->flags & BPFS_F_KTHREAD))
		c->fr[n++] = marker(c->p, "[off-cpu: since before the run: user stack not taken]");
	return n;
}

static size_t add_user(struct build_ctx *c, const struct bpfs_count_key *k, size_t n)
{
	struct sym_frame f;
	bool missing, cut;
	size_t nr;

	n = add_offcpu_marks(c, k, n);
	if (k->flags & BPFS_F_KTHREAD)
		return n;
	/* A stack that ends before its outermost frame says why, at its
	 * outer end; the frames walked up to there are kept. */
	if (k->flags & BPFS_F_USTACK_TRUNC)
		c->fr[n++] = marker(c->p, "[truncated: max depth]");
	if (k->flags & BPFS_F_USTACK_ERR)
		c->fr[n++] = marker(c->p, "[truncated: read fault]");
	if (k->flags & BPFS_F_USTACK_NOINFO)
		c->fr[n++] = marker(c->p, "[truncated: no unwind info]");
	if (k->flags & BPFS_F_USTACK_BADFRAME)
		c->fr[n++] = marker(c->p, "[truncated: bad frame]");
	if (!k->ustack_id)
		return n;
	nr = unwind(c, k->ustack_id, &missing);
	if (missing)
		c->fr[n++] = marker(c->p, "[user stack segment missing]");
	nr = cut_unmapped(c, k, nr, &cut);
	if (cut && !(k->flags & (BPFS_F_USTACK_TRUNC | BPFS_F_USTACK_ERR | BPFS_F_USTACK_NOINFO |
				 BPFS_F_USTACK_BADFRAME)))
		c->fr[n++] = marker(c->p, "[truncated: bad frame]");
	/* ips[0] is the leaf; the frames go outermost first. */
	for (size_t i = nr; i-- > 0;) {
		if (BPFS_PY_IS_FRAME(c->ips[i])) {
			c->fr[n++] = python_location(c, k->pid, c->ips[i]);
			continue;
		}
		symbolizer__user(c->sym, k->pid, k->map_gen, c->ips[i], i > 0, &f);
		c->fr[n++] = user_location(c, &f, c->ips[i]);
	}
	return n;
}

static size_t add_kernel(struct build_ctx *c, const struct bpfs_count_key *k, size_t n)
{
	struct sym_frame f;
	bool missing;
	size_t nr;

	if (k->flags & BPFS_F_KSTACK_ERR) {
		c->fr[n++] = marker(c->p, "[kernel stack unreadable]");
		return n;
	}
	if (!k->kstack_id)
		return n;
	nr = unwind(c, k->kstack_id, &missing);
	if (missing)
		c->fr[n++] = marker(c->p, "[kernel stack missing]");
	if (k->flags & BPFS_F_KSTACK_TRUNC)
		c->fr[n++] = marker(c->p, "[truncated]");
	if (nr > BPFS_SEG_FRAMES)
		nr = BPFS_SEG_FRAMES;
	for (size_t i = nr; i-- > 0;) {
		symbolizer__kernel(c->sym, c->ips[i], i > 0, &f);
		c->fr[n++] = kernel_location(c, &f, c->ips[i]);
	}
	return n;
}

/* What names a key's stack: the same for every sample of a thread, a
 * comm, an event. */
struct stack_ref {
	uint64_t kstack_id, ustack_id;
	uint32_t pid, map_gen, flags, pad;
};

static uint64_t stack_ref_hash(const void *key)
{
	return hashmap__hash_bytes(key, sizeof(struct stack_ref), 0);
}

static bool stack_ref_equal(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct stack_ref));
}

static uint32_t name_stack(struct build_ctx *c, const struct bpfs_count_key *k)
{
	size_t n = add_kernel(c, k, add_user(c, k, 0));

	if (!n)
		c->fr[n++] = marker(c->p, c->o->kernel_only ? "[user space]" : "[no stack]");
	for (size_t i = 0; i < n; i++)
		c->leaf_first[i] = c->fr[n - 1 - i];
	return profile__add_stack(c->p, c->leaf_first, n);
}

/* The stack of key k as a profile stack id. Not remembered when memory
 * runs out: named again the next time, the same. */
static uint32_t key_stack(struct build_ctx *c, const struct bpfs_count_key *k)
{
	struct stack_ref ref = { .kstack_id = k->kstack_id, .ustack_id = k->ustack_id,
				 .pid = k->pid, .map_gen = k->map_gen, .flags = k->flags };
	struct stack_ref *nref;
	uintptr_t id;

	if (!c->named)
		return name_stack(c, k);
	id = (uintptr_t)hashmap__find(c->named, &ref);
	if (id)
		return id - 1;
	id = name_stack(c, k);
	nref = malloc(sizeof(*nref));
	if (nref && (*nref = ref, hashmap__set(c->named, nref, (void *)(id + 1), NULL)))
		free(nref);
	return id;
}

static uint32_t comm_id(struct profile *p, const char comm[BPFS_COMM_LEN])
{
	char s[BPFS_COMM_LEN + 1] = {};

	memcpy(s, comm, BPFS_COMM_LEN);
	return profile__intern(p, s);
}

static int count_distinct(struct build_ctx *c, const struct bpfs_count_key *k)
{
	/* both ids in one key: a 64-bit mix, only for counting */
	uint64_t pair = (k->kstack_id * 0x9e3779b97f4a7c15ULL) ^ k->ustack_id;

	if (!hashmap__find(c->pids, (void *)(uintptr_t)(k->pid + 1UL))) {
		if (hashmap__set(c->pids, (void *)(uintptr_t)(k->pid + 1UL), (void *)1, NULL))
			return -ENOMEM;
		c->rs->processes++;
	}
	if (pair && !hashmap__find(c->stack_pairs, (void *)(uintptr_t)pair)) {
		if (hashmap__set(c->stack_pairs, (void *)(uintptr_t)pair, (void *)1, NULL))
			return -ENOMEM;
		c->rs->stacks++;
	}
	return 0;
}

static int add_key(void *ctx, const struct bpfs_count_key *k, const struct bpfs_count_val *v)
{
	struct build_ctx *c = ctx;
	struct pf_sample ps = { .pid = k->pid, .tid = k->tid };
	int err;

	if (c->o->event >= 0 && k->event != (uint32_t)c->o->event)
		return 0;
	if (++c->rs->keys % REPORT_PROGRESS_KEYS == 0 && c->o->progress)
		c->o->progress(c->o->progress_ctx);
	c->rs->samples += v->samples;
	err = count_distinct(c, k);
	if (err)
		return err;
	ps.comm = comm_id(c->p, k->comm);
	ps.stack = key_stack(c, k);
	ps.values[REPORT_VALUE_SAMPLES] = v->samples;
	/* scaled per key, as perf stat does for a multiplexed event */
	ps.values[REPORT_VALUE_PERIOD] =
		c->o->scale > 1 ? (int64_t)(v->period * c->o->scale + 0.5) : (int64_t)v->period;
	return profile__add_sample(c->p, &ps);
}

static int add_lost(struct build_ctx *c, const uint64_t *stat)
{
	uint32_t lost = profile__add_location(c->p, &(struct pf_location){
		.function = profile__add_function(c->p, "[lost]", NULL), .kind = PF_KIND_LOST });

	for (size_t i = 0; i < sizeof(lost_reasons) / sizeof(lost_reasons[0]); i++) {
		uint64_t n = stat[lost_reasons[i].stat];
		struct pf_sample ps = { .stack = profile__add_stack(c->p, &lost, 1) };
		int err;

		if (!n)
			continue;
		ps.lost_reason = profile__intern(c->p, lost_reasons[i].reason);
		/* a lost sample's period is unknown: the event's nominal one */
		ps.values[REPORT_VALUE_SAMPLES] = n;
		ps.values[REPORT_VALUE_PERIOD] = n * c->o->period;
		err = profile__add_sample(c->p, &ps);
		if (err)
			return err;
		c->rs->lost += n;
	}
	return 0;
}

static void build_ctx__free(struct build_ctx *c)
{
	if (!c)
		return;
	if (c->named) {
		const void *k;

		for (size_t i = 0; hashmap__next(c->named, &i, &k, NULL);)
			free((void *)k);
		hashmap__free(c->named);
	}
	hashmap__free(c->pids);
	hashmap__free(c->stack_pairs);
	free(c);
}

static struct build_ctx *build_ctx__new(struct sampler *s, struct stream *stream,
					struct symbolizer *sym, const struct report_opts *o,
					struct profile *p, struct report_stats *rs)
{
	struct build_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->s = s;
	c->stream = stream;
	c->sym = sym;
	c->o = o;
	c->p = p;
	c->rs = rs;
	c->pids = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	c->stack_pairs = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!c->pids || !c->stack_pairs) {
		build_ctx__free(c);
		return NULL;
	}
	return c;
}

/* Samples of the event: the event's unit for the period (ns for the
 * clocks, else counts of the event itself). */
static int set_types(struct profile *p, const struct report_opts *o)
{
	struct pf_meta *m = profile__meta(p);
	const char *ev = o->event_name ? o->event_name : "cpu-clock";
	int err = profile__add_type(p, "samples", "count");

	if (err >= 0 && o->offcpu) /* Grafana Alloy's and Pyroscope's name */
		err = profile__add_type(p, "offcpu", "nanoseconds");
	else if (err >= 0)
		err = profile__add_type(p, o->timer ? "cpu" : ev,
					o->timer ? "nanoseconds" : "count");
	if (err < 0)
		return err;
	m->default_type = o->weight_period || o->offcpu ? REPORT_VALUE_PERIOD
							: REPORT_VALUE_SAMPLES;
	m->period_type = m->types[REPORT_VALUE_PERIOD];
	m->period = o->period;
	m->event = profile__intern(p, ev);
	return profile__err(p);
}

int report__build(struct sampler *s, struct stream *stream, struct symbolizer *sym,
		  const struct report_opts *o, const uint64_t *stat,
		  struct profile *out, struct report_stats *rs)
{
	struct build_ctx *c;
	int err;

	memset(rs, 0, sizeof(*rs));
	/* types once: out may hold samples folded in already (report__fold) */
	err = profile__meta(out)->nr_types ? 0 : set_types(out, o);
	if (err)
		return err;
	c = build_ctx__new(s, stream, sym, o, out, rs);
	if (!c)
		return -ENOMEM;
	/* Counted in the kernel (aggregate mode) ... */
	if (s)
		err = sampler__for_each_count(s, add_key, c);
	/* ... and sent as records (stream mode, or spilled). */
	if (!err)
		err = stream__for_each_count(stream, add_key, c);
	if (err)
		p_err("cannot read the sample counts: %s", strerror(-err));
	else
		err = add_lost(c, stat);
	if (!err)
		err = profile__err(out);
	build_ctx__free(c);
	return err;
}

struct fold_ctx {
	const struct report_fold *f;
	struct build_ctx **c;	/* one per event */
	struct hashmap *pids;	/* the processes folded */
};

static int fold_key(void *ctx, const struct bpfs_count_key *k, const struct bpfs_count_val *v)
{
	struct fold_ctx *fc = ctx;
	size_t ev = fc->f->nr > 1 ? k->event : 0;
	int err;

	if (ev >= fc->f->nr || !hashmap__find(fc->pids, (void *)(uintptr_t)(k->pid + 1UL)))
		return 0;
	err = add_key(fc->c[ev], k, v);
	return err ? err : 1;
}

static bool fold_has_pid(void *ctx, uint32_t pid)
{
	struct fold_ctx *fc = ctx;

	return hashmap__find(fc->pids, (void *)(uintptr_t)(pid + 1UL));
}

int report__fold(struct sampler *s, struct stream *stream, struct symbolizer *sym,
		 const struct report_fold *f, const int *pids, size_t nr_pids)
{
	struct build_ctx *c[BPFS_MAX_EVENTS] = {};
	struct report_stats rs[BPFS_MAX_EVENTS] = {};
	struct fold_ctx fc = { .f = f, .c = c };
	int err = f->nr > BPFS_MAX_EVENTS ? -EINVAL : 0;

	fc.pids = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!fc.pids)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < nr_pids; i++)
		err = hashmap__set(fc.pids, (void *)(uintptr_t)(pids[i] + 1UL), (void *)1, NULL);
	for (size_t ev = 0; !err && ev < f->nr; ev++) {
		struct profile *p = f->p[ev];

		err = profile__meta(p)->nr_types ? 0 : set_types(p, &f->o[ev]);
		if (!err && !(c[ev] = build_ctx__new(s, stream, sym, &f->o[ev], p, &rs[ev])))
			err = -ENOMEM;
	}
	/* Counted in the kernel (aggregate mode), and sent as records: the
	 * keys of exited processes are final, taken out as they are named. */
	if (!err && s)
		err = sampler__take_counts(s, fold_key, &fc);
	/* their samples still waiting for a completion will not get one */
	if (!err)
		err = stream__finish_if(stream, fold_has_pid, &fc);
	if (!err)
		err = stream__take_counts(stream, fold_key, &fc);
	for (size_t ev = 0; ev < f->nr; ev++) {
		if (!err)
			err = profile__err(f->p[ev]);
		report__add_stats(&f->rs[ev], &rs[ev]);
		build_ctx__free(c[ev]);
	}
	hashmap__free(fc.pids);
	return err;
}

int report__forget_segments(struct sampler *s, struct stream *stream)
{
	struct hashmap *used = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	int err = used ? 0 : -ENOMEM;

	if (!err && s)
		err = sampler__for_each_count(s, stream__mark_ids, used);
	if (!err)
		err = stream__forget_segments(stream, used);
	hashmap__free(used);
	return err;
}

void report__add_stats(struct report_stats *to, const struct report_stats *from)
{
	to->samples += from->samples;
	to->lost += from->lost;
	to->keys += from->keys;
	to->processes += from->processes;
	to->stacks += from->stacks;
	to->stacks_missing += from->stacks_missing;
}

int report__add_timed(struct sampler *s, struct stream *stream, struct symbolizer *sym,
		      const struct report_opts *o, struct profile *out)
{
	struct report_stats rs = {};
	const struct bpfs_rec_sample *r;
	struct build_ctx *c;
	size_t nr;
	int err;

	err = profile__meta(out)->nr_types ? 0 : set_types(out, o);
	if (err)
		return err;
	c = build_ctx__new(s, stream, sym, o, out, &rs);
	if (c)
		c->named = hashmap__new(stack_ref_hash, stack_ref_equal);
	if (!c || !c->named) {
		build_ctx__free(c);
		return -ENOMEM;
	}
	r = stream__samples(stream, &nr);
	for (size_t i = 0; i < nr && !err; i++) {
		struct pf_sample ps = { .pid = r[i].pid, .tid = r[i].tid, .cpu = r[i].hdr.cpu };
		struct bpfs_count_key k;

		if (o->event >= 0 && r[i].event != (uint32_t)o->event)
			continue;
		stream__sample_key(&r[i], &k);
		ps.comm = comm_id(out, r[i].comm);
		ps.stack = key_stack(c, &k);
		/* time 0 would read as aggregated: the clock never shows it */
		ps.time_ns = r[i].time_ns ? r[i].time_ns : 1;
		ps.values[REPORT_VALUE_SAMPLES] = 1;
		ps.values[REPORT_VALUE_PERIOD] = r[i].period;
		err = profile__add_sample(out, &ps);
	}
	build_ctx__free(c);
	return err;
}

static const char *const stat_names[BPFS_STAT_NR] = {
	[BPFS_STAT_LOST_COUNTS_FULL] = "counts map full (raise --map-entries)",
	[BPFS_STAT_LOST_STACKS_FULL] = "stacks map full (raise --stack-entries)",
	[BPFS_STAT_LOST_COLLISION] = "stack id collisions (raise --stack-entries)",
	[BPFS_STAT_LOST_BUSY] = "map busy (re-entered from NMI)",
	[BPFS_STAT_LOST_RING_FULL] = "ring full (raise --ring-size)",
	[BPFS_STAT_USTACK_ERR] = "user stacks cut by a read fault",
	[BPFS_STAT_KSTACK_ERR] = "kernel stack unreadable",
	[BPFS_STAT_USTACK_TRUNC] = "user stack cut at --max-stack-depth",
	[BPFS_STAT_KSTACK_TRUNC] = "kernel stack cut at 127 frames",
	[BPFS_STAT_USTACK_NOINFO] = "user stacks cut: no unwind info (code without a table or "
				    "frame pointer)",
	[BPFS_STAT_USTACK_BADFRAME] = "user stacks cut: bad frame (stack not rising, return "
				      "address outside the executable mappings)",
	[BPFS_STAT_RECS_UNSENT] = "records not sent (ring full)",
	[BPFS_STAT_STACK_RECS_LOST] = "of them stack records (read from the map instead)",
	[BPFS_STAT_NOTIFY_LOST] = "new-process notifications dropped",
	[BPFS_STAT_FOLLOW_FULL] = "forked children not followed (filter full)",
	[BPFS_STAT_MAP_RECS_LOST] = "exec records not sent (ring full: samples after them "
				    "may be named after the older image; raise --ring-size)",
	[BPFS_STAT_RECS_AFTER_STOP] = "records not taken after the stop (late completions or "
				      "execs)",
	[BPFS_STAT_UFRAMES_FP] = "user frames stepped by frame pointers in code built with "
				 "them",
	[BPFS_STAT_ROW_SEARCHES] = "rows searched in the unwind tables (the row cache missed)",
	[BPFS_STAT_TAILS_TAKEN] = "walks took their outer frames from the last walk on their "
				  "CPU",
};

static void print_group(FILE *f, const char *title, const struct sampler_stats *st,
			enum bpfs_stat from, enum bpfs_stat to)
{
	bool any = false;

	for (int i = from; i <= (int)to; i++) {
		if (!st->stat[i])
			continue;
		fprintf(f, "%s%s %" PRIu64 " %s", any ? "," : "  ", any ? "" : title,
			st->stat[i], stat_names[i]);
		any = true;
	}
	if (any)
		fputc('\n', f);
}

/* Samples kept: counted in the map, or sent as a record for any reason. */
static uint64_t kept_of(const uint64_t *v)
{
	return v[BPFS_STAT_KEPT] + v[BPFS_STAT_SPILLED] + v[BPFS_STAT_STREAMED] +
	       v[BPFS_STAT_DEFERRED] + v[BPFS_STAT_FIRST];
}

void report__event_summary(FILE *f, const char *name, const struct sampler_stats *st, int ev,
			   bool weight_period)
{
	const struct sampler_event_stats *es = &st->ev[ev];
	const uint64_t *v = es->stat;
	uint64_t kept = kept_of(v);
	uint64_t lost = 0;

	for (int i = BPFS_STAT_LOST_COUNTS_FULL; i <= BPFS_STAT_LOST_RING_FULL; i++)
		lost += v[i];
	fprintf(f, "  event %s: %" PRIu64 " samples taken, kept %" PRIu64 ", lost %" PRIu64, name,
		v[BPFS_STAT_TAKEN], kept, lost);
	/* offcpu-time has no perf event: no times to show */
	if (es->enabled_ns)
		fprintf(f, "; counting %.2f s of %.2f s enabled (CPUs summed)",
			es->running_ns / 1e9, es->enabled_ns / 1e9);
	if (es->running_ns && es->running_ns < es->enabled_ns)
		fprintf(f, ": multiplexed with other events, %.0f%% of the time; %s",
			100.0 * es->running_ns / es->enabled_ns,
			weight_period ? "event counts scaled by enabled/running as perf stat does"
				      : "sample counts are not scaled (use --weight period)");
	fputc('\n', f);
}

void report__summary(FILE *f, const struct sampler_stats *st, const struct report_stats *rs,
		     const struct stream_stats *ss, size_t nr_lines, double seconds)
{
	const uint64_t *v = st->stat;
	double per_cpu_s = st->nr_cpus ? st->enabled_ns / 1e9 / st->nr_cpus : 0;
	double eff = per_cpu_s > 0 ? v[BPFS_STAT_TAKEN] / per_cpu_s / st->nr_cpus : 0;

	double pct = st->expected ? 100.0 * v[BPFS_STAT_TAKEN] / st->expected : 0.0;

	if (st->rate)
		fprintf(f, "bpfsampler: %.2f s on %d CPU%s at %.0f Hz: %" PRIu64 " samples taken, "
			"%.1f%% of %" PRIu64 " timer periods (effective %.0f Hz per CPU)%s\n",
			per_cpu_s ? per_cpu_s : seconds, st->nr_cpus, st->nr_cpus == 1 ? "" : "s",
			st->rate, v[BPFS_STAT_TAKEN], pct, st->expected, eff,
			/* Seen on these VMs, perf alike: an idle CPU's timer fires late. */
			pct < 95 && v[BPFS_STAT_IDLE] ? "; idle CPUs fire late on some VMs" : "");
	else
		fprintf(f, "bpfsampler: %.2f s on %d CPU%s: %" PRIu64 " samples taken\n",
			per_cpu_s ? per_cpu_s : seconds, st->nr_cpus, st->nr_cpus == 1 ? "" : "s",
			v[BPFS_STAT_TAKEN]);
	if (v[BPFS_STAT_SPILLED])
		fprintf(f, "  %" PRIu64 " samples spilled to the rings: the counts map is full "
			"(raise --map-entries)\n", v[BPFS_STAT_SPILLED]);
	fprintf(f, "  kept %" PRIu64 " in %" PRIu64 " process%s, %" PRIu64 " distinct stacks, %zu "
		"folded lines; idle %" PRIu64 ", not selected %" PRIu64 "\n",
		kept_of(v), rs->processes, rs->processes == 1 ? "" : "es", rs->stacks,
		nr_lines, v[BPFS_STAT_IDLE], v[BPFS_STAT_FILTERED]);
	if (rs->lost)
		print_group(f, "lost:", st, BPFS_STAT_LOST_COUNTS_FULL, BPFS_STAT_LOST_RING_FULL);
	else
		fprintf(f, "  lost: 0\n");
	print_group(f, "incomplete:", st, BPFS_STAT_USTACK_ERR, BPFS_STAT_USTACK_BADFRAME);
	print_group(f, "other:", st, BPFS_STAT_STACK_RECS_LOST, BPFS_STAT_RECS_AFTER_STOP);
	if (ss->gaps || v[BPFS_STAT_RECS_UNSENT])
		fprintf(f, "  rings: %" PRIu64 " records not sent (ring full), %" PRIu64
			" missing by sequence number%s\n",
			v[BPFS_STAT_RECS_UNSENT], ss->gaps,
			ss->gaps == v[BPFS_STAT_RECS_UNSENT] ? "" : " (mismatch!)");
	if (ss->completions || ss->never_completed || v[BPFS_STAT_COMPLETION_ERR])
		fprintf(f, "  completions: %" PRIu64 " user stacks walked at return to user space "
			"finished %" PRIu64 " samples; %" PRIu64 " samples never finished, %" PRIu64
			" completions failed\n", ss->completions, ss->completed, ss->never_completed,
			v[BPFS_STAT_COMPLETION_ERR]);
	if (v[BPFS_STAT_UFRAMES_FP])
		fprintf(f, "  unwind: %" PRIu64 " %s (no row looked up)\n",
			v[BPFS_STAT_UFRAMES_FP], stat_names[BPFS_STAT_UFRAMES_FP]);
	if (v[BPFS_STAT_ROW_SEARCHES])
		fprintf(f, "  unwind: %" PRIu64 " %s\n", v[BPFS_STAT_ROW_SEARCHES],
			stat_names[BPFS_STAT_ROW_SEARCHES]);
	if (v[BPFS_STAT_TAILS_TAKEN])
		fprintf(f, "  unwind: %" PRIu64 " %s\n", v[BPFS_STAT_TAILS_TAKEN],
			stat_names[BPFS_STAT_TAILS_TAKEN]);
	if (ss->malformed || ss->conflicting_stacks || ss->reordered)
		fprintf(f, "  rings: %" PRIu64 " malformed records, %" PRIu64
			" conflicting stack records, %" PRIu64 " records out of order\n",
			ss->malformed, ss->conflicting_stacks, ss->reordered);
	if (ss->stacks_cleared)
		fprintf(f, "  stacks map: emptied %" PRIu64 " time%s while sampling, each time half "
			"full, %" PRIu64 " segments kept by the loader\n", ss->stacks_cleared,
			ss->stacks_cleared == 1 ? "" : "s", ss->segments_kept);
	if (st->stacks_dropped)
		fprintf(f, "  stacks map: %" PRIu64 " segments emptied out but not kept (keeping "
			"them failed: out of memory); samples naming them have no stack\n",
			st->stacks_dropped);
	if (rs->stacks_missing)
		fprintf(f, "  %" PRIu64 " stack ids were not found in the stacks map\n",
			rs->stacks_missing);
}
