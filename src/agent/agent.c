// SPDX-License-Identifier: GPL-2.0
/*
 * bpfsampler agent: the same capture as the one-shot profiler, cut into
 * windows aligned to the wall clock. Each window becomes one pprof per
 * event and service, written atomically to the spool and pushed to
 * Pyroscope; between windows everything per window is forgotten (counts,
 * stack segments, the BPF stacks map) and everything per process or file
 * once it is gone, so memory stays flat for months (docs/agent.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "ehframe.h"
#include "features.h"
#include "fold.h"
#include "hashmap.h"
#include "log.h"
#include "metrics.h"
#include "namepack.h"
#include "offcpu.h"
#include "opts.h"
#include "pprof.h"
#include "profile.h"
#include "push.h"
#include "pyreg.h"
#include "report.h"
#include "sampler.h"
#include "service.h"
#include "sideband.h"
#include "spool.h"
#include "stream.h"
#include "symbolize.h"
#include "unwinder.h"
#include "vec.h"

/* Samples are in the rings within microseconds of being taken: a window
 * is read this long after its end, so none of its samples is still on the
 * way. */
#define CLOSE_LAG_NS 200000000ULL
/* Processes known from which exited ones are folded as they go: below
 * it, naming them with their window costs the same. */
#define AGENT_FOLD_MIN_PROCS 256
/* Processes known at most (addrspace__set_max_procs): when the host starts
 * them faster than a starved agent reads and folds them (make -j2 beside
 * 200 new processes a second: load 70 on 2 CPUs), new ones go unfollowed,
 * counted, instead of the agent growing (docs/design.md, "The agent").
 * A quiet host under the same churn keeps 500-950. BPFS_DEBUG_MAX_PROCS=N
 * (tests): another bound. */
#define AGENT_MAX_PROCS 2048
/* At most this long pushing the backlog between two windows. */
#define PUSH_BUDGET_S 5.0
/* ... and when stopping (SIGTERM), before exiting. */
#define STOP_PUSH_BUDGET_S 10.0

static volatile sig_atomic_t stop_sig, reload;

/* The first SIGTERM/SIGINT writes the open window and pushes for up to
 * STOP_PUSH_BUDGET_S; a second one ends the process at once (write(2) and
 * _exit only: async-signal-safe). The kernel frees the BPF objects as our
 * descriptors close; a spool temporary left behind goes at the next start. */
static void on_stop(int sig)
{
	static const char msg[] = "bpfsampler: agent: interrupted again: stopped at once; the "
				  "open window was not written\n";

	if (stop_sig) {
		ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);

		(void)n;
		_exit(128 + sig);
	}
	stop_sig = sig;
}

/* Stopping: a table being built is not waited for (ehframe__set_cancel). */
static bool stopping(void)
{
	return stop_sig;
}

static void on_hup(int sig)
{
	reload = 1;
}

struct agent {
	const struct opts *o;	   /* as at start: sampling */
	struct agent_opts live;	   /* what SIGHUP may change */
	struct opts reloaded;	   /* the options read at the last SIGHUP */
	bool have_reloaded;
	agent_reparse_fn reparse;
	void *reparse_ctx;
	char host[256];
	struct symbolizer *sym;
	struct stream *stream;
	struct sampler *s;
	struct unwinder *uw; /* NULL with --unwind fp */
	struct pyreg *py;    /* NULL: CPython frames not walked */
	struct offcpu *oc;   /* --off-cpu */
	struct spool *spool;
	struct pusher *push;
	struct service_map *services;
	/* Exited processes' samples folded into the open window as they go
	 * (fold.h), so their mappings go 2-4 s after the exit, not two
	 * windows later; NULL with an event the kernel may multiplex. */
	struct folder *fold;
	struct vec folded_pids; /* their services, forgotten once written (int) */
	struct metrics metrics;
	struct metrics_server *server;
	const char *own_service; /* where lost samples go: our own series */
	struct sampler_stats last; /* stats at the last window's close */
	uint64_t sideband_lost;	   /* side-band records lost, at the last close */
	size_t max_procs;	   /* processes known at most (AGENT_MAX_PROCS) */
	uint64_t unfollowed;	   /* records not followed, at the last close */
	uint64_t from_unix_ns;	   /* the open window: [from, until) */
	uint64_t until_unix_ns;
	uint64_t until_mono_ns;
	uint64_t windows;
	long max_rate; /* perf_event_max_sample_rate at the last window's close */
};

