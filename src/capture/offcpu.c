// SPDX-License-Identifier: GPL-2.0
/*
 * The off-CPU unit's loader: bpf/offcpu.bpf.c with the sampler's maps (the
 * counts, stacks, stats, rings, filter, unwind tables, its .rodata and
 * .bss) handed over by fd, so its blocks become counts of one more event
 * that the report, the stream and the writers read as they read the
 * sampler's. The scratch maps stay its own: a sampling NMI may land while
 * the scheduler's tracepoint runs on the same CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_features.h"
#include "log.h"
#include "offcpu.h"
#include "sampler.h"
#include "offcpu.skel.h"

struct offcpu {
	struct offcpu_bpf *skel;
	struct bpf_object *shared; /* the sampler's, not ours */
	bool raw_tp;		   /* the fallback attach */
	bool tables;		   /* the sampler walks through unwind tables */
	bool before_user;	   /* off_before_user, not off_before */
	bool stopped;
	uint64_t left; /* entries left after the end's iterator */
	uint64_t t_start, t_end; /* CLOCK_MONOTONIC ns: attached, detached */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The sampler's maps this object uses as its own. */
static const char *const shared_maps[] = {
	"counts", "stacks", "stacks_s", "stats", "filter", "rings", "seqs", "recs_busy",
	"seen", "mapgens", "unwind_rows", "unwind_procs", "py_procs", "py_stats",
};

/* The internal map (.rodata, .bss) of obj for section sec. */
static struct bpf_map *internal_map(struct bpf_object *obj, const char *sec)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj) {
		const char *dot = strchr(bpf_map__name(m), '.');

		if (bpf_map__is_internal(m) && dot && !strcmp(dot, sec))
			return m;
	}
	return NULL;
}

/* Whether the data sections sec of both objects hold the same variables at
 * the same offsets: this object includes the sampler's source for them,
 * and its own settings live in .rodata.offcpu, so they should; shared by
 * fd, a difference would make one side read the other's fields. */
static bool same_layout(struct bpf_object *a, struct bpf_object *b, const char *sec)
{
	struct btf *ba = bpf_object__btf(a), *bb = bpf_object__btf(b);
	int ia = btf__find_by_name_kind(ba, sec, BTF_KIND_DATASEC);
	int ib = btf__find_by_name_kind(bb, sec, BTF_KIND_DATASEC);
	const struct btf_type *ta, *tb;
	const struct btf_var_secinfo *va, *vb;

	if (ia < 0 || ib < 0)
		return ia < 0 && ib < 0;
	ta = btf__type_by_id(ba, ia);
	tb = btf__type_by_id(bb, ib);
	if (btf_vlen(ta) != btf_vlen(tb))
		return false;
	va = btf_var_secinfos(ta);
	vb = btf_var_secinfos(tb);
	for (int i = 0; i < btf_vlen(ta); i++) {
		const char *na = btf__name_by_offset(ba, btf__type_by_id(ba, va[i].type)->name_off);
		const char *nb = btf__name_by_offset(bb, btf__type_by_id(bb, vb[i].type)->name_off);

		if (va[i].offset != vb[i].offset || va[i].size != vb[i].size || strcmp(na, nb))
			return false;
	}
	return true;
}

static int share_one(struct bpf_map *ours, struct bpf_map *theirs, const char *what)
{
	int err;

	if (!theirs) {
		p_err("off-CPU: the sampler has no map %s to share (a build mismatch: rebuild "
		      "bpfsampler)", what);
		return -ENOENT;
	}
	err = bpf_map__reuse_fd(ours, bpf_map__fd(theirs));
	if (err)
		p_err("off-CPU: cannot share the sampler's map %s: %s", what, strerror(-err));
	return err;
}

