// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "features.h"
#include "log.h"
#include "offcpu.h"
#include "opts.h"
#include "sampler.h"
#include "unwinder.h"
#include "version.h"
#include "writer.h"

enum {
	OPT_ANNOTATE = 0x100,
	OPT_MAX_DEPTH,
	OPT_MAP_ENTRIES,
	OPT_STACK_ENTRIES,
	OPT_STACK_ID_BITS,
	OPT_RING_SIZE,
	OPT_SIDEBAND_SIZE,
	OPT_MODE,
	OPT_FORMAT,
	OPT_READER_DELAY,
	OPT_IRQ_DEPTH,
	OPT_UNWIND,
	OPT_UNWIND_ROWS,
	OPT_UNWIND_KEEP,
	OPT_NO_COMPLETION,
	OPT_NO_FOLLOW_MAPPINGS,
	OPT_DEBUG_DIR,
	OPT_WEIGHT,
	OPT_TOP,
	OPT_INVERTED,
	OPT_NO_DEMANGLE,
	OPT_INLINE,
	OPT_NO_LINES,
	OPT_LINES,
	OPT_NO_PYTHON,
	OPT_OFF_CPU,
	OPT_OFF_CPU_MIN,
	OPT_OFF_CPU_WALKS,
	OPT_OFF_CPU_THREADS,
	/* the agent's */
	OPT_INTERVAL,
	OPT_OUTPUT_DIR,
	OPT_RETAIN_AGE,
	OPT_RETAIN_SIZE,
	OPT_PUSH,
	OPT_APP_NAME,
	OPT_PUSH_TOKEN_FILE,
	OPT_PUSH_BASIC_AUTH_FILE,
	OPT_PUSH_TENANT,
	OPT_METRICS_FILE,
	OPT_METRICS_ADDR,
	OPT_CONFIG,
	OPT_LOG_FILE,
	OPT_MAX_SERIES,
	OPT_AGENT_FIRST = OPT_INTERVAL,
	OPT_AGENT_LAST = OPT_MAX_SERIES,
};