static size_t max_procs(void)
{
	const char *e = getenv("BPFS_DEBUG_MAX_PROCS");

	if (!e)
		return AGENT_MAX_PROCS;
	p_warn("BPFS_DEBUG_MAX_PROCS=%s: at most that many processes known (for tests)", e);
	return strtoull(e, NULL, 10);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The next boundary of the wall clock after now: windows of every host
 * line up, and a window's name says when it was. */
static void set_window_end(struct agent *a, uint64_t after_unix)
{
	uint64_t iv = (uint64_t)(a->o->agent.interval * 1e9);
	uint64_t now_unix = clock_ns(CLOCK_REALTIME), now_mono = clock_ns(CLOCK_MONOTONIC);

	a->until_unix_ns = (after_unix / iv + 1) * iv;
	/* samples carry CLOCK_MONOTONIC: the same instant on that clock */
	a->until_mono_ns = a->until_unix_ns > now_unix ? now_mono + (a->until_unix_ns - now_unix)
						       : now_mono;
}

/* Pyroscope's profile type for an event: "cpu" for the clocks, "offcpu"
 * for offcpu-time (Grafana Alloy's name for the same profiles). */
static const char *profile_type(const struct event *e, char *buf, size_t size)
{
	if (e->timer)
		return "cpu";
	if (e->offcpu)
		return "offcpu";
	snprintf(buf, size, "%s", e->name);
	for (char *c = buf; *c; c++)
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= '0' && *c <= '9'))
			*c = '_';
	return buf;
}

/* One pprof of one service in the window, into the spool. */
static int write_window(struct agent *a, const struct event *e, const char *service,
			const struct profile *p)
{
	char series[512], type[EVENT_NAME_LEN];
	struct spool_window w = {
		.service = service,
		.event = e->name,
		.from_s = a->from_unix_ns / 1000000000ULL,
		.until_s = (a->until_unix_ns + 999999999ULL) / 1000000000ULL,
		.sample_rate = e->timer && !e->attr.freq && e->attr.sample_period
				       ? 1000000000ULL / e->attr.sample_period : 0,
		.series = series,
	};
	void *gz = NULL;
	size_t len = 0;
	int err;

	/* Pyroscope's name syntax: app.type{label=value,...} */
	snprintf(series, sizeof(series), "%s.%s{service_name=%s,hostname=%s}",
		 a->live.app_name, profile_type(e, type, sizeof(type)), service, a->host);
	err = pprof__encode(p, &gz, &len);
	if (!err)
		err = spool__write(a->spool, &w, gz, len);
	if (err)
		p_err("window of %s for %s: cannot write it: %s", e->name, service, strerror(-err));
	free(gz);
	return err;
}

/* The window's profile of one event, cut per service (one series each):
 * the samples of each service, as indexes into the full profile. Each
 * service's profile is built, written and freed in turn, so at most one
 * is in memory beside the full one (building them all first set the
 * agent's peak RSS). */
struct split {
	struct hashmap *by_service; /* service name -> struct vec of size_t */
	const struct profile *full;
};

static void split__free(struct split *sp)
{
	void *val;

	for (size_t i = 0; sp->by_service && hashmap__next(sp->by_service, &i, NULL, &val);) {
		vec__free(val);
		free(val);
	}
	hashmap__free(sp->by_service);
}

static int split_by_service(struct agent *a, struct split *sp)
{
	const struct profile *full = sp->full;

	sp->by_service = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	if (!sp->by_service)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(full); i++) {
		const struct pf_sample *s = profile__sample(full, i);
		const char *svc = s->lost_reason ? a->own_service
				  : service_map__get(a->services, s->pid, profile__str(full, s->comm));
		struct vec *v = hashmap__find(sp->by_service, svc);
		size_t *slot;

		if (!v) {
			v = malloc(sizeof(*v));
			if (!v)
				return -ENOMEM;
			*v = VEC_INIT(size_t);
			if (hashmap__set(sp->by_service, svc, v, NULL)) {
				free(v);
				return -ENOMEM;
			}
		}
		slot = vec__push(v);
		if (!slot)
			return -ENOMEM;
		*slot = i;
	}
	return 0;
}