static int share_maps(struct offcpu *oc)
{
	struct bpf_object *obj = oc->skel->obj;
	static const char *const secs[] = { ".rodata", ".bss" };
	int err = 0;

	for (size_t i = 0; i < sizeof(shared_maps) / sizeof(shared_maps[0]) && !err; i++)
		err = share_one(bpf_object__find_map_by_name(obj, shared_maps[i]),
				bpf_object__find_map_by_name(oc->shared, shared_maps[i]),
				shared_maps[i]);
	for (size_t i = 0; i < 2 && !err; i++) {
		if (!same_layout(obj, oc->shared, secs[i])) {
			p_err("off-CPU: its %s is not laid out as the sampler's (a build "
			      "mismatch: rebuild bpfsampler)", secs[i]);
			return -EINVAL;
		}
		err = share_one(internal_map(obj, secs[i]), internal_map(oc->shared, secs[i]),
				secs[i]);
	}
	return err;
}

/* Probe once: the BTF tracepoint needs the kernel's BTF to name
 * btf_trace_sched_switch; without it, the raw tracepoint. Tests force the
 * fallback with BPFS_DEBUG_OFFCPU_RAW_TP. */
static bool has_tp_btf(void)
{
	if (getenv("BPFS_DEBUG_OFFCPU_RAW_TP")) {
		p_warn("BPFS_DEBUG_OFFCPU_RAW_TP: off-CPU through the raw tracepoint (for tests)");
		return false;
	}
	return bpf_features__switch_tp_btf();
}

static int configure(struct offcpu *oc, const struct offcpu_opts *o)
{
	struct offcpu_bpf *skel = oc->skel;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t per_cpu;
	int err;

	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	/* the bound is for the machine: each CPU gets its share, and may
	 * spend a tenth of a second's worth at once */
	per_cpu = o->walks_per_s ? (o->walks_per_s + ncpu - 1) / ncpu : 0;
	skel->rodata_offcpu->off_event = o->event;
	skel->rodata_offcpu->off_min_ns = o->min_ns;
	skel->rodata_offcpu->off_walk_rate = per_cpu;
	skel->rodata_offcpu->off_walk_burst = per_cpu / 10 ? per_cpu / 10 : 1;
	oc->raw_tp = !has_tp_btf();
	err = bpf_map__set_max_entries(skel->maps.offstart, o->threads);
	/* its own row cache (the sampler's is its interrupt's alone), as
	 * the sampler sizes its own: none without tables */
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.unwind_cache,
					       oc->tables ? ncpu * BPFS_UNWIND_CACHE_SLOTS : 1);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.offlast, 2 * o->threads);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.off_switch, !oc->raw_tp);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.off_switch_raw, oc->raw_tp);
	if (!err && o->cpus && o->cpus->nr) {
		skel->rodata_offcpu->off_some_cpus = true;
		err = bpf_map__set_max_entries(skel->maps.offcpus, ncpu);
	}
	if (!err)
		err = bpf_program__set_autoload(skel->progs.off_before_user, oc->before_user);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.off_before, !oc->before_user);
	return err;
}

/* The event index the sampler's helpers count under (cur_event), on every
 * CPU: set once here, not at every switch. */
static int set_cur_event(struct offcpu *oc, uint32_t ev)
{
	int ncpu = libbpf_num_possible_cpus();
	uint32_t zero = 0;
	uint64_t *v; /* per-CPU values take 8 bytes each: the u32 in the low half */
	int err;

	v = calloc(ncpu > 0 ? ncpu : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < ncpu; i++)
		v[i] = ev;
	err = bpf_map__update_elem(oc->skel->maps.cur_event, &zero, sizeof(zero), v,
				   ncpu * sizeof(*v), 0);
	free(v);
	return err;
}

/* -C: marks the chosen CPUs in offcpus (sized to the possible CPUs). */
static int choose_cpus(struct offcpu *oc, const struct int_list *cpus)
{
	const __u8 on = 1;
	int err = 0;

	for (size_t i = 0; cpus && i < cpus->nr && !err; i++) {
		__u32 cpu = cpus->v[i];

		err = bpf_map__update_elem(oc->skel->maps.offcpus, &cpu, sizeof(cpu), &on,
					   sizeof(on), 0);
	}
	return err;
}

