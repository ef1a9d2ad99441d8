// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "features.h"
#include "log.h"
#include "opts.h"
#include "perf_events.h"
#include "sampler.h"
#include "sampler.skel.h"

_Static_assert(BPFS_MAX_DEPTH_OPT == BPFS_MAX_STACK_DEPTH, "opts.h and the ABI disagree");

/* Children of a profiled command are added to `filter` as they fork. */
#define FOLLOW_FILTER_ENTRIES 65536

struct sampler {
	struct sampler_bpf *skel;
	struct perf_events *events;
	struct bpf_link **links; /* one per perf event; each owns its event's fd */
	struct ring_buffer *ring;
	struct perf_event_attr attr;
	struct sampler_opts opts;
	bool stopped;
};

static int on_ring_record(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct bpfs_rec_new_key *rec = data;

	if (size < sizeof(__u32))
		return 0;
	if (rec->type == BPFS_REC_NEW_KEY && size >= sizeof(*rec) && s->opts.on_new_key) {
		char comm[BPFS_COMM_LEN + 1] = {};

		memcpy(comm, rec->comm, BPFS_COMM_LEN);
		s->opts.on_new_key(s->opts.ctx, rec->pid, rec->tid, comm);
	}
	return 0;
}

static int configure(struct sampler *s)
{
	const struct sampler_opts *o = &s->opts;
	struct sampler_bpf *skel = s->skel;
	unsigned int filter_entries = 1;
	int err;

	skel->rodata->filter_mode = o->filter_mode;
	skel->rodata->include_idle = o->include_idle;
	skel->rodata->collect_user = o->user_stacks;
	skel->rodata->collect_kernel = o->kernel_stacks;
	skel->rodata->max_depth = o->max_depth;
	if (o->stack_id_bits && o->stack_id_bits < 64)
		skel->rodata->stack_id_mask = (1ULL << o->stack_id_bits) - 1;

	if (o->filter_ids && o->filter_ids->nr)
		filter_entries = o->filter_ids->nr;
	if (o->follow_children)
		filter_entries += FOLLOW_FILTER_ENTRIES;
	err = bpf_map__set_max_entries(skel->maps.counts, o->map_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.stacks, o->stack_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.filter, filter_entries);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.on_fork, o->follow_children);
	return err;
}

int sampler__new(const struct sampler_opts *o, struct sampler **out)
{
	struct sampler *s;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts = *o;
	perf_events__timer_attr(o->freq, &s->attr);

	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = -errno;
		p_err("cannot open the BPF object: %s", strerror(-err));
		goto err_free;
	}
	err = configure(s);
	if (err) {
		p_err("cannot size the BPF maps: %s", strerror(-err));
		goto err_free;
	}
	err = sampler_bpf__load(s->skel);
	if (err) {
		p_err("cannot load the BPF programs: %s (run with -vv for the verifier log; "
		      "the kernel needs BTF and BPF ring buffers, Linux 5.8 or later)",
		      strerror(-err));
		goto err_free;
	}
	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_ring_record, s, NULL);
	if (!s->ring) {
		err = -errno;
		p_err("cannot set up the BPF ring buffer: %s", strerror(-err));
		goto err_free;
	}
	if (o->filter_ids) {
		for (size_t i = 0; i < o->filter_ids->nr; i++) {
			err = sampler__add_filter(s, o->filter_ids->v[i]);
			if (err)
				goto err_free;
		}
	}
	*out = s;
	return 0;
err_free:
	sampler__free(s);
	return err;
}

int sampler__add_filter(struct sampler *s, uint32_t id)
{
	__u8 one = 1;
	int err;

	err = bpf_map__update_elem(s->skel->maps.filter, &id, sizeof(id), &one, sizeof(one),
				   BPF_ANY);
	if (err)
		p_err("cannot add %u to the BPF filter: %s", id, strerror(-err));
	return err;
}

