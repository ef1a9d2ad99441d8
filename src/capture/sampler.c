// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "events.h"
#include "bpf_features.h"
#include "features.h"
#include "log.h"
#include "int_list.h"
#include "perf_events.h"
#include "sampler.h"
#include "sideband.h"
#include "vec.h"
#include "sampler.skel.h"


/* Threads that can wait for a completion at once (LRU: ~10 KiB each). */
#define COMPLETION_ENTRIES 256

/* Children of a profiled command are added to `filter` as they fork. */
#define FOLLOW_FILTER_ENTRIES 65536

/* One drain pass reads at most this many records of a ring, and stops
 * after DRAIN_PASS_NS in all: a ring the BPF side fills as fast as we read
 * it (-F 100000, -c 1) would otherwise never let a pass end, and the
 * caller never see its deadline or a signal. The clock is read every
 * DRAIN_CLOCK_EVERY records. */
#define DRAIN_RING_RECORDS 4096
#define DRAIN_PASS_NS 50000000ULL
#define DRAIN_CLOCK_EVERY 64
/* After the events are disabled, the last records are drained for at most
 * this long in all, sampler__stop's drain and sampler__final_seqs' together
 * (only the tracepoints and completions still send; it takes 1-10 ms). A
 * machine that forks without pause would otherwise keep the drains going:
 * the run ends within its second (docs/design.md, "Every run ends"), and
 * what is left in the rings counts as lost. */
#define FINAL_DRAIN_NS 300000000ULL
/* After the stop flag is set, how long to wait for the programs that took
 * a sequence number to submit their records (microseconds, unless one was
 * preempted). */
#define STOP_WAIT_NS 100000000ULL
/* The callback's way of saying "this pass has had its share". */
#define DRAIN_BUDGET_SPENT (-ECANCELED)

