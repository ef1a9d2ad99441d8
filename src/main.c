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

static void on_new_key(void *ctx, uint32_t pid, uint32_t tid, const char *comm)
{
	symbolizer__note_process(ctx, pid, comm);
}

static void fill_sampler_opts(const struct opts *o, struct symbolizer *sym,
			      struct sampler_opts *so)
{
	*so = (struct sampler_opts){
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
		.map_entries = o->map_entries,
		.stack_entries = o->stack_entries,
		.stack_id_bits = o->stack_id_bits,
		.on_new_key = on_new_key,
		.ctx = sym,
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
		if (now_s() >= next_refresh) {
			symbolizer__refresh(sym);
			next_refresh = now_s() + 0.25;
		}
		if (cmd && command__poll(cmd))
			break;
	}
}

static int write_profile(const struct folded *f, const char *path, FILE *out)
{
	int err = folded__write(f, out);

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
	struct symbolizer *sym = NULL;
	struct sampler_opts so;
	struct sampler *s = NULL;
	struct command *cmd = NULL;
	struct folded *f = NULL;
	double t0;
	int err;

	err = symbolizer__new(&sym);
	if (!err)
		err = folded__new(&f);
	if (err)
		goto out;
	if (o->command) {
		err = command__spawn(o->command, &cmd);
		if (err)
			goto out;
	}
	fill_sampler_opts(o, sym, &so);
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
	symbolizer__refresh(sym);
	if (!err)
		err = sampler__stats(s, &st);
	if (!err)
		err = report__build(s, sym, &(struct report_opts){ .annotate = o->annotate,
								    .kernel_only = o->kernel_only },
				    &st, f, &rs);
	if (err)
		goto out;
	err = write_profile(f, o->output, out);
	out = NULL; /* closed by write_profile */
	if (err)
		goto out;
	report__summary(stderr, &st, &rs, folded__nr_lines(f), now_s() - t0);
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
