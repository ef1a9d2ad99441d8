// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "hashmap.h"
#include "log.h"
#include "report.h"
#include "sampler.h"
#include "symbolize.h"

/* comm + "[truncated]" + user frames + marker + kernel frames + marker */
#define MAX_FRAMES (2 * BPFS_MAX_STACK_DEPTH + 8)

struct build_ctx {
	struct sampler *s;
	struct symbolizer *sym;
	const struct report_opts *o;
	struct folded *out;
	struct report_stats *rs;
	struct hashmap *stacks; /* id -> struct bpfs_stack *, NULL entry: missing */
	struct hashmap *pids;	/* distinct pids */
	char annotated[BPFS_MAX_STACK_DEPTH][256];
};

/* Lost-sample lines: what flame graphs show for what the BPF side dropped. */
static const struct {
	enum bpfs_stat stat;
	const char *frame;
} lost_lines[] = {
	{ BPFS_STAT_LOST_COUNTS_FULL, "[counts map full]" },
	{ BPFS_STAT_LOST_STACKS_FULL, "[stacks map full]" },
	{ BPFS_STAT_LOST_COLLISION, "[stack id collision]" },
	{ BPFS_STAT_LOST_BUSY, "[map busy]" },
};

static const struct bpfs_stack *get_stack(struct build_ctx *c, uint64_t id)
{
	struct bpfs_stack *st;
	void *old;

	st = hashmap__find(c->stacks, (void *)(uintptr_t)id);
	if (st)
		return st->nr == UINT32_MAX ? NULL : st;
	st = malloc(sizeof(*st));
	if (!st)
		return NULL;
	if (sampler__read_stack(c->s, id, st)) {
		st->nr = UINT32_MAX; /* remember the miss */
		c->rs->stacks_missing++;
	} else {
		c->rs->stacks++;
		if (st->nr > BPFS_MAX_STACK_DEPTH)
			st->nr = BPFS_MAX_STACK_DEPTH;
	}
	if (hashmap__set(c->stacks, (void *)(uintptr_t)id, st, &old)) {
		free(st);
		return NULL;
	}
	return st->nr == UINT32_MAX ? NULL : st;
}

static size_t add_user(struct build_ctx *c, const struct bpfs_count_key *k, const char **fr,
		       size_t n)
{
	const struct bpfs_stack *st;

	if (k->flags & BPFS_F_KTHREAD)
		return n;
	/* A walk that faulted keeps the frames read up to there. */
	if (k->flags & BPFS_F_USTACK_ERR)
		fr[n++] = "[user stack unreadable]";
	if (!k->ustack_id)
		return n;
	st = get_stack(c, k->ustack_id);
	if (!st) {
		fr[n++] = "[user stack missing]";
		return n;
	}
	if (k->flags & BPFS_F_USTACK_TRUNC)
		fr[n++] = "[truncated]";
	/* ips[0] is the leaf; folded wants the outermost first. */
	for (int i = (int)st->nr - 1; i >= 0; i--)
		fr[n++] = symbolizer__user(c->sym, k->pid, st->ips[i], i > 0);
	return n;
}

static size_t add_kernel(struct build_ctx *c, const struct bpfs_count_key *k, const char **fr,
			 size_t n)
{
	const struct bpfs_stack *st;

	if (k->flags & BPFS_F_KSTACK_ERR) {
		fr[n++] = "[kernel stack unreadable]";
		return n;
	}
	if (!k->kstack_id)
		return n;
	st = get_stack(c, k->kstack_id);
	if (!st) {
		fr[n++] = "[kernel stack missing]";
		return n;
	}
	if (k->flags & BPFS_F_KSTACK_TRUNC)
		fr[n++] = "[truncated]";
	for (int i = (int)st->nr - 1; i >= 0; i--) {
		const char *name = symbolizer__kernel(c->sym, st->ips[i], i > 0);

		if (c->o->annotate) {
			snprintf(c->annotated[i], sizeof(c->annotated[i]), "%s_[k]", name);
			name = c->annotated[i];
		}
		fr[n++] = name;
	}
	return n;
}

static int add_key(void *ctx, const struct bpfs_count_key *k, uint64_t count)
{
	struct build_ctx *c = ctx;
	const char *fr[MAX_FRAMES];
	char comm[BPFS_COMM_LEN + 1] = {};
	size_t n = 0;

	c->rs->keys++;
	c->rs->samples += count;
	if (!hashmap__find(c->pids, (void *)(uintptr_t)(k->pid + 1UL))) {
		if (hashmap__set(c->pids, (void *)(uintptr_t)(k->pid + 1UL), (void *)1, NULL))
			return -ENOMEM;
		c->rs->processes++;
	}
	memcpy(comm, k->comm, BPFS_COMM_LEN);
	fr[n++] = comm[0] ? comm : "[no comm]";
	n = add_user(c, k, fr, n);
	n = add_kernel(c, k, fr, n);
	if (n == 1)
		fr[n++] = c->o->kernel_only ? "[user space]" : "[no stack]";
	return folded__add(c->out, fr, n, count);
}