struct sampler {
	struct sampler_bpf *skel;
	struct perf_events *events;
	struct bpf_link **links; /* one per perf event; each owns its event's fd */
	/* one ring_buffer per CPU ring, so that a pass can give each ring its
	 * share (one ring_buffer over all rings always starts at the first,
	 * and a budget spent there would starve the others) */
	struct ring_buffer **rings;
	struct sideband *sb;	/* mmap2 records, when following mappings */
	uint64_t sb_read_ns;	/* CLOCK_MONOTONIC: when it was last read */
	int epfd;		/* the rings' epoll set, with the side-band's */
	int *ring_fds; /* one ring map per possible CPU; ours to close */
	int nr_rings;
	int next_ring; /* the ring the next pass starts with */
	/* the pass in progress */
	unsigned int ring_left;	  /* records this ring may still give */
	unsigned int since_clock; /* records since the clock was read */
	uint64_t pass_end_ns;	  /* CLOCK_MONOTONIC */
	bool pass_over;		  /* the time is spent: stop every ring */
	struct sampler_opts opts;
	bool fp_instead;	/* tables were asked for, the kernel has none */
	bool stopped;
	uint64_t drain_end;	/* CLOCK_MONOTONIC ns: the final drains' bound */
	pthread_t detacher;	/* detaching the followers, when detaching */
	bool detaching;
	uint64_t mapgens_failed; /* gens not stored (mapgens update failed) */
	uint64_t stored_at_clear; /* segs_stored() when last emptied */
	uint64_t stacks_dropped;  /* segments emptied out but not kept */
	long keep_fail_after;	  /* BPFS_DEBUG_KEEP_FAIL: keeps before failing; -1 */
	char *verifier_stats;	  /* BPFS_DEBUG_VERIFIER_STATS: on_sample's, or NULL */
	uint64_t keeps;		  /* segments handed to keep so far */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Reads the side-band ring, noting when. */
static void read_sideband(struct sampler *s)
{
	s->sb_read_ns = mono_ns();
	sideband__consume(s->sb);
}

/* A sample taken after the side-band was last read may have run in a
 * mapping whose record came in since (the pass reads the side-band first,
 * but a pass that starts a process's maps and tables takes milliseconds,
 * in which it dlopens and runs): read it again first, so that the stream
 * names the sample after it (seen: a dlopen'ed library's first samples
 * named after the library mapped at that address a second later). */
static void sideband_up_to(struct sampler *s, const void *data, size_t size)
{
	const struct bpfs_rec_sample *r = data;

	if (s->sb && size >= sizeof(*r) && r->hdr.type == BPFS_REC_SAMPLE &&
	    r->time_ns >= s->sb_read_ns)
		read_sideband(s);
}

/* libbpf has consumed the record before it calls us, also when we return
 * an error, so stopping here loses nothing. */
static int on_ring_record(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	int err;

	sideband_up_to(s, data, size);
	err = s->opts.on_record ? s->opts.on_record(s->opts.ctx, data, size) : 0;

	if (err)
		return err;
	if (++s->since_clock >= DRAIN_CLOCK_EVERY) {
		s->since_clock = 0;
		if (mono_ns() >= s->pass_end_ns)
			s->pass_over = true;
	}
	if (s->pass_over || --s->ring_left == 0)
		return DRAIN_BUDGET_SPENT;
	return 0;
}

/* One bounded pass over every ring, starting one further each time.
 * Returns the records read (the one that spent a budget included), or
 * -errno. */
static int drain_pass(struct sampler *s)
{
	int total = 0;

	s->pass_end_ns = mono_ns() + DRAIN_PASS_NS;
	s->pass_over = false;
	s->since_clock = 0;
	for (int i = 0; i < s->nr_rings && !s->pass_over; i++) {
		int r = (s->next_ring + i) % s->nr_rings;
		int n;

		s->ring_left = DRAIN_RING_RECORDS;
		n = ring_buffer__consume(s->rings[r]);
		if (n == DRAIN_BUDGET_SPENT)
			n = DRAIN_RING_RECORDS - s->ring_left + 1;
		if (n < 0)
			return n;
		total += n;
	}
	s->next_ring = (s->next_ring + 1) % s->nr_rings;
	return total;
}

/* A preallocated hash map element: the kernel's struct htab_elem header
 * (list node, LRU/per-CPU pointer union, hash: 48 bytes on 64-bit), then
 * key and value, each rounded up to 8 bytes. */
#define HTAB_ELEM_HEADER 48
#define ROUND8(x) (((x) + 7ULL) & ~7ULL)

void sampler__memory(const struct sampler_opts *o, int nr_rings, struct sampler_memory *out)
{
	out->counts = (unsigned long long)o->map_entries *
		      (HTAB_ELEM_HEADER + ROUND8(sizeof(struct bpfs_count_key)) +
		       ROUND8(sizeof(struct bpfs_count_val)));
	/* stacks and stacks_s, each of stack_entries */
	out->stacks = (unsigned long long)o->stack_entries *
		      (2 * (HTAB_ELEM_HEADER + ROUND8(sizeof(__u64))) +
		       ROUND8(sizeof(struct bpfs_stack)) + ROUND8(sizeof(struct bpfs_stack_small)));
	out->rings = (unsigned long long)o->ring_size * nr_rings;
	out->total = out->counts + out->stacks + out->rings;
}

/* The compat program, kernels before 5.19 (docs/design.md, "Kernels"):
 * one per event index, since it has no attach cookie; only those in use
 * are loaded. The full program is left out. */
static int choose_program(struct sampler *s)
{
	bool full = bpf_features__full_sampler();
	struct bpf_program *p;
	char name[32];
	int err = bpf_program__set_autoload(s->skel->progs.on_sample, full);

	for (int ev = 0; ev < BPFS_MAX_EVENTS && !err; ev++) {
		snprintf(name, sizeof(name), "on_sample_compat%d", ev);
		p = bpf_object__find_program_by_name(s->skel->obj, name);
		err = p ? bpf_program__set_autoload(p, !full && (size_t)ev < s->opts.events->nr)
			: -ENOENT;
	}
	return err;
}

/* The compat program walks no unwind tables (they need bpf_loop): user
 * stacks through frame pointers, said once. */
static void settle_unwind(struct sampler *s)
{
	if (s->opts.unwind == BPFS_UNWIND_FP || bpf_features__full_sampler())
		return;
	if (s->opts.unwind == BPFS_UNWIND_DWARF)
		p_warn("--unwind dwarf: this kernel has no %s (Linux %s): user stacks are "
		       "walked through frame pointers", bpf_features__name(BPFF_LOOP),
		       bpf_features__since(BPFF_LOOP));
	else
		p_info("no unwind tables on this kernel (no %s, Linux %s): user stacks "
		       "through frame pointers", bpf_features__name(BPFF_LOOP),
		       bpf_features__since(BPFF_LOOP));
	s->opts.unwind = BPFS_UNWIND_FP;
	s->fp_instead = true;
}

/* Measurement and tests: the verifier's statistics of on_sample (log level
 * 4: a few lines, no instructions), whose load is most of the start-up.
 * Only on request: at level 4 a refused program's log would hold no
 * reason. */
#define VERIFIER_STATS_SIZE (64 * 1024)

static void ask_verifier_stats(struct sampler *s)
{
	s->verifier_stats = calloc(1, VERIFIER_STATS_SIZE);
	if (!s->verifier_stats) {
		p_warn("BPFS_DEBUG_VERIFIER_STATS: no memory for the statistics; not asked for");
		return;
	}
	bpf_program__set_log_buf(s->skel->progs.on_sample, s->verifier_stats,
				 VERIFIER_STATS_SIZE);
	bpf_program__set_log_level(s->skel->progs.on_sample, 4);
}

static void show_verifier_stats(const struct sampler *s)
{
	unsigned long insns = 0, us = 0;
	char depth[128] = "?";
	const char *p, *t, *d;

	if (!s->verifier_stats)
		return;
	p = strstr(s->verifier_stats, "processed ");
	t = strstr(s->verifier_stats, "verification time ");
	d = strstr(s->verifier_stats, "stack depth ");
	if (p)
		sscanf(p, "processed %lu insns", &insns);
	if (t)
		sscanf(t, "verification time %lu usec", &us);
	if (d)
		sscanf(d, "stack depth %127s", depth);
	p_warn("BPFS_DEBUG_VERIFIER_STATS: on_sample: %lu instructions processed, "
	       "verified in %.3f s, stack depth by function %s (a measurement knob)", insns,
	       us / 1e6, depth);
}

static int configure(struct sampler *s)
{
	const struct sampler_opts *o = &s->opts;
	struct sampler_bpf *skel = s->skel;
	unsigned int filter_entries = 1;
	int err;

	skel->rodata->mode = o->mode;
	skel->rodata->loader_pid = getpid();
	skel->rodata->filter_mode = o->filter_mode;
	/* Wake the loader when a quarter of a ring is full; it polls anyway. */
	skel->rodata->wakeup_bytes = o->ring_size / 4;
	skel->rodata->announce_now = !o->batched_wakeups;
	skel->rodata->include_idle = o->include_idle;
	skel->rodata->collect_user = o->user_stacks;
	skel->rodata->collect_kernel = o->kernel_stacks;
	skel->rodata->max_depth = o->max_depth;
	skel->rodata->irq_depth = o->irq_depth ? o->irq_depth : o->max_depth;
	skel->rodata->use_task_work = o->completion && features__has_task_work();
	skel->rodata->track_maps = o->follow_mappings && features__has_mmap_tracking() &&
				   o->on_mapping;
	/* Measurement only: where each sample stops (docs/benchmarks.md). */
	if (getenv("BPFS_DEBUG_CUT")) {
		skel->rodata->debug_cut = atoi(getenv("BPFS_DEBUG_CUT"));
		p_warn("BPFS_DEBUG_CUT=%u: every sample ends after stage %u and is not kept "
		       "(a measurement knob: unset it for profiles)", skel->rodata->debug_cut,
		       skel->rodata->debug_cut);
	}
	/* Test only: keeping a segment of an emptied stacks map fails after
	 * this many, as when memory runs out (tests/integration/storms.sh). */
	if (getenv("BPFS_DEBUG_KEEP_FAIL")) {
		s->keep_fail_after = atol(getenv("BPFS_DEBUG_KEEP_FAIL"));
		p_warn("BPFS_DEBUG_KEEP_FAIL=%ld: segments emptied from the stacks map are not "
		       "kept after the first %ld (a test knob: unset it for profiles)",
		       s->keep_fail_after, s->keep_fail_after);
	}
	if (getenv("BPFS_DEBUG_VERIFIER_STATS"))
		ask_verifier_stats(s);
	skel->rodata->unwind_mode = o->unwind;
	skel->rodata->mark_fp_cuts = s->fp_instead;
	/* with --unwind fp the Python frames go outward of the native ones
	 * (python_tail): a frame-pointer walk never reaches the interpreter */
	skel->rodata->use_python = o->python && features__has_python_walk();
	/* the bit above the hash tells the two stacks maps apart */
	if (o->stack_id_bits && o->stack_id_bits < 63)
		skel->rodata->stack_id_mask = (1ULL << o->stack_id_bits) - 1;

	if (o->filter_ids && o->filter_ids->nr)
		filter_entries = o->filter_ids->nr;
	if (o->follow_children)
		filter_entries += FOLLOW_FILTER_ENTRIES;
	err = bpf_map__set_max_entries(skel->maps.counts, o->map_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.stacks, o->stack_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.stacks_s, o->stack_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.filter, filter_entries);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.rings, s->nr_rings);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.completions,
					       skel->rodata->use_task_work ? COMPLETION_ENTRIES : 1);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.unwind_rows,
					       o->unwind != BPFS_UNWIND_FP && o->unwind_rows ?
					       o->unwind_rows : 1);
	/* the row cache: its slots for each possible CPU (nr_rings) */
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.unwind_cache,
					       o->unwind != BPFS_UNWIND_FP ?
					       s->nr_rings * BPFS_UNWIND_CACHE_SLOTS : 1);
	if (!err && o->unwind == BPFS_UNWIND_FP)
		err = bpf_map__set_max_entries(skel->maps.unwind_procs, 1);
	if (!err && !skel->rodata->use_python)
		err = bpf_map__set_max_entries(skel->maps.py_procs, 1);
	/* The first ring is the template of the inner map (its size). */
	if (!err)
		err = bpf_map__set_inner_map_fd(skel->maps.rings, s->ring_fds[0]);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.on_fork, o->follow_children);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.on_command_exec, o->follow_children);
	if (!err)
		err = bpf_program__set_autoload(skel->progs.on_exec, skel->rodata->track_maps);
	if (!err)
		err = choose_program(s);
	return err;
}

