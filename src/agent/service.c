// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hashmap.h"
#include "log.h"
#include "service.h"

#define CONTAINER_ID_LEN 64
#define CONTAINER_SHORT_LEN 12 /* as docker ps shows them */

/* The cgroup path of the preferred line, copied into buf (NUL-terminated).
 * Lines are "hierarchy:controllers:path". */
static int pick_path(const char *text, char *buf, size_t size)
{
	const char *best = NULL, *systemd = NULL, *any = NULL;
	size_t best_len = 0, systemd_len = 0, any_len = 0;

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (c1 + 1 - line)) : NULL;

		if (c2 && c2[1] == '/') {
			const char *path = c2 + 1;
			size_t plen = n - (path - line);

			if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1)
				best = path, best_len = plen; /* v2: "0::" */
			else if (c2 - c1 - 1 == 12 && !memcmp(c1 + 1, "name=systemd", 12))
				systemd = path, systemd_len = plen;
			else if (!any)
				any = path, any_len = plen;
		}
		line = nl ? nl + 1 : NULL;
	}
	/* A hybrid system's v2 line may be the bare root while the v1 lines
	 * hold the real place: prefer what says more. */
	if (best && best_len == 1 && (systemd || any))
		best = NULL;
	if (!best)
		best = systemd, best_len = systemd_len;
	if (!best)
		best = any, best_len = any_len;
	if (!best)
		return -EINVAL;
	if (best_len >= size)
		return -ENOSPC;
	memcpy(buf, best, best_len);
	buf[best_len] = '\0';
	return 0;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* A container id ends the component: "<64 hex>", "docker-<64 hex>.scope",
 * "cri-containerd-…", "crio-…", "libpod-…". Returns where, or NULL. */
static const char *container_id(const char *comp, size_t n)
{
	const char *id;

	if (ends_with(comp, n, ".scope"))
		n -= strlen(".scope");
	if (n < CONTAINER_ID_LEN)
		return NULL;
	id = comp + n - CONTAINER_ID_LEN;
	if (id != comp && id[-1] != '-')
		return NULL;
	for (size_t i = 0; i < CONTAINER_ID_LEN; i++)
		if (!isxdigit((unsigned char)id[i]))
			return NULL;
	return id;
}

static int put(char *out, size_t len, const char *prefix, const char *s, size_t n)
{
	int w = snprintf(out, len, "%s%.*s", prefix, (int)n, s);

	return w < 0 || (size_t)w >= len ? -ENOSPC : 0;
}

int service__from_cgroup(const char *cgroup_file_contents, char *out, size_t len)
{
	char path[4096];
	const char *comp, *end, *service = NULL, *id;
	size_t n, service_len = 0;
	int err;

	err = pick_path(cgroup_file_contents, path, sizeof(path));
	if (err)
		return err;
	/* The innermost container wins (a container in a pod, a pod in a
	 * slice); then a user's slice; then the innermost .service. */
	for (comp = path; *comp; comp = *end ? end + 1 : end) {
		end = strchrnul(comp, '/');
		n = end - comp;
		if (n && ends_with(comp, n, ".service"))
			service = comp, service_len = n;
	}
	for (end = path + strlen(path); end > path;) {
		comp = end;
		while (comp > path && comp[-1] != '/')
			comp--;
		id = container_id(comp, end - comp);
		if (id)
			return put(out, len, "container:", id, CONTAINER_SHORT_LEN);
		end = comp > path ? comp - 1 : path;
	}
	/* user.slice/user-1000.slice/{session-3.scope,user@1000.service/…}:
	 * one series per user, not per login session or desktop app. */
	for (comp = path; *comp; comp = *end ? end + 1 : end) {
		end = strchrnul(comp, '/');
		n = end - comp;
		if (n > strlen("user-.slice") && !strncmp(comp, "user-", 5) &&
		    ends_with(comp, n, ".slice") &&
		    strspn(comp + 5, "0123456789") == n - 5 - strlen(".slice"))
			return put(out, len, "", comp, n - strlen(".slice"));
	}
	if (service)
		return put(out, len, "", service, service_len);
	return -ENOENT;
}

struct service_map {
	struct hashmap *pids;	  /* pid -> interned name */
	struct hashmap *services; /* name -> the same name, owned here */
	size_t max_series;
	size_t series;
	uint64_t overflowed;
	char proc_root[256];
};

int service_map__new(const struct service_map_opts *o, struct service_map **out)
{
	struct service_map *m;
	int err;

	m = calloc(1, sizeof(*m));
	if (!m) {
		err = -ENOMEM;
		goto err;
	}
	m->max_series = o ? o->max_series : 0;
	snprintf(m->proc_root, sizeof(m->proc_root), "%s",
		 o && o->proc_root ? o->proc_root : "/proc");
	m->pids = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	m->services = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	if (!m->pids || !m->services) {
		err = -ENOMEM;
		goto err;
	}
	*out = m;
	return 0;
err:
	p_err("service map: out of memory creating it");
	service_map__free(m);
	return err;
}

void service_map__free(struct service_map *m)
{
	const void *k;
	void *v;

	if (!m)
		return;
	for (size_t i = 0; m->services && hashmap__next(m->services, &i, &k, &v);)
		free(v); /* the key is the same string */
	hashmap__free(m->services);
	hashmap__free(m->pids);
	free(m);
}

/* The interned copy of name, SERVICE_OTHER past the cap. */
static const char *intern(struct service_map *m, const char *name)
{
	char *copy = hashmap__find(m->services, name);

	if (copy)
		return copy;
	if (m->max_series && m->series >= m->max_series) {
		m->overflowed++;
		return SERVICE_OTHER;
	}
	copy = strdup(name);
	if (!copy || hashmap__set(m->services, copy, copy, NULL)) {
		free(copy);
		return SERVICE_OTHER;
	}
	m->series++;
	return copy;
}

/* Reads PROC/pid/cgroup into buf. 0 or -errno (the process is gone). */
static int read_cgroup(const struct service_map *m, int pid, char *buf, size_t size)
{
	char path[320];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/cgroup", m->proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

const char *service_map__get(struct service_map *m, int pid, const char *comm)
{
	const void *key = (const void *)(uintptr_t)pid;
	const char *name = hashmap__find(m->pids, key);
	char buf[8192], svc[256];

	if (name)
		return name;
	if (read_cgroup(m, pid, buf, sizeof(buf)) == 0 &&
	    service__from_cgroup(buf, svc, sizeof(svc)) == 0)
		name = intern(m, svc);
	else
		name = intern(m, comm && *comm ? comm : "unknown");
	/* Cached even when it is "other": the cap is counted once per
	 * process, not once per sample. Not cached when out of memory. */
	hashmap__set(m->pids, key, (void *)name, NULL);
	return name;
}

void service_map__forget(struct service_map *m, int pid)
{
	hashmap__delete(m->pids, (const void *)(uintptr_t)pid, NULL, NULL);
}

size_t service_map__tracked(const struct service_map *m)
{
	return hashmap__size(m->pids);
}

size_t service_map__series(const struct service_map *m)
{
	return m->series;
}

uint64_t service_map__overflowed(const struct service_map *m)
{
	return m->overflowed;
}
