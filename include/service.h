/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which service a process belongs to, so the agent pushes one series per
 * service: the systemd unit or container named by /proc/PID/cgroup, else
 * the process's comm. A cap on distinct names keeps a fleet's series count
 * bounded: past it, new services share the series "other".
 */
#ifndef BPFSAMPLER_SERVICE_H
#define BPFSAMPLER_SERVICE_H

#include <stddef.h>
#include <stdint.h>

/* The series every service past the cap shares. */
#define SERVICE_OTHER "other"

/*
 * The service named by the contents of a /proc/PID/cgroup file (v2's
 * "0::/path" line first, then v1's name=systemd, then any controller):
 *   a container (docker, containerd, cri-o, podman; systemd or cgroupfs
 *   driver, under kubepods or not) -> "container:<first 12 hex of its id>"
 *   a user's session or user manager (user.slice/user-1000.slice/...)
 *   -> "user-1000"
 *   a system service (system.slice/nginx.service) -> "nginx.service"
 * Returns 0, -ENOENT when the cgroup names nothing (the root cgroup,
 * init.scope, a transient scope: the caller uses comm), -EINVAL when no
 * line has a path, -ENOSPC when out is too small.
 */
int service__from_cgroup(const char *cgroup_file_contents, char *out, size_t len);

struct service_map_opts {
	size_t max_series;     /* distinct services before "other"; 0: no cap */
	const char *proc_root; /* NULL: "/proc" (tests point it at fixtures) */
};

struct service_map;

int service_map__new(const struct service_map_opts *o, struct service_map **out);
void service_map__free(struct service_map *m);

/*
 * The service of pid, read from its cgroup the first time and cached
 * until service_map__forget; comm names it when the cgroup does not.
 * The string lives as long as the map. Never NULL: when out of memory or
 * past the cap, SERVICE_OTHER.
 */
const char *service_map__get(struct service_map *m, int pid, const char *comm);
/* pid exited: its number may come back as another process. */
void service_map__forget(struct service_map *m, int pid);

/* Processes currently cached. */
size_t service_map__tracked(const struct service_map *m);
/* Distinct services that got a series of their own. */
size_t service_map__series(const struct service_map *m);
/* Processes put in SERVICE_OTHER because the cap was reached. */
uint64_t service_map__overflowed(const struct service_map *m);

#endif
