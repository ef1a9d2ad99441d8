// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

struct named {
	const char *name;
	__u32 type;
	__u64 config;
};

/* perf list's names (and its aliases) */
static const struct named named_events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};

static const struct {
	const char *name;
	__u64 id;
} cache_ids[] = {
	{ "L1-dcache", PERF_COUNT_HW_CACHE_L1D }, { "L1-icache", PERF_COUNT_HW_CACHE_L1I },
	{ "LLC", PERF_COUNT_HW_CACHE_LL },	  { "dTLB", PERF_COUNT_HW_CACHE_DTLB },
	{ "iTLB", PERF_COUNT_HW_CACHE_ITLB },	  { "branch", PERF_COUNT_HW_CACHE_BPU },
	{ "node", PERF_COUNT_HW_CACHE_NODE },
};

static const struct {
	const char *name;
	__u64 op;
} cache_ops[] = {
	{ "load", PERF_COUNT_HW_CACHE_OP_READ },
	{ "store", PERF_COUNT_HW_CACHE_OP_WRITE },
	{ "prefetch", PERF_COUNT_HW_CACHE_OP_PREFETCH },
};

/* "L1-dcache-load-misses" / "LLC-loads" / "dTLB-store-misses" ... */
static int parse_cache(const char *name, __u64 *config)
{
	for (size_t i = 0; i < sizeof(cache_ids) / sizeof(cache_ids[0]); i++) {
		size_t il = strlen(cache_ids[i].name);

		if (strncmp(name, cache_ids[i].name, il) || name[il] != '-')
			continue;
		for (size_t k = 0; k < sizeof(cache_ops) / sizeof(cache_ops[0]); k++) {
			const char *rest = name + il + 1;
			size_t ol = strlen(cache_ops[k].name);
			__u64 result;

			if (strncmp(rest, cache_ops[k].name, ol))
				continue;
			rest += ol;
			if (!strcmp(rest, "s") || !strcmp(rest, "es"))
				result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
			else if (!strcmp(rest, "-misses"))
				result = PERF_COUNT_HW_CACHE_RESULT_MISS;
			else
				continue;
			*config = cache_ids[i].id | (cache_ops[k].op << 8) | (result << 16);
			return 0;
		}
	}
	return -ENOENT;
}

static int parse_base(const char *base, struct perf_event_attr *a)
{
	char *end;

	for (size_t i = 0; i < sizeof(named_events) / sizeof(named_events[0]); i++) {
		if (!strcmp(base, named_events[i].name)) {
			a->type = named_events[i].type;
			a->config = named_events[i].config;
			return 0;
		}
	}
	if (!parse_cache(base, &a->config)) {
		a->type = PERF_TYPE_HW_CACHE;
		return 0;
	}
	/* rNNNN: a raw PMU code in hex */
	if (base[0] == 'r' && isxdigit((unsigned char)base[1])) {
		errno = 0;
		a->config = strtoull(base + 1, &end, 16);
		if (!errno && !*end) {
			a->type = PERF_TYPE_RAW;
			return 0;
		}
	}
	return -ENOENT;
}

/* ":u", ":k", ":p" (repeat for precision), combined as perf does: "upp" */
static int parse_mods(const char *mods, struct perf_event_attr *a)
{
	bool u = false, k = false;

	for (const char *m = mods; *m; m++) {
		switch (*m) {
		case 'u':
			u = true;
			break;
		case 'k':
			k = true;
			break;
		case 'p':
			if (a->precise_ip >= 3)
				return -EINVAL;
			a->precise_ip++;
			break;
		default:
			return -EINVAL;
		}
	}
	/* only u: user only; only k: kernel only; both or none: both */
	if (u && !k) {
		a->exclude_kernel = 1;
		a->exclude_hv = 1;
	} else if (k && !u) {
		a->exclude_user = 1;
		a->exclude_hv = 1;
	}
	return 0;
}

