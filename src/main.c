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

static void on_process(void *ctx, uint32_t pid, const char *comm)
{
	symbolizer__note_process(ctx, pid, comm);
}

static int on_record(void *ctx, const void *data, size_t size)
{
	return stream__handle(ctx, data, size);
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
		.freq = o->freq,
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

static int write_samples(struct sampler *s, struct stream *stream, struct symbolizer *sym,
			 const struct report_opts *ro, FILE *out)
{
	const struct bpfs_rec_sample *r;
	size_t nr;
	int err = 0;

	r = stream__samples(stream, &nr);
	for (size_t i = 0; i < nr && !err; i++)
		err = report__write_sample(s, stream, sym, ro, &r[i], out);
	return err;
}

static int write_profile(const struct folded *f, const char *path, FILE *out)
{
	int err = f ? folded__write(f, out) : (fflush(out) ? -errno : 0);

	if (!err && out != stdout && fclose(out))
		err = -errno;
	if (err)
		p_err("cannot write the profile to %s: %s", path ? path : "stdout",
		      strerror(-err));
	return err;
}

static int run(const struct opts *o, FILE *out)
{
	struct sampler_stats st = {};
	struct report_stats rs = {};
	struct stream_stats ss = {};
	struct symbolizer *sym = NULL;
	struct sampler_opts so;
	struct sampler *s = NULL;
	struct command *cmd = NULL;
	struct stream *stream = NULL;
	struct folded *f = NULL;
	struct report_opts ro = {
		.annotate = o->annotate,
		.kernel_only = o->kernel_only,
	};
	double t0;
	int err;

	err = symbolizer__new(&sym);
	if (!err)
		err = folded__new(&f);
	if (!err)
		err = stream__new(&(struct stream_opts){ .keep_samples =
							     o->format == OPTS_FORMAT_SAMPLES,
							 .on_process = on_process,
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
	err = sampler__start(s);
	if (err)
		goto out;
	if (cmd) {
		err = command__release(cmd);
		if (err)
			goto out;
	}
	p_info("sampling at %u Hz%s", o->freq, o->duration ? "" : "; Ctrl-C to stop");
	t0 = now_s();
	sample_loop(s, o, cmd, sym);

	err = sampler__stop(s);
	if (!err)
		err = close_rings(s, stream);
	if (!err)
		err = stream__finish(stream);
	symbolizer__refresh(sym);
	if (!err)
		err = sampler__stats(s, &st);
	if (!err)
		err = report__build(s, stream, sym, &ro, &st, f, &rs);
	if (!err && o->format == OPTS_FORMAT_SAMPLES)
		err = write_samples(s, stream, sym, &ro, out);
	if (err)
		goto out;
	err = write_profile(o->format == OPTS_FORMAT_FOLDED ? f : NULL, o->output, out);
	out = NULL; /* closed by write_profile */
	if (err)
		goto out;
	stream__stats(stream, &ss);
	report__summary(stderr, &st, &rs, &ss, folded__nr_lines(f), now_s() - t0);
	if (o->verbose) {
		struct symbolizer_stats ss;

		symbolizer__stats(sym, &ss);
		fprintf(stderr, "  symbols: user %llu/%llu frames named, kernel %llu/%llu, %llu "
			"processes' mappings read, %llu files parsed\n",
			(unsigned long long)ss.user_named, (unsigned long long)ss.user_frames,
			(unsigned long long)ss.kernel_named, (unsigned long long)ss.kernel_frames,
			(unsigned long long)ss.processes, (unsigned long long)ss.files);
	}
out:
	if (cmd) {
		int status = command__finish(cmd, err != 0);

		if (!err)
			err = status; /* positive: the command's exit status */
	}
	sampler__free(s);
	stream__free(stream);
	folded__free(f);
	symbolizer__free(sym);
	if (out && out != stdout)
		fclose(out);
	return err;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct opts o;
	FILE *out = stdout;
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
	if (o.output) {
		out = fopen(o.output, "w");
		if (!out) {
			p_err("cannot open output file %s: %s", o.output, strerror(errno));
			opts__free(&o);
			return EXIT_USAGE;
		}
	}
	/* SIGINT/SIGTERM end sampling; the profile is still written. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	err = run(&o, out);
	opts__free(&o);
	if (err < 0)
		return 1;
	return err; /* 0, or the command's exit status */
}