/* One service's samples of the full profile, as a profile of their own. */
static int service_profile(const struct agent *a, const struct profile *full,
			   const struct vec *idx, struct profile **out)
{
	struct profile *p = NULL;
	int err = profile__new(&(struct profile_opts){ .demangle = !a->o->no_demangle }, &p);

	if (!err)
		err = profile__copy_meta(p, full);
	for (size_t i = 0; !err && i < idx->nr; i++)
		err = profile__copy_sample(p, full,
					   profile__sample(full, *(size_t *)vec__at(idx, i)));
	if (err) {
		profile__free(p);
		return err;
	}
	*out = p;
	return 0;
}

/* While a window is read, the rings are still drained (into the next
 * window: the stream is sealed), and new processes announced are read at
 * once: a short-lived one would be gone after the window. */
static void keep_draining(void *ctx)
{
	struct agent *a = ctx;

	sampler__poll(a->s, 0);
	symbolizer__read_announced(a->sym);
}

/* The window's samples and losses of one event, into the metrics. */
static void count_event(struct agent *a, const char *name, const uint64_t *stat)
{
	static const enum bpfs_stat lost[METRICS_LOST_NR] = {
		[METRICS_LOST_COUNTS_FULL] = BPFS_STAT_LOST_COUNTS_FULL,
		[METRICS_LOST_STACKS_FULL] = BPFS_STAT_LOST_STACKS_FULL,
		[METRICS_LOST_COLLISION] = BPFS_STAT_LOST_COLLISION,
		[METRICS_LOST_BUSY] = BPFS_STAT_LOST_BUSY,
		[METRICS_LOST_RING_FULL] = BPFS_STAT_LOST_RING_FULL,
	};
	struct metrics_event *me = metrics__event(&a->metrics, name);

	if (!me)
		return;
	me->samples += stat[BPFS_STAT_TAKEN];
	for (int i = 0; i < METRICS_LOST_NR; i++)
		me->lost[i] += stat[lost[i]];
}

static void delta_stats(const struct sampler_stats *now, const struct sampler_stats *last,
			int ev, uint64_t *out)
{
	for (int i = 0; i < BPFS_STAT_NR; i++)
		out[i] = now->ev[ev].stat[i] - last->ev[ev].stat[i];
}

/* How event ev's samples are built into a profile (the fold's too). */
static void event_report_opts(struct agent *a, size_t ev, struct report_opts *ro)
{
	const struct opts *o = a->o;
	const struct event *e = &o->events.v[ev];

	*ro = (struct report_opts){
		.weight_period = o->weight_period,
		.event = o->events.nr > 1 ? (int)ev : -1,
		.event_name = e->name,
		.timer = e->timer,
		.offcpu = e->offcpu,
		.period = e->attr.freq ? 0 : e->attr.sample_period,
		.kernel_only = o->kernel_only,
		.progress = keep_draining,
		.progress_ctx = a,
	};
}

/* Every event's profile of the window, per service, into the spool. */
static int write_events(struct agent *a, const struct sampler_stats *st)
{
	const struct opts *o = a->o;
	int err = 0;

	for (size_t ev = 0; ev < o->events.nr && !err; ev++) {
		const struct event *e = &o->events.v[ev];
		uint64_t stat[BPFS_STAT_NR];
		struct report_opts ro;
		struct report_stats rs, folded;
		struct split sp = {};
		/* what was folded in this window, if anything */
		struct profile *full = folder__take(a->fold, ev, &folded);
		const void *key;
		void *val;

		event_report_opts(a, ev, &ro);
		delta_stats(st, &a->last, ev, stat);
		if (!full)
			err = profile__new(&(struct profile_opts){ .demangle = !o->no_demangle },
					   &full);
		if (!err)
			err = report__build(a->s, a->stream, a->sym, &ro, stat, full, &rs);
		if (!err) {
			profile__meta(full)->time_ns = a->from_unix_ns;
			profile__meta(full)->duration_ns = a->until_unix_ns - a->from_unix_ns;
			sp.full = full;
			err = split_by_service(a, &sp);
		}
		for (size_t i = 0; !err && hashmap__next(sp.by_service, &i, &key, &val);) {
			struct profile *p = NULL;

			keep_draining(a);
			err = service_profile(a, full, val, &p);
			if (!err)
				err = write_window(a, e, key, p);
			profile__free(p);
		}
		count_event(a, e->name, stat);
		split__free(&sp);
		profile__free(full);
	}
	return err;
}

