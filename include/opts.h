/* SPDX-License-Identifier: GPL-2.0 */
/* The command line: parsing is pure (unit-tested); checks against the
 * running system (pids exist, rate allowed) are a separate step. */
#ifndef BPFSAMPLER_OPTS_H
#define BPFSAMPLER_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "events.h"
#include "int_list.h"

struct writer;

#define OPTS_DEFAULT_FREQ 4000
#define OPTS_MAX_FREQ 100000 /* the kernel's hrtimer floor: 10 us */
#define OPTS_DEFAULT_MAP_ENTRIES 65536
#define OPTS_DEFAULT_STACK_ENTRIES 16384
/* = BPFS_MAX_USER_DEPTH, the BPF frame-pointer walk's bound (sampler.c
 * asserts it) */
#define BPFS_MAX_DEPTH_OPT 1024
#define OPTS_DEFAULT_RING_SIZE (1U << 20)
/* mmap2 records are ~100 bytes: 2600 mappings between two drains */
#define OPTS_DEFAULT_SIDEBAND_SIZE (256U << 10)
#define OPTS_DEFAULT_TOP 20
#define OPTS_MAX_FORMATS 8
/* The highest CPU number -C takes: Linux's NR_CPUS is at most 8192. */
#define OPTS_MAX_CPU 8191
#define OPTS_MAX_CPU_STR "8191"

enum opts_mode {
	OPTS_MODE_DEFAULT = 0, /* chosen from measurements: see opts.c */
	OPTS_MODE_AGGREGATE,
	OPTS_MODE_STREAM,
};

struct str_list {
	char **v;
	size_t nr;
};

/* bpfsampler agent: continuous profiling in windows (src/agent/). */
#define AGENT_DEFAULT_INTERVAL 15.0
#define AGENT_DEFAULT_DIR "/var/lib/bpfsampler"
#define AGENT_DEFAULT_RETAIN_AGE (7 * 86400.0)
#define AGENT_DEFAULT_RETAIN_SIZE (1ULL << 30)
#define AGENT_DEFAULT_FREQ 99
/* The agent's rings up to AGENT_SMALL_RING_MAX_FREQ: they are mapped into
 * the process, so their pages count in its RSS (docs/agent.md, sizing). */
#define AGENT_DEFAULT_RING_SIZE (1U << 18)
#define AGENT_SMALL_RING_MAX_FREQ 1000
#define AGENT_DEFAULT_MAX_SERIES 64

struct agent_opts {
	bool on;		   /* the agent subcommand */
	double interval;	   /* --interval, seconds */
	const char *output_dir;	   /* --output-dir */
	double retain_age;	   /* --retain-age, seconds */
	unsigned long long retain_size; /* --retain-size, bytes */
	const char *push;	   /* --push URL */
	const char *app_name;	   /* --app-name */
	const char *token_file;	   /* --push-token-file */
	const char *basic_auth_file; /* --push-basic-auth-file */
	const char *tenant;	   /* --push-tenant */
	const char *metrics_file;  /* --metrics-file */
	const char *metrics_addr;  /* --metrics-addr */
	const char *config;	   /* --config */
	const char *log_file;	   /* --log-file */
	unsigned int max_series;   /* --max-series */
};

