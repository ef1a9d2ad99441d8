// SPDX-License-Identifier: GPL-2.0
/* The command line parser: defaults, every option, every bad value. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpfsampler/sampler_abi.h"
#include "log.h"
#include "offcpu.h"
#include "opts.h"
#include "writer.h"
#include "unit.h"

#define ARGV(...) ((char *[]){ "bpfsampler", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "bpfsampler", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(o, ...) opts__parse(o, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static void test_defaults(void)
{
	char *argv[] = { "bpfsampler", NULL };
	struct opts o;

	CHECK(opts__parse(&o, 1, argv) == OPTS_RUN, "no options");
	CHECK(o.freq == 4000, "default -F is perf's 4000, got %u", o.freq);
	CHECK(o.duration == 0, "no duration: until Ctrl-C");
	CHECK(o.max_depth == 1024, "default depth %u", o.max_depth);
	CHECK(o.ring_size == 1U << 20 && o.mode == OPTS_MODE_DEFAULT &&
		      !strcmp(o.format->name, "folded"),
	      "ring, mode, format defaults");
	CHECK(!o.include_idle && !o.user_only && !o.kernel_only && !o.annotate, "flags off");
	CHECK(o.output == NULL && o.command == NULL, "stdout, no command");
	CHECK(o.map_entries == OPTS_DEFAULT_MAP_ENTRIES, "map entries");
	CHECK(o.stack_entries == OPTS_DEFAULT_STACK_ENTRIES, "stack entries");
	CHECK(o.unwind == BPFS_UNWIND_AUTO && o.unwind_rows == 1U << 20,
	      "unwind tables by default, 1M rows: %u %u", o.unwind, o.unwind_rows);
	opts__free(&o);
}

static void test_unwind(void)
{
	static const struct {
		char *arg;
		unsigned int mode;
	} modes[] = { { "auto", BPFS_UNWIND_AUTO }, { "dwarf", BPFS_UNWIND_DWARF },
		      { "fp", BPFS_UNWIND_FP } };
	struct opts o;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		CHECK(PARSE(&o, "--unwind", modes[i].arg) == OPTS_RUN, "--unwind %s", modes[i].arg);
		CHECK(o.unwind == modes[i].mode, "--unwind %s: mode %u", modes[i].arg, o.unwind);
		opts__free(&o);
	}
	CHECK(PARSE(&o, "--unwind-rows", "5000") == OPTS_RUN && o.unwind_rows == 5000,
	      "--unwind-rows");
	opts__free(&o);
	CHECK(PARSE(&o, "--unwind", "DWARF") == OPTS_USAGE, "modes are lowercase");
	CHECK(PARSE(&o, "--unwind", "") == OPTS_USAGE, "empty mode");
	CHECK(PARSE(&o, "--unwind-rows", "0") == OPTS_USAGE, "no rows");
	CHECK(PARSE(&o, "--unwind-rows", "67108865") == OPTS_USAGE, "too many rows");
}

static void test_all_options(void)
{
	struct opts o;

	CHECK(PARSE(&o, "-F", "99", "-d", "1.5", "-p", "10,20", "-C", "0-2,5", "-U", "-I", "-o",
		    "x.folded", "--annotate", "--max-stack-depth", "64", "--map-entries", "100",
		    "--stack-entries", "200", "-v", "-v") == OPTS_RUN,
	      "valid line");
	CHECK(o.freq == 99, "freq %u", o.freq);
	CHECK(o.duration == 1.5, "duration %f", o.duration);
	CHECK(o.pids.nr == 2 && o.pids.v[0] == 10 && o.pids.v[1] == 20, "pids");
	CHECK(o.cpus.nr == 4 && o.cpus.v[0] == 0 && o.cpus.v[2] == 2 && o.cpus.v[3] == 5,
	      "cpu ranges expanded, nr %zu", o.cpus.nr);
	CHECK(o.user_only && o.include_idle && o.annotate, "flags");
	CHECK(o.output && strcmp(o.output, "x.folded") == 0, "output");
	CHECK(o.max_depth == 64 && o.map_entries == 100 && o.stack_entries == 200, "sizes");
	CHECK(o.verbose == 2, "verbose counted: %d", o.verbose);
	opts__free(&o);

	CHECK(PARSE(&o, "--freq=250", "--tid", "7", "--kernel-only", "--duration", "3") == OPTS_RUN,
	      "long forms");
	CHECK(o.freq == 250 && o.tids.nr == 1 && o.tids.v[0] == 7 && o.kernel_only &&
		      o.duration == 3,
	      "long forms parsed");
	opts__free(&o);
}

static void test_stream_options(void)
{
	struct opts o;

	CHECK(PARSE(&o, "--ring-size", "64K", "--mode", "stream") == OPTS_RUN, "ring and mode");
	CHECK(o.ring_size == 65536 && o.mode == OPTS_MODE_STREAM, "64K stream");
	CHECK(o.sideband_size == OPTS_DEFAULT_SIDEBAND_SIZE, "side-band default");
	opts__free(&o);
	CHECK(PARSE(&o, "--sideband-size", "4K") == OPTS_RUN && o.sideband_size == 4096,
	      "--sideband-size 4K");
	opts__free(&o);
	CHECK(PARSE(&o, "--ring-size", "4M", "--format", "samples") == OPTS_RUN, "samples");
	CHECK(o.ring_size == 4U << 20 && o.mode == OPTS_MODE_STREAM &&
		      !strcmp(o.format->name, "samples"),
	      "--format samples implies the stream");
	opts__free(&o);
}

/* The agent's rings: a quarter size up to -F 1000 (their pages are in its
 * RSS), the one-shot default above, and --ring-size always as given. */