/* Whether to walk the user stacks of threads blocked before the run (a
 * sleepable iterator: bpf_copy_from_user_task). Tests force the fallback
 * with BPFS_DEBUG_OFFCPU_NO_USER_BEFORE. */
static bool before_user_wanted(void)
{
	if (getenv("BPFS_DEBUG_OFFCPU_NO_USER_BEFORE")) {
		p_warn("BPFS_DEBUG_OFFCPU_NO_USER_BEFORE: no user stacks for threads blocked "
		       "before the run (for tests)");
		return false;
	}
	return bpf_features__has(BPFF_COPY_FROM_USER_TASK);
}

/* Opens and loads the object; -EAGAIN when only the sleepable iterator
 * kept it from loading (worth a try without it). */
static int open_load(struct offcpu *oc, const struct offcpu_opts *o)
{
	int err;

	oc->skel = offcpu_bpf__open();
	if (!oc->skel) {
		err = -errno;
		p_err("off-CPU: cannot open its BPF object: %s", strerror(-err));
		return err;
	}
	err = share_maps(oc);
	if (!err)
		err = configure(oc, o);
	if (err)
		return err;
	err = offcpu_bpf__load(oc->skel);
	if (err && oc->before_user)
		return -EAGAIN;
	if (err)
		p_err("off-CPU: cannot load its BPF programs: %s (run with -vv for the verifier "
		      "log)", strerror(-err));
	return err;
}

int offcpu__new(struct sampler *s, const struct offcpu_opts *o, struct offcpu **out)
{
	struct offcpu *oc;
	int err;

	/* its walkers and stores are the full sampling program's */
	if (!bpf_features__full_sampler()) {
		enum bpf_feature f = bpf_features__first_missing();

		p_err("--off-cpu needs %s (Linux %s), which this kernel lacks: profile without "
		      "--off-cpu (bpfsampler --version -v lists what the kernel has)",
		      bpf_features__name(f), bpf_features__since(f));
		return -EOPNOTSUPP;
	}
	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return -ENOMEM;
	oc->shared = sampler__bpf_object(s);
	oc->tables = sampler__unwind(s) != BPFS_UNWIND_FP;
	oc->before_user = before_user_wanted();
	err = open_load(oc, o);
	if (err == -EAGAIN) {
		/* a verifier that refuses the sleepable walk: without it; said
		 * only when that was the reason (else the error is said) */
		offcpu_bpf__destroy(oc->skel);
		oc->before_user = false;
		err = open_load(oc, o);
		if (!err)
			p_warn("off-CPU: the user stacks of threads blocked before the run cannot "
			       "be read on this kernel (run with -vv for the verifier log); they "
			       "are marked");
	}
	if (err)
		goto err_free;
	err = set_cur_event(oc, o->event);
	if (err) {
		p_err("off-CPU: cannot set its event index: %s", strerror(-err));
		goto err_free;
	}
	err = choose_cpus(oc, o->cpus);
	if (err) {
		p_err("off-CPU: cannot set its CPUs (-C): %s", strerror(-err));
		goto err_free;
	}
	*out = oc;
	return 0;
err_free:
	offcpu__free(oc);
	return err;
}

/* Runs an iterator program once, to its end. */
static int run_iter(struct bpf_program *prog, struct bpf_iter_attach_opts *opts,
		    const char *what)
{
	struct bpf_link *link = bpf_program__attach_iter(prog, opts);
	char buf[64];
	int fd, err = 0;
	ssize_t n;

	if (!link) {
		err = -errno;
		p_err("off-CPU: cannot attach the iterator over %s: %s", what, strerror(-err));
		return err;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		p_err("off-CPU: cannot create the iterator over %s: %s", what, strerror(-err));
	} else {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0)
			err = -errno;
		close(fd);
	}
	bpf_link__destroy(link);
	return err;
}

