// SPDX-License-Identifier: GPL-2.0
/*
 * bpfsampler: parse options, check the machine, sample, report. Each step is
 * a module; main only sequences them and maps failures to exit statuses:
 * 0 done, 1 the machine or the run failed, 2 bad command line, and with
 * "-- command" the command's own status.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "agent_config.h"
#include "atomicfile.h"
#include "command.h"
#include "ehframe.h"
#include "events.h"
#include "offcpu.h"
#include "wallclock.h"
#include "features.h"
#include "fold.h"
#include "folded.h"
#include "log.h"
#include "mallocpolicy.h"
#include "opts.h"
#include "profile.h"
#include "pyreg.h"
#include "report.h"
#include "sampler.h"
#include "sideband.h"
#include "stream.h"
#include "symbolize.h"
#include "unwinder.h"
#include "vec.h"
#include "writer.h"

#define EXIT_USAGE 2

/*
 * Signals. While sampling, the first SIGINT or SIGTERM ends sampling and
 * the profile is still written. A signal at any other time (setup, the
 * final drain, naming frames, writing) or a second one ends the process at
 * once, from the handler: the temporaries of the outputs are removed, so
 * an earlier profile under the same name stays, and the kernel frees every
 * BPF program, map and link when our descriptors close (nothing is
 * pinned). Exit status 128 + the signal, as a shell reports a kill.
 */
struct outputs;
static void outputs_abort_signal_safe(struct outputs *outs);

static volatile sig_atomic_t exiting;
static volatile sig_atomic_t sampling; /* a signal now only ends sampling */
static const char *volatile abort_msg =
	"bpfsampler: interrupted before sampling started; nothing was written\n";
static struct outputs *volatile abort_outs;

static void abort_run(int sig)
{
	const char *msg = abort_msg;
	struct outputs *outs = abort_outs;

	/* write(2), close, unlinkat and _exit only: async-signal-safe */
	ssize_t n = write(STDERR_FILENO, msg, strlen(msg));

	(void)n; /* a failed write leaves nothing better to do */
	if (outs)
		outputs_abort_signal_safe(outs);
	_exit(128 + sig);
}

/* Posted when a signal ends sampling: the stopper thread disables the
 * events at once (sem_post is async-signal-safe). */
static sem_t stop_sem;

/* When the stop was asked (the signal, or -d's deadline), for -v -v's
 * timings of the phases after it. clock_gettime is async-signal-safe. */
static struct timespec stop_asked;

static void on_signal(int sig)
{
	if (exiting || !sampling)
		abort_run(sig);
	clock_gettime(CLOCK_MONOTONIC, &stop_asked);
	exiting = sig;
	sem_post(&stop_sem);
	abort_msg = "bpfsampler: interrupted again: stopped at once; the profile was not "
		    "written\n";
}

static double clock_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* How long after the stop was asked the exit reached each phase: each as
 * it comes with -v -v; with -v, all of them in one line when the exit
 * took over half of its second (docs/design.md, "Every run ends"). The
 * stopper thread writes one of them. */
#define EXIT_PHASES 12
#define EXIT_SLOW_MS 500
static struct {
	const char *what;
	double ms;
} exit_phases[EXIT_PHASES];
static atomic_int nr_exit_phases;

static void exit_phase(const char *what)
{
	double t = stop_asked.tv_sec + stop_asked.tv_nsec / 1e9, ms;
	int i;

	if (!t)
		return;
	ms = (now_s() - t) * 1000;
	i = atomic_fetch_add(&nr_exit_phases, 1);
	if (i < EXIT_PHASES)
		exit_phases[i].what = what, exit_phases[i].ms = ms;
	p_dbg("exit: %s %.0f ms after the stop", what, ms);
}

static void exit_report(void)
{
	int n = atomic_load(&nr_exit_phases);
	char line[1024];
	size_t len = 0;

	if (n > EXIT_PHASES)
		n = EXIT_PHASES;
	if (!n || exit_phases[n - 1].ms <= EXIT_SLOW_MS || log_get_level() != LOG_INFO)
		return;
	for (int i = 0; i < n && len < sizeof(line); i++)
		len += snprintf(line + len, sizeof(line) - len, "%s%s %.0f", i ? ", " : "",
				exit_phases[i].what, exit_phases[i].ms);
	p_info("the exit took %.0f ms after the stop (ms: %s)", exit_phases[n - 1].ms, line);
}

/* CLOCK_MONOTONIC when -d ends sampling; 0: no -d, or not sampling yet. */
static double run_deadline;

/* Past the end of sampling (-d, a signal): a table being built is not
 * waited for (ehframe__set_cancel). */
static bool run_over(void)
{
	return exiting || (run_deadline && now_s() >= run_deadline);
}

static int on_record(void *ctx, const void *data, size_t size)
{
	return stream__handle(ctx, data, size);
}

struct run {
	const struct opts *o;
	struct outputs *outs;
	struct symbolizer *sym;
	struct stream *stream;
	struct sampler *s;
	struct command *cmd;
	struct unwinder *uw;	/* NULL with --unwind fp */
	struct pyreg *py;	/* NULL: CPython frames not walked */
	struct offcpu *oc;	/* --off-cpu */
	struct offcpu_stats ost;
	struct wallclock *wall;	/* --off-cpu: each thread's on + off-CPU time */
	struct sampler_stats st;
	struct report_stats rs; /* summed over events */
	size_t lines;		/* folded lines, summed over events */
	double t0;		/* CLOCK_MONOTONIC at the start of sampling */
	double deadline;	/* CLOCK_MONOTONIC at which -d ends it; 0: none */
	long max_rate[2];	/* perf_event_max_sample_rate at start, at end */
	uint64_t start_unix_ns;
	uint64_t duration_ns;
	double build_s, build_cpu_s; /* building the profiles: symbolizing */
	/* Samples of processes gone, folded in as they go (fold.h); NULL:
	 * everything is named at the end. */
	struct folder *fold;
};

