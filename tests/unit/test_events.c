// SPDX-License-Identifier: GPL-2.0
/* The perf_event_attr built for each event spelling, field by field, the
 * way perf's tests/attr check theirs. */
#include <errno.h>
#include <string.h>

#include "events.h"
#include "unit.h"

static struct event_list parse_ok(const char *spec, unsigned int freq, unsigned long period)
{
	struct event_list l = {};
	char err[256] = "";

	CHECK(events__parse(spec, freq, period, &l, err, sizeof(err)) == 0, "%s: %s", spec, err);
	return l;
}

static void test_timer_default(void)
{
	struct event_list l = parse_ok("cpu-clock", 4000, 0);
	struct perf_event_attr *a = &l.v[0].attr;

	CHECK(l.nr == 1 && l.v[0].timer, "one timer");
	CHECK(a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_CPU_CLOCK, "cpu-clock");
	CHECK(!a->freq && a->sample_period == 250000, "fixed period in ns: %llu",
	      (unsigned long long)a->sample_period);
	CHECK(a->disabled && a->size == sizeof(*a), "disabled, sized");
	CHECK(a->read_format == (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING),
	      "reads enabled/running");
	CHECK(!a->exclude_user && !a->exclude_kernel && !a->precise_ip, "no modifiers");
	l = parse_ok("task-clock", 100, 0);
	CHECK(l.v[0].attr.config == PERF_COUNT_SW_TASK_CLOCK && l.v[0].attr.sample_period == 10000000,
	      "task-clock at 100 Hz");
	l = parse_ok("cpu-clock", 99, 0);
	CHECK(l.v[0].attr.sample_period == 10101010, "99 Hz rounds: %llu",
	      (unsigned long long)l.v[0].attr.sample_period);
	l = parse_ok("cpu-clock", 100000, 0);
	CHECK(l.v[0].attr.sample_period == 10000, "100 kHz is the 10 us hrtimer floor");
	memset(&l, 0xff, sizeof(l));
	l.nr = 0;
	l = parse_ok("cpu-clock", 3, 0);
	CHECK(l.v[0].attr.sample_period == 333333333 && !l.v[0].attr.inherit &&
		      !l.v[0].attr.sample_type && !l.v[0].attr.exclude_idle,
	      "3 Hz; every other field zero, not inherited");
}