int offcpu__start(struct offcpu *oc)
{
	struct offcpu_bpf *skel = oc->skel;
	int err;

	if (oc->raw_tp)
		skel->links.off_switch_raw = bpf_program__attach(skel->progs.off_switch_raw);
	else
		skel->links.off_switch = bpf_program__attach(skel->progs.off_switch);
	if (!skel->links.off_switch && !skel->links.off_switch_raw) {
		err = -errno;
		p_err("off-CPU: cannot attach to sched_switch (%s): %s", oc->raw_tp ? "raw_tp"
		      : "tp_btf", strerror(-err));
		return err;
	}
	oc->t_start = mono_ns();
	/* after the attach: a thread that switches out meanwhile is recorded
	 * by the tracepoint, and the iterator leaves its start alone */
	err = run_iter(oc->before_user ? skel->progs.off_before_user : skel->progs.off_before,
		       NULL, "tasks");
	if (err)
		p_err("off-CPU: threads already off the CPU not found: %s", strerror(-err));
	return err;
}

/* Entries no task claimed at the end (a thread gone without its switch-in,
 * which the kernel does not do): counted as lost blocks. */
static uint64_t count_left(struct offcpu *oc)
{
	int fd = bpf_map__fd(oc->skel->maps.offstart);
	__u32 key, next, *prev = NULL;
	uint64_t n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		n++;
		key = next;
		prev = &key;
	}
	return n;
}

int offcpu__stop(struct offcpu *oc)
{
	int err;

	if (!oc || oc->stopped)
		return 0;
	oc->stopped = true;
	bpf_link__destroy(oc->skel->links.off_switch);
	bpf_link__destroy(oc->skel->links.off_switch_raw);
	oc->skel->links.off_switch = oc->skel->links.off_switch_raw = NULL;
	oc->t_end = mono_ns();
	err = run_iter(oc->skel->progs.off_end, NULL, "the blocks still open");
	oc->left = count_left(oc);
	return err;
}

int offcpu__cut(struct offcpu *oc)
{
	if (!oc || oc->stopped)
		return 0;
	return run_iter(oc->skel->progs.off_cut, NULL, "the blocks open at the window's end");
}

int offcpu__stats(struct offcpu *oc, struct offcpu_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->attach = oc->raw_tp ? "raw_tp" : "tp_btf";
	out->left = oc->left;
	out->window_ns = oc->t_end > oc->t_start ? oc->t_end - oc->t_start : 0;
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 i = 0; i < BPFS_OFF_STAT_NR && !err; i++) {
		err = bpf_map__lookup_elem(oc->skel->maps.offstats, &i, sizeof(i), vals,
					   ncpu * sizeof(*vals), 0);
		for (int c = 0; c < ncpu && !err; c++)
			out->stat[i] += vals[c];
	}
	free(vals);
	return err;
}

/* Every switch-out lands in one bucket, and every block started ends in
 * one: 0 when both hold (docs/design.md, "Off-CPU time"). */
int64_t offcpu__unbalanced(const struct offcpu_stats *st)
{
	const uint64_t *v = st->stat;
	int64_t outs = v[BPFS_OFF_OUT] - v[BPFS_OFF_OUT_IDLE] - v[BPFS_OFF_OUT_FILTERED] -
		       v[BPFS_OFF_OUT_DEAD] - v[BPFS_OFF_OUT_STARTED] - v[BPFS_OFF_OUT_LOST_FULL];
	int64_t blocks = v[BPFS_OFF_OUT_STARTED] + v[BPFS_OFF_BEFORE] - v[BPFS_OFF_IN] -
			 v[BPFS_OFF_END] - v[BPFS_OFF_OUT_REPLACED] - st->left;
	int64_t ends = v[BPFS_OFF_IN] + v[BPFS_OFF_END] + v[BPFS_OFF_CUT] -
		       v[BPFS_OFF_IN_SHORT] - v[BPFS_OFF_IN_COUNTED];

	return llabs(outs) + llabs(blocks) + llabs(ends);
}