static void event_report_opts(const struct run *r, size_t ev, struct report_opts *ro);

/* Processes known below which nothing is folded: a few hundred processes'
 * mappings are a few MB, and naming their samples at the end costs the
 * same as now. Folding early moves that work (the kernel's symbols, the
 * files' symbol tables) into the sampling, where the profiled work pays
 * for it: on a quiet machine, one fold of a handful of exited processes
 * took 80 ms of the loader's CPU 4 s into the run. */
#define FOLD_MIN_PROCS 256

static void forget_process(void *ctx, int pid)
{
	struct run *r = ctx;

	stream__forget_process(r->stream, pid);
}

/* Processes gone for a while: their samples go into the profiles as they
 * go (fold.h), not with --timed (every sample is kept, named at the end
 * in time order) nor with an event the kernel may multiplex. */
static int fold_setup(struct run *r)
{
	const struct opts *o = r->o;
	struct report_opts ro[BPFS_MAX_EVENTS];

	if (o->timed)
		return 0;
	for (size_t ev = 0; ev < o->events.nr; ev++) {
		if (!folder__foldable(o->events.v[ev].attr.type))
			return 0;
		event_report_opts(r, ev, &ro[ev]);
	}
	return folder__new(&(struct folder_opts){ .ro = ro, .nr = o->events.nr,
						  .demangle = !o->no_demangle,
						  .min_procs = FOLD_MIN_PROCS,
						  .sweep_files = true,
						  .gone = forget_process, .gone_ctx = r },
			   &r->fold);
}

/* Empties the BPF stacks map once half of it has been filled since it was
 * last emptied, keeping its segments in the stream: a busy machine (a
 * build: thousands of distinct compiler stacks a second) fills any map of
 * a fixed size within seconds, and every sample after that would be lost. */
static int keep_stacks_room(struct run *r)
{
	size_t cleared;
	int err;

	if (sampler__stacks_since_clear(r->s) * 2 < r->o->stack_entries)
		return 0;
	err = sampler__clear_stacks(r->s, stream__keep_segment, r->stream, &cleared);
	stream__stacks_cleared(r->stream);
	if (err)
		p_err("cannot empty the stacks map: %s", strerror(-err));
	return err;
}

/* Polls until the duration ends, a signal arrives or the command exits.
 * Returns a drain's or the stacks map's error, which ends sampling early:
 * the profile of what was sampled is still written, and the run fails. */