static void test_agent_ring_size(void)
{
	struct opts o;

	CHECK(opts__parse(&o, 2, (char *[]){ "bpfsampler", "agent", NULL }) == OPTS_RUN, "agent");
	CHECK(o.ring_size == AGENT_DEFAULT_RING_SIZE, "agent at 99 Hz: %u", o.ring_size);
	opts__free(&o);
	CHECK(PARSE(&o, "agent", "-F", "4000") == OPTS_RUN, "agent -F 4000");
	CHECK(o.ring_size == OPTS_DEFAULT_RING_SIZE, "agent at 4000 Hz: %u", o.ring_size);
	opts__free(&o);
	CHECK(PARSE(&o, "agent", "--ring-size", "2M") == OPTS_RUN, "agent --ring-size");
	CHECK(o.ring_size == 2U << 20, "agent --ring-size 2M kept: %u", o.ring_size);
	opts__free(&o);
}

static void test_command(void)
{
	/* o.command points into argv: the arrays must outlive the checks (a
	 * compound literal inside CHECK ends with it; ASan saw the read) */
	char *dashes[] = { "bpfsampler", "-F", "99", "--", "sleep", "-x", "1", NULL };
	char *bare[] = { "bpfsampler", "-d", "2", "true", NULL };
	struct opts o;

	CHECK(opts__parse(&o, 7, dashes) == OPTS_RUN, "command after --");
	CHECK(o.command && strcmp(o.command[0], "sleep") == 0 && strcmp(o.command[1], "-x") == 0,
	      "the command keeps its own options");
	opts__free(&o);
	CHECK(opts__parse(&o, 4, bare) == OPTS_RUN, "command without --");
	CHECK(o.command && strcmp(o.command[0], "true") == 0, "first non-option starts it");
	opts__free(&o);
}

static void expect_usage(const char *what, int argc, char **argv)
{
	struct opts o;

	CHECK(opts__parse(&o, argc, argv) == OPTS_USAGE, "%s must be a usage error", what);
	opts__free(&o);
}

#define BAD(...) expect_usage(#__VA_ARGS__, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

static void test_bad_values(void)
{
	BAD("-F", "0");
	BAD("-F", "abc");
	BAD("-F", "-5");
	BAD("-F", "4000x");
	BAD("-F", "100001");
	BAD("-F", "");
	BAD("-d", "-1");
	BAD("-d", "0");
	BAD("-d", "abc");
	BAD("-d", "inf");
	BAD("-d", "nan");
	BAD("-p", "abc");
	BAD("-p", "1,,x");
	BAD("-p", "1,,");
	BAD("-p", "1,");
	BAD("-p", ",1");
	BAD("-C", "0,,1");
	BAD("-e", "cpu-clock,cpu-clock", "-o", "p-%e.folded");
	BAD("-e", "task-clock", "-e", "task-clock", "-o", "p-%e.folded");
	BAD("-d", "0x10");
	BAD("-d", "1e3");
	BAD("-d", "1.5.2");
	BAD("-p", "");
	BAD("-t", "-3");
	BAD("-C", "3-1");
	BAD("-C", "a");
	BAD("--max-stack-depth", "0");
	BAD("--max-stack-depth", "1025");
	BAD("--ring-size", "5000");
	BAD("--ring-size", "1K");
	BAD("--ring-size", "2G");
	BAD("--sideband-size", "2K");
	BAD("--sideband-size", "6000");
	BAD("--mode", "fast");
	BAD("--format", "json");
	BAD("--mode", "aggregate", "--format", "samples");
	BAD("--map-entries", "0");
	BAD("--stack-entries", "lots");
	/* bit 63 tells the two stacks maps apart */
	BAD("--debug-stack-id-bits", "64");
	BAD("--debug-stack-id-bits", "0");
	BAD("--no-such-flag");
	BAD("-Z");
	BAD("-U", "-K");
	BAD("-p", "1", "-t", "2");
	BAD("-p", "1", "--", "true");
	BAD("-o", "");
	BAD("-F");
	BAD("--off-cpu-min", "1e3");
	BAD("--off-cpu-min", "5 ms");
	BAD("--off-cpu-min", "-1ms");
	BAD("--off-cpu-walks", "x");
	BAD("--off-cpu-threads", "0");
	/* offcpu-time is one more profile: it needs a name with %e */
	BAD("--off-cpu", "-o", "p.folded");
	BAD("--off-cpu");
}