void offcpu__summary(FILE *f, const struct offcpu_stats *st, bool verbose)
{
	const uint64_t *v = st->stat;

	fprintf(f, "  off-CPU (%s, %.3f s window): %llu blocks counted, %.3f s (%llu still "
		"open at the end, %.3f s); %llu shorter than --off-cpu-min left out (%.3f s); "
		"%llu threads off the CPU at the start\n", st->attach, st->window_ns / 1e9,
		(unsigned long long)v[BPFS_OFF_IN_COUNTED], v[BPFS_OFF_IN_COUNTED_NS] / 1e9,
		(unsigned long long)v[BPFS_OFF_END], v[BPFS_OFF_END_NS] / 1e9,
		(unsigned long long)v[BPFS_OFF_IN_SHORT], v[BPFS_OFF_IN_SHORT_NS] / 1e9,
		(unsigned long long)v[BPFS_OFF_BEFORE]);
	if (v[BPFS_OFF_OUT_NOWALK] || v[BPFS_OFF_OUT_REUSED])
		fprintf(f, "  off-CPU: the walk budget (--off-cpu-walks) was spent: %llu blocks "
			"took their thread's last stacks (same registers, system call and kind "
			"of wait), %llu have none (raise --off-cpu-walks)\n",
			(unsigned long long)v[BPFS_OFF_OUT_REUSED],
			(unsigned long long)v[BPFS_OFF_OUT_NOWALK]);
	if (v[BPFS_OFF_OUT_LOST_FULL] || v[BPFS_OFF_BEFORE_LOST])
		fprintf(f, "  off-CPU: %llu blocks lost, their start not kept (too many threads "
			"off the CPU at once: raise --off-cpu-threads)\n",
			(unsigned long long)(v[BPFS_OFF_OUT_LOST_FULL] + v[BPFS_OFF_BEFORE_LOST]));
	if (st->left)
		fprintf(f, "  off-CPU: %llu blocks lost at the end: their thread was gone\n",
			(unsigned long long)st->left);
	if (!verbose && !offcpu__unbalanced(st))
		return;
	fprintf(f, "  off-CPU accounting: %llu switch-outs = %llu idle + %llu not selected + "
		"%llu exiting + %llu blocks started + %llu lost; %llu started + %llu found at the "
		"start (%llu more lost) = %llu ended + %llu open at the end + %llu replaced + %llu "
		"gone; %s\n",
		(unsigned long long)v[BPFS_OFF_OUT], (unsigned long long)v[BPFS_OFF_OUT_IDLE],
		(unsigned long long)v[BPFS_OFF_OUT_FILTERED], (unsigned long long)v[BPFS_OFF_OUT_DEAD],
		(unsigned long long)v[BPFS_OFF_OUT_STARTED],
		(unsigned long long)v[BPFS_OFF_OUT_LOST_FULL],
		(unsigned long long)v[BPFS_OFF_OUT_STARTED], (unsigned long long)v[BPFS_OFF_BEFORE],
		(unsigned long long)v[BPFS_OFF_BEFORE_LOST], (unsigned long long)v[BPFS_OFF_IN],
		(unsigned long long)v[BPFS_OFF_END], (unsigned long long)v[BPFS_OFF_OUT_REPLACED],
		(unsigned long long)st->left,
		offcpu__unbalanced(st) ? "UNBALANCED (a bug: please report it)" : "balanced");
}

void offcpu__free(struct offcpu *oc)
{
	if (!oc)
		return;
	offcpu_bpf__destroy(oc->skel);
	free(oc);
}