/* One ring per possible CPU: created before load (the first one is the
 * inner-map template), installed into `rings` after, and drained through
 * one ring_buffer (one epoll set). */
static int create_rings(struct sampler *s)
{
	s->ring_fds = calloc(s->nr_rings, sizeof(*s->ring_fds));
	if (!s->ring_fds)
		return -ENOMEM;
	for (int cpu = 0; cpu < s->nr_rings; cpu++)
		s->ring_fds[cpu] = -1;
	for (int cpu = 0; cpu < s->nr_rings; cpu++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bpfs_ring", 0, 0, s->opts.ring_size,
					NULL);

		if (fd < 0) {
			int err = -errno;

			p_err("cannot create the ring of CPU %d (%u bytes): %s; try a smaller "
			      "--ring-size", cpu, s->opts.ring_size, strerror(-err));
			return err;
		}
		s->ring_fds[cpu] = fd;
	}
	return 0;
}

/* Every update of a map-in-map waits for an RCU grace period (the kernel's
 * maybe_wait_bpf_programs): 12-14 ms each here, so one batch for all CPUs
 * rather than one update per CPU. Kernels without batch updates on this map
 * type get them one by one. */
static bool install_rings_batch(struct sampler *s, int outer)
{
	__u32 *keys = calloc(s->nr_rings, sizeof(*keys)), count = s->nr_rings;
	bool ok;

	if (!keys)
		return false;
	for (int cpu = 0; cpu < s->nr_rings; cpu++)
		keys[cpu] = cpu;
	ok = !bpf_map_update_batch(outer, keys, s->ring_fds, &count, NULL) &&
	     count == (__u32)s->nr_rings;
	free(keys);
	return ok;
}