static void test_off_cpu(void)
{
	static const struct { const char *s; unsigned long long want; } ok[] = {
		{ "0", 0 }, { "500", 500 }, { "500ns", 500 }, { "20us", 20000 },
		{ "1ms", 1000000 }, { "1.5s", 1500000000 }, { "0.5ms", 500000 },
	};
	static const char *const bad[] = { "0x10", "1e3", "inf", "", "ms", "-1", "1 ms", "1msx",
					   "1.2.3", "1h" };
	unsigned long long v;
	struct opts o;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		CHECK(opts__parse_ns(ok[i].s, &v) == 0 && v == ok[i].want, "'%s': %llu", ok[i].s, v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(opts__parse_ns(bad[i], &v) != 0, "'%s' refused", bad[i]);
	CHECK(PARSE(&o, "--off-cpu", "--off-cpu-min", "2ms", "--off-cpu-walks", "0", "-o",
		    "p-%e.folded") == OPTS_RUN, "--off-cpu with its options");
	CHECK(o.events.nr == 2 && !strcmp(o.events.v[1].name, "offcpu-time") &&
	      o.events.v[1].offcpu && !o.events.v[0].offcpu, "offcpu-time added after cpu-clock");
	CHECK(o.off_cpu_min_ns == 2000000 && o.off_cpu_walks == 0, "min and walks kept");
	opts__free(&o);
	CHECK(PARSE(&o, "-o", "p.folded") == OPTS_RUN && o.off_cpu_walks == OFFCPU_DEFAULT_WALKS &&
	      o.off_cpu_min_ns == OFFCPU_DEFAULT_MIN_NS &&
	      o.off_cpu_threads == OFFCPU_DEFAULT_THREADS && o.events.nr == 1, "the defaults");
	opts__free(&o);
}

static void test_help_and_version(void)
{
	struct opts o;
	FILE *saved = stdout;
	char *buf = NULL;
	size_t len = 0;

	stdout = open_memstream(&buf, &len);
	CHECK(PARSE(&o, "--help") == OPTS_EXIT, "--help exits 0");
	CHECK(PARSE(&o, "-V") == OPTS_EXIT, "-V exits 0");
	fclose(stdout);
	stdout = saved;
	CHECK(buf && strstr(buf, "Usage: bpfsampler"), "help printed");
	CHECK(buf && strstr(buf, "--max-stack-depth") && strstr(buf, "Examples:"),
	      "help lists options and examples");
	CHECK(buf && strstr(buf, "\nbpfsampler "), "version printed after the help");
	free(buf);
}

static void test_lists(void)
{
	struct int_list l = {};

	CHECK(opts__parse_list("4", true, &l) == 0 && l.nr == 1 && l.v[0] == 4, "single");
	free(l.v);
	l = (struct int_list){};
	CHECK(opts__parse_list("0-3", true, &l) == 0 && l.nr == 4 && l.v[3] == 3, "range");
	free(l.v);
	l = (struct int_list){};
	CHECK(opts__parse_list("0-3", false, &l) != 0, "no ranges for pids");
	free(l.v);
	l = (struct int_list){};
	CHECK(opts__parse_list("0-1,0-1,1", true, &l) == 0 && l.nr == 2 && l.v[0] == 0 &&
		      l.v[1] == 1, "a CPU given twice is kept once: %zu", l.nr);
	free(l.v);
	l = (struct int_list){};
	CHECK(opts__parse_list("7,3,7", false, &l) == 0 && l.nr == 2 && l.v[0] == 7 && l.v[1] == 3,
	      "a pid given twice is kept once, in first order");
	free(l.v);
	/* found by fuzzing: the range was expanded item by item, for minutes */
	l = (struct int_list){};
	CHECK(opts__parse_list("0-2147483647", true, &l) == -ERANGE, "a CPU range past %d",
	      OPTS_MAX_CPU);
	free(l.v);
	l = (struct int_list){};
	CHECK(opts__parse_list("8192", true, &l) == -ERANGE, "CPU 8192");
	free(l.v);
	l = (struct int_list){};
	CHECK(opts__parse_list("8190-8191", true, &l) == 0 && l.nr == 2, "the last CPUs");
	free(l.v);
}

static void test_seconds(void)
{
	static const struct { const char *s; double want; } ok[] = {
		{ "10", 10 }, { "10s", 10 }, { "1m", 60 }, { "1.5h", 5400 }, { "2d", 172800 },
	};
	static const char *const bad[] = { "0x10", "0x10s", "1e3", "inf", "", "m", "-1", "1 m",
					   "1mm", "1.2.3" };
	double v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		CHECK(opts__parse_seconds(ok[i].s, &v) == 0 && v == ok[i].want, "'%s': %g", ok[i].s,
		      v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(opts__parse_seconds(bad[i], &v) != 0, "'%s' refused", bad[i]);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_defaults);
	RUN(test_unwind);
	RUN(test_all_options);
	RUN(test_stream_options);
	RUN(test_agent_ring_size);
	RUN(test_command);
	RUN(test_bad_values);
	RUN(test_help_and_version);
	RUN(test_lists);
	RUN(test_seconds);
	RUN(test_off_cpu);
	UNIT_EXIT();
}
