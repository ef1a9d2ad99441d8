// SPDX-License-Identifier: GPL-2.0
/* The perf_event_attr built for the sampling timer, field by field, the way
 * perf's tests/attr check theirs. */
#include <linux/perf_event.h>
#include <string.h>

#include "perf_events.h"
#include "unit.h"

static void test_timer_4000(void)
{
	struct perf_event_attr a;

	memset(&a, 0xff, sizeof(a)); /* every field must be set, not inherited */
	perf_events__timer_attr(4000, &a);
	CHECK(a.size == sizeof(a), "size");
	CHECK(a.type == PERF_TYPE_SOFTWARE, "type %u", a.type);
	CHECK(a.config == PERF_COUNT_SW_CPU_CLOCK, "config %llu", (unsigned long long)a.config);
	CHECK(a.freq == 0, "fixed period, not frequency mode");
	CHECK(a.sample_period == 250000, "period %llu ns", (unsigned long long)a.sample_period);
	CHECK(a.disabled == 1, "opened disabled, enabled after attach");
	CHECK(a.exclude_kernel == 0 && a.exclude_user == 0 && a.exclude_idle == 0,
	      "nothing excluded in the event itself");
	CHECK(a.inherit == 0 && a.precise_ip == 0 && a.sample_type == 0, "plain timer");
	CHECK(a.read_format ==
		      (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING),
	      "reads enabled/running time");
	CHECK(perf_events__effective_rate(&a) == 4000.0, "effective rate");
}

static void test_timer_odd_rates(void)
{
	struct perf_event_attr a;

	perf_events__timer_attr(99, &a);
	CHECK(a.sample_period == 10101010, "99 Hz period rounds: %llu",
	      (unsigned long long)a.sample_period);
	CHECK(perf_events__effective_rate(&a) > 98.99 && perf_events__effective_rate(&a) < 99.01,
	      "99 Hz effective");
	perf_events__timer_attr(100000, &a);
	CHECK(a.sample_period == 10000, "100 kHz is the 10 us hrtimer floor");
	perf_events__timer_attr(3, &a);
	CHECK(a.sample_period == 333333333, "3 Hz");
}

int main(void)
{
	RUN(test_timer_4000);
	RUN(test_timer_odd_rates);
	UNIT_EXIT();
}