static int parse_terms(char *terms, unsigned long *period, unsigned long *freq)
{
	char *save = NULL;

	for (char *t = strtok_r(terms, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned long *dst = NULL;
		char *val = NULL, *end;

		/* no pointer past a strchr() that found nothing: NULL + 1 is
		 * undefined (the fuzz target's UBSan said so) */
		if (!strncmp(t, "period=", 7))
			dst = period, val = t + 7;
		else if (!strncmp(t, "freq=", 5))
			dst = freq, val = t + 5;
		if (!dst || !isdigit((unsigned char)*val))
			return -EINVAL;
		*dst = strtoul(val, &end, 10);
		if (*end || !*dst)
			return -EINVAL;
	}
	return 0;
}

static void set_rate(struct event *e, unsigned long period, unsigned long freq)
{
	struct perf_event_attr *a = &e->attr;

	e->freq = period ? 0 : freq;
	if (period) {
		a->sample_period = period;
	} else if (e->timer) {
		/* fixed period: frequency mode would be refused above
		 * perf_event_max_sample_rate, which the kernel lowers itself */
		a->sample_period = (1000000000ULL + freq / 2) / freq;
	} else {
		a->freq = 1;
		a->sample_freq = freq;
	}
}

static int parse_one(char *spec, unsigned int freq, unsigned long period, struct event *e,
		     char *err, size_t errlen)
{
	char base[EVENT_NAME_LEN], *mods, *slash, *terms = NULL;
	unsigned long t_period = 0, t_freq = 0;
	struct perf_event_attr *a = &e->attr;

	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", spec);
	/* name[/terms/][:mods] */
	slash = strchr(spec, '/');
	if (slash) {
		char *close = strchr(slash + 1, '/');

		if (!close) {
			snprintf(err, errlen, "event '%s': a '/' term list is not closed", e->name);
			return -EINVAL;
		}
		*slash = '\0';
		*close = '\0';
		terms = slash + 1;
		mods = close[1] == ':' ? close + 2 : close + 1;
	} else {
		mods = strchr(spec, ':');
		if (mods)
			*mods++ = '\0';
	}
	snprintf(base, sizeof(base), "%s", spec);
	a->size = sizeof(*a);
	a->disabled = 1;
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	if (parse_base(base, a)) {
		snprintf(err, errlen, "unknown event '%s': use perf's names (cpu-clock, "
			 "page-faults, context-switches, cycles, instructions, cache-misses, "
			 "branch-misses, L1-dcache-load-misses, ...) or a raw code rNNNN", base);
		return -EINVAL;
	}
	e->timer = a->type == PERF_TYPE_SOFTWARE && (a->config == PERF_COUNT_SW_CPU_CLOCK ||
						     a->config == PERF_COUNT_SW_TASK_CLOCK);
	if (mods && *mods && parse_mods(mods, a)) {
		snprintf(err, errlen, "event '%s': unknown modifier ':%s' (u, k, p, pp, ppp)",
			 e->name, mods);
		return -EINVAL;
	}
	if (terms && parse_terms(terms, &t_period, &t_freq)) {
		snprintf(err, errlen, "event '%s': terms are period=N or freq=N", e->name);
		return -EINVAL;
	}
	e->rate_from_term = t_period || t_freq;
	if (t_period || t_freq)
		set_rate(e, t_period, t_freq);
	else
		set_rate(e, period, freq);
	return 0;
}

int events__parse(const char *spec, unsigned int freq, unsigned long period,
		  struct event_list *list, char *err, size_t errlen)
{
	char *copy = strdup(spec), *p, *start;
	int depth = 0, ret = 0;

	if (!copy)
		return -ENOMEM;
	/* split at commas outside /.../ term lists */
	for (p = start = copy;; p++) {
		if (*p == '/')
			depth = !depth;
		if ((*p == ',' && !depth) || !*p) {
			bool end = !*p;

			*p = '\0';
			if (!*start) {
				snprintf(err, errlen, "empty event name in '%s'", spec);
				ret = -EINVAL;
				break;
			}
			if (list->nr == EVENTS_MAX) {
				snprintf(err, errlen, "at most %d events at once", EVENTS_MAX);
				ret = -EINVAL;
				break;
			}
			ret = parse_one(start, freq, period, &list->v[list->nr], err, errlen);
			if (ret)
				break;
			list->nr++;
			if (end)
				break;
			start = p + 1;
		}
	}
	free(copy);
	return ret;
}

/* How the rate was asked, as the user spelled it: "-F 200000", "freq=N",
 * "-c 1", "period=1". */
static void rate_spelling(const struct event *e, char *out, size_t len)
{
	unsigned long long period = e->attr.sample_period;

	if (e->freq)
		snprintf(out, len, e->rate_from_term ? "freq=%lu" : "-F %lu", e->freq);
	else
		snprintf(out, len, e->rate_from_term ? "period=%llu" : "-c %llu", period);
}

int events__check_rate(const struct event *e, long max_rate, char *err, size_t errlen)
{
	unsigned long long period = e->attr.sample_period;
	double hz = e->freq;
	char asked[64];

	if (e->timer && !e->freq)
		hz = period ? 1e9 / period : 0;
	rate_spelling(e, asked, sizeof(asked));
	if (e->timer && period < EVENTS_MIN_TIMER_PERIOD_NS) {
		snprintf(err, errlen, "event '%s': %s is a period of %llu ns, below the %d ns the "
			 "kernel's timer allows (100000 samples per second per CPU): use a period "
			 "of at least %d ns (-c %d or period=%d)", e->name, asked, period,
			 EVENTS_MIN_TIMER_PERIOD_NS, EVENTS_MIN_TIMER_PERIOD_NS,
			 EVENTS_MIN_TIMER_PERIOD_NS, EVENTS_MIN_TIMER_PERIOD_NS);
		return -ERANGE;
	}
	if (max_rate > 0 && hz > max_rate) {
		char fix[64];

		if (e->freq)
			snprintf(fix, sizeof(fix), "%ld Hz or less", max_rate);
		else
			snprintf(fix, sizeof(fix), "a period of %llu ns or more",
				 (1000000000ULL + max_rate - 1) / max_rate);
		snprintf(err, errlen, "event '%s': %s asks %.0f samples per second per CPU, above "
			 "kernel.perf_event_max_sample_rate=%ld (the kernel throttles above it, and "
			 "lowers it itself when sampling interrupts run long): use %s, or raise it "
			 "with sysctl -w kernel.perf_event_max_sample_rate=%.0f",
			 e->name, asked, hz, max_rate, fix, hz);
		return -ERANGE;
	}
	return 0;
}

int events__output_name(const char *pattern, const struct event *e, char *out, size_t len)
{
	const char *at = strstr(pattern, "%e");
	char safe[EVENT_NAME_LEN];

	if (!at)
		return -EINVAL;
	snprintf(safe, sizeof(safe), "%s", e->name);
	for (char *c = safe; *c; c++)
		if (*c == '/' || *c == ':' || *c == '=' || *c == ',')
			*c = '_';
	snprintf(out, len, "%.*s%s%s", (int)(at - pattern), pattern, safe, at + 2);
	return 0;
}