static const struct option long_opts[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "count", required_argument, NULL, 'c' },
	{ "weight", required_argument, NULL, OPT_WEIGHT },
	{ "freq", required_argument, NULL, 'F' },
	{ "duration", required_argument, NULL, 'd' },
	{ "pid", required_argument, NULL, 'p' },
	{ "tid", required_argument, NULL, 't' },
	{ "cpu", required_argument, NULL, 'C' },
	{ "user-only", no_argument, NULL, 'U' },
	{ "kernel-only", no_argument, NULL, 'K' },
	{ "include-idle", no_argument, NULL, 'I' },
	{ "output", required_argument, NULL, 'o' },
	{ "annotate", no_argument, NULL, OPT_ANNOTATE },
	{ "max-stack-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "map-entries", required_argument, NULL, OPT_MAP_ENTRIES },
	{ "stack-entries", required_argument, NULL, OPT_STACK_ENTRIES },
	{ "debug-stack-id-bits", required_argument, NULL, OPT_STACK_ID_BITS },
	{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
	{ "sideband-size", required_argument, NULL, OPT_SIDEBAND_SIZE },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "inverted", no_argument, NULL, OPT_INVERTED },
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
	{ "inline", no_argument, NULL, OPT_INLINE },
	{ "no-lines", no_argument, NULL, OPT_NO_LINES },
	{ "lines", no_argument, NULL, OPT_LINES },
	{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
	{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
	{ "off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN },
	{ "off-cpu-walks", required_argument, NULL, OPT_OFF_CPU_WALKS },
	{ "off-cpu-threads", required_argument, NULL, OPT_OFF_CPU_THREADS },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "retain-age", required_argument, NULL, OPT_RETAIN_AGE },
	{ "retain-size", required_argument, NULL, OPT_RETAIN_SIZE },
	{ "push", required_argument, NULL, OPT_PUSH },
	{ "app-name", required_argument, NULL, OPT_APP_NAME },
	{ "push-token-file", required_argument, NULL, OPT_PUSH_TOKEN_FILE },
	{ "push-basic-auth-file", required_argument, NULL, OPT_PUSH_BASIC_AUTH_FILE },
	{ "push-tenant", required_argument, NULL, OPT_PUSH_TENANT },
	{ "metrics-file", required_argument, NULL, OPT_METRICS_FILE },
	{ "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "log-file", required_argument, NULL, OPT_LOG_FILE },
	{ "max-series", required_argument, NULL, OPT_MAX_SERIES },
	{ "debug-reader-delay", required_argument, NULL, OPT_READER_DELAY },
	{ "interrupt-depth", required_argument, NULL, OPT_IRQ_DEPTH },
	{ "unwind", required_argument, NULL, OPT_UNWIND },
	{ "unwind-rows", required_argument, NULL, OPT_UNWIND_ROWS },
	{ "unwind-keep", required_argument, NULL, OPT_UNWIND_KEEP },
	{ "no-completion", no_argument, NULL, OPT_NO_COMPLETION },
	{ "no-follow-mappings", no_argument, NULL, OPT_NO_FOLLOW_MAPPINGS },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{},
};

const struct option *opts__long_options(void)
{
	return long_opts;
}

/* "+" stops at the first non-option: the rest is the command. */
static const char short_opts[] = "+e:c:F:d:p:t:C:UKIo:vhV";

void opts__usage(FILE *f)
{
	fprintf(f,
"Usage: bpfsampler [options] [-- command [args...]]\n"
"\n"
"Samples the stacks of every CPU (or of the selected processes) with eBPF and\n"
"prints them as folded stacks for flamegraph.pl: one line per distinct stack,\n"
"\"comm;outermost;...;leaf COUNT\", user frames first, kernel frames after.\n"
"Lost samples appear as their own \"[lost];[reason] N\" lines and a summary\n"
"goes to stderr.\n"
"\n"
"Options:\n"
"  -e, --event EVENT[,...]  what to sample on, as perf spells it (default\n"
"                           cpu-clock): cpu-clock, task-clock, page-faults,\n"
"                           minor-faults, major-faults, context-switches,\n"
"                           cpu-migrations, alignment-faults, cycles,\n"
"                           instructions, ref-cycles, cache-references,\n"
"                           cache-misses, branch-instructions, branch-misses,\n"
"                           L1-dcache-load-misses, LLC-load-misses,\n"
"                           dTLB-load-misses..., raw codes rNNNN; modifiers\n"
"                           :u :k :p :pp :ppp; terms /period=N/ or /freq=N/.\n"
"                           Several events: one profile each (-o with %%e)\n"
"  -c, --count N            sample every N events (instead of -F); clocks:\n"
"                           N ns, at least 10000\n"
"  -F, --freq HZ            samples per second per CPU (default %d, at most\n"
"                           kernel.perf_event_max_sample_rate and %d)\n"
"  -d, --duration SECONDS   stop after SECONDS (fractions allowed); default:\n"
"                           until Ctrl-C, or until the command exits. Either\n"
"                           stops sampling at once; the profile is written\n"
"                           and the run ends within 1 s (a very large output:\n"
"                           as long as its writing takes). A second Ctrl-C,\n"
"                           or one after sampling, stops at once without\n"
"                           writing the profile (exit 130)\n"
"  -p, --pid PID[,PID...]   only these processes (and all their threads)\n"
"  -t, --tid TID[,TID...]   only these threads\n"
"  -C, --cpu LIST           only these CPUs, e.g. 0,2-3 (default: all online)\n"
"  -U, --user-only          user stacks only (no kernel frames)\n"
"  -K, --kernel-only        kernel stacks only (no user frames)\n"
"  -I, --include-idle       keep the idle task's samples (excluded by default)\n"
"  -o, --output FILE        write the profile to FILE (default: stdout): a file\n"
"                           replaced when the profile is whole, a device, FIFO\n"
"                           or pipe written in place (man page, FILES); with\n"
"                           several events, %%e in FILE becomes each event's name\n"
"      --annotate           mark kernel frames with _[k], as perf does\n"
"      --debug-dir DIR      also look for debug files under DIR (as under\n"
"                           /usr/lib/debug: .build-id/xx/rest.debug, then by\n"
"                           .gnu_debuglink); repeatable, searched first; for\n"
"                           symbols, and for the .debug_frame of files whose\n"
"                           .eh_frame lacks their code (unwind tables)\n"
"      --format FORMAT      folded (default): one line per distinct stack;\n"
"                           samples: one line per sample, with its time, CPU,\n"
"                           pid, tid and comm (implies --mode stream);\n"
"                           pprof: gzip-compressed profile.proto for go tool\n"
"                           pprof, Pyroscope and Grafana (needs -o FILE);\n"
"                           svg: an interactive flame graph for any browser;\n"
"                           top: the functions with the most samples, flat\n"
"                           and cumulative, as pprof -top;\n"
"                           docs/formats.md describes each format. Several,\n"
"                           comma-separated, from one profile: -o with %%f,\n"
"                           the format's extension (folded, samples, pb.gz,\n"
"                           svg, top), e.g. --format folded,svg -o cpu.%%f\n"
"      --top N              rows of --format top (default %d)\n"
"      --inverted           --format svg: an icicle graph, roots at the top\n"
"      --no-demangle        keep C++ and Rust names as in the symbol table\n"
"      --inline             folded, samples, top, svg: functions inlined at a\n"
"                           frame (from DWARF, or a Go binary's .gopclntab)\n"
"                           become frames of their own, \"NAME (inline)\";\n"
"                           pprof always has them\n"
"      --no-lines           read no DWARF (nor a Go table's lines) for pprof\n"
"                           and --inline: no source lines, no inline frames\n"
"                           (symbolizing is faster, memory smaller); the\n"
"                           other formats never read it\n"
"      --lines              the agent: read DWARF for its windows (off by\n"
"                           default there: memory under process churn)\n"
"      --max-stack-depth N  user frames per stack, 1..%d (default %d); kernel\n"
"                           stacks stop at 127\n"
"      --unwind HOW         how user stacks are walked: auto (default): unwind\n"
"                           tables from each file's .eh_frame (or .debug_frame,\n"
"                           its own or its debug file's) where there is one,\n"
"                           frame pointers elsewhere; dwarf: tables only;\n"
"                           fp: frame pointers only (docs/design.md)\n"
"      --unwind-rows N      rows the unwind tables may hold, 16 bytes each\n"
"                           (default %u: 16 MiB of kernel memory)\n"
"      --unwind-keep S      keep the table of a file no process maps any more\n"
"                           S seconds (default %u), for the next process\n"
"                           that maps it; 0: release it at once\n"
"      --no-python          leave CPython's frames native: by default the\n"
"                           Python functions (3.8-3.13) a process runs show\n"
"                           in its stacks, qualname with file and line\n"
"      --interrupt-depth N  user frames walked in the sampling interrupt; the\n"
"                           rest is walked when the thread returns to user\n"
"                           space (default: all of --max-stack-depth)\n"
"      --no-completion      never finish user stacks at return to user space:\n"
"                           a walk cut by a fault stays cut, and marked\n"
"      --no-follow-mappings name frames after the mappings read from /proc,\n"
"                           not those live at each sample (followed from\n"
"                           perf's mmap2 records): saves a record and a\n"
"                           wake-up per executable mapping made\n"
"      --off-cpu            also profile the time threads spend off the CPU,\n"
"                           as the event offcpu-time (perf's name): its\n"
"                           stacks are taken at each switch-out, and the\n"
"                           time until the switch-in is added to them, in\n"
"                           nanoseconds; a block still open at the end counts\n"
"                           up to the end; root frames [off-cpu: waiting] and\n"
"                           [off-cpu: preempted] tell sleeps from waits for a\n"
"                           CPU; one profile per event (-o with %%e)\n"
"      --off-cpu-min TIME   blocks shorter than TIME are not in the profile,\n"
"                           only counted in the summary: 0 (default), 500ns,\n"
"                           20us, 1ms\n"
"      --off-cpu-walks N    at most N stack walks a second at switch-out, all\n"
"                           CPUs together (default %llu; 0: no bound); past it\n"
"                           blocks are counted under [off-cpu: stack not taken]\n"
"      --off-cpu-threads N  threads off the CPU tracked at once (default %u)\n"
"      --weight WHAT        samples (default): counts are samples; period: counts\n"
"                           are events (ns for the clocks, misses for\n"
"                           cache-misses), scaled when the PMU multiplexes\n"
"      --mode MODE          aggregate: count stacks in the kernel; stream: send\n"
"                           every sample through per-CPU rings (default:\n"
"                           aggregate, see docs/design.md)\n"
"      --ring-size BYTES    ring buffer per CPU, a power of 2 (K/M suffixes;\n"
"                           default 1M; the agent: 256K up to -F 1000)\n"
"      --sideband-size BYTES  perf ring per CPU for the mappings followed, a\n"
"                           power of 2 from 4K (default 256K)\n"
"      --map-entries N      distinct (thread, stack) counters kept in the\n"
"                           kernel (default %d)\n"
"      --stack-entries N    stack segments kept in the kernel, in each of two\n"
"                           maps (up to 31 frames, up to 127; default %d),\n"
"                           emptied into bpfsampler whenever half full;\n"
"                           maps and rings needing over half the free memory\n"
"                           are refused at start\n"
"      --debug-stack-id-bits N  narrow stack ids to N bits (1-63) to force id\n"
"                           collisions (a testing aid: colliding stacks are\n"
"                           counted as lost, never merged)\n"
"      --debug-reader-delay MS  sleep MS after each drain of the rings (a\n"
"                           testing aid: a slow reader, to overflow them)\n"
"  -v, --verbose            more detail on stderr (repeat for debug output)\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit (with -v: kernel features)\n"
"\n"
"With \"-- command\", the command is started and profiled with its children\n"
"until it exits, and its exit status becomes bpfsampler's.\n"
"Needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF (kernel frame\n"
"names need CAP_SYSLOG, unreadable binaries CAP_DAC_READ_SEARCH: docs/design.md,\n"
"\"Privileges\"). Profiles are created with mode 0600.\n"
"\n"
"bpfsampler agent [options]: profile continuously, one pprof per event and\n"
"service every --interval, spooled to a directory and pushed to Pyroscope\n"
"(docs/agent.md). Sampling options as above (default -F 99), and:\n"
"      --interval TIME      window length, aligned to the clock: 15, 10s, 1m\n"
"                           (default 15 s)\n"
"      --output-dir DIR     where windows are written (default\n"
"                           /var/lib/bpfsampler)\n"
"      --retain-age TIME    drop windows older than this (default 7d)\n"
"      --retain-size BYTES  keep the directory under this, oldest dropped\n"
"                           first (K/M/G suffixes; default 1G)\n"
"      --push URL           send each window to Pyroscope (URL/ingest)\n"
"      --app-name NAME      Pyroscope application name (default bpfsampler)\n"
"      --push-token-file F  bearer token for --push, read from F\n"
"      --push-basic-auth-file F  user:password for --push, read from F\n"
"      --push-tenant ID     X-Scope-OrgID header (multi-tenant Pyroscope)\n"
"      --max-series N       distinct services per host, the rest go to\n"
"                           'other' (default 64)\n"
"      --metrics-file PATH  Prometheus text metrics, rewritten each window\n"
"      --metrics-addr ADDR  serve metrics on ADDR, e.g. 127.0.0.1:9464\n"
"      --config FILE        options from FILE, one 'name = value' per line;\n"
"                           SIGHUP reads it again\n"
"      --log-file FILE      log there, reopened on SIGHUP (default stderr)\n"
"\n"
"Examples:\n"
"  bpfsampler -F 4000 -d 30 > cpu.folded      whole machine for 30 s\n"
"  bpfsampler -d 30 | flamegraph.pl > cpu.svg  straight to a flame graph\n"
"  bpfsampler -p 1234 -d 10 -o app.folded     one process\n"
"  bpfsampler -- make -j2                     a command and its children\n"
"  bpfsampler -d 10 --format pprof -o p.pb.gz  for go tool pprof\n"
"  bpfsampler --off-cpu -p 1234 -d 10 -o p-%%e.folded  where it runs and waits\n"
"  bpfsampler agent --push http://pyroscope:4040  the fleet agent\n",
		OPTS_DEFAULT_FREQ, OPTS_MAX_FREQ, OPTS_DEFAULT_TOP, BPFS_MAX_DEPTH_OPT, BPFS_MAX_DEPTH_OPT,
		UNWINDER_DEFAULT_ROWS, UNWINDER_DEFAULT_KEEP_S,
		(unsigned long long)OFFCPU_DEFAULT_WALKS, OFFCPU_DEFAULT_THREADS,
		OPTS_DEFAULT_MAP_ENTRIES, OPTS_DEFAULT_STACK_ENTRIES);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "64K", "1M", "4096" -> bytes */
static int parse_size(const char *s, unsigned long *out)
{
	unsigned long v, mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		mult = 1UL << 10, end++;
	else if (*end == 'M' || *end == 'm')
		mult = 1UL << 20, end++;
	else if (*end == 'G' || *end == 'g')
		mult = 1UL << 30, end++;
	if (*end || v > (1UL << 40) / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

/* [s, end) is digits with at most one '.': strtod would also take hex
 * ("0x10"), exponents and "inf", which nobody means by a duration. */
static bool is_decimal(const char *s, const char *end)
{
	bool dot = false;

	if (s == end)
		return false;
	for (; s < end; s++) {
		if (*s == '.' && !dot)
			dot = true;
		else if (!isdigit((unsigned char)*s))
			return false;
	}
	return true;
}

static int list_push(struct int_list *l, int v)
{
	int *nv = realloc(l->v, (l->nr + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	nv[l->nr++] = v;
	l->v = nv;
	return 0;
}

/* Whether v is in l already: lists are short (CPUs, pids). */
static bool list_has(const struct int_list *l, int v)
{
	for (size_t i = 0; i < l->nr; i++)
		if (l->v[i] == v)
			return true;
	return false;
}

/* Items separated by single commas: "1,,2", ",1" and "1," are refused,
 * not read as "1,2" and "1" (strtok would skip the empty items). Values
 * given twice ("0-1,0-1") are kept once: a CPU opened twice would count
 * its samples twice. */
int opts__parse_list(const char *s, bool ranges, struct int_list *out)
{
	char *copy, *tok, *save = NULL;
	int err = 0;

	if (!*s || *s == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
		return -EINVAL;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long lo, hi;
		char *dash = ranges ? strchr(tok, '-') : NULL;

		if (dash)
			*dash = '\0';
		if (parse_uint(tok, INT_MAX, &lo)) {
			err = -EINVAL;
			goto out;
		}
		hi = lo;
		if (dash && (parse_uint(dash + 1, INT_MAX, &hi) || hi < lo)) {
			err = -EINVAL;
			goto out;
		}
		/* CPU numbers: "0-2147483647" would be two billion items */
		if (ranges && hi > OPTS_MAX_CPU) {
			err = -ERANGE;
			goto out;
		}
		for (unsigned long v = lo; v <= hi; v++) {
			if (list_has(out, (int)v))
				continue;
			err = list_push(out, (int)v);
			if (err)
				goto out;
		}
	}
	if (!out->nr)
		err = -EINVAL;
out:
	free(copy);
	return err;
}

static int add_str(struct str_list *l, const char *s)
{
	char **nv = realloc(l->v, (l->nr + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	nv[l->nr++] = (char *)s;
	l->v = nv;
	return 0;
}

/* "give folded, samples, ...": the formats the writer table has. */
static const char *formats_hint(void)
{
	static char hint[256];
	const struct writer *w;
	size_t nr, len;

	w = writer__all(&nr);
	len = snprintf(hint, sizeof(hint), "give one or more of ");
	for (size_t i = 0; i < nr && len < sizeof(hint); i++)
		len += snprintf(hint + len, sizeof(hint) - len, "%s%s", i ? ", " : "", w[i].name);
	return hint;
}

/* "pprof,svg": each once, known, at most OPTS_MAX_FORMATS. */
static int parse_formats(struct opts *o, const char *arg)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf) || !*arg || arg[strlen(arg) - 1] == ',')
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", arg);
	o->nr_formats = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct writer *w = writer__find(tok);

		if (!w || o->nr_formats == OPTS_MAX_FORMATS)
			return -EINVAL;
		for (size_t i = 0; i < o->nr_formats; i++)
			if (o->formats[i] == w)
				return -EINVAL;
		o->formats[o->nr_formats++] = w;
		o->timed |= w->timed;
	}
	if (!o->nr_formats || strstr(arg, ",,"))
		return -EINVAL;
	o->format = o->formats[0];
	return 0;
}

static enum opts_result bad(const char *what, const char *val, const char *hint)
{
	p_err("invalid %s '%s': %s (see bpfsampler --help)", what, val, hint);
	return OPTS_USAGE;
}

static enum opts_result parse_one(struct opts *o, int c, const char *arg)
{
	unsigned long v;
	char *end;

	switch (c) {
	case 'e':
		return add_str(&o->event_specs, arg) ? OPTS_USAGE : OPTS_RUN;
	case 'c':
		if (parse_uint(arg, ULONG_MAX, &v) || v == 0)
			return bad("count", arg, "give a whole number of events per sample, e.g. 100000");
		o->period = v;
		break;
	case OPT_WEIGHT:
		if (strcmp(arg, "samples") == 0)
			o->weight_period = false;
		else if (strcmp(arg, "period") == 0)
			o->weight_period = true;
		else
			return bad("--weight", arg, "give samples or period");
		break;
	case 'F':
		if (parse_uint(arg, ULONG_MAX, &v) || v == 0 || v > OPTS_MAX_FREQ)
			return bad("frequency", arg, "give a whole number of Hz from 1 to 100000");
		o->freq = v;
		break;
	case 'd':
		errno = 0;
		o->duration = strtod(arg, &end);
		if (!is_decimal(arg, end) || errno || end == arg || *end ||
		    !isfinite(o->duration) || o->duration <= 0)
			return bad("duration", arg, "give a positive number of seconds, e.g. 30 or 0.5");
		break;
	case 'p':
		if (opts__parse_list(arg, false, &o->pids))
			return bad("pid list", arg, "give process ids separated by commas");
		break;
	case 't':
		if (opts__parse_list(arg, false, &o->tids))
			return bad("tid list", arg, "give thread ids separated by commas");
		break;
	case 'C':
		if (opts__parse_list(arg, true, &o->cpus))
			return bad("CPU list", arg,
				   "give CPU numbers (0-" OPTS_MAX_CPU_STR ") or ranges, e.g. 0,2-3");
		break;
	case 'U':
		o->user_only = true;
		break;
	case 'K':
		o->kernel_only = true;
		break;
	case 'I':
		o->include_idle = true;
		break;
	case 'o':
		if (!*arg)
			return bad("output file", arg, "give a file name");
		o->output = arg;
		break;
	case OPT_ANNOTATE:
		o->annotate = true;
		break;
	case OPT_OFF_CPU:
		o->off_cpu = true;
		break;
	case OPT_OFF_CPU_MIN:
		if (opts__parse_ns(arg, &o->off_cpu_min_ns))
			return bad("--off-cpu-min", arg, "give a time such as 0, 500ns, 20us or 1ms");
		break;
	case OPT_OFF_CPU_WALKS:
		if (parse_uint(arg, 100000000UL, &v))
			return bad("--off-cpu-walks", arg,
				   "give stack walks a second from 0 (no bound) to 100000000");
		o->off_cpu_walks = v;
		break;
	case OPT_OFF_CPU_THREADS:
		if (parse_uint(arg, 1UL << 22, &v) || v == 0)
			return bad("--off-cpu-threads", arg, "give a number of threads from 1 to 4194304");
		o->off_cpu_threads = v;
		break;
	case OPT_MAX_DEPTH:
		if (parse_uint(arg, ULONG_MAX, &v) || v == 0 || v > BPFS_MAX_DEPTH_OPT)
			return bad("--max-stack-depth", arg, "give a number of frames from 1 to 1024");
		o->max_depth = v;
		break;
	case OPT_MAP_ENTRIES:
	case OPT_STACK_ENTRIES:
		if (parse_uint(arg, 1UL << 26, &v) || v == 0)
			return bad(c == OPT_MAP_ENTRIES ? "--map-entries" : "--stack-entries", arg,
				   "give a number of entries from 1 to 67108864");
		*(c == OPT_MAP_ENTRIES ? &o->map_entries : &o->stack_entries) = v;
		break;
	case OPT_STACK_ID_BITS:
		if (parse_uint(arg, 63, &v) || v == 0)
			return bad("--debug-stack-id-bits", arg, "give a number of bits from 1 to 63");
		o->stack_id_bits = v;
		break;
	case OPT_RING_SIZE:
		if (parse_size(arg, &v) || v < 4096 || v > (1UL << 30) || (v & (v - 1)))
			return bad("--ring-size", arg,
				   "give a power of 2 from 4K to 1G bytes, e.g. 1M");
		o->ring_size = v;
		o->ring_size_set = true;
		break;
	case OPT_SIDEBAND_SIZE:
		if (parse_size(arg, &v) || v < 4096 || v > (1UL << 30) || (v & (v - 1)))
			return bad("--sideband-size", arg,
				   "give a power of 2 from 4K to 1G bytes, e.g. 256K");
		o->sideband_size = v;
		break;
	case OPT_UNWIND:
		if (strcmp(arg, "auto") == 0)
			o->unwind = BPFS_UNWIND_AUTO;
		else if (strcmp(arg, "dwarf") == 0)
			o->unwind = BPFS_UNWIND_DWARF;
		else if (strcmp(arg, "fp") == 0)
			o->unwind = BPFS_UNWIND_FP;
		else
			return bad("--unwind", arg, "give auto, dwarf or fp");
		break;
	case OPT_UNWIND_ROWS:
		if (parse_uint(arg, 1UL << 26, &v) || v == 0)
			return bad("--unwind-rows", arg, "give a number of rows from 1 to 67108864");
		o->unwind_rows = v;
		break;
	case OPT_UNWIND_KEEP:
		if (parse_uint(arg, 86400 * 365, &v))
			return bad("--unwind-keep", arg, "give seconds, 0 to release at once");
		o->unwind_keep = v;
		break;
	case OPT_IRQ_DEPTH:
		if (parse_uint(arg, ULONG_MAX, &v) || v == 0 || v > BPFS_MAX_DEPTH_OPT)
			return bad("--interrupt-depth", arg, "give a number of frames from 1 to 1024");
		o->irq_depth = v;
		break;
	case OPT_DEBUG_DIR: {
		struct stat stb;

		if (stat(arg, &stb) || !S_ISDIR(stb.st_mode))
			return bad("--debug-dir", arg, "give a directory that exists");
		return add_str(&o->debug_dirs, arg) ? OPTS_USAGE : OPTS_RUN;
	}
	case OPT_NO_COMPLETION:
		o->no_completion = true;
		break;
	case OPT_NO_FOLLOW_MAPPINGS:
		o->no_follow_mappings = true;
		break;
	case OPT_READER_DELAY:
		if (parse_uint(arg, 60000, &v))
			return bad("--debug-reader-delay", arg, "give milliseconds from 0 to 60000");
		o->reader_delay_ms = v;
		break;
	case OPT_MODE:
		if (strcmp(arg, "aggregate") == 0)
			o->mode = OPTS_MODE_AGGREGATE;
		else if (strcmp(arg, "stream") == 0)
			o->mode = OPTS_MODE_STREAM;
		else
			return bad("--mode", arg, "give aggregate or stream");
		break;
	case OPT_FORMAT:
		if (parse_formats(o, arg))
			return bad("--format", arg, formats_hint());
		break;
	case OPT_TOP:
		if (parse_uint(arg, 100000, &v) || v == 0)
			return bad("--top", arg, "give a number of rows from 1 to 100000");
		o->top = v;
		break;
	case OPT_INVERTED:
		o->inverted = true;
		break;
	case OPT_NO_DEMANGLE:
		o->no_demangle = true;
		break;
	case OPT_INLINE:
		o->inlines = true;
		break;
	case OPT_NO_LINES:
		o->no_lines = true;
		o->lines_given = true;
		break;
	case OPT_LINES:
		o->no_lines = false;
		o->lines_given = true;
		break;
	case OPT_NO_PYTHON:
		o->no_python = true;
		break;
	case OPT_INTERVAL:
		if (opts__parse_seconds(arg, &o->agent.interval) || o->agent.interval < 1 ||
		    o->agent.interval > 3600)
			return bad("--interval", arg, "give 1 s to 1 h, e.g. 15, 10s or 1m");
		break;
	case OPT_RETAIN_AGE:
		if (opts__parse_seconds(arg, &o->agent.retain_age) || o->agent.retain_age <= 0)
			return bad("--retain-age", arg, "give a time, e.g. 3600, 12h or 7d");
		break;
	case OPT_RETAIN_SIZE:
		if (opts__parse_bytes(arg, &o->agent.retain_size) || o->agent.retain_size < 4096)
			return bad("--retain-size", arg, "give at least 4K, e.g. 500M or 2G");
		break;
	case OPT_MAX_SERIES:
		if (parse_uint(arg, 100000, &v) || v == 0)
			return bad("--max-series", arg, "give a number from 1 to 100000");
		o->agent.max_series = v;
		break;
	case OPT_OUTPUT_DIR:
		o->agent.output_dir = arg;
		break;
	case OPT_PUSH:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))
			return bad("--push", arg, "give the Pyroscope URL, e.g. http://pyroscope:4040");
		o->agent.push = arg;
		break;
	case OPT_APP_NAME:
		if (!*arg || strpbrk(arg, "{}=, \"\n"))
			return bad("--app-name", arg, "give a name without spaces, braces, '=' or ','");
		o->agent.app_name = arg;
		break;
	case OPT_PUSH_TOKEN_FILE:
		o->agent.token_file = arg;
		break;
	case OPT_PUSH_BASIC_AUTH_FILE:
		o->agent.basic_auth_file = arg;
		break;
	case OPT_PUSH_TENANT:
		o->agent.tenant = arg;
		break;
	case OPT_METRICS_FILE:
		o->agent.metrics_file = arg;
		break;
	case OPT_METRICS_ADDR:
		o->agent.metrics_addr = arg;
		break;
	case OPT_CONFIG:
		o->agent.config = arg;
		break;
	case OPT_LOG_FILE:
		o->agent.log_file = arg;
		break;
	case 'v':
		o->verbose++;
		break;
	default:
		/* getopt already printed what was wrong */
		p_err("see bpfsampler --help for the options");
		return OPTS_USAGE;
	}
	return OPTS_RUN;
}

int opts__parse_ns(const char *s, unsigned long long *out)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1 },
	};
	char *end;
	double v;

	if (!s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	/* digits and one dot only: strtod also takes 0x10, 1e3 and inf */
	if (errno || !is_decimal(s, end) || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (v * units[i].mult > 1e18)
			return -EINVAL;
		*out = (unsigned long long)(v * units[i].mult + 0.5);
		return 0;
	}
	return -EINVAL;
}

int opts__parse_seconds(const char *s, double *out)
{
	static const struct { char unit; double mult; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};
	double v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (!is_decimal(s, end) || errno || !isfinite(v))
		return -EINVAL;
	if (*end) {
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (end[0] == units[i].unit && !end[1])
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		v *= units[i].mult;
	}
	*out = v;
	return 0;
}

int opts__parse_bytes(const char *s, unsigned long long *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'K': case 'k':
		shift = 10;
		break;
	case 'M': case 'm':
		shift = 20;
		break;
	case 'G': case 'g':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1])
		return -EINVAL;
	if (shift && v > (~0ULL >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

static void opts__init(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->agent.interval = AGENT_DEFAULT_INTERVAL;
	o->agent.output_dir = AGENT_DEFAULT_DIR;
	o->agent.retain_age = AGENT_DEFAULT_RETAIN_AGE;
	o->agent.retain_size = AGENT_DEFAULT_RETAIN_SIZE;
	o->agent.app_name = "bpfsampler";
	o->agent.max_series = AGENT_DEFAULT_MAX_SERIES;
	o->freq = OPTS_DEFAULT_FREQ;
	o->format = o->formats[0] = writer__find("folded");
	o->nr_formats = 1;
	o->top = OPTS_DEFAULT_TOP;
	o->max_depth = BPFS_MAX_DEPTH_OPT;
	o->unwind = BPFS_UNWIND_AUTO;
	o->unwind_rows = UNWINDER_DEFAULT_ROWS;
	o->unwind_keep = UNWINDER_DEFAULT_KEEP_S;
	o->map_entries = OPTS_DEFAULT_MAP_ENTRIES;
	o->stack_entries = OPTS_DEFAULT_STACK_ENTRIES;
	o->off_cpu_min_ns = OFFCPU_DEFAULT_MIN_NS;
	o->off_cpu_walks = OFFCPU_DEFAULT_WALKS;
	o->off_cpu_threads = OFFCPU_DEFAULT_THREADS;
	o->ring_size = OPTS_DEFAULT_RING_SIZE;
	o->sideband_size = OPTS_DEFAULT_SIDEBAND_SIZE;
}

/* --off-cpu: one more event, counted by the off-CPU unit, not a perf
 * event (src/capture/offcpu.c). */
static enum opts_result add_offcpu_event(struct event_list *l)
{
	struct event *e;

	if (l->nr == EVENTS_MAX) {
		p_err("--off-cpu is one more event, and %d are already given: give fewer -e",
		      EVENTS_MAX);
		return OPTS_USAGE;
	}
	e = &l->v[l->nr++];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "offcpu-time");
	e->offcpu = true;
	/* a software event as far as the rest knows: never multiplexed */
	e->attr.type = PERF_TYPE_SOFTWARE;
	e->attr.config = PERF_COUNT_SW_DUMMY;
	return OPTS_RUN;
}

/* The events, once -F and -c are known. Several events need an output
 * name with %e: their profiles are never mixed into one. */
static enum opts_result parse_events(struct opts *o)
{
	char err[256];

	for (size_t i = 0; i < o->event_specs.nr; i++) {
		if (events__parse(o->event_specs.v[i], o->freq, o->period, &o->events, err,
				  sizeof(err))) {
			p_err("%s (see bpfsampler --help)", err);
			return OPTS_USAGE;
		}
	}
	if (!o->events.nr && events__parse("cpu-clock", o->freq, o->period, &o->events, err,
					   sizeof(err))) {
		p_err("%s", err);
		return OPTS_USAGE;
	}
	if (o->off_cpu && add_offcpu_event(&o->events) != OPTS_RUN)
		return OPTS_USAGE;
	if (o->events.nr > 1 && !o->agent.on && (!o->output || !strstr(o->output, "%e"))) {
		p_err("%zu events give %zu profiles: name them with -o, e.g. -o prof-%%e.folded",
		      o->events.nr, o->events.nr);
		return OPTS_USAGE;
	}
	/* An event given twice would be sampled twice into one profile name;
	 * two spellings that make the same file name would overwrite it. */
	for (size_t i = 0; i < o->events.nr; i++)
		for (size_t j = 0; j < i; j++) {
			const struct event *a = &o->events.v[j], *b = &o->events.v[i];
			char na[512], nb[512];

			if (!strcmp(a->name, b->name)) {
				p_err("event '%s' is given twice: give each event once", a->name);
				return OPTS_USAGE;
			}
			if (o->output && !events__output_name(o->output, a, na, sizeof(na)) &&
			    !events__output_name(o->output, b, nb, sizeof(nb)) && !strcmp(na, nb)) {
				p_err("events '%s' and '%s' would both write %s: give one of them", a->name,
				      b->name, na);
				return OPTS_USAGE;
			}
		}
	return OPTS_RUN;
}

/* What the agent cannot do, and what it always does. */
static enum opts_result check_agent(struct opts *o)
{
	if (o->command) {
		p_err("the agent profiles the machine (or -p), not a command: drop '-- %s'",
		      o->command[0]);
		return OPTS_USAGE;
	}
	if (o->output || o->nr_formats > 1 || strcmp(o->format->name, "folded")) {
		p_err("the agent writes pprof windows to --output-dir: drop -o and --format");
		return OPTS_USAGE;
	}
	if (o->mode == OPTS_MODE_AGGREGATE) {
		p_err("the agent cuts windows by sample time and needs --mode stream (the "
		      "default for the agent): drop --mode aggregate");
		return OPTS_USAGE;
	}
	if (o->agent.token_file && o->agent.basic_auth_file) {
		p_err("--push-token-file and --push-basic-auth-file exclude each other: give one");
		return OPTS_USAGE;
	}
	if ((o->agent.token_file || o->agent.basic_auth_file || o->agent.tenant) &&
	    !o->agent.push) {
		p_err("push credentials without --push URL: add --push or drop them");
		return OPTS_USAGE;
	}
	/* Windows are cut by the time of each sample, which only the stream
	 * carries (docs/design.md, "The agent"). */
	o->mode = OPTS_MODE_STREAM;
	/* A ring's pages are mapped into the agent and count in its RSS, 2x
	 * (the data area is mapped twice): 1M per CPU was 4 MB of its RSS on
	 * 2 CPUs, 256 MB on 64. At -F 1000 and below a quarter of that holds
	 * far more than the 100 ms between drains brings. */
	if (!o->ring_size_set && !o->period && o->freq <= AGENT_SMALL_RING_MAX_FREQ)
		o->ring_size = AGENT_DEFAULT_RING_SIZE;
	/* Source lines cost the agent ~16 MB of heap under the churn test
	 * (500 distinct -g executables a minute: libdw's state per file), more
	 * than half its memory goal; windows name functions without them
	 * (docs/agent.md). --lines turns them on. */
	if (!o->lines_given)
		o->no_lines = true;
	return OPTS_RUN;
}

enum opts_result opts__parse(struct opts *o, int argc, char **argv)
{
	bool help = false, version = false;
	enum opts_result r;
	int c, idx = 0;

	opts__init(o);
	if (argc > 1 && !strcmp(argv[1], "agent")) {
		/* "agent" stands where the program name was */
		o->agent.on = true;
		o->freq = AGENT_DEFAULT_FREQ;
		argc--;
		argv++;
	}
	optind = 0; /* full re-initialization: parse may run more than once */
	opterr = 1;
	while ((c = getopt_long(argc, argv, short_opts, long_opts, &idx)) != -1) {
		if (c >= OPT_AGENT_FIRST && c <= OPT_AGENT_LAST && !o->agent.on) {
			p_err("--%s is an option of the agent: bpfsampler agent --%s ...",
			      long_opts[idx].name, long_opts[idx].name);
			return OPTS_USAGE;
		}
		if (c == 'h') {
			help = true;
			continue;
		}
		if (c == 'V') {
			version = true;
			continue;
		}
		r = parse_one(o, c, optarg);
		if (r != OPTS_RUN)
			return r;
	}
	if (help) {
		opts__usage(stdout);
		return OPTS_EXIT;
	}
	if (version) {
		printf("bpfsampler %s\n", BPFSAMPLER_VERSION);
		if (o->verbose)
			features__print(stdout);
		return OPTS_EXIT;
	}
	if (optind < argc)
		o->command = argv + optind;
	if (o->agent.on && check_agent(o) != OPTS_RUN)
		return OPTS_USAGE;
	if (parse_events(o) != OPTS_RUN)
		return OPTS_USAGE;
	if (o->user_only && o->kernel_only) {
		p_err("-U and -K exclude each other: drop one to get user or kernel stacks");
		return OPTS_USAGE;
	}
	if (o->pids.nr && o->tids.nr) {
		p_err("-p and -t exclude each other: select processes or threads, not both");
		return OPTS_USAGE;
	}
	if (o->timed) {
		if (o->mode == OPTS_MODE_AGGREGATE) {
			p_err("--format samples needs every sample: use --mode stream (or no --mode)");
			return OPTS_USAGE;
		}
		o->mode = OPTS_MODE_STREAM;
	}
	/* Compressed bytes on a terminal help nobody and can garble it; a
	 * pipe (| gzip -d | protoc --decode_raw) is fine. */
	if (o->format->binary && !o->output && isatty(STDOUT_FILENO)) {
		p_err("--format %s writes binary: give -o FILE.pb.gz", o->format->name);
		return OPTS_USAGE;
	}
	/* One file per format: never two formats mixed in one stream. */
	if (o->nr_formats > 1 && (!o->output || !strstr(o->output, "%f"))) {
		p_err("%zu formats give %zu files: name them with -o and %%f (the format's "
		      "extension), e.g. -o cpu.%%f", o->nr_formats, o->nr_formats);
		return OPTS_USAGE;
	}
	if (o->command && (o->pids.nr || o->tids.nr)) {
		p_err("a command and -p/-t exclude each other: profile the command, or attach to a pid");
		return OPTS_USAGE;
	}
	return OPTS_RUN;
}

static bool proc_exists(int id)
{
	char path[32];
	struct stat st;

	/* /proc/TID exists for every thread, though readdir hides non-leaders */
	snprintf(path, sizeof(path), "/proc/%d", id);
	return id > 0 && stat(path, &st) == 0;
}

/*
 * The maps and rings are preallocated when the BPF object loads; sizes the
 * machine cannot give would fail there after seconds of allocating (or
 * push everything else out of memory), so they are refused first. A
 * profiler may take at most half of the memory still available.
 */
static enum opts_result check_memory(const struct opts *o, int ncpus)
{
	struct sampler_opts so;
	struct sampler_memory m;
	unsigned long long avail;
	const char *what;

	if (ncpus <= 0)
		return OPTS_RUN;
	opts__sampler_opts(o, &so);
	sampler__memory(&so, ncpus, &m);
	avail = features__mem_available(&what);
	if (!avail || m.total <= avail / 2)
		return OPTS_RUN;
	p_err("the BPF maps asked need about %.2f GB, preallocated (--map-entries %u: %.2f GB, "
	      "--stack-entries %u: %.2f GB, --ring-size %u on %d CPUs: %.2f GB), more than half "
	      "of the %.2f GB free (%s): lower the largest",
	      m.total / 1e9, o->map_entries, m.counts / 1e9, o->stack_entries, m.stacks / 1e9,
	      o->ring_size, ncpus, m.rings / 1e9, avail / 1e9, what);
	return OPTS_USAGE;
}

enum opts_result opts__check_system(const struct opts *o)
{
	const struct int_list *ids = o->pids.nr ? &o->pids : &o->tids;
	const char *what = o->pids.nr ? "process" : "thread";
	long max_rate, ncpus;

	for (size_t i = 0; i < ids->nr; i++) {
		if (!proc_exists(ids->v[i])) {
			p_err("no %s with id %d: check the id with ps", what, ids->v[i]);
			return OPTS_USAGE;
		}
	}
	ncpus = features__nr_cpus();
	for (size_t i = 0; i < o->cpus.nr; i++) {
		if (o->cpus.v[i] >= ncpus || !features__cpu_online(o->cpus.v[i])) {
			p_err("CPU %d is not online (this machine has CPUs 0-%ld): fix -C",
			      o->cpus.v[i], ncpus - 1);
			return OPTS_USAGE;
		}
	}
	if (check_memory(o, ncpus) != OPTS_RUN)
		return OPTS_USAGE;
	/* -F, -c and the rate terms of every event: an impossible rate is
	 * refused here, never throttled or clamped unseen */
	max_rate = features__max_sample_rate();
	for (size_t i = 0; i < o->events.nr; i++) {
		char err[512];

		if (!o->events.v[i].offcpu && events__check_rate(&o->events.v[i], max_rate, err, sizeof(err))) {
			p_err("%s", err);
			return OPTS_USAGE;
		}
	}
	return OPTS_RUN;
}

void opts__free(struct opts *o)
{
	if (!o)
		return;
	free(o->pids.v);
	free(o->tids.v);
	free(o->cpus.v);
	free(o->debug_dirs.v);
	free(o->event_specs.v);
	memset(o, 0, sizeof(*o));
}

_Static_assert(BPFS_MAX_DEPTH_OPT == BPFS_MAX_USER_DEPTH, "opts.h and the ABI disagree");

/* Measured (docs/design.md, "Two modes"): aggregation costs the profiled
 * system and the loader less at the same rate; the stream carries time. */
static enum bpfs_mode pick_mode(const struct opts *o)
{
	return o->mode == OPTS_MODE_STREAM ? BPFS_MODE_STREAM : BPFS_MODE_AGGREGATE;
}

void opts__sampler_opts(const struct opts *o, struct sampler_opts *so)
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
		.unwind = o->unwind,
		.unwind_rows = o->unwind_rows,
		.map_entries = o->map_entries,
		.stack_entries = o->stack_entries,
		.stack_id_bits = o->stack_id_bits,
		.ring_size = o->ring_size,
		.sideband_size = o->sideband_size,
		.python = !o->no_python,
	};
}