static int add_lost(struct build_ctx *c, const struct sampler_stats *st)
{
	for (size_t i = 0; i < sizeof(lost_lines) / sizeof(lost_lines[0]); i++) {
		uint64_t n = st->stat[lost_lines[i].stat];
		const char *fr[] = { "[lost]", lost_lines[i].frame };
		int err;

		if (!n)
			continue;
		err = folded__add(c->out, fr, 2, n);
		if (err)
			return err;
		c->rs->lost += n;
	}
	return 0;
}

int report__build(struct sampler *s, struct symbolizer *sym, const struct report_opts *o,
		  const struct sampler_stats *st, struct folded *out, struct report_stats *rs)
{
	struct build_ctx *c;
	void *val;
	int err;

	memset(rs, 0, sizeof(*rs));
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct build_ctx){ .s = s, .sym = sym, .o = o, .out = out, .rs = rs };
	c->stacks = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	c->pids = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!c->stacks || !c->pids) {
		err = -ENOMEM;
		goto out;
	}
	err = sampler__for_each_count(s, add_key, c);
	if (err) {
		p_err("cannot read the sample counts: %s", strerror(-err));
		goto out;
	}
	err = add_lost(c, st);
out:
	for (size_t i = 0; c->stacks && hashmap__next(c->stacks, &i, NULL, &val);)
		free(val);
	hashmap__free(c->stacks);
	hashmap__free(c->pids);
	free(c);
	return err;
}

static const char *const stat_names[BPFS_STAT_NR] = {
	[BPFS_STAT_LOST_COUNTS_FULL] = "counts map full (raise --map-entries)",
	[BPFS_STAT_LOST_STACKS_FULL] = "stacks map full (raise --stack-entries)",
	[BPFS_STAT_LOST_COLLISION] = "stack id collisions (raise --stack-entries)",
	[BPFS_STAT_LOST_BUSY] = "map busy (re-entered from NMI)",
	[BPFS_STAT_USTACK_ERR] = "user stack unreadable",
	[BPFS_STAT_KSTACK_ERR] = "kernel stack unreadable",
	[BPFS_STAT_USTACK_TRUNC] = "user stack cut at --max-stack-depth",
	[BPFS_STAT_KSTACK_TRUNC] = "kernel stack cut at --max-stack-depth",
	[BPFS_STAT_NOTIFY_LOST] = "new-process notifications dropped",
	[BPFS_STAT_FOLLOW_FULL] = "forked children not followed (filter full)",
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

void report__summary(FILE *f, const struct sampler_stats *st, const struct report_stats *rs,
		     size_t nr_lines, double seconds)
{
	const uint64_t *v = st->stat;
	double per_cpu_s = st->nr_cpus ? st->enabled_ns / 1e9 / st->nr_cpus : 0;
	double eff = per_cpu_s > 0 ? v[BPFS_STAT_TAKEN] / per_cpu_s / st->nr_cpus : 0;

	double pct = st->expected ? 100.0 * v[BPFS_STAT_TAKEN] / st->expected : 0.0;

	fprintf(f, "bpfsampler: %.2f s on %d CPU%s at %.0f Hz: %" PRIu64 " samples taken, %.1f%% of "
		"%" PRIu64 " timer periods (effective %.0f Hz per CPU)%s\n",
		per_cpu_s ? per_cpu_s : seconds, st->nr_cpus, st->nr_cpus == 1 ? "" : "s", st->rate,
		v[BPFS_STAT_TAKEN], pct, st->expected, eff,
		/* Seen on these VMs, perf alike: an idle CPU's timer fires late. */
		pct < 95 && v[BPFS_STAT_IDLE] ? "; idle CPUs fire late on some VMs" : "");
	fprintf(f, "  kept %" PRIu64 " in %" PRIu64 " process%s, %" PRIu64 " distinct stacks, %zu "
		"folded lines; idle %" PRIu64 ", not selected %" PRIu64 "\n",
		v[BPFS_STAT_KEPT], rs->processes, rs->processes == 1 ? "" : "es", rs->stacks,
		nr_lines, v[BPFS_STAT_IDLE], v[BPFS_STAT_FILTERED]);
	if (rs->lost)
		print_group(f, "lost:", st, BPFS_STAT_LOST_COUNTS_FULL, BPFS_STAT_LOST_BUSY);
	else
		fprintf(f, "  lost: 0\n");
	print_group(f, "incomplete:", st, BPFS_STAT_USTACK_ERR, BPFS_STAT_KSTACK_TRUNC);
	print_group(f, "other:", st, BPFS_STAT_NOTIFY_LOST, BPFS_STAT_FOLLOW_FULL);
	if (rs->stacks_missing)
		fprintf(f, "  %" PRIu64 " stack ids were not found in the stacks map\n",
			rs->stacks_missing);
}