static void forget_process(void *ctx, int pid)
{
	struct agent *a = ctx;

	stream__forget_process(a->stream, pid);
	service_map__forget(a->services, pid);
}

/* A process folded in the open window: its samples are split by service
 * when the window is written, so its service goes after that. */
static void forget_folded(void *ctx, int pid)
{
	struct agent *a = ctx;
	int *slot = vec__push(&a->folded_pids);

	stream__forget_process(a->stream, pid);
	if (slot)
		*slot = pid;
	else
		service_map__forget(a->services, pid); /* named by comm then */
}

static void forget_folded_services(struct agent *a)
{
	for (size_t i = 0; i < a->folded_pids.nr; i++)
		service_map__forget(a->services, *(int *)vec__at(&a->folded_pids, i));
	a->folded_pids.nr = 0;
}

static int fold_setup(struct agent *a)
{
	const struct opts *o = a->o;
	struct report_opts ro[BPFS_MAX_EVENTS];

	a->folded_pids = VEC_INIT(int);
	for (size_t ev = 0; ev < o->events.nr; ev++) {
		if (!folder__foldable(o->events.v[ev].attr.type))
			return 0;
		event_report_opts(a, ev, &ro[ev]);
	}
	return folder__new(&(struct folder_opts){ .ro = ro, .nr = o->events.nr,
						  .demangle = !o->no_demangle,
						  .min_procs = AGENT_FOLD_MIN_PROCS,
						  .gone = forget_folded, .gone_ctx = a },
			   &a->fold);
}

/* Between windows: what was per window goes, and what was per process or
 * file once it is gone. */
static int clear_stacks(struct agent *a)
{
	size_t cleared;
	int err = sampler__clear_stacks(a->s, stream__keep_segment, a->stream, &cleared);

	stream__stacks_cleared(a->stream);
	return err;
}

static int forget(struct agent *a)
{
	int err = clear_stacks(a);

	if (!err)
		err = stream__next_window(a->stream, a->until_mono_ns);
	symbolizer__sweep(a->sym, forget_process, a);
	forget_folded_services(a);
	return err;
}

/* Mappings missed this window (the side-band's perf ring was full): the
 * processes' maps were read again, but say so. */
static void warn_sideband_lost(struct agent *a)
{
	struct sideband_stats sb;
	uint64_t failed;

	if (!sampler__sideband_stats(a->s, &sb, &failed) || sb.lost == a->sideband_lost)
		return;
	a->metrics.mappings_lost = sb.lost;
	p_warn("%" PRIu64 " mapping records lost this window (side-band ring full): the maps "
	       "were read again from /proc; raise --sideband-size", sb.lost - a->sideband_lost);
	a->sideband_lost = sb.lost;
}

static void warn_unfollowed(struct agent *a, const struct symbolizer_stats *ys)
{
	a->metrics.processes_unfollowed = ys->procs_unfollowed;
	if (ys->procs_unfollowed == a->unfollowed)
		return;
	p_warn("%" PRIu64 " records of processes not followed this window: %zu processes were "
	       "known (the agent fell behind the processes started); their samples have no user "
	       "frame names",
	       ys->procs_unfollowed - a->unfollowed, a->max_procs);
	a->unfollowed = ys->procs_unfollowed;
}

/* The kernel lowers the sysctl itself when sampling interrupts run long
 * ("perf: interrupt took too long") and throttles every event above the
 * new limit from then on: said once per change, and a metric. */
static void warn_rate_lowered(struct agent *a)
{
	long now = features__max_sample_rate();

	if (now <= 0)
		return;
	a->metrics.max_sample_rate = now;
	if (a->max_rate > 0 && now < a->max_rate)
		p_warn("kernel.perf_event_max_sample_rate went from %ld to %ld this window (the "
		       "kernel lowers it when sampling interrupts run long)%s", a->max_rate, now,
		       (long)a->o->freq > now ? "; samples above the new limit are throttled: "
						 "use a lower -F" : "");
	a->max_rate = now;
}