static int sample_loop(struct run *r)
{
	const struct opts *o = r->o;
	struct sampler *s = r->s;
	struct command *cmd = r->cmd;
	struct symbolizer *sym = r->sym;
	struct unwinder *uw = r->uw;
	double deadline = r->deadline;
	double next_refresh = now_s() + 0.25;
	int err = 0;

	/* sampler__poll returns after a bounded pass (docs/design.md,
	 * "Every run ends"), so the deadline and the signal are seen however
	 * fast the rings fill */
	while (!exiting) {
		int timeout = 100;

		if (deadline) {
			double left = deadline - now_s();

			if (left <= 0)
				break;
			if (left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		err = sampler__poll(s, timeout);
		if (err < 0) {
			p_err("cannot drain the rings: %s; sampling stopped", strerror(-err));
			break;
		}
		err = keep_stacks_room(r);
		if (err)
			break;
		symbolizer__read_announced(sym);
		if (o->reader_delay_ms)
			usleep(o->reader_delay_ms * 1000U);
		if (now_s() >= next_refresh) {
			symbolizer__refresh(sym);
			if (uw)
				unwinder__sweep(uw);
			next_refresh = now_s() + 0.25;
		}
		err = folder__tick(r->fold, s, r->stream, sym, now_s());
		if (err)
			break;
		if (cmd && command__poll(cmd))
			break;
	}
	return err < 0 ? err : 0;
}

/*
 * The stopper disables the events when -d runs out or a signal comes,
 * whatever the loader is doing then. At -F 100000 the BPF programs leave
 * user space little CPU: the loader, inside one process's maps or a large
 * file's unwind table, took seconds to come back to its loop (37 s after
 * SIGTERM with compilers starting); with the events off it gets the CPU
 * back at once (docs/design.md, "Every run ends").
 *
 * Whichever comes first disables them: the stopper, or the main thread
 * leaving its loop. Neither waits for the other to get a CPU: the kernel
 * here runs without preemption, and a CPU inside a long kernel path (a
 * writer of a large file) kept the woken stopper off it for up to 240 ms,
 * while the main thread, which waited for it, had the other CPU free. The
 * stopper reads only what is here, not the run: it may still be waiting
 * for its CPU when the run is over.
 */
enum stop_claim { STOP_OPEN, STOP_BY_STOPPER, STOP_STOPPER_DONE, STOP_BY_MAIN };
static atomic_int stop_claim;
static struct sampler *stop_sampler;
static double stop_deadline; /* CLOCK_MONOTONIC; 0: no -d */
/* BPFS_DEBUG_STOPPER_LATE=MS: the stopper sleeps MS after it is woken, as
 * when its CPU is held elsewhere (runends.sh: the exit does not wait). */
static long stopper_late_ms;

/* stop_asked, for -d (a signal sets it in its handler). */
static void note_stop(void)
{
	double t = now_s();

	if (stop_asked.tv_sec)
		return;
	if (stop_deadline && stop_deadline < t)
		t = stop_deadline;
	stop_asked.tv_sec = (time_t)t;
	stop_asked.tv_nsec = (long)((t - stop_asked.tv_sec) * 1e9);
}

static bool claim_stop(enum stop_claim who)
{
	int open = STOP_OPEN;

	return atomic_compare_exchange_strong(&stop_claim, &open, who);
}

static void *stopper(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	struct timespec ts;
	int rc;

	(void)arg;
	/* Real-time, so that it runs the moment it is woken: at normal
	 * priority, with compilers on both CPUs and the BPF programs taking
	 * their share, it waited up to 200 ms for a CPU. It only disables
	 * the events (an ioctl per event) and ends. Without CAP_SYS_NICE it
	 * stays as it is. */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);

	do {
		if (stop_deadline) {
			ts.tv_sec = (time_t)stop_deadline;
			ts.tv_nsec = (long)((stop_deadline - ts.tv_sec) * 1e9);
			rc = sem_clockwait(&stop_sem, CLOCK_MONOTONIC, &ts);
		} else {
			rc = sem_wait(&stop_sem);
		}
	} while (rc && errno == EINTR);
	if (stopper_late_ms)
		nanosleep(&(struct timespec){ .tv_sec = stopper_late_ms / 1000,
					      .tv_nsec = stopper_late_ms % 1000 * 1000000 },
			  NULL);
	if (!claim_stop(STOP_BY_STOPPER))
		return NULL; /* the main thread was first */
	note_stop();
	sampler__disable(stop_sampler);
	exit_phase("events disabled");
	atomic_store(&stop_claim, STOP_STOPPER_DONE);
	return NULL;
}

/* The sampler is not freed while the stopper is inside it: an ioctl per
 * event, begun before the main thread left its loop. */
static void stopper_leave_sampler(void)
{
	while (atomic_load(&stop_claim) == STOP_BY_STOPPER)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

/* Records lost after the last one received: read where each CPU's
 * sequence ended. */
static int close_rings(struct sampler *s, struct stream *stream)
{
	int n = sampler__nr_rings(s), err;
	uint64_t *seqs = calloc(n, sizeof(*seqs));

	if (!seqs)
		return -ENOMEM;
	err = sampler__final_seqs(s, seqs, n);
	for (int cpu = 0; !err && cpu < n; cpu++)
		err = stream__close_cpu(stream, cpu, seqs[cpu]);
	free(seqs);
	return err;
}

/* One output per event: -o as given for one event, -o with %e expanded
 * for several, stdout without -o. Opened before sampling, so that a bad
 * path fails at once and not after a 30 s profile. */
struct outputs {
	FILE *f[BPFS_MAX_EVENTS][OPTS_MAX_FORMATS];
	char path[BPFS_MAX_EVENTS][OPTS_MAX_FORMATS][4096];
	/* files are written whole or not at all: a failed or killed run never
	 * leaves a truncated profile where the last one was */
	struct atomicfile af[BPFS_MAX_EVENTS][OPTS_MAX_FORMATS];
	size_t nr;
};

/* The new file for path (or the device, FIFO or pipe it names, written
 * in place: atomicfile.h), as a stream of its own (a dup: the atomicfile
 * keeps its fd to commit). Mode 0600, as perf writes perf.data: a
 * system-wide profile names every process, command line name and function
 * that ran, other users' among them (docs/bpfsampler.8, FILES). */
static FILE *open_temporary(const char *path, struct atomicfile *af)
{
	FILE *f = NULL;
	int fd, err;

	err = atomicfile__open(af, AT_FDCWD, path, 0600, 0);
	if (err) {
		errno = -err;
		return NULL;
	}
	fd = dup(af->fd);
	if (fd >= 0)
		f = fdopen(fd, "w");
	if (!f) {
		err = errno;
		if (fd >= 0)
			close(fd);
		atomicfile__abort(af);
		errno = err;
	}
	return f;
}

/* pattern with "%f" made the format's extension, into out[size]. */
static void format_name(const char *pattern, const struct writer *w, char *out, size_t size)
{
	const char *f = strstr(pattern, "%f");

	if (!f)
		snprintf(out, size, "%s", pattern);
	else
		snprintf(out, size, "%.*s%s%s", (int)(f - pattern), pattern, w->ext, f + 2);
}

static int open_outputs(const struct opts *o, struct outputs *outs)
{
	char evname[4096];

	outs->nr = o->events.nr;
	for (size_t ev = 0; ev < outs->nr; ev++) {
		for (size_t fm = 0; fm < o->nr_formats; fm++) {
			char *path = outs->path[ev][fm];

			if (!o->output) {
				outs->f[ev][fm] = stdout;
				snprintf(path, sizeof(outs->path[ev][fm]), "stdout");
				continue;
			}
			if (outs->nr == 1)
				snprintf(evname, sizeof(evname), "%s", o->output);
			else
				events__output_name(o->output, &o->events.v[ev], evname,
						    sizeof(evname));
			format_name(evname, o->formats[fm], path, sizeof(outs->path[ev][fm]));
			outs->f[ev][fm] = open_temporary(path, &outs->af[ev][fm]);
			if (!outs->f[ev][fm]) {
				int err = -errno;

				if (outs->af[ev][fm].why[0])
					p_err("output file %s: %s", path, outs->af[ev][fm].why);
				else
					p_err("cannot create output file %s: %s (check that its "
					      "directory exists and is writable)", path,
					      strerror(-err));
				return err;
			}
		}
	}
	return 0;
}

/* From the signal handler: the temporaries go (no stdio, no free). */
static void outputs_abort_signal_safe(struct outputs *outs)
{
	for (size_t ev = 0; ev < outs->nr; ev++)
		for (size_t fm = 0; fm < OPTS_MAX_FORMATS; fm++)
			if (outs->f[ev][fm] && outs->f[ev][fm] != stdout)
				atomicfile__abort(&outs->af[ev][fm]);
}

/* Outputs never written (the run failed): their temporaries go, and
 * whatever was under the final names stays. */
static void close_outputs(struct outputs *outs)
{
	for (size_t ev = 0; ev < outs->nr; ev++)
		for (size_t fm = 0; fm < OPTS_MAX_FORMATS; fm++)
			if (outs->f[ev][fm] && outs->f[ev][fm] != stdout) {
				fclose(outs->f[ev][fm]);
				atomicfile__abort(&outs->af[ev][fm]);
				outs->f[ev][fm] = NULL;
			}
}

static uint64_t now_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* BPFS_DEBUG_WRITE_PAUSE=MS: a profile waits MS between being written to
 * its new file and being put in place, so that a test can kill the run
 * while it writes (outputs.sh: nothing is left beside the old profile). */
static void debug_write_pause(FILE *f)
{
	const char *ms = getenv("BPFS_DEBUG_WRITE_PAUSE");

	if (!ms || fflush(f))
		return;
	p_warn("BPFS_DEBUG_WRITE_PAUSE=%s: the profile is written, not yet in place; waiting "
	       "(for tests)", ms);
	nanosleep(&(struct timespec){ .tv_sec = atol(ms) / 1000,
				      .tv_nsec = atol(ms) % 1000 * 1000000 }, NULL);
}

/* One run: what options made, and what each step hands the next. */

static int write_profile(const struct run *r, const struct profile *p, size_t ev, size_t fm)
{
	const struct opts *o = r->o;
	struct writer_opts wo = { .annotate = o->annotate, .inverted = o->inverted,
				  .top = o->top, .inlines = o->inlines };
	FILE **out = &r->outs->f[ev][fm];
	double t0 = now_s();
	int err = o->formats[fm]->write(p, &wo, *out);
	long size = *out != stdout ? ftell(*out) : -1;

	if (!err && *out == stdout && fflush(stdout))
		err = -errno;
	if (*out != stdout) {
		struct atomicfile *af = &r->outs->af[ev][fm];

		debug_write_pause(*out);
		if (fclose(*out) && !err)
			err = -errno;
		if (err)
			atomicfile__abort(af);
		else
			err = atomicfile__commit(af);
	}
	*out = NULL;
	if (err)
		p_err("cannot write the profile to %s: %s", r->outs->path[ev][fm], strerror(-err));
	else if (size < 0) /* a pipe, a FIFO: no offset to tell */
		p_info("%s written to %s in %.3f s", o->formats[fm]->name,
		       r->outs->path[ev][fm], now_s() - t0);
	else
		p_info("%s written to %s in %.3f s (%ld bytes)", o->formats[fm]->name,
		       r->outs->path[ev][fm], now_s() - t0, size);
	return err;
}

/* Over the events: the same processes in each, so their count is the
 * largest of the events', not the sum. */
static void add_stats(struct report_stats *total, const struct report_stats *rs)
{
	uint64_t processes = rs->processes > total->processes ? rs->processes : total->processes;

	report__add_stats(total, rs);
	total->processes = processes;
}

/* The folded lines the profile makes, for the summary. */
static size_t folded_lines(const struct profile *p, bool annotate, bool inlines)
{
	struct folded *f = NULL;
	size_t n = 0;

	if (!folded__new(&f) && !folded__add_profile(f, p, annotate, inlines))
		n = folded__nr_lines(f);
	folded__free(f);
	return n;
}

static void event_report_opts(const struct run *r, size_t ev, struct report_opts *ro)
{
	const struct event *e = &r->o->events.v[ev];
	const struct sampler_event_stats *es = &r->st.ev[ev];

	*ro = (struct report_opts){
		.kernel_only = r->o->kernel_only,
		.weight_period = r->o->weight_period,
		.event = r->o->events.nr > 1 ? (int)ev : -1,
		.event_name = e->name,
		.timer = e->timer,
		.offcpu = e->offcpu,
		.period = e->attr.freq ? 0 : e->attr.sample_period,
		.scale = es->running_ns ? (double)es->enabled_ns / es->running_ns : 1,
	};
}

static void set_meta(const struct run *r, struct profile *p)
{
	if (!p)
		return;
	profile__meta(p)->time_ns = r->start_unix_ns;
	profile__meta(p)->duration_ns = r->duration_ns;
}

/* Each event's profile: built into the profile model, written. With a
 * format of every sample (samples), those samples go into a profile of
 * their own, which only such formats read: the others read the summed
 * one, and both in one profile counted each sample twice. */
static int report_events(struct run *r)
{
	const struct opts *o = r->o;
	struct profile_opts po = { .demangle = !o->no_demangle };
	int err = 0;

	for (size_t ev = 0; ev < o->events.nr && !err; ev++) {
		struct report_opts ro;
		struct report_stats rs;
		struct report_stats folded;
		/* what was folded in, if any */
		struct profile *p = folder__take(r->fold, ev, &folded);
		struct profile *timed = NULL;

		double t0 = now_s(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);

		event_report_opts(r, ev, &ro);
		if (!p)
			err = profile__new(&po, &p);
		if (!err)
			err = report__build(r->s, r->stream, r->sym, &ro, r->st.ev[ev].stat, p, &rs);
		report__add_stats(&rs, &folded);
		if (!err && o->timed)
			err = profile__new(&po, &timed);
		if (!err && timed)
			err = report__add_timed(r->s, r->stream, r->sym, &ro, timed);
		r->build_s += now_s() - t0;
		r->build_cpu_s += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		exit_phase("profile built (frames named)");
		if (!err) {
			set_meta(r, p);
			set_meta(r, timed);
		}
		for (size_t fm = 0; fm < o->nr_formats && !err; fm++)
			err = write_profile(r, o->formats[fm]->timed ? timed : p, ev, fm);
		if (!err) {
			add_stats(&r->rs, &rs);
			r->lines += folded_lines(p, o->annotate, o->inlines);
		}
		if (!err && r->wall && (o->events.v[ev].timer || o->events.v[ev].offcpu) &&
		    wallclock__add(r->wall, p, o->events.v[ev].offcpu) == -ENOMEM)
			p_warn("no memory for the wall clock by thread: its table is partial");
		profile__free(timed);
		profile__free(p);
	}
	return err;
}

/* DWARF is read only for what shows it: pprof, or --inline. Folded alone
 * (the default) costs what it did before lines existed. */
static bool wants_lines(const struct opts *o)
{
	if (o->no_lines)
		return false;
	if (o->inlines)
		return true;
	for (size_t i = 0; i < o->nr_formats; i++)
		if (o->formats[i]->lines)
			return true;
	return false;
}

/* Mappings followed from the side-band: always its losses, with -v the
 * rest. */
static void print_sideband(const struct run *r)
{
	struct symbolizer_stats ys;
	struct sideband_stats sb;
	uint64_t mapgens_failed;

	if (!sampler__sideband_stats(r->s, &sb, &mapgens_failed))
		return;
	symbolizer__stats(r->sym, &ys);
	if (sb.lost)
		fprintf(stderr, "  side-band: %llu mapping records lost (perf ring full): the maps of "
			"%llu processes were read again from /proc; raise --sideband-size\n",
			(unsigned long long)sb.lost, (unsigned long long)ys.reread_after_loss);
	if (mapgens_failed)
		fprintf(stderr, "  side-band: %llu mapping generations not stored (mapgens full): "
			"samples after them may be named after older mappings\n",
			(unsigned long long)mapgens_failed);
	if (r->o->verbose)
		fprintf(stderr, "  side-band: %llu executable mappings followed, %llu of an image "
			"left by exec skipped; longest wait for a generation %.2f ms\n",
			(unsigned long long)sb.mappings, (unsigned long long)sb.stale,
			sb.max_lag_ns / 1e6);
}

/* CPython: processes walked, frames, code objects read, why walks ended. */
static void print_python(const struct run *r)
{
	uint64_t b[BPFS_PY_STAT_NR];
	struct pyreg_stats ps;

	if (!r->py || sampler__python_stats(r->s, b))
		return;
	pyreg__stats(r->py, &ps);
	if (!ps.interpreters && !b[BPFS_PY_STAT_WALKS])
		return;
	fprintf(stderr, "  python: %llu processes walked (%llu of versions not walked), %llu "
		"samples met the interpreter (%llu found their thread state again without a search), "
		"%llu Python frames in %llu reads of frame memory (%llu samples with frames outward "
		"of a native walk cut short); %llu code objects read "
		"(%.1f KiB held, %llu unreadable, %llu records not sent)\n",
		(unsigned long long)ps.processes, (unsigned long long)ps.unsupported,
		(unsigned long long)b[BPFS_PY_STAT_WALKS],
		(unsigned long long)b[BPFS_PY_STAT_TSTATE_KEPT],
		(unsigned long long)b[BPFS_PY_STAT_FRAMES],
		(unsigned long long)b[BPFS_PY_STAT_FRAME_READS],
		(unsigned long long)b[BPFS_PY_STAT_TAILS],
		(unsigned long long)(ps.codes + ps.codes_released), ps.code_bytes / 1024.0,
		(unsigned long long)ps.code_unread, (unsigned long long)b[BPFS_PY_STAT_CODE_UNSENT]);
	if (b[BPFS_PY_STAT_NO_THREAD] || b[BPFS_PY_STAT_READ] || b[BPFS_PY_STAT_BAD_CODE] ||
	    b[BPFS_PY_STAT_TOO_DEEP])
		fprintf(stderr, "  python: walks ended early (marked in the stacks): %llu no "
			"thread state, %llu unreadable frames, %llu not a code object, %llu too "
			"many frames\n",
			(unsigned long long)b[BPFS_PY_STAT_NO_THREAD],
			(unsigned long long)b[BPFS_PY_STAT_READ],
			(unsigned long long)b[BPFS_PY_STAT_BAD_CODE],
			(unsigned long long)b[BPFS_PY_STAT_TOO_DEEP]);
}

/* The unwind tables: files, rows, build time and releases. */
static void print_unwind(const struct run *r)
{
	struct unwinder_stats us;

	if (!r->uw)
		return;
	unwinder__stats(r->uw, &us);
	fprintf(stderr, "  unwind tables: %llu files (%llu from .debug_frame, %llu of them in "
		"debug files; %llu without .eh_frame or .debug_frame, %llu did not fit), %llu "
		"rows = %.1f MiB of %.1f MiB (peak %.1f), built in %.0f ms (%llu streamed); "
		"%llu processes, %llu tables released, %llu kept for reuse (%llu rows), %llu "
		"reused, %llu evicted\n",
		(unsigned long long)us.built, (unsigned long long)us.debug_frame,
		(unsigned long long)us.debug_files, (unsigned long long)us.no_table,
		(unsigned long long)us.full, (unsigned long long)us.rows,
		us.rows * sizeof(struct bpfs_unwind_row) / 1048576.0,
		us.max_rows * sizeof(struct bpfs_unwind_row) / 1048576.0,
		us.rows_peak * sizeof(struct bpfs_unwind_row) / 1048576.0, us.build_ns / 1e6,
		(unsigned long long)us.streamed, (unsigned long long)us.processes,
		(unsigned long long)us.released,
		(unsigned long long)us.idle, (unsigned long long)us.idle_rows,
		(unsigned long long)us.reused, (unsigned long long)us.evicted);
	if (us.abandoned)
		fprintf(stderr, "  unwind tables: %llu builds abandoned when sampling ended "
			"(a table still being built then is not waited for)\n",
			(unsigned long long)us.abandoned);
	if (us.update_errors || us.maps_left_out)
		fprintf(stderr, "  unwind tables: %llu process entries refused by the BPF map "
			"(8192 processes at once: walked by frame pointers), %llu mappings "
			"over 128 per process left out (a stack through one ends as a bad "
			"frame)\n",
			(unsigned long long)us.update_errors,
			(unsigned long long)us.maps_left_out);
}

static void print_summary(const struct run *r)
{
	const struct opts *o = r->o;
	struct stream_stats ss;

	stream__stats(r->stream, &ss);
	report__summary(stderr, &r->st, &r->rs, &ss, r->lines, r->duration_ns / 1e9);
	print_sideband(r);
	if (o->events.nr > 1 || !o->events.v[0].timer)
		for (size_t ev = 0; ev < o->events.nr; ev++)
			report__event_summary(stderr, o->events.v[ev].name, &r->st, ev,
					      o->weight_period);
	print_unwind(r);
	print_python(r);
	if (r->oc)
		offcpu__summary(stderr, &r->ost, o->verbose > 0);
	if (r->wall)
		wallclock__print(stderr, r->wall, r->ost.window_ns, o->verbose ? 50 : 10);
	/* The kernel lowers the sysctl itself when sampling interrupts run
	 * long ("perf: interrupt took too long"), and throttles every event
	 * above the new limit from then on. */
	if (r->max_rate[0] > 0 && r->max_rate[1] > 0 && r->max_rate[1] < r->max_rate[0])
		fprintf(stderr, "  kernel: perf_event_max_sample_rate went from %ld to %ld during "
			"the run (the kernel lowers it when sampling interrupts run long)%s\n",
			r->max_rate[0], r->max_rate[1],
			r->st.rate > r->max_rate[1] ? "; samples above the new limit were "
						      "throttled: use a lower -F"
						    : "");
	if (o->verbose) {
		struct symbolizer_stats ys;

		symbolizer__stats(r->sym, &ys);
		fprintf(stderr, "  symbols: user %llu/%llu frames named, kernel %llu/%llu; %llu "
			"processes' mappings read (%llu reads found none yet: read again), "
			"%llu executable mappings followed (%llu files unreadable)\n",
			(unsigned long long)ys.user_named, (unsigned long long)ys.user_frames,
			(unsigned long long)ys.kernel_named, (unsigned long long)ys.kernel_frames,
			(unsigned long long)ys.processes, (unsigned long long)ys.empty_reads,
			(unsigned long long)ys.mappings, (unsigned long long)ys.mappings_unopened);
		fprintf(stderr, "  symbol cache: %llu files (%llu unreadable), %llu symbol tables "
			"parsed (%llu from debug files), %llu files shared a build-ID's, %.1f MB\n",
			(unsigned long long)ys.files,
			(unsigned long long)ys.unreadable,
			(unsigned long long)ys.parsed, (unsigned long long)ys.debug_files,
			(unsigned long long)ys.shared, ys.symtab_bytes / 1e6);
		fprintf(stderr, "  source lines: %llu/%llu user frames, from the DWARF of %llu "
			"files (%llu more past the fd budget) and the .gopclntab of %llu Go "
			"binaries%s; profiles built (symbolized) in %.3f s, %.3f s CPU\n",
			(unsigned long long)ys.user_lines, (unsigned long long)ys.user_frames,
			(unsigned long long)ys.dwarf_files, (unsigned long long)ys.dwarf_skipped,
			(unsigned long long)ys.go_files,
			wants_lines(o) ? "" : " (not read: no format shows lines)",
			r->build_s, r->build_cpu_s);
	}
}

/*
 * The BPF side never announces bpfsampler itself (loader_pid): reading our
 * own maps as they change would announce us again, a loop. Our executable
 * mappings are all there when sampling starts, so one read then names our
 * frames like any process's; a library dlopen'ed later is found by the
 * one re-read addrspace__find does on a miss.
 */
static void note_self(struct symbolizer *sym)
{
	char comm[17] = "bpfsampler";

	prctl(PR_GET_NAME, comm);
	symbolizer__note_process(sym, getpid(), 0, 0, comm);
}

/* symbolizer, stream, command, sampler: made in that order. */
static int run_setup(struct run *r)
{
	const struct opts *o = r->o;
	struct sampler_opts so;
	int err;

	err = symbolizer__new(&(struct symbolizer_opts){
				      .debug_dirs = (const char *const *)o->debug_dirs.v,
				      .nr_debug_dirs = o->debug_dirs.nr,
				      .no_lines = !wants_lines(o) },
			      &r->sym);
	if (!err)
		err = stream__new(&(struct stream_opts){ .keep_samples = o->timed,
							 .on_process = symbolizer__on_process,
							 .on_mapping = symbolizer__on_mapping,
							 .map_gen_at = symbolizer__map_gen_at,
							 .on_py_code = symbolizer__on_py_code,
							 .ctx = r->sym },
				  &r->stream);
	if (!err && o->command)
		err = command__spawn(o->command, &r->cmd);
	if (err)
		return err;
	opts__sampler_opts(o, &so);
	so.on_record = on_record;
	so.ctx = r->stream;
	so.on_mapping = symbolizer__on_sideband_mapping;
	so.on_mappings_lost = symbolizer__on_mappings_lost;
	so.map_ctx = r->sym;
	err = sampler__new(&so, &r->s);
	/* the command is selected from its exec on: until then it is our
	 * own forked child */
	if (!err && r->cmd)
		err = sampler__add_filter(r->s, command__pid(r->cmd), true);
	if (!err && sampler__unwind(r->s) != BPFS_UNWIND_FP)
		err = unwinder__start(r->s, r->sym, o->unwind_rows, o->unwind_keep, &r->uw);
	if (!err && o->off_cpu)
		err = wallclock__new(&r->wall);
	if (!err && o->off_cpu)
		err = offcpu__new(r->s, &(struct offcpu_opts){
					  .event = o->events.nr - 1, /* added last (opts.c) */
					  .min_ns = o->off_cpu_min_ns,
					  .walks_per_s = o->off_cpu_walks,
					  .threads = o->off_cpu_threads,
					  .cpus = &o->cpus },
				  &r->oc);
	if (!err)
		err = pyreg__start(r->s, r->sym, &r->py);
	if (!err)
		err = fold_setup(r);
	return err;
}

static int run(const struct opts *o, struct outputs *outs)
{
	struct run r = { .o = o, .outs = outs };
	int loop_err = 0;
	pthread_t stopper_th;
	bool stopper_on = false;
	sigset_t stop_sigs, old_sigs;
	int err;

	err = run_setup(&r);
	if (err)
		goto out;
	/* The BPF programs loaded so far (ours among them) are noted before
	 * sampling starts; any loaded from now on is named as it comes, so
	 * one that unloads before the end keeps its name. */
	symbolizer__refresh(r.sym);
	/* -p: the processes' maps and unwind tables before their first
	 * sample, not after it */
	for (size_t i = 0; i < o->pids.nr; i++)
		symbolizer__note_process(r.sym, o->pids.v[i], 0, 0, "");
	symbolizer__read_announced(r.sym);
	err = sampler__start(r.s);
	if (!err && r.oc)
		err = offcpu__start(r.oc);
	if (err)
		goto out;
	symbolizer__set_tracking(r.sym, sampler__tracks_mappings(r.s));
	/* before the command runs: its first samples, in ld.so, find tables */
	if (r.uw)
		unwinder__preload_common(r.uw);
	if (r.cmd) {
		err = command__release(r.cmd);
		if (err)
			goto out;
	}
	/* after the start: neither sampling nor the command waits for it;
	 * and only where our own samples are kept (not with -p, -t or a
	 * command, whose first maps it would hold back: forty files, seconds
	 * under emulation) */
	if (!r.cmd && !o->pids.nr && !o->tids.nr)
		note_self(r.sym);
	p_info("sampling%s", o->duration ? "" : "; Ctrl-C to stop");
	r.t0 = now_s();
	r.start_unix_ns = now_unix_ns();
	r.max_rate[0] = features__max_sample_rate();
	ehframe__set_cancel(run_over);
	r.deadline = o->duration > 0 ? now_s() + o->duration : 0;
	run_deadline = stop_deadline = r.deadline;
	stop_sampler = r.s;
	if (getenv("BPFS_DEBUG_STOPPER_LATE")) {
		stopper_late_ms = atol(getenv("BPFS_DEBUG_STOPPER_LATE"));
		p_warn("BPFS_DEBUG_STOPPER_LATE=%ld: the stopper thread waits that many ms "
		       "after the stop (for tests)", stopper_late_ms);
	}
	/* the stopper blocks SIGINT and SIGTERM (its mask is inherited), so
	 * they reach the main thread and wake its poll */
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_sigs, &old_sigs);
	stopper_on = sem_init(&stop_sem, 0, 0) == 0 &&
		     pthread_create(&stopper_th, NULL, stopper, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old_sigs, NULL);
	if (stopper_on)
		pthread_detach(stopper_th); /* never waited for: see stopper() */
	sampling = 1;
	loop_err = sample_loop(&r);
	if (!exiting)
		abort_msg = o->output ? "bpfsampler: interrupted after sampling: stopped at "
					"once; the profile was not written\n"
				      : "bpfsampler: interrupted after sampling: stopped at "
					"once; the profile on stdout is incomplete\n";
	else if (!o->output)
		abort_msg = "bpfsampler: interrupted again: stopped at once; the profile on "
			    "stdout is incomplete\n";
	sampling = 0;
	/* From here the loader only finishes what was sampled: it does so
	 * ahead of the machine's other work (nice -10 weighs 10 times a nice 0
	 * task), so that a busy machine does not stretch the exit past its
	 * second (docs/design.md, "Every run ends"). Failing, it stays as is. */
	if (setpriority(PRIO_PROCESS, 0, -10))
		p_dbg("cannot raise the exit's priority: %s", strerror(errno));
	exit_phase("sampling loop left");
	if (claim_stop(STOP_BY_MAIN))
		note_stop(); /* sampler__stop disables the events */
	if (stopper_on)
		sem_post(&stop_sem); /* it ends, finding the stop claimed */

	/* the blocks still open are counted up to now, before the last
	 * drain takes their records (stream mode) */
	err = offcpu__stop(r.oc);
	exit_phase("off-CPU blocks closed");
	if (!err)
		err = sampler__stop(r.s);
	else
		sampler__stop(r.s);
	exit_phase("last records drained");
	r.duration_ns = (now_s() - r.t0) * 1e9;
	r.max_rate[1] = features__max_sample_rate();
	if (!err)
		err = close_rings(r.s, r.stream);
	if (!err)
		err = stream__finish(r.stream);
	symbolizer__finish(r.sym);
	exit_phase("stream finished");
	if (!err)
		err = sampler__stats(r.s, &r.st);
	if (!err && r.oc)
		err = offcpu__stats(r.oc, &r.ost);
	if (!err) {
		err = report_events(&r);
		exit_phase("profiles written");
		/* after a failed write too (a full disk, | head): what was
		 * sampled is still worth knowing */
		print_summary(&r);
	}
	if (!err)
		err = loop_err;
out:
	if (r.cmd) {
		int status = command__finish(r.cmd, err != 0);

		if (!err)
			err = status; /* positive: the command's exit status */
	}
	if (r.sym) {
		symbolizer__set_maps_hook(r.sym, NULL, NULL);
		symbolizer__set_python(r.sym, NULL);
	}
	pyreg__free(r.py);
	folder__free(r.fold);
	unwinder__free(r.uw);
	offcpu__free(r.oc);
	wallclock__free(r.wall);
	if (stopper_on)
		stopper_leave_sampler();
	sampler__free(r.s);
	exit_phase("BPF objects released");
	stream__free(r.stream);
	symbolizer__free(r.sym);
	exit_phase("memory freed");
	exit_report();
	return err;
}

/* The agent's --config FILE: its settings go before the command line's
 * arguments, which win, and the whole is parsed again by the same parser.
 * args keeps the strings the options point into. */
static enum opts_result parse_with_config(struct opts *o, int argc, char **argv,
					  struct vec *args)
{
	struct vec av = VEC_INIT(char *);
	enum opts_result r = OPTS_USAGE;
	char **v;

	if (agent_config__load(o->agent.config, opts__long_options(), args))
		return OPTS_USAGE;
	/* argv[0], "agent", the file's settings, then the command line's */
	if (vec__append(&av, argv, 2) || vec__append(&av, args->data, args->nr) ||
	    vec__append(&av, argv + 2, argc - 2) || !(v = vec__push(&av)))
		goto out;
	*v = NULL;
	opts__free(o);
	r = opts__parse(o, av.nr - 1, av.data);
out:
	/* the options point into the strings, not into this array */
	vec__free(&av);
	return r;
}

/* What SIGHUP needs to read the options as at start; the strings of
 * every reading stay until exit (options point into them; SIGHUP is rare). */
struct reparse {
	int argc;
	char **argv;
	struct vec configs; /* struct vec of char *, one per reading */
};

static int reparse_options(void *ctx, struct opts *out)
{
	struct reparse *rp = ctx;
	struct vec *args = vec__push(&rp->configs);
	enum opts_result r;

	if (!args)
		return -ENOMEM;
	*args = VEC_INIT(char *);
	r = opts__parse(out, rp->argc, rp->argv);
	if (r == OPTS_RUN && out->agent.config)
		r = parse_with_config(out, rp->argc, rp->argv, args);
	if (r != OPTS_RUN) {
		opts__free(out);
		return -EINVAL;
	}
	return 0;
}

static int run_agent(struct opts *o, int argc, char **argv)
{
	struct reparse rp = { .argc = argc, .argv = argv, .configs = VEC_INIT(struct vec) };
	char why[512];
	int err;

	/* an agent's log says what it does, window by window, with the time */
	log_set_level(o->verbose ? LOG_DEBUG : LOG_INFO);
	log_set_timestamps(true);
	if (o->agent.log_file && (err = log_open(o->agent.log_file, why, sizeof(why)))) {
		p_err("cannot open the log file %s: %s", o->agent.log_file,
		      why[0] ? why : strerror(-err));
		return EXIT_USAGE;
	}
	err = agent__run(o, reparse_options, &rp);
	log_close();
	for (size_t i = 0; i < rp.configs.nr; i++)
		agent_config__free_args(vec__at(&rp.configs, i));
	vec__free(&rp.configs);
	if (err == -ENODEV)
		return EXIT_USAGE;
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct vec config_args = VEC_INIT(char *);
	struct outputs outs = {};
	enum opts_result r;
	struct opts o;
	int err;

	/* a one-shot profile's peak RSS: the BTF freed after the load and
	 * the kernel's symbols read at the end no longer in one heap */
	mallocpolicy__return_large();
	r = opts__parse(&o, argc, argv);
	if (r == OPTS_RUN && o.agent.config)
		r = parse_with_config(&o, argc, argv, &config_args);
	switch (r) {
	case OPTS_EXIT:
		return 0;
	case OPTS_USAGE:
		opts__free(&o);
		agent_config__free_args(&config_args);
		return EXIT_USAGE;
	case OPTS_RUN:
		break;
	}
	log_set_level(o.verbose >= 2 ? LOG_DEBUG : o.verbose ? LOG_INFO : LOG_WARN);
	if (opts__check_system(&o) != OPTS_RUN) {
		opts__free(&o);
		agent_config__free_args(&config_args);
		return EXIT_USAGE;
	}
	if (features__check()) {
		opts__free(&o);
		agent_config__free_args(&config_args);
		return 1;
	}
	if (o.agent.on) {
		err = run_agent(&o, argc, argv);
		opts__free(&o);
		agent_config__free_args(&config_args);
		return err;
	}
	/* SIGINT/SIGTERM end sampling; the profile is still written. Before
	 * the outputs are opened: their temporaries go with any signal. */
	abort_outs = &outs;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (open_outputs(&o, &outs)) {
		close_outputs(&outs);
		opts__free(&o);
		return EXIT_USAGE;
	}
	/* A reader that goes away (| head) is a write error, reported with
	 * the summary and exit status 1, not a silent death by SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);

	err = run(&o, &outs);
	close_outputs(&outs);
	opts__free(&o);
	if (err == -ENODEV)
		return EXIT_USAGE; /* an event this machine cannot sample */
	if (err < 0)
		return 1;
	return err; /* 0, or the command's exit status */
}
