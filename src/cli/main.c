// SPDX-License-Identifier: GPL-2.0
/*
 * bpfsampler: parse options, check the machine, sample, report. Each step is
 * a module; main only sequences them and maps failures to exit statuses:
 * 0 done, 1 the machine or the run failed, 2 bad command line, and with
 * "-- command" the command's own status.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "events.h"
#include "features.h"
#include "folded.h"
#include "log.h"
#include "opts.h"
#include "report.h"
#include "sampler.h"
#include "stream.h"
#include "symbolize.h"

#define EXIT_USAGE 2

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	exiting = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_process(void *ctx, uint32_t pid, uint32_t ppid, uint64_t mm, const char *comm)
{
	symbolizer__note_process(ctx, pid, ppid, mm, comm);
}

static void on_mapping(void *ctx, const struct bpfs_rec_map *r)
{
	symbolizer__note_mapping(ctx, r->pid,
				 &(struct as_mapping){ .gen = r->gen,
							.time_ns = r->time_ns,
							.exec = r->flags & BPFS_MAP_F_EXEC,
							.mm = r->mm,
							.start = r->start,
							.end = r->end,
							.pgoff = r->pgoff,
							.dev = r->dev,
							.ino = r->ino });
}

/* Set once sampling must end: the drain in progress stops at the next
 * record (records keep coming while we sample), until the final drain. */
static volatile sig_atomic_t stop_draining;

static int on_record(void *ctx, const void *data, size_t size)
{
	int err = stream__handle(ctx, data, size);

	if (!err && stop_draining && exiting)
		return -EINTR;
	return err;
}

/* Measured (docs/design.md, "Two modes"): aggregation costs the profiled
 * system and the loader less at the same rate; the stream carries time. */
static enum bpfs_mode pick_mode(const struct opts *o)
{
	return o->mode == OPTS_MODE_STREAM ? BPFS_MODE_STREAM : BPFS_MODE_AGGREGATE;
}

static void fill_sampler_opts(const struct opts *o, struct stream *stream,
			      struct sampler_opts *so)
{
	*so = (struct sampler_opts){
		.mode = pick_mode(o),
		.events = &o->events,
		.cpus = &o->cpus,
		.filter_mode = o->pids.nr	? BPFS_FILTER_TGID
			       : o->tids.nr	? BPFS_FILTER_TID
			       : o->command	? BPFS_FILTER_TGID
						: BPFS_FILTER_NONE,
		.filter_ids = o->pids.nr ? &o->pids : &o->tids,
		.follow_children = o->command != NULL,
		.include_idle = o->include_idle,
		.user_stacks = !o->kernel_only,
		.kernel_stacks = !o->user_only,
		.max_depth = o->max_depth,
		.irq_depth = o->irq_depth,
		.completion = !o->no_completion,
		.follow_mappings = !o->no_follow_mappings,
		.map_entries = o->map_entries,
		.stack_entries = o->stack_entries,
		.stack_id_bits = o->stack_id_bits,
		.ring_size = o->ring_size,
		.on_record = on_record,
		.ctx = stream,
	};
}

/* Polls until the duration ends, a signal arrives or the command exits. */
static void sample_loop(struct sampler *s, const struct opts *o, struct command *cmd,
			struct symbolizer *sym)
{
	double deadline = o->duration > 0 ? now_s() + o->duration : 0;
	double next_refresh = now_s() + 0.25;