static uint64_t lost_since(const struct sampler_stats *now, const struct sampler_stats *last)
{
	uint64_t n = 0;

	for (int i = BPFS_STAT_LOST_COUNTS_FULL; i <= BPFS_STAT_LOST_RING_FULL; i++)
		n += now->stat[i] - last->stat[i];
	return n;
}

static const char *hhmmss(uint64_t unix_ns, char *buf, size_t size)
{
	time_t t = unix_ns / 1000000000ULL;
	struct tm tm;

	strftime(buf, size, "%H:%M:%S", gmtime_r(&t, &tm));
	return buf;
}

/* The window is over (or the agent stops): read it, write it, forget it. */
/* The window's line on stderr: what it held, and what the agent holds. */
static void say_window(const struct agent *a, const struct sampler_stats *st,
		       const struct symbolizer_stats *ys, size_t files)
{
	struct mallinfo2 mi = mallinfo2();
	char stamp[16];

	p_info("window %s +%.1f s: %" PRIu64 " samples, %" PRIu64 " lost, %zu profiles written; "
	       "%" PRIu64 " processes, %" PRIu64 " files held (symbols %.1f MB), %zu stack "
	       "segments; RSS %.1f MB (heap %.1f MB), CPU %.2f s",
	       hhmmss(a->from_unix_ns, stamp, sizeof(stamp)),
	       (a->until_unix_ns - a->from_unix_ns) / 1e9,
	       st->stat[BPFS_STAT_TAKEN] - a->last.stat[BPFS_STAT_TAKEN], lost_since(st, &a->last),
	       files, ys->procs_live, ys->files_held, ys->symtab_bytes / 1e6,
	       stream__nr_segments(a->stream), a->metrics.rss_bytes / 1e6,
	       /* in use: from the heap and, 128 KiB or more, mmap'd */
	       (mi.uordblks + mi.hblkhd) / 1e6, a->metrics.cpu_seconds);
}

static int close_window(struct agent *a, uint64_t until_unix)
{
	struct sampler_stats st;
	struct symbolizer_stats ys;
	size_t files = 0;
	int err, cerr;

	a->until_unix_ns = until_unix;
	/* the blocks still open are counted up to now, into this window,
	 * and go on into the next (docs/agent.md, "Off-CPU") */
	if (a->oc && (err = offcpu__cut(a->oc)))
		p_warn("off-CPU: the open blocks were not cut at the window's end: %s; they "
		       "count in the window they end in", strerror(-err));
	/* everything taken before the end is in the rings by now */
	keep_draining(a);
	symbolizer__refresh(a->sym);
	stream__seal(a->stream);
	err = sampler__stats(a->s, &st);
	/* The window's files are made durable together (spool.h): per file,
	 * the directory fsyncs were half the agent's writing cost. */
	spool__begin(a->spool);
	if (!err)
		err = write_events(a, &st);
	cerr = spool__commit(a->spool, &files);
	if (!err)
		err = cerr;
	symbolizer__stats(a->sym, &ys);
	if (!err) {
		struct stream_stats ss;

		stream__stats(a->stream, &ss);
		a->metrics.records_unsent = st.stat[BPFS_STAT_RECS_UNSENT];
		a->metrics.records_missing = ss.gaps;
		a->metrics.records_reordered = ss.reordered;
		a->metrics.stack_segments_dropped = st.stacks_dropped;
	}
	a->windows++;
	a->metrics.windows_written += files;
	a->metrics.processes_tracked = ys.procs_live;
	if (a->uw) {
		struct unwinder_stats us;

		unwinder__stats(a->uw, &us);
		a->metrics.unwind_rows = us.rows;
		a->metrics.unwind_tables_built = us.built;
	}
	metrics__sample_self(&a->metrics);
	say_window(a, &st, &ys, files);
	a->last = st;
	warn_sideband_lost(a);
	warn_unfollowed(a, &ys);
	warn_rate_lowered(a);
	a->from_unix_ns = a->until_unix_ns;
	set_window_end(a, a->from_unix_ns);
	if (!err)
		err = forget(a);
	/* A window frees most of what it allocated (profiles, segments,
	 * processes gone): give the pages back, or the heap's free space only
	 * grows with fragmentation over months. */
	malloc_trim(0);
	return err;
}