struct opts {
	struct agent_opts agent;
	unsigned int freq;	 /* Hz */
	double duration;	 /* seconds; 0: until Ctrl-C or the command exits */
	struct int_list pids;	 /* -p */
	struct int_list tids;	 /* -t */
	struct int_list cpus;	 /* -C; empty: every online CPU */
	bool user_only;		 /* -U */
	bool kernel_only;	 /* -K */
	bool include_idle;	 /* -I */
	bool annotate;		 /* --annotate: kernel frames get _[k] */
	const char *output;	 /* -o; NULL: stdout */
	struct str_list debug_dirs; /* --debug-dir, repeatable */
	struct str_list event_specs; /* -e, repeatable */
	struct event_list events; /* parsed from event_specs, or cpu-clock */
	unsigned long period;	 /* -c: events per sample (0: use -F) */
	bool weight_period;	 /* --weight period */
	unsigned int max_depth;	 /* --max-stack-depth */
	unsigned int irq_depth;	 /* --interrupt-depth; 0: the default */
	unsigned int unwind;	 /* --unwind: enum bpfs_unwind_mode */
	unsigned int unwind_rows; /* --unwind-rows */
	unsigned int unwind_keep; /* --unwind-keep, seconds */
	bool no_python;		  /* --no-python: CPython frames stay native */
	bool no_completion;	 /* --no-completion */
	bool no_follow_mappings; /* --no-follow-mappings */
	unsigned int map_entries;   /* --map-entries */
	unsigned int stack_entries; /* --stack-entries */
	unsigned int stack_id_bits; /* --debug-stack-id-bits (tests only) */
	unsigned int ring_size;	 /* --ring-size, bytes per CPU */
	bool ring_size_set;	 /* given: the agent keeps it */
	unsigned int sideband_size; /* --sideband-size, bytes per CPU */
	unsigned int reader_delay_ms; /* --debug-reader-delay (tests only) */
	enum opts_mode mode;	 /* --mode */
	const struct writer *format; /* --format (writer.h): the first one */
	const struct writer *formats[OPTS_MAX_FORMATS]; /* --format a,b,... */
	size_t nr_formats;
	bool timed;		 /* a format needs every sample with its time */
	unsigned int top;	 /* --top: rows of --format top */
	bool inverted;		 /* --inverted: svg as an icicle graph */
	bool no_demangle;	 /* --no-demangle: names as in the symbol tables */
	bool inlines;		 /* --inline: inlined functions as frames */
	bool no_lines;		 /* --no-lines: DWARF is not read */
	bool lines_given;	 /* --lines or --no-lines given (the agent's
				  * default is off) */
	bool off_cpu;		 /* --off-cpu: the event offcpu-time too */
	unsigned long long off_cpu_min_ns; /* --off-cpu-min */
	unsigned long long off_cpu_walks;  /* --off-cpu-walks, a second; 0: no bound */
	unsigned int off_cpu_threads;	   /* --off-cpu-threads */
	int verbose;		 /* -v, repeatable */
	char **command;		 /* after "--"; NULL-terminated, or NULL */
};

enum opts_result {
	OPTS_RUN = 0,	/* go on and profile */
	OPTS_EXIT = 1,	/* --help or --version printed: exit 0 */
	OPTS_USAGE = -1, /* bad command line, message printed: exit 2 */
};

/* Parses argv into o (which it initializes). Messages go through log.h.
 * argv[1] "agent" selects the agent and its options. */
enum opts_result opts__parse(struct opts *o, int argc, char **argv);
/* "0", "500ns", "20us", "1ms", "1.5s" -> nanoseconds (a bare number is
 * ns). Returns 0 or -EINVAL. */
int opts__parse_ns(const char *s, unsigned long long *out);
/* "15", "15s", "2m", "1h", "7d" -> seconds. Returns 0 or -EINVAL. */
int opts__parse_seconds(const char *s, double *out);
/* "1048576", "512K", "100M", "2G" -> bytes. Returns 0 or -EINVAL. */
int opts__parse_bytes(const char *s, unsigned long long *out);
/* Checks o against this machine: pids/tids exist, CPUs are online, the rate
 * is within kernel.perf_event_max_sample_rate. OPTS_RUN or OPTS_USAGE. */
enum opts_result opts__check_system(const struct opts *o);
void opts__free(struct opts *o);
/* The long options (getopt's table, ending with a zeroed entry): the
 * agent's config file is checked against them. */
struct option;
const struct option *opts__long_options(void);
/* What the options ask of the sampler (capture's own config): the CLI and
 * the agent alike. on_record and ctx are left for the caller. */
struct sampler_opts;
void opts__sampler_opts(const struct opts *o, struct sampler_opts *so);
void opts__usage(FILE *f);

/* "1,3,5-7" -> list; exported for tests. With ranges (CPU lists) every
 * number is at most OPTS_MAX_CPU. Returns 0, -EINVAL, or -ERANGE (a CPU
 * number above OPTS_MAX_CPU). */
int opts__parse_list(const char *s, bool ranges, struct int_list *out);

#endif