	stop_draining = 1;
	while (!exiting) {
		int timeout = 100;

		if (deadline) {
			double left = deadline - now_s();

			if (left <= 0)
				break;
			if (left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		if (sampler__poll(s, timeout) < 0)
			break;
		if (o->reader_delay_ms)
			usleep(o->reader_delay_ms * 1000U);
		if (now_s() >= next_refresh) {
			symbolizer__refresh(sym);
			next_refresh = now_s() + 0.25;
		}
		if (cmd && command__poll(cmd))
			break;
	}
	stop_draining = 0; /* the final drain takes everything */
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
	FILE *f[BPFS_MAX_EVENTS];
	char path[BPFS_MAX_EVENTS][4096];
	size_t nr;
};

static int open_outputs(const struct opts *o, struct outputs *outs)
{
	outs->nr = o->events.nr;
	for (size_t ev = 0; ev < outs->nr; ev++) {
		if (!o->output) {
			outs->f[ev] = stdout;
			snprintf(outs->path[ev], sizeof(outs->path[ev]), "stdout");
			continue;
		}
		if (outs->nr == 1)
			snprintf(outs->path[ev], sizeof(outs->path[ev]), "%s", o->output);
		else
			events__output_name(o->output, &o->events.v[ev], outs->path[ev],
					    sizeof(outs->path[ev]));
		outs->f[ev] = fopen(outs->path[ev], "w");
		if (!outs->f[ev]) {
			p_err("cannot open output file %s: %s", outs->path[ev], strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static void close_outputs(struct outputs *outs)
{
	for (size_t ev = 0; ev < outs->nr; ev++)
		if (outs->f[ev] && outs->f[ev] != stdout)
			fclose(outs->f[ev]);
}

static int write_samples(struct sampler *s, struct stream *stream, struct symbolizer *sym,
			 const struct report_opts *ro, const char *event_name, FILE *out)
{
	const struct bpfs_rec_sample *r;
	size_t nr;
	int err = 0;

	r = stream__samples(stream, &nr);
	for (size_t i = 0; i < nr && !err; i++)
		if (ro->event < 0 || r[i].event == (uint32_t)ro->event)
			err = report__write_sample(s, stream, sym, ro, &r[i], event_name, out);
	return err;
}

static int write_profile(const struct folded *f, const char *path, FILE **out)
{
	int err = f ? folded__write(f, *out) : (fflush(*out) ? -errno : 0);

	if (*out != stdout && fclose(*out) && !err)
		err = -errno;
	*out = NULL;
	if (err)
		p_err("cannot write the profile to %s: %s", path, strerror(-err));
	return err;
}

/* Each event's profile: built, written, summed into *total. */
static int report_events(const struct opts *o, struct sampler *s, struct stream *stream,
			 struct symbolizer *sym, const struct sampler_stats *st,
			 struct outputs *outs, struct report_stats *total, size_t *lines)
{
	int err = 0;

	for (size_t ev = 0; ev < o->events.nr && !err; ev++) {
		const struct sampler_event_stats *es = &st->ev[ev];
		struct report_opts ro = {
			.annotate = o->annotate,
			.kernel_only = o->kernel_only,
			.weight_period = o->weight_period,
			.event = o->events.nr > 1 ? (int)ev : -1,
			.scale = es->running_ns ? (double)es->enabled_ns / es->running_ns : 1,
		};
		struct report_stats rs;
		struct folded *f = NULL;

		err = folded__new(&f);
		if (!err)
			err = report__build(s, stream, sym, &ro, es->stat, f, &rs);
		if (!err && o->format == OPTS_FORMAT_SAMPLES)
			err = write_samples(s, stream, sym, &ro, o->events.v[ev].name, outs->f[ev]);
		if (!err)
			err = write_profile(o->format == OPTS_FORMAT_FOLDED ? f : NULL,
					    outs->path[ev], &outs->f[ev]);
		if (!err) {
			total->samples += rs.samples;
			total->lost += rs.lost;
			total->keys += rs.keys;
			total->processes = rs.processes > total->processes ? rs.processes
									    : total->processes;
			total->stacks += rs.stacks;
			total->stacks_missing += rs.stacks_missing;
			*lines += folded__nr_lines(f);
		}
		folded__free(f);
	}
	return err;
}

static void print_summary(const struct opts *o, const struct sampler_stats *st,
			  const struct report_stats *rs, struct stream *stream,
			  struct symbolizer *sym, size_t lines, double seconds)
{
	struct stream_stats ss;

	stream__stats(stream, &ss);
	report__summary(stderr, st, rs, &ss, lines, seconds);
	if (o->events.nr > 1 || !o->events.v[0].timer)
		for (size_t ev = 0; ev < o->events.nr; ev++)
			report__event_summary(stderr, o->events.v[ev].name, st, ev, o->weight_period);
	if (o->verbose) {
		struct symbolizer_stats ys;

		symbolizer__stats(sym, &ys);
		fprintf(stderr, "  symbols: user %llu/%llu frames named, kernel %llu/%llu; %llu "
			"processes' mappings read, %llu executable mappings followed (%llu "
			"files unreadable)\n",
			(unsigned long long)ys.user_named, (unsigned long long)ys.user_frames,
			(unsigned long long)ys.kernel_named, (unsigned long long)ys.kernel_frames,
			(unsigned long long)ys.processes, (unsigned long long)ys.mappings,
			(unsigned long long)ys.mappings_unopened);
		fprintf(stderr, "  symbol cache: %llu files (%llu unreadable), %llu symbol tables "
			"parsed (%llu from debug files), %llu files shared a build-ID's, %.1f MB\n",
			(unsigned long long)ys.files,
			(unsigned long long)ys.unreadable,
			(unsigned long long)ys.parsed, (unsigned long long)ys.debug_files,
			(unsigned long long)ys.shared, ys.symtab_bytes / 1e6);
	}
}

static int run(const struct opts *o, struct outputs *outs)
{
	struct sampler_stats st = {};
	struct report_stats rs = {};
	struct symbolizer *sym = NULL;
	struct sampler_opts so;
	struct sampler *s = NULL;
	struct command *cmd = NULL;
	struct stream *stream = NULL;
	size_t lines = 0;
	double t0;
	int err;

	err = symbolizer__new(&(struct symbolizer_opts){
				      .debug_dirs = (const char *const *)o->debug_dirs.v,
				      .nr_debug_dirs = o->debug_dirs.nr },
			      &sym);
	if (!err)
		err = stream__new(&(struct stream_opts){ .keep_samples =
							     o->format == OPTS_FORMAT_SAMPLES,
							 .on_process = on_process,
							 .on_mapping = on_mapping,
							 .ctx = sym },
				  &stream);
	if (err)
		goto out;
	if (o->command) {
		err = command__spawn(o->command, &cmd);
		if (err)
			goto out;
	}
	fill_sampler_opts(o, stream, &so);
	err = sampler__new(&so, &s);
	if (err)
		goto out;
	if (cmd) {
		err = sampler__add_filter(s, command__pid(cmd));
		if (err)
			goto out;
	}
	/* The BPF programs loaded so far (ours among them) are noted before
	 * sampling starts; any loaded from now on is named as it comes, so
	 * one that unloads before the end keeps its name. */
	symbolizer__refresh(sym);
	err = sampler__start(s);
	if (err)
		goto out;
	symbolizer__set_tracking(sym, sampler__tracks_mappings(s));
	if (cmd) {
		err = command__release(cmd);
		if (err)
			goto out;
	}
	p_info("sampling%s", o->duration ? "" : "; Ctrl-C to stop");
	t0 = now_s();
	sample_loop(s, o, cmd, sym);

	err = sampler__stop(s);
	if (!err)
		err = close_rings(s, stream);
	if (!err)
		err = stream__finish(stream);
	symbolizer__finish(sym);
	if (!err)
		err = sampler__stats(s, &st);
	if (!err)
		err = report_events(o, s, stream, sym, &st, outs, &rs, &lines);
	if (!err)
		print_summary(o, &st, &rs, stream, sym, lines, now_s() - t0);
out:
	if (cmd) {
		int status = command__finish(cmd, err != 0);

		if (!err)
			err = status; /* positive: the command's exit status */
	}
	sampler__free(s);
	stream__free(stream);
	symbolizer__free(sym);
	return err;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct outputs outs = {};
	struct opts o;
	int err;

	switch (opts__parse(&o, argc, argv)) {
	case OPTS_EXIT:
		return 0;
	case OPTS_USAGE:
		opts__free(&o);
		return EXIT_USAGE;
	case OPTS_RUN:
		break;
	}
	log_set_level(o.verbose >= 2 ? LOG_DEBUG : o.verbose ? LOG_INFO : LOG_WARN);
	if (opts__check_system(&o) != OPTS_RUN) {
		opts__free(&o);
		return EXIT_USAGE;
	}
	if (features__check()) {
		opts__free(&o);
		return 1;
	}
	if (open_outputs(&o, &outs)) {
		close_outputs(&outs);
		opts__free(&o);
		return EXIT_USAGE;
	}
	/* SIGINT/SIGTERM end sampling; the profile is still written. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	err = run(&o, &outs);
	close_outputs(&outs);
	opts__free(&o);
	if (err == -ENODEV)
		return EXIT_USAGE; /* an event this machine cannot sample */
	if (err < 0)
		return 1;
	return err; /* 0, or the command's exit status */
}