int sampler__start(struct sampler *s)
{
	int err, n;

	err = perf_events__open(&s->attr, s->opts.cpus, &s->events);
	if (err)
		return err;
	if (s->opts.follow_children) {
		s->skel->links.on_fork = bpf_program__attach(s->skel->progs.on_fork);
		if (!s->skel->links.on_fork) {
			err = -errno;
			p_err("cannot attach to sched_process_fork: %s", strerror(-err));
			return err;
		}
	}
	n = perf_events__nr(s->events);
	s->links = calloc(n, sizeof(*s->links));
	if (!s->links)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		s->links[i] = bpf_program__attach_perf_event(s->skel->progs.on_sample,
							     perf_events__fd(s->events, i));
		if (!s->links[i]) {
			err = -errno;
			p_err("cannot attach the sampler to the perf event of CPU %d: %s",
			      perf_events__cpu(s->events, i), strerror(-err));
			return err;
		}
		perf_events__hand_over(s->events, i);
	}
	/* Armed on every CPU: now start them all at once. */
	err = perf_events__enable(s->events);
	if (err)
		p_err("cannot enable the perf events: %s", strerror(-err));
	return err;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n = ring_buffer__poll(s->ring, timeout_ms);

	return n == -EINTR ? 0 : n;
}

int sampler__stop(struct sampler *s)
{
	int err = 0;

	if (s->stopped)
		return 0;
	if (s->events)
		err = perf_events__disable(s->events);
	s->stopped = true;
	ring_buffer__consume(s->ring);
	return err;
}

int sampler__stats(struct sampler *s, struct sampler_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 i = 0; i < BPFS_STAT_NR; i++) {
		err = bpf_map__lookup_elem(s->skel->maps.stats, &i, sizeof(i), vals,
					   ncpu * sizeof(*vals), 0);
		if (err)
			break;
		for (int c = 0; c < ncpu; c++)
			out->stat[i] += vals[c];
	}
	free(vals);
	out->rate = perf_events__effective_rate(&s->attr);
	if (s->events) {
		out->nr_cpus = perf_events__nr(s->events);
		out->enabled_ns = perf_events__time_enabled(s->events);
		out->expected = (uint64_t)(out->enabled_ns / 1e9 * out->rate + 0.5);
	}
	return err;
}

/* Batched reads cost one syscall per few thousand keys instead of two per
 * key; fall back to get_next_key where the kernel lacks them. */
static int for_each_count_slow(struct sampler *s, sampler_count_fn cb, void *ctx)
{
	int fd = bpf_map__fd(s->skel->maps.counts);
	struct bpfs_count_key key, next;
	void *prev = NULL;
	__u64 val;
	int err;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &val)) {
			err = cb(ctx, &next, val);
			if (err)
				return err;
		}
		key = next;
		prev = &key;
	}
	return errno == ENOENT ? 0 : -errno;
}

int sampler__for_each_count(struct sampler *s, sampler_count_fn cb, void *ctx)
{
	const __u32 chunk = 4096;
	int fd = bpf_map__fd(s->skel->maps.counts);
	struct bpfs_count_key *keys;
	__u64 batch, *vals;
	bool first = true;
	int err = 0;

	keys = calloc(chunk, sizeof(*keys));
	vals = calloc(chunk, sizeof(*vals));
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 n = chunk;

		err = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys, vals, &n, NULL);
		if (err && errno != ENOENT) {
			err = -errno;
			if (first && (err == -EINVAL || err == -ENOTSUP || err == -EOPNOTSUPP)) {
				err = for_each_count_slow(s, cb, ctx);
			}
			break;
		}
		for (__u32 i = 0; i < n; i++) {
			int cerr = cb(ctx, &keys[i], vals[i]);

			if (cerr) {
				err = cerr;
				goto out;
			}
		}
		if (err) { /* ENOENT: that was the last batch */
			err = 0;
			break;
		}
		first = false;
	}
out:
	free(keys);
	free(vals);
	return err;
}

int sampler__read_stack(struct sampler *s, uint64_t id, struct bpfs_stack *out)
{
	return bpf_map__lookup_elem(s->skel->maps.stacks, &id, sizeof(id), out, sizeof(*out), 0);
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	if (s->links) {
		for (int i = 0; i < perf_events__nr(s->events); i++)
			bpf_link__destroy(s->links[i]); /* closes the event fd too */
		free(s->links);
	}
	perf_events__free(s->events); /* closes only fds never handed over */
	ring_buffer__free(s->ring);
	sampler_bpf__destroy(s->skel);
	free(s);
}