/* The backlog to Pyroscope, the retention, the metrics: after each window. */
static void after_window(struct agent *a, double push_budget_s)
{
	const struct agent_opts *ao = &a->live;
	struct spool_stats ss;
	struct push_stats ps;

	if (a->push && pusher__drain(a->push, a->spool, push_budget_s) < 0)
		p_warn("pushing to %s failed; the windows wait in %s", ao->push, ao->output_dir);
	spool__prune(a->spool, clock_ns(CLOCK_REALTIME) / 1000000000ULL);
	spool__stats(a->spool, &ss);
	a->metrics.backlog_files = a->push ? ss.backlog_files : 0;
	a->metrics.backlog_bytes = a->push ? ss.backlog_bytes : 0;
	a->metrics.backlog_pruned = ss.pruned;
	a->metrics.dropped_undelivered = ss.dropped_undelivered;
	if (a->push) {
		pusher__stats(a->push, &ps);
		a->metrics.windows_pushed = ps.delivered;
		a->metrics.push_failures = ps.retried; /* network, timeout, 5xx, 429 */
		a->metrics.push_retries = ps.retried;
		a->metrics.push_rejected = ps.rejected;
	}
	a->metrics.series_overflowed = service_map__overflowed(a->services);
	if (ao->metrics_file)
		metrics__write_file(&a->metrics, ao->metrics_file);
	if (a->server)
		metrics_server__publish(a->server, &a->metrics);
}

static void agent__free(struct agent *a)
{
	if (a->have_reloaded)
		opts__free(&a->reloaded);
	metrics_server__free(a->server);
	pusher__free(a->push);
	spool__free(a->spool);
	service_map__free(a->services);
	folder__free(a->fold);
	vec__free(&a->folded_pids);
	if (a->sym) {
		symbolizer__set_maps_hook(a->sym, NULL, NULL);
		symbolizer__set_python(a->sym, NULL);
	}
	pyreg__free(a->py);
	unwinder__free(a->uw);
	offcpu__free(a->oc);
	sampler__free(a->s);
	stream__free(a->stream);
	symbolizer__free(a->sym);
}

/* Where lost samples go: the agent's own series, under the service it runs
 * as (bpfsampler-agent.service under systemd). */