static int install_rings(struct sampler *s)
{
	int outer = bpf_map__fd(s->skel->maps.rings), err;
	bool batched = install_rings_batch(s, outer);

	s->rings = calloc(s->nr_rings, sizeof(*s->rings));
	if (!s->rings)
		return -ENOMEM;
	for (int cpu = 0; cpu < s->nr_rings; cpu++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = cpu };
		int fd = s->ring_fds[cpu];

		if (!batched && bpf_map_update_elem(outer, &cpu, &fd, BPF_ANY)) {
			err = -errno;
			p_err("cannot install the ring of CPU %d: %s", cpu, strerror(-err));
			return err;
		}
		s->rings[cpu] = ring_buffer__new(fd, on_ring_record, s, NULL);
		if (!s->rings[cpu] ||
		    epoll_ctl(s->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(s->rings[cpu]), &ev)) {
			err = -errno;
			p_err("cannot map the ring of CPU %d: %s", cpu, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* libbpf speaks through our log: its warnings as warnings, the rest (the
 * verifier log among it) only at -vv. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	log_vmsg(level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG, fmt, ap);
	return 0;
}

/* The BPF rings and the side-band perf rings wake one epoll set. */
static int watch_fd(struct sampler *s, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = -errno;

		p_err("cannot watch the rings (epoll): %s", strerror(-err));
		return err;
	}
	return 0;
}

/* Mappings are per process: -t selects threads, so every process's are
 * followed; -p and -- command select processes. Never our own: reading our
 * maps as they change would be a loop (see note_self). */
bool sampler__follows(struct sampler *s, uint32_t pid)
{
	__u8 state;

	if (pid == (uint32_t)s->skel->rodata->loader_pid)
		return false;
	return s->opts.filter_mode != BPFS_FILTER_TGID ||
	       !bpf_map__lookup_elem(s->skel->maps.filter, &pid, sizeof(pid), &state,
				     sizeof(state), 0);
}

/*
 * A file mapping from the side-band: it takes the next gen of the counter
 * the BPF exec hook shares (in the mmap'ed .bss), and the process's samples
 * carry it from now on. Samples taken between the mapping and this update
 * carry the gen before (the reader is woken at every record; the lag is in
 * the -v summary); in stream mode their time puts them right
 * (stream_opts.map_gen_at).
 */
static void on_sideband_mapping(void *ctx, const struct sideband_mapping *m)
{
	struct sampler *s = ctx;
	__u32 pid = m->pid, gen;

	if (!sampler__follows(s, pid))
		return;
	if (m->exec) { /* no mapping: no gen */
		s->opts.on_mapping(s->opts.map_ctx, m, 0);
		return;
	}
	gen = (__u32)__atomic_add_fetch(&s->skel->bss->map_gen_seq, 1, __ATOMIC_SEQ_CST);
	if (bpf_map__update_elem(s->skel->maps.mapgens, &pid, sizeof(pid), &gen, sizeof(gen),
				 BPF_ANY))
		s->mapgens_failed++;
	/* after the store: CPUs drop the gens they cached (gen_cache) */
	__atomic_add_fetch(&s->skel->bss->map_gen_epoch, 1, __ATOMIC_SEQ_CST);
	s->opts.on_mapping(s->opts.map_ctx, m, gen);
}

static void on_sideband_lost(void *ctx, uint64_t n)
{
	struct sampler *s = ctx;

	if (s->opts.on_mappings_lost)
		s->opts.on_mappings_lost(s->opts.map_ctx, n);
}

/* Opened before the exec hook and the sampling events: a mapping made once
 * sampling runs is never missed unseen (a full ring is counted). */
static int open_sideband(struct sampler *s)
{
	int err;

	err = sideband__new(&(struct sideband_opts){ .size = s->opts.sideband_size,
						     .wakeup_bytes = s->opts.batched_wakeups
									     ? s->opts.sideband_size / 4
									     : 0,
						     .on_mapping = on_sideband_mapping,
						     .on_lost = on_sideband_lost,
						     .ctx = s },
			    &s->sb);
	if (!err)
		err = watch_fd(s, sideband__epoll_fd(s->sb));
	return err;
}

/* Names what the kernel lacks, and the next step. */
static void load_failed(int err)
{
	enum bpf_feature miss = bpf_features__first_missing();

	if (bpf_features__full_sampler())
		p_err("cannot load the BPF programs: %s; this kernel has every feature they "
		      "need (bpfsampler --version -v): please report it with the verifier log "
		      "of bpfsampler -vv", strerror(-err));
	else
		p_err("cannot load the BPF programs: %s; this kernel lacks %s (Linux %s) and "
		      "more (bpfsampler --version -v), and the program for older kernels "
		      "failed too: please report it with the verifier log of bpfsampler -vv",
		      strerror(-err), bpf_features__name(miss), bpf_features__since(miss));
}

/* The floor: ring buffers (5.8) and BTF, checked before anything is made. */
static int check_floor(void)
{
	if (bpf_features__has(BPFF_RINGBUF))
		return 0;
	p_err("this kernel has no %s (Linux %s): bpfsampler needs Linux 5.8 or later with "
	      "BTF (Debian 11's 5.10 and every later Debian kernel work)",
	      bpf_features__name(BPFF_RINGBUF), bpf_features__since(BPFF_RINGBUF));
	return -EOPNOTSUPP;
}

int sampler__new(const struct sampler_opts *o, struct sampler **out)
{
	struct sampler *s;
	int err;

	libbpf_set_print(libbpf_print);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->epfd = -1;
	s->keep_fail_after = -1;
	s->opts = *o;
	settle_unwind(s);
	err = check_floor();
	if (err)
		goto err_free;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		err = -errno;
		p_err("cannot create the rings' epoll set: %s", strerror(-err));
		goto err_free;
	}
	s->nr_rings = libbpf_num_possible_cpus();
	if (s->nr_rings < 0) {
		err = s->nr_rings;
		goto err_free;
	}

	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = -errno;
		p_err("cannot open the BPF object: %s", strerror(-err));
		goto err_free;
	}
	err = create_rings(s);
	if (err)
		goto err_free;
	err = configure(s);
	if (err) {
		p_err("cannot size the BPF maps: %s", strerror(-err));
		goto err_free;
	}
	err = sampler_bpf__load(s->skel);
	if (err) {
		load_failed(err);
		goto err_free;
	}
	show_verifier_stats(s);
	err = install_rings(s);
	if (err)
		goto err_free;
	if (o->filter_ids) {
		for (size_t i = 0; i < o->filter_ids->nr; i++) {
			err = sampler__add_filter(s, o->filter_ids->v[i], false);
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

int sampler__add_filter(struct sampler *s, uint32_t id, bool after_exec)
{
	__u8 state = after_exec ? BPFS_FILTER_AFTER_EXEC : BPFS_FILTER_SELECTED;
	int err;

	err = bpf_map__update_elem(s->skel->maps.filter, &id, sizeof(id), &state, sizeof(state),
				   BPF_ANY);
	if (err)
		p_err("cannot add %u to the BPF filter: %s", id, strerror(-err));
	return err;
}

/* The program for perf event i: the full one (its event is the cookie), or
 * the compat one of its event. */
static struct bpf_program *sample_program(struct sampler *s, int i)
{
	char name[32];

	if (bpf_features__full_sampler())
		return s->skel->progs.on_sample;
	snprintf(name, sizeof(name), "on_sample_compat%d", perf_events__event(s->events, i));
	return bpf_object__find_program_by_name(s->skel->obj, name);
}

int sampler__start(struct sampler *s)
{
	int err, n;

	err = perf_events__open(s->opts.events, s->opts.cpus, &s->events);
	if (err)
		return err;
	if (s->opts.follow_children) {
		s->skel->links.on_fork = bpf_program__attach(s->skel->progs.on_fork);
		if (s->skel->links.on_fork)
			s->skel->links.on_command_exec =
				bpf_program__attach(s->skel->progs.on_command_exec);
		if (!s->skel->links.on_command_exec) {
			err = -errno;
			p_err("cannot attach to sched_process_fork and sched_process_exec: %s",
			      strerror(-err));
			return err;
		}
	}
	/* Before the events: a sample must never carry a gen whose mapping
	 * record was not sent. */
	if (s->skel->rodata->track_maps) {
		err = open_sideband(s);
		if (err)
			return err;
		s->skel->links.on_exec = bpf_program__attach(s->skel->progs.on_exec);
		if (!s->skel->links.on_exec) {
			err = -errno;
			p_err("cannot attach to sched_process_exec to follow execs: %s; run with "
			      "--no-follow-mappings to name frames after the mappings read from "
			      "/proc", strerror(-err));
			return err;
		}
	}
	n = perf_events__nr(s->events);
	s->links = calloc(n, sizeof(*s->links));
	if (!s->links)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		/* the cookie tells the program which event fired */
		LIBBPF_OPTS(bpf_perf_event_opts, popts,
			    .bpf_cookie = perf_events__event(s->events, i));

		s->links[i] = bpf_program__attach_perf_event_opts(sample_program(s, i),
								  perf_events__fd(s->events, i),
								  &popts);
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

enum bpfs_unwind_mode sampler__unwind(const struct sampler *s)
{
	return s->opts.unwind;
}

bool sampler__tracks_mappings(const struct sampler *s)
{
	return s->sb && s->skel->links.on_exec;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	struct epoll_event evs[8];

	if (epoll_wait(s->epfd, evs, 8, timeout_ms) < 0 && errno != EINTR)
		return -errno;
	/* Side-band first: a sample drained next, taken after a mapping the
	 * side-band holds, finds that mapping known (stream mode; one taken
	 * after this read has it read again: sideband_up_to). */
	if (s->sb)
		read_sideband(s);
	/* Records are submitted without a wake-up until a ring is a quarter
	 * full, so epoll may time out with data waiting: drain on the timer.
	 * A ring_buffer's own epoll set has one ring, so its state needs no
	 * separate wait: consume reads it. */
	return drain_pass(s);
}

/* Detaching a tracepoint program waits for an RCU grace period (80 ms
 * measured here): the programs that follow processes (exec, fork) are
 * detached on a thread, started at the stop, which sampler__final_seqs
 * joins (their last records must be drained before the sequences are
 * read). */
static void *detach_followers(void *arg)
{
	struct sampler_bpf *skel = arg;

	bpf_link__destroy(skel->links.on_exec);
	bpf_link__destroy(skel->links.on_fork);
	bpf_link__destroy(skel->links.on_command_exec);
	skel->links.on_exec = skel->links.on_fork = NULL;
	skel->links.on_command_exec = NULL;
	return NULL;
}

int sampler__disable(struct sampler *s)
{
	return s->events ? perf_events__disable(s->events) : 0;
}

int sampler__stop(struct sampler *s)
{
	unsigned long long records = 0;
	uint64_t t0, end;
	int err = 0, n, passes = 0;

	if (s->stopped)
		return 0;
	if (s->events)
		err = perf_events__disable(s->events);
	s->stopped = true;
	/* With the events off the rings empty fast; the bound is for the
	 * tracepoints and completions that still send. */
	t0 = mono_ns();
	end = s->drain_end = t0 + FINAL_DRAIN_NS;
	do {
		if (s->sb)
			read_sideband(s);
		n = drain_pass(s);
		passes++;
		records += n > 0 ? n : 0;
	} while (n > 0 && mono_ns() < end);
	p_dbg("final drain: %d passes, %llu records, %.0f ms", passes, records,
	      (mono_ns() - t0) / 1e6);
	/* on failure the skeleton's destroy detaches them, waiting */
	s->detaching = !pthread_create(&s->detacher, NULL, detach_followers, s->skel);
	return err;
}

/* Key k of a per-CPU map, its ncpu values (read into vals) added to *sum. */
static int percpu_sum(const struct bpf_map *m, __u32 k, __u64 *vals, int ncpu, uint64_t *sum)
{
	int err = bpf_map__lookup_elem(m, &k, sizeof(k), vals, ncpu * sizeof(*vals), 0);

	for (int c = 0; !err && c < ncpu; c++)
		*sum += vals[c];
	return err;
}

int sampler__stats(struct sampler *s, struct sampler_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	const struct event_list *evs = s->opts.events;
	__u64 *vals;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	out->nr_events = evs->nr;
	for (__u32 ev = 0; ev < evs->nr && !err; ev++) {
		struct sampler_event_stats *es = &out->ev[ev];

		for (__u32 i = 0; i < BPFS_STAT_NR; i++) {
			__u32 key = ev * BPFS_STAT_NR + i;

			err = percpu_sum(s->skel->maps.stats, key, vals, ncpu, &es->stat[i]);
			if (err)
				break;
			out->stat[i] += es->stat[i];
		}
		if (s->events)
			perf_events__times(s->events, ev, &es->enabled_ns, &es->running_ns);
		if (evs->v[ev].timer && evs->v[ev].attr.sample_period) {
			es->rate = 1e9 / evs->v[ev].attr.sample_period;
			es->expected = (uint64_t)(es->enabled_ns / 1e9 * es->rate + 0.5);
		}
	}
	free(vals);
	out->rate = out->ev[0].rate;
	out->enabled_ns = out->ev[0].enabled_ns;
	out->stacks_dropped = s->stacks_dropped;
	for (int ev = 0; ev < out->nr_events; ev++)
		out->expected += out->ev[ev].expected;
	if (s->events) {
		size_t perf = 0; /* offcpu-time opens no perf event */

		for (size_t ev = 0; ev < evs->nr; ev++)
			perf += !evs->v[ev].offcpu;
		out->nr_cpus = perf_events__nr(s->events) / (perf ? perf : 1);
	}
	return err;
}

/* Batched reads cost one syscall per few thousand keys instead of two per
 * key; fall back to get_next_key where the kernel lacks them. */
static int for_each_count_slow(struct sampler *s, sampler_count_fn cb, void *ctx)
{
	int fd = bpf_map__fd(s->skel->maps.counts);
	struct bpfs_count_key key, next;
	struct bpfs_count_val val;
	void *prev = NULL;
	int err;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &val)) {
			err = cb(ctx, &next, &val);
			if (err)
				return err;
		}
		key = next;
		prev = &key;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* One batch of a map walk: n keys and values. Returns nonzero to end the
 * walk (the callback keeps its own error). */
typedef int (*batch_fn)(void *ctx, const void *keys, const void *vals, __u32 n);

/*
 * Walks the hash map fd in batches of chunk entries, reading
 * (bpf_map_lookup_batch) or reading and deleting each batch in one step
 * (bpf_map_lookup_and_delete_batch: each bucket under its lock, so an
 * entry added meanwhile is either taken out or stays, never deleted
 * unread), and hands each batch to cb. Returns 0 at the map's end or when
 * cb ended the walk, the batch call's error otherwise (-ENOSPC: a bucket
 * larger than a chunk); *started says whether a batch call had succeeded
 * before, so that a kernel without batch operations can be walked the
 * slow way from the start.
 */
static int walk_batches(int fd, bool delete, __u32 chunk, size_t key_size, size_t val_size,
			batch_fn cb, void *ctx, bool *started)
{
	void *keys = calloc(chunk, key_size), *vals = calloc(chunk, val_size);
	__u64 batch;
	int err = 0;

	*started = false;
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 n = chunk;
		void *in = *started ? &batch : NULL;

		if (delete)
			err = bpf_map_lookup_and_delete_batch(fd, in, &batch, keys, vals, &n, NULL);
		else
			err = bpf_map_lookup_batch(fd, in, &batch, keys, vals, &n, NULL);
		err = err ? -errno : 0;
		/* what a failed call took out is handed over too */
		if (n && cb(ctx, keys, vals, n)) {
			err = 0;
			break;
		}
		if (err == -ENOENT) {
			err = 0; /* the map's end */
			break;
		}
		if (err || !n)
			break;
		*started = true;
	}
out:
	free(keys);
	free(vals);
	return err;
}

struct count_walk {
	sampler_count_fn cb;
	void *ctx;
	int err;
};

static int count_batch(void *ctx, const void *keys, const void *vals, __u32 n)
{
	struct count_walk *w = ctx;
	const struct bpfs_count_key *k = keys;
	const struct bpfs_count_val *v = vals;

	for (__u32 i = 0; i < n && !w->err; i++)
		w->err = w->cb(w->ctx, &k[i], &v[i]);
	return w->err;
}

int sampler__for_each_count(struct sampler *s, sampler_count_fn cb, void *ctx)
{
	struct count_walk w = { .cb = cb, .ctx = ctx };
	bool started;
	int err;

	err = walk_batches(bpf_map__fd(s->skel->maps.counts), false, 4096,
			   sizeof(struct bpfs_count_key), sizeof(struct bpfs_count_val), count_batch,
			   &w, &started);
	if (w.err)
		return w.err;
	if (!started && (err == -EINVAL || err == -ENOTSUP || err == -EOPNOTSUPP))
		err = for_each_count_slow(s, cb, ctx);
	return err;
}

struct take_ctx {
	sampler_count_fn take;
	void *ctx;
	struct vec keys; /* struct bpfs_count_key: taken, to delete */
};

static int take_count(void *ctx, const struct bpfs_count_key *k, const struct bpfs_count_val *v)
{
	struct take_ctx *t = ctx;
	struct bpfs_count_key *slot;
	int r = t->take(t->ctx, k, v);

	if (r <= 0)
		return r;
	slot = vec__push(&t->keys);
	if (!slot)
		return -ENOMEM;
	*slot = *k;
	return 0;
}

int sampler__take_counts(struct sampler *s, sampler_count_fn take, void *ctx)
{
	int fd = bpf_map__fd(s->skel->maps.counts);
	struct take_ctx t = { .take = take, .ctx = ctx, .keys = VEC_INIT(struct bpfs_count_key) };
	int err = sampler__for_each_count(s, take_count, &t);
	__u32 n = t.keys.nr;

	/* deleted even after an error: every key in the list was taken */
	if (n && bpf_map_delete_batch(fd, t.keys.data, &n, NULL)) {
		/* no batch operations here (or stopped at one): one key at
		 * a time, those already deleted failing harmlessly */
		for (size_t i = 0; i < t.keys.nr; i++)
			bpf_map_delete_elem(fd, vec__at(&t.keys, i));
	}
	vec__free(&t.keys);
	return err;
}

bool sampler__sideband_stats(const struct sampler *s, struct sideband_stats *out,
			     uint64_t *mapgens_failed)
{
	if (!s->sb)
		return false;
	sideband__stats(s->sb, out);
	*mapgens_failed = s->mapgens_failed;
	return true;
}

/* Stops the records: sets the BPF side's stop flag, then waits (bounded)
 * until no program is between taking a sequence number and submitting its
 * record. From then on no record takes a number, so the sequences read
 * after the next drain are final. A completion runs at the sampled
 * thread's return to user space, however late that is (a thread sampled
 * in a long system call): without the flag one could take a number after
 * the final drain, a gap no unsent record matches (issue #14). Returns the
 * records still busy at the bound (0: quiescent). */
static uint64_t stop_records(struct sampler *s)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t end = mono_ns() + STOP_WAIT_NS, busy = 0;
	__u64 *vals;
	__u32 zero = 0;

	__atomic_store_n(&s->skel->bss->recs_stop, 1, __ATOMIC_SEQ_CST);
	/* the flag before the counts (the programs: count, then flag) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(*vals));
	if (!vals)
		return 0;
	for (;;) {
		busy = 0;
		if (bpf_map__lookup_elem(s->skel->maps.recs_busy, &zero, sizeof(zero), vals,
					 ncpu * sizeof(*vals), 0))
			break;
		for (int i = 0; i < ncpu; i++)
			busy += vals[i];
		if (!busy || mono_ns() >= end)
			break;
		usleep(1000);
	}
	free(vals);
	return busy;
}

int sampler__final_seqs(struct sampler *s, uint64_t *seqs, int nr)
{
	__u32 zero = 0;
	uint64_t end, busy;

	if (nr < s->nr_rings)
		return -EINVAL;
	/* The exec and fork programs send records until their links are
	 * gone, completions until the stop flag: wait for the detach (its
	 * records drained meanwhile were numbered), stop the records, drain
	 * what was sent before, then read where the sequences ended. */
	if (s->detaching) {
		pthread_join(s->detacher, NULL);
		s->detaching = false;
	}
	busy = stop_records(s);
	if (busy)
		p_warn("%" PRIu64 " records were still being sent %d ms after the stop: the "
		       "sequence check may count them as missing", busy,
		       (int)(STOP_WAIT_NS / 1000000));
	/* at least one pass, then what is left of the stop's bound */
	end = s->drain_end ? s->drain_end : mono_ns() + FINAL_DRAIN_NS;
	while (drain_pass(s) > 0 && mono_ns() < end)
		;
	return bpf_map__lookup_elem(s->skel->maps.seqs, &zero, sizeof(zero), seqs,
				    s->nr_rings * sizeof(*seqs), 0);
}

