// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "features.h"
#include "log.h"
#include "opts.h"
#include "perf_events.h"

struct perf_events {
	int nr;
	int *cpus;
	int *fds;
	bool *handed_over; /* fd now owned by a BPF link */
};

void perf_events__timer_attr(unsigned int freq, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = (1000000000ULL + freq / 2) / freq;
	attr->freq = 0;
	attr->disabled = 1;
	attr->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
}

double perf_events__effective_rate(const struct perf_event_attr *attr)
{
	if (attr->freq)
		return attr->sample_freq;
	return attr->sample_period ? 1e9 / attr->sample_period : 0;
}

static int all_online(struct int_list *out)
{
	int n = features__nr_cpus();

	if (n < 0)
		return n;
	out->v = calloc(n, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (int cpu = 0; cpu < n; cpu++)
		if (features__cpu_online(cpu))
			out->v[out->nr++] = cpu;
	return 0;
}

int perf_events__open(const struct perf_event_attr *attr, const struct int_list *cpus,
		      struct perf_events **out)
{
	struct int_list online = {};
	struct perf_events *pe;
	int err;

	if (!cpus || !cpus->nr) {
		err = all_online(&online);
		if (err)
			return err;
		cpus = &online;
	}
	pe = calloc(1, sizeof(*pe));
	if (!pe) {
		err = -ENOMEM;
		goto out;
	}
	pe->cpus = calloc(cpus->nr, sizeof(*pe->cpus));
	pe->fds = calloc(cpus->nr, sizeof(*pe->fds));
	pe->handed_over = calloc(cpus->nr, sizeof(*pe->handed_over));
	if (!pe->cpus || !pe->fds || !pe->handed_over) {
		err = -ENOMEM;
		goto err_free;
	}
	for (size_t i = 0; i < cpus->nr; i++) {
		int fd = syscall(SYS_perf_event_open, attr, -1, cpus->v[i], -1,
				 PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			err = -errno;
			p_err("perf_event_open on CPU %d: %s%s", cpus->v[i], strerror(-err),
			      err == -EINVAL ? " (is -F above kernel.perf_event_max_sample_rate?)"
					     : "");
			goto err_free;
		}
		pe->cpus[pe->nr] = cpus->v[i];
		pe->fds[pe->nr++] = fd;
	}
	*out = pe;
	err = 0;
	goto out;
err_free:
	perf_events__free(pe);
out:
	free(online.v);
	return err;
}

int perf_events__nr(const struct perf_events *pe)
{
	return pe->nr;
}

int perf_events__cpu(const struct perf_events *pe, int i)
{
	return pe->cpus[i];
}

int perf_events__fd(const struct perf_events *pe, int i)
{
	return pe->fds[i];
}

void perf_events__hand_over(struct perf_events *pe, int i)
{
	pe->handed_over[i] = true;
}

static int ioctl_all(struct perf_events *pe, unsigned long req)
{
	for (int i = 0; i < pe->nr; i++)
		if (ioctl(pe->fds[i], req, 0))
			return -errno;
	return 0;
}

int perf_events__enable(struct perf_events *pe)
{
	return ioctl_all(pe, PERF_EVENT_IOC_ENABLE);
}

int perf_events__disable(struct perf_events *pe)
{
	return ioctl_all(pe, PERF_EVENT_IOC_DISABLE);
}

uint64_t perf_events__time_enabled(const struct perf_events *pe)
{
	uint64_t sum = 0;

	for (int i = 0; i < pe->nr; i++) {
		uint64_t v[3]; /* value, time_enabled, time_running */

		if (read(pe->fds[i], v, sizeof(v)) == sizeof(v))
			sum += v[1];
	}
	return sum;
}

void perf_events__free(struct perf_events *pe)
{
	if (!pe)
		return;
	for (int i = 0; i < pe->nr; i++)
		if (!pe->handed_over || !pe->handed_over[i])
			close(pe->fds[i]);
	free(pe->cpus);
	free(pe->fds);
	free(pe->handed_over);
	free(pe);
}