static void find_own_service(struct agent *a)
{
	char comm[32] = "bpfsampler";
	FILE *f = fopen("/proc/self/comm", "re");

	if (f && fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = '\0';
	if (f)
		fclose(f);
	a->own_service = service_map__get(a->services, getpid(), comm);
}

static int new_pusher(struct agent *a, struct pusher **out)
{
	const struct agent_opts *ao = &a->live;

	*out = NULL;
	if (!ao->push)
		return 0;
	return pusher__new(&(struct push_opts){ .url = ao->push,
						 .token_file = ao->token_file,
						 .basic_auth_file = ao->basic_auth_file,
						 .tenant = ao->tenant },
			   out);
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int agent__setup(struct agent *a)
{
	const struct opts *o = a->o;
	const struct agent_opts *ao = &o->agent;
	struct sampler_opts so;
	int err;

	if (gethostname(a->host, sizeof(a->host) - 1))
		snprintf(a->host, sizeof(a->host), "unknown");
	a->max_procs = max_procs();
	err = spool__open(&(struct spool_opts){ .dir = ao->output_dir,
						  .host = a->host,
						  .retain_age_s = ao->retain_age,
						  .retain_bytes = ao->retain_size,
						  .push = ao->push != NULL },
			  &a->spool);
	if (!err)
		err = new_pusher(a, &a->push);
	if (!err && ao->metrics_addr)
		err = metrics_server__new(ao->metrics_addr, &a->server);
	if (!err)
		err = service_map__new(&(struct service_map_opts){ .max_series = ao->max_series },
				       &a->services);
	if (!err)
		err = symbolizer__new(&(struct symbolizer_opts){
					      .debug_dirs = (const char *const *)o->debug_dirs.v,
					      .nr_debug_dirs = o->debug_dirs.nr,
					      .no_lines = o->no_lines,
					      .max_procs = a->max_procs },
				      &a->sym);
	if (!err)
		err = stream__new(&(struct stream_opts){ .on_process = symbolizer__on_process,
							 .on_mapping = symbolizer__on_mapping,
							 .map_gen_at = symbolizer__map_gen_at,
							 .on_py_code = symbolizer__on_py_code,
							 .ctx = a->sym },
				  &a->stream);
	if (err)
		return err;
	opts__sampler_opts(o, &so);
	/* mappings and new processes read at each drain (100 ms at most),
	 * not at each record: the wake-ups were a third of the agent's CPU
	 * under process churn (docs/benchmarks.md, "The agent") */
	so.batched_wakeups = true;
	so.on_record = (sampler_record_fn)stream__handle;
	so.ctx = a->stream;
	so.on_mapping = symbolizer__on_sideband_mapping;
	so.on_mappings_lost = symbolizer__on_mappings_lost;
	so.map_ctx = a->sym;
	err = sampler__new(&so, &a->s);
	if (!err && sampler__unwind(a->s) != BPFS_UNWIND_FP)
		err = unwinder__start(a->s, a->sym, o->unwind_rows, o->unwind_keep, &a->uw);
	if (!err)
		err = pyreg__start(a->s, a->sym, &a->py);
	if (!err && o->off_cpu)
		err = offcpu__new(a->s, &(struct offcpu_opts){
					  .event = o->events.nr - 1, /* added last (opts.c) */
					  .min_ns = o->off_cpu_min_ns,
					  .walks_per_s = o->off_cpu_walks,
					  .threads = o->off_cpu_threads,
					  .cpus = &o->cpus },
				  &a->oc);
	if (!err)
		err = fold_setup(a);
	if (err)
		return err;
	find_own_service(a);
	symbolizer__refresh(a->sym);
	err = sampler__start(a->s);
	if (!err && a->oc)
		err = offcpu__start(a->oc);
	if (!err)
		symbolizer__set_tracking(a->sym, sampler__tracks_mappings(a->s));
	if (!err && a->uw)
		unwinder__preload_common(a->uw);
	return err;
}

/* SIGHUP: the config file is read again with the command line, through
 * the same parser as at start. Retention, push target and credentials,
 * metrics file, application name and log file change at once; what
 * changes sampling (-F, -e, -C, -p, ...) needs a restart, and is said. */
static void agent__reload(struct agent *a)
{
	struct agent_opts old = a->live;
	struct opts next;
	struct pusher *p;
	char why[512];
	int err;

	if (!a->reparse || a->reparse(a->reparse_ctx, &next)) {
		p_warn("reload: options not read again, the running ones stay");
		return;
	}
	if (next.freq != a->o->freq || next.events.nr != a->o->events.nr ||
	    next.period != a->o->period || next.cpus.nr != a->o->cpus.nr ||
	    next.pids.nr != a->o->pids.nr || next.agent.interval != a->o->agent.interval)
		p_warn("reload: sampling options and --interval take effect at the next start");
	if (a->have_reloaded)
		opts__free(&a->reloaded);
	a->reloaded = next;
	a->have_reloaded = true;
	a->live = next.agent;
	a->live.interval = old.interval;
	a->live.output_dir = old.output_dir; /* the spool is locked: a restart moves it */
	if (a->live.log_file && (err = log_open(a->live.log_file, why, sizeof(why))))
		p_warn("cannot reopen the log %s: %s", a->live.log_file,
		       why[0] ? why : strerror(-err));
	spool__set_retention(a->spool, a->live.retain_age, a->live.retain_size);
	if (same(old.push, a->live.push) && same(old.token_file, a->live.token_file) &&
	    same(old.basic_auth_file, a->live.basic_auth_file) && same(old.tenant, a->live.tenant)) {
		if (a->push && pusher__reload(a->push))
			p_warn("reload: kept the old push credentials");
	} else if (!new_pusher(a, &p)) {
		pusher__free(a->push);
		a->push = p;
	} else {
		p_warn("reload: cannot push to %s as configured; pushing as before", a->live.push);
		a->live.push = old.push;
		a->live.token_file = old.token_file;
		a->live.basic_auth_file = old.basic_auth_file;
		a->live.tenant = old.tenant;
	}
	p_info("reloaded: retention %.0f s and %llu bytes, push %s, metrics file %s",
	       a->live.retain_age, a->live.retain_size, a->live.push ? a->live.push : "off",
	       a->live.metrics_file ? a->live.metrics_file : "off");
}

/* glibc's allocation policy for a process that lives for months, on top
 * of main's (large blocks back to the system when freed, mallocpolicy.h):
 * two arenas, not one per thread. Both beside a build (docs/benchmarks.md,
 * "The agent under process churn") took the RSS after the warm-up from
 * 35.0-44.0 MB to 28.2-37.5 MB, at the same CPU. */
static void malloc_policy(void)
{
	mallopt(M_ARENA_MAX, 2);
	/* and the symbol names of large files and of the kernel compressed:
	 * a compiler's three tables 6.9 -> 2.9 MB (namepack.h) */
	namepack__compress_large();
}

int agent__run(const struct opts *o, agent_reparse_fn reparse, void *ctx)
{
	struct sigaction stop = { .sa_handler = on_stop }, hup = { .sa_handler = on_hup };
	struct agent a = { .o = o, .live = o->agent, .reparse = reparse, .reparse_ctx = ctx };
	double deadline = 0, next_refresh = 0;
	int err, cerr;

	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGHUP, &hup, NULL);
	malloc_policy();
	ehframe__set_cancel(stopping);
	err = agent__setup(&a);
	if (err)
		goto out;
	a.from_unix_ns = clock_ns(CLOCK_REALTIME);
	a.max_rate = features__max_sample_rate();
	a.metrics.max_sample_rate = a.max_rate > 0 ? a.max_rate : 0;
	set_window_end(&a, a.from_unix_ns);
	err = stream__set_window_end(a.stream, a.until_mono_ns);
	if (err)
		goto out;
	if (o->duration)
		deadline = clock_ns(CLOCK_MONOTONIC) / 1e9 + o->duration;
	p_info("agent: sampling at %u Hz, windows of %.0f s into %s%s%s", o->freq,
	       o->agent.interval, o->agent.output_dir, o->agent.push ? ", pushed to " : "",
	       o->agent.push ? o->agent.push : "");
	while (!stop_sig) {
		double now = clock_ns(CLOCK_MONOTONIC) / 1e9;

		if (deadline && now >= deadline)
			break;
		if (reload) {
			reload = 0;
			agent__reload(&a);
		}
		err = sampler__poll(a.s, 100);
		if (err < 0) {
			p_err("cannot drain the rings: %s; writing the open window and stopping",
			      strerror(-err));
			break;
		}
		err = 0;
		symbolizer__read_announced(a.sym);
		if (now >= next_refresh) {
			symbolizer__refresh(a.sym);
			if (a.uw)
				unwinder__sweep(a.uw);
			next_refresh = now + 0.25;
		}
		err = folder__tick(a.fold, a.s, a.stream, a.sym, now);
		if (err) {
			p_err("writing the open window and stopping");
			break;
		}
		/* Distinct stacks of short-lived processes (each with its own
		 * addresses) can fill the BPF map within a window: emptied
		 * when half full, it never is (docs/design.md, "The agent"). */
		if (sampler__stacks_since_clear(a.s) * 2 >= o->stack_entries &&
		    (err = clear_stacks(&a)))
			goto out;
		if (clock_ns(CLOCK_MONOTONIC) < a.until_mono_ns + CLOSE_LAG_NS)
			continue;
		err = close_window(&a, a.until_unix_ns);
		if (err)
			goto out;
		after_window(&a, PUSH_BUDGET_S);
	}
	/* Stopping: the open window up to now is written like any other; a
	 * drain that failed stays the exit status. */
	cerr = close_window(&a, clock_ns(CLOCK_REALTIME));
	if (!err)
		err = cerr;
	after_window(&a, STOP_PUSH_BUDGET_S);
	p_info("agent: stopped%s", stop_sig ? " by a signal" : "");
out:
	agent__free(&a);
	return err;
}
