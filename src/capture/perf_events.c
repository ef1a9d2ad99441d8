// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "events.h"
#include "features.h"
#include "log.h"
#include "int_list.h"
#include "perf_events.h"

struct perf_events {
	int nr;
	int *cpus;
	int *events; /* index in the event list */
	int *fds;
	bool *handed_over; /* fd now owned by a BPF link */
};

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

/* What an event that cannot be opened means, and what to do. */
static int explain(const struct event *e, int cpu, int err)
{
	switch (-err) {
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		p_err("event '%s' is not supported here (perf_event_open: %s): this machine has "
		      "no hardware counter for it (a VM without a virtual PMU?); sample with "
		      "-e cpu-clock instead", e->name, strerror(-err));
		return -ENODEV;
	case EINVAL:
		if (e->attr.type == PERF_TYPE_RAW || e->attr.precise_ip) {
			p_err("event '%s' was refused (EINVAL): an unknown raw code or a precision "
			      "(:p) this CPU lacks; check the code with perf list", e->name);
			return -ENODEV;
		}
		p_err("event '%s' was refused on CPU %d (EINVAL)%s", e->name, cpu,
		      e->attr.freq ? ": is -F above kernel.perf_event_max_sample_rate?" : "");
		return -ENODEV;
	case EBUSY:
		p_err("event '%s': the counters are held by another user (perf, or the NMI "
		      "watchdog: sysctl kernel.nmi_watchdog=0); try again or use -e cpu-clock",
		      e->name);
		return -ENODEV;
	default:
		p_err("perf_event_open of '%s' on CPU %d: %s", e->name, cpu, strerror(-err));
		return err;
	}
}

int perf_events__open(const struct event_list *evs, const struct int_list *cpus,
		      struct perf_events **out)
{
	struct int_list online = {};
	struct perf_events *pe;
	size_t n;
	int err;

	if (!cpus || !cpus->nr) {
		err = all_online(&online);
		if (err)
			return err;
		cpus = &online;
	}
	n = evs->nr * cpus->nr;
	pe = calloc(1, sizeof(*pe));
	if (!pe) {
		err = -ENOMEM;
		goto out;
	}
	pe->cpus = calloc(n, sizeof(*pe->cpus));
	pe->events = calloc(n, sizeof(*pe->events));
	pe->fds = calloc(n, sizeof(*pe->fds));
	pe->handed_over = calloc(n, sizeof(*pe->handed_over));
	if (!pe->cpus || !pe->events || !pe->fds || !pe->handed_over) {
		err = -ENOMEM;
		goto err_free;
	}
	for (size_t e = 0; e < evs->nr; e++) {
		for (size_t i = 0; i < cpus->nr && !evs->v[e].offcpu; i++) {
			int fd = syscall(SYS_perf_event_open, &evs->v[e].attr, -1, cpus->v[i], -1,
					 PERF_FLAG_FD_CLOEXEC);

			if (fd < 0) {
				err = explain(&evs->v[e], cpus->v[i], -errno);
				goto err_free;
			}
			pe->cpus[pe->nr] = cpus->v[i];
			pe->events[pe->nr] = e;
			pe->fds[pe->nr++] = fd;
		}
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

int perf_events__event(const struct perf_events *pe, int i)
{
	return pe->events[i];
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

void perf_events__times(const struct perf_events *pe, int ev, uint64_t *enabled,
			uint64_t *running)
{
	*enabled = *running = 0;
	for (int i = 0; i < pe->nr; i++) {
		uint64_t v[3]; /* value, time_enabled, time_running */

		if (pe->events[i] != ev || read(pe->fds[i], v, sizeof(v)) != sizeof(v))
			continue;
		*enabled += v[1];
		*running += v[2];
	}
}

void perf_events__free(struct perf_events *pe)
{
	if (!pe)
		return;
	for (int i = 0; i < pe->nr; i++)
		if (!pe->handed_over || !pe->handed_over[i])
			close(pe->fds[i]);
	free(pe->cpus);
	free(pe->events);
	free(pe->fds);
	free(pe->handed_over);
	free(pe);
}