int sampler__nr_rings(const struct sampler *s)
{
	return s->nr_rings;
}

/* A segment of stacks_s as the bpfs_stack it is the first part of. */
static void small_to_stack(const struct bpfs_stack_small *in, struct bpfs_stack *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out, in, sizeof(*in));
}

int sampler__read_stack(struct sampler *s, uint64_t id, struct bpfs_stack *out)
{
	struct bpfs_stack_small small;
	int err;

	if (!(id & BPFS_STACK_ID_SMALL))
		return bpf_map__lookup_elem(s->skel->maps.stacks, &id, sizeof(id), out,
					    sizeof(*out), 0);
	err = bpf_map__lookup_elem(s->skel->maps.stacks_s, &id, sizeof(id), &small,
				   sizeof(small), 0);
	if (!err)
		small_to_stack(&small, out);
	return err;
}

/* Segments BPF stored in the two stacks maps so far: a per-CPU counter
 * (BPFS_STAT_SEGS_STORED under event 0), summed; 0 when it cannot be read,
 * which only delays an emptying. Both maps are emptied once half of one
 * map's entries were stored in either: early for each, never late. */
static uint64_t segs_stored(const struct sampler *s)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals = ncpu > 0 ? calloc(ncpu, sizeof(*vals)) : NULL;
	uint64_t sum = 0;

	if (vals)
		percpu_sum(s->skel->maps.stats, BPFS_STAT_SEGS_STORED, vals, ncpu, &sum);
	free(vals);
	return sum;
}