static void test_hardware(void)
{
	static const struct {
		const char *name;
		unsigned long long config;
	} hw[] = {
		{ "cycles", PERF_COUNT_HW_CPU_CYCLES },
		{ "cpu-cycles", PERF_COUNT_HW_CPU_CYCLES },
		{ "instructions", PERF_COUNT_HW_INSTRUCTIONS },
		{ "ref-cycles", PERF_COUNT_HW_REF_CPU_CYCLES },
		{ "cache-references", PERF_COUNT_HW_CACHE_REFERENCES },
		{ "cache-misses", PERF_COUNT_HW_CACHE_MISSES },
		{ "branch-instructions", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
		{ "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
		{ "branch-misses", PERF_COUNT_HW_BRANCH_MISSES },
	};

	for (size_t i = 0; i < sizeof(hw) / sizeof(hw[0]); i++) {
		struct event_list l = parse_ok(hw[i].name, 4000, 0);
		struct perf_event_attr *a = &l.v[0].attr;

		CHECK(a->type == PERF_TYPE_HARDWARE && a->config == hw[i].config, "%s", hw[i].name);
		CHECK(a->freq == 1 && a->sample_freq == 4000 && !l.v[0].timer,
		      "%s: frequency mode as perf", hw[i].name);
	}
}

static void test_cache_events(void)
{
	struct event_list l = parse_ok("L1-dcache-load-misses,LLC-loads,dTLB-store-misses,"
				       "iTLB-load-misses,branch-load-misses,L1-icache-load-misses",
				       99, 0);

	CHECK(l.nr == 6, "six events: %zu", l.nr);
	CHECK(l.v[0].attr.type == PERF_TYPE_HW_CACHE &&
		      l.v[0].attr.config == (PERF_COUNT_HW_CACHE_L1D |
					     (PERF_COUNT_HW_CACHE_OP_READ << 8) |
					     (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)),
	      "L1-dcache-load-misses 0x%llx", (unsigned long long)l.v[0].attr.config);
	CHECK(l.v[1].attr.config == (PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
				     (PERF_COUNT_HW_CACHE_RESULT_ACCESS << 16)),
	      "LLC-loads");
	CHECK(l.v[2].attr.config == (PERF_COUNT_HW_CACHE_DTLB |
				     (PERF_COUNT_HW_CACHE_OP_WRITE << 8) |
				     (PERF_COUNT_HW_CACHE_RESULT_MISS << 16)),
	      "dTLB-store-misses");
	CHECK(l.v[3].attr.config == (PERF_COUNT_HW_CACHE_ITLB | (1ULL << 16)), "iTLB-load-misses");
	CHECK(l.v[4].attr.config == (PERF_COUNT_HW_CACHE_BPU | (1ULL << 16)), "branch-load-misses");
	CHECK(l.v[5].attr.config == (PERF_COUNT_HW_CACHE_L1I | (1ULL << 16)), "L1-icache-load-misses");
}

static void test_raw_and_modifiers(void)
{
	struct event_list l = parse_ok("r003c:u,cycles:k,instructions:pp,cycles:ukppp", 4000, 0);

	CHECK(l.v[0].attr.type == PERF_TYPE_RAW && l.v[0].attr.config == 0x3c, "raw 0x3c");
	CHECK(l.v[0].attr.exclude_kernel && l.v[0].attr.exclude_hv && !l.v[0].attr.exclude_user,
	      ":u excludes kernel and hypervisor");
	CHECK(l.v[1].attr.exclude_user && l.v[1].attr.exclude_hv && !l.v[1].attr.exclude_kernel,
	      ":k excludes user");
	CHECK(l.v[2].attr.precise_ip == 2, ":pp is precise_ip 2");
	CHECK(!l.v[3].attr.exclude_user && !l.v[3].attr.exclude_kernel && l.v[3].attr.precise_ip == 3,
	      ":uk is both, ppp is 3");
	CHECK(strcmp(l.v[0].name, "r003c:u") == 0, "names kept as given");
}

static void test_periods(void)
{
	struct event_list l = parse_ok("cycles,cache-misses/period=1000/,instructions/freq=99/:u",
				       4000, 0);

	CHECK(l.v[0].attr.freq && l.v[0].attr.sample_freq == 4000, "cycles at -F");
	CHECK(!l.v[1].attr.freq && l.v[1].attr.sample_period == 1000, "period term");
	CHECK(l.v[2].attr.freq && l.v[2].attr.sample_freq == 99 && l.v[2].attr.exclude_kernel,
	      "freq term with a modifier");
	l = parse_ok("cycles,cpu-clock", 4000, 50000);
	CHECK(!l.v[0].attr.freq && l.v[0].attr.sample_period == 50000, "-c for cycles");
	CHECK(!l.v[1].attr.freq && l.v[1].attr.sample_period == 50000, "-c for the clock (ns)");
}

/* Every software event perf names, sampled at -F (frequency mode) or -c. */
static void test_software_events(void)
{
	static const struct {
		const char *name;
		__u64 config;
	} sw[] = {
		{ "page-faults", PERF_COUNT_SW_PAGE_FAULTS },
		{ "faults", PERF_COUNT_SW_PAGE_FAULTS },
		{ "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN },
		{ "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ },
		{ "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES },
		{ "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
		{ "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
		{ "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
		{ "alignment-faults", PERF_COUNT_SW_ALIGNMENT_FAULTS },
		{ "emulation-faults", PERF_COUNT_SW_EMULATION_FAULTS },
		{ "task-clock", PERF_COUNT_SW_TASK_CLOCK },
	};

	for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
		struct event_list l = parse_ok(sw[i].name, 4000, 100);
		const struct perf_event_attr *a = &l.v[0].attr;

		CHECK(l.nr == 1 && a->type == PERF_TYPE_SOFTWARE && a->config == sw[i].config,
		      sw[i].name);
		CHECK(!a->freq && a->sample_period == 100, "-c 100 is the period");
		l = parse_ok(sw[i].name, 99, 0);
		a = &l.v[0].attr;
		if (sw[i].config == PERF_COUNT_SW_TASK_CLOCK)
			CHECK(!a->freq && a->sample_period == 1000000000ULL / 99, "a clock: a period in ns");
		else
			CHECK(a->freq && a->sample_freq == 99, "counted events at -F: frequency mode");
	}
}

static void expect_bad(const char *spec, const char *must_say)
{
	struct event_list l = {};
	char err[256] = "";

	CHECK(events__parse(spec, 4000, 0, &l, err, sizeof(err)) != 0, "%s must fail", spec);
	CHECK(strstr(err, must_say), "%s: message '%s' names '%s'", spec, err, must_say);
}

static void test_bad(void)
{
	expect_bad("cyclez", "unknown event 'cyclez'");
	expect_bad("cycles:x", "unknown modifier");
	expect_bad("cycles:pppp", "unknown modifier");
	expect_bad("rxyz", "unknown event");
	expect_bad("cycles,,instructions", "empty event");
	expect_bad("cycles/period=0/", "terms are");
	expect_bad("cycles/period=1", "not closed");
	/* a term without '=' (found by fuzzing: UB before it was refused) */
	expect_bad("cpu-clock/pe0c/", "terms are");
	expect_bad("cpu-clock/freq/", "terms are");
	expect_bad("L1-dcache-load-hits", "unknown event");
	expect_bad("a,b,c,d,e,f,g,h,i", "unknown event");
	expect_bad("cpu-clock,cpu-clock,cpu-clock,cpu-clock,cpu-clock,cpu-clock,cpu-clock,"
		   "cpu-clock,cpu-clock", "at most");
}

static void test_output_names(void)
{
	struct event_list l = parse_ok("cycles:u,cache-misses/period=10/", 4000, 0);
	char out[256];

	CHECK(events__output_name("prof-%e.folded", &l.v[0], out, sizeof(out)) == 0 &&
		      strcmp(out, "prof-cycles_u.folded") == 0,
	      "%s", out);
	CHECK(events__output_name("x/%e", &l.v[1], out, sizeof(out)) == 0 &&
		      strcmp(out, "x/cache-misses_period_10_") == 0,
	      "%s", out);
	CHECK(events__output_name("plain.folded", &l.v[0], out, sizeof(out)) != 0, "needs %%e");
}

/* check_rate SPEC FREQ PERIOD MAX: events__check_rate's verdict, and its
 * message holds every piece of want (NULL: accepted). */
static void check_rate(const char *spec, unsigned int freq, unsigned long period, long max,
		       const char *const *want)
{
	struct event_list l = parse_ok(spec, freq, period);
	char err[512] = "";
	int r = events__check_rate(&l.v[0], max, err, sizeof(err));

	if (!want) {
		CHECK(r == 0, "%s -F %u -c %lu max %ld accepted: %s", spec, freq, period, max, err);
		return;
	}
	CHECK(r == -ERANGE, "%s -F %u -c %lu max %ld refused", spec, freq, period, max);
	for (; *want; want++)
		CHECK(strstr(err, *want), "%s: '%s' in: %s", spec, *want, err);
}

static void test_rates(void)
{
	/* at the limit: fine; above it, named with the sysctl and the fix */
	check_rate("cpu-clock", 100000, 0, 100000, NULL);
	check_rate("cpu-clock", 6000, 0, 5000,
		   (const char *[]){ "-F 6000", "kernel.perf_event_max_sample_rate=5000",
				     "5000 Hz or less", NULL });
	check_rate("cpu-clock", 4000, 100000, 5000,
		   (const char *[]){ "-c 100000", "a period of 200000 ns or more", NULL });
	check_rate("cpu-clock/freq=9999999/", 99, 0, 100000,
		   (const char *[]){ "freq=9999999", "a period of 100 ns", "10000 ns", NULL });
	check_rate("cycles/freq=200000/", 99, 0, 100000,
		   (const char *[]){ "freq=200000", "100000 Hz or less", NULL });
	check_rate("cycles", 200000, 0, 100000, (const char *[]){ "-F 200000", NULL });
	/* a clock cannot tick faster than every 10 us, whatever the sysctl */
	check_rate("cpu-clock", 4000, 1, 100000,
		   (const char *[]){ "-c 1", "10000 ns", "-c 10000", NULL });
	check_rate("task-clock/period=9999/", 99, 0, 1000000000,
		   (const char *[]){ "period=9999", "10000 ns", NULL });
	check_rate("cpu-clock/period=10000/", 99, 0, 100000, NULL);
	/* a period on a hardware event has no rate to check; an unknown
	 * limit checks only the clock's floor */
	check_rate("cycles", 4000, 1, 100000, NULL);
	check_rate("cpu-clock", 99999, 0, -1, NULL);
}

int main(void)
{
	RUN(test_timer_default);
	RUN(test_hardware);
	RUN(test_cache_events);
	RUN(test_raw_and_modifiers);
	RUN(test_periods);
	RUN(test_software_events);
	RUN(test_bad);
	RUN(test_output_names);
	RUN(test_rates);
	UNIT_EXIT();
}