uint64_t sampler__stacks_since_clear(const struct sampler *s)
{
	uint64_t now = segs_stored(s);

	return now > s->stored_at_clear ? now - s->stored_at_clear : 0;
}

/* An emptying of the stacks map: each segment taken out is kept, or, once
 * keeping failed (memory), dropped and counted. */
struct stack_walk {
	struct sampler *s;
	sampler_stack_fn keep;
	void *ctx;
	bool small;	/* emptying stacks_s */
	int err;	/* the first keep's error */
	size_t cleared;
	size_t dropped;
};

static void keep_one(struct stack_walk *w, uint64_t id, const struct bpfs_stack *seg)
{
	struct sampler *s = w->s;

	if (!w->keep)
		return;
	if (!w->err) {
		if (s->keep_fail_after >= 0 && s->keeps >= (uint64_t)s->keep_fail_after)
			w->err = -ENOMEM;
		else
			w->err = w->keep(w->ctx, id, seg);
		s->keeps++;
	}
	if (w->err)
		w->dropped++;
}

static int stack_batch(void *ctx, const void *keys, const void *vals, __u32 n)
{
	struct stack_walk *w = ctx;
	const struct bpfs_stack_small *small = vals;
	const struct bpfs_stack *v = vals;
	const __u64 *k = keys;
	struct bpfs_stack seg;

	for (__u32 i = 0; i < n; i++) {
		if (w->small)
			small_to_stack(&small[i], &seg);
		keep_one(w, k[i], w->small ? &seg : &v[i]);
	}
	w->cleared += n;
	return 0; /* emptied to the end, kept or not */
}

static struct bpf_map *stacks_map(const struct stack_walk *w)
{
	return w->small ? w->s->skel->maps.stacks_s : w->s->skel->maps.stacks;
}

/* Without batch operations: keys first, then each segment read, kept and
 * deleted (deleting while walking with get_next_key restarts the walk). */
static int clear_stacks_slow(struct sampler *s, struct stack_walk *w)
{
	int fd = bpf_map__fd(stacks_map(w)), err = 0;
	struct vec keys = VEC_INIT(__u64);
	struct bpfs_stack seg;
	__u64 *k, *prev = NULL;

	for (;;) {
		k = vec__push(&keys);
		if (!k) {
			err = -ENOMEM; /* what was listed is still emptied */
			break;
		}
		prev = keys.nr > 1 ? vec__at(&keys, keys.nr - 2) : NULL;
		if (bpf_map_get_next_key(fd, prev, k)) {
			keys.nr--;
			break;
		}
	}
	for (size_t i = 0; i < keys.nr; i++) {
		__u64 id = *(__u64 *)vec__at(&keys, i);

		if (sampler__read_stack(s, id, &seg))
			continue;
		keep_one(w, id, &seg);
		if (!bpf_map_delete_elem(fd, &id))
			w->cleared++;
	}
	vec__free(&keys);
	return err;
}

/* Empties one of the two stacks maps (w->small says which). */
static int clear_stacks_map(struct sampler *s, struct stack_walk *w)
{
	size_t val = w->small ? sizeof(struct bpfs_stack_small) : sizeof(struct bpfs_stack);
	bool started;
	int err;

	err = walk_batches(bpf_map__fd(stacks_map(w)), true, 512, sizeof(__u64), val, stack_batch,
			   w, &started);
	/* no batch operations here, or a bucket larger than a chunk
	 * (ENOSPC): one segment at a time */
	if (err && (!started || err == -ENOSPC))
		err = clear_stacks_slow(s, w);
	return err;
}

int sampler__clear_stacks(struct sampler *s, sampler_stack_fn keep, void *ctx, size_t *cleared)
{
	struct stack_walk w = { .s = s, .keep = keep, .ctx = ctx };
	int err, err_small;

	/* what BPF stored until now is in the maps, or taken out below */
	s->stored_at_clear = segs_stored(s);
	err = clear_stacks_map(s, &w);
	w.small = true;
	err_small = clear_stacks_map(s, &w);
	if (!err)
		err = err_small;
	*cleared = w.cleared;
	s->stacks_dropped += w.dropped;
	if (w.dropped)
		p_warn("stacks map emptied: %zu segments not kept (%s): samples naming them "
		       "have no stack", w.dropped, strerror(-w.err));
	return err;
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	if (s->detaching)
		pthread_join(s->detacher, NULL);
	if (s->links) {
		for (int i = 0; i < perf_events__nr(s->events); i++)
			bpf_link__destroy(s->links[i]); /* closes the event fd too */
		free(s->links);
	}
	perf_events__free(s->events); /* closes only fds never handed over */
	for (int i = 0; s->rings && i < s->nr_rings; i++)
		ring_buffer__free(s->rings[i]);
	free(s->rings);
	sideband__free(s->sb);
	if (s->epfd >= 0)
		close(s->epfd);
	for (int i = 0; s->ring_fds && i < s->nr_rings; i++)
		if (s->ring_fds[i] >= 0)
			close(s->ring_fds[i]);
	free(s->ring_fds);
	sampler_bpf__destroy(s->skel);
	free(s->verifier_stats);
	free(s);
}

int sampler__python_map(struct sampler *s, int *procs_fd)
{
	if (!s->skel->rodata->use_python)
		return -ENOENT;
	*procs_fd = bpf_map__fd(s->skel->maps.py_procs);
	return 0;
}

/* After a py_procs insert: a CPU's memo of a pid without an entry
 * (py_absent in bpf/python.bpf.h) no longer holds. */
void sampler__python_added(struct sampler *s)
{
	__atomic_add_fetch(&s->skel->bss->py_procs_epoch, 1, __ATOMIC_SEQ_CST);
}

int sampler__python_stats(struct sampler *s, uint64_t out[BPFS_PY_STAT_NR])
{
	int nr = libbpf_num_possible_cpus();
	__u64 *vals;

	memset(out, 0, BPFS_PY_STAT_NR * sizeof(*out));
	if (nr <= 0)
		return nr ? nr : -EINVAL;
	vals = calloc(nr, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < BPFS_PY_STAT_NR; k++)
		percpu_sum(s->skel->maps.py_stats, k, vals, nr, &out[k]); /* unread: 0 */
	free(vals);
	return 0;
}

struct bpf_object *sampler__bpf_object(struct sampler *s)
{
	return s->skel->obj;
}

int sampler__unwind_maps(struct sampler *s, int *rows_fd, int *procs_fd,
			 uint64_t **procs_epoch)
{
	if (s->opts.unwind == BPFS_UNWIND_FP)
		return -ENOENT;
	*rows_fd = bpf_map__fd(s->skel->maps.unwind_rows);
	*procs_fd = bpf_map__fd(s->skel->maps.unwind_procs);
	*procs_epoch = (uint64_t *)&s->skel->bss->unwind_procs_epoch;
	return 0;
}
