// SPDX-License-Identifier: GPL-2.0
/* Service names from /proc/PID/cgroup lines as real systems write them,
 * and the per-pid cache with its cap on distinct series. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "service.h"
#include "unit.h"

#define ID "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"

static void expect(const char *cgroup, int want_err, const char *want)
{
	char out[128] = "";
	int err = service__from_cgroup(cgroup, out, sizeof(out));

	CHECK(err == want_err, "'%s': error %d, expected %d", cgroup, err, want_err);
	if (!err && want)
		CHECK(!strcmp(out, want), "'%s': '%s', expected '%s'", cgroup, out, want);
}

static void test_systemd(void)
{
	expect("0::/system.slice/nginx.service\n", 0, "nginx.service");
	expect("0::/system.slice/system-getty.slice/getty@tty1.service\n", 0, "getty@tty1.service");
	/* A service's own sub-cgroups (Delegate=yes) still name it. */
	expect("0::/system.slice/postgresql.service/workers\n", 0, "postgresql.service");
	expect("0::/init.scope\n", -ENOENT, NULL);
	expect("0::/\n", -ENOENT, NULL);
	expect("0::/system.slice/run-r3f1c.scope\n", -ENOENT, NULL);
	expect("", -EINVAL, NULL);
	expect("garbage without colons\n", -EINVAL, NULL);
}

static void test_users(void)
{
	expect("0::/user.slice/user-1000.slice/session-3.scope\n", 0, "user-1000");
	expect("0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
	       "app-gnome-firefox-1234.scope\n", 0, "user-1000");
	expect("0::/user.slice/user-0.slice/session-c1.scope", 0, "user-0");
	expect("0::/user.slice/user-x.slice/session-1.scope\n", -ENOENT, NULL);
}

static void test_containers(void)
{
	expect("0::/system.slice/docker-" ID ".scope\n", 0, "container:3f2a1b4c5d6e");
	expect("0::/docker/" ID "\n", 0, "container:3f2a1b4c5d6e");
	expect("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1d2c3b4a_5e6f_"
	       "7081_92a3_b4c5d6e7f809.slice/cri-containerd-" ID ".scope\n", 0,
	       "container:3f2a1b4c5d6e");
	expect("0::/kubepods/besteffort/pod1d2c3b4a-5e6f-7081-92a3-b4c5d6e7f809/" ID "\n", 0,
	       "container:3f2a1b4c5d6e");
	expect("0::/kubepods.slice/kubepods-pod1.slice/crio-" ID ".scope\n", 0,
	       "container:3f2a1b4c5d6e");
	expect("0::/machine.slice/libpod-" ID ".scope/container\n", 0, "container:3f2a1b4c5d6e");
	/* A service inside a container is the container's. */
	expect("0::/system.slice/docker-" ID ".scope/system.slice/nginx.service\n", 0,
	       "container:3f2a1b4c5d6e");
	/* 63 hex digits, or a hex run glued to a name, is no container id. */
	expect("0::/system.slice/docker-" ID "0.scope\n", -ENOENT, NULL);
	expect("0::/system.slice/x" ID ".service\n", 0, "x" ID ".service");
}

static void test_cgroup_v1(void)
{
	/* v1: the name=systemd line, else any controller's path. */
	expect("12:pids:/docker/" ID "\n11:cpu,cpuacct:/docker/" ID "\n"
	       "1:name=systemd:/docker/" ID "\n0::/\n", 0, "container:3f2a1b4c5d6e");
	expect("5:memory:/system.slice/sshd.service\n1:name=systemd:/system.slice/cron.service\n",
	       0, "cron.service");
	expect("4:cpu,cpuacct:/system.slice/a.service\n", 0, "a.service");
	/* Hybrid: the unified line is the bare root, v1 knows better. */
	expect("1:name=systemd:/system.slice/b.service\n0::/\n", 0, "b.service");
}

static void test_small_buffer(void)
{
	char out[8];

	CHECK(service__from_cgroup("0::/system.slice/nginx.service\n", out, sizeof(out)) ==
		      -ENOSPC, "too small");
}

/* A fake /proc with PID/cgroup files. */
static char root[] = "/tmp/bpfs-service.XXXXXX";

static void fake_pid(int pid, const char *cgroup)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/cgroup", root, pid);
	f = fopen(path, "w");
	if (f) {
		fputs(cgroup, f);
		fclose(f);
	}
}

static void test_map(void)
{
	struct service_map_opts o = { .max_series = 3, .proc_root = root };
	struct service_map *m = NULL;
	const char *a, *b;

	CHECK(mkdtemp(root) != NULL, "fake proc");
	fake_pid(10, "0::/system.slice/nginx.service\n");
	fake_pid(11, "0::/system.slice/nginx.service\n");
	fake_pid(12, "0::/system.slice/docker-" ID ".scope\n");
	fake_pid(13, "0::/init.scope\n");
	fake_pid(14, "0::/system.slice/redis.service\n");
	fake_pid(15, "0::/system.slice/nginx.service\n");
	CHECK(service_map__new(&o, &m) == 0, "map");
	if (!m)
		return;
	a = service_map__get(m, 10, "nginx");
	b = service_map__get(m, 11, "nginx");
	CHECK(!strcmp(a, "nginx.service") && a == b, "one interned name per service");
	CHECK(!strcmp(service_map__get(m, 12, "python3"), "container:3f2a1b4c5d6e"), "container");
	CHECK(!strcmp(service_map__get(m, 13, "systemd"), "systemd"), "comm when cgroup is silent");
	CHECK(service_map__series(m) == 3, "3 series");
	CHECK(!strcmp(service_map__get(m, 14, "redis"), SERVICE_OTHER), "past the cap: other");
	CHECK(!strcmp(service_map__get(m, 14, "redis"), SERVICE_OTHER), "cached");
	CHECK(service_map__overflowed(m) == 1, "counted once per process: %llu",
	      (unsigned long long)service_map__overflowed(m));
	CHECK(!strcmp(service_map__get(m, 15, "nginx"), "nginx.service"),
	      "a known service still has its series past the cap");
	CHECK(!strcmp(service_map__get(m, 99, "gone"), "other"),
	      "a vanished process: its comm, here past the cap");
	CHECK(service_map__tracked(m) == 7, "7 pids: %zu", service_map__tracked(m));

	/* pid 10 exits and its number comes back as another process. */
	service_map__forget(m, 10);
	service_map__forget(m, 10);
	CHECK(service_map__tracked(m) == 6, "forgotten once: %zu", service_map__tracked(m));
	fake_pid(10, "0::/system.slice/docker-" ID ".scope\n");
	CHECK(!strcmp(service_map__get(m, 10, "sh"), "container:3f2a1b4c5d6e"),
	      "re-read after forget");
	CHECK(service_map__tracked(m) == 7, "back to 7: %zu", service_map__tracked(m));
	service_map__free(m);
	service_map__free(NULL);
}

/* Fork-heavy churn: the map stays as small as the live set. */
static void test_churn(void)
{
	struct service_map_opts o = { .max_series = 0, .proc_root = root };
	struct service_map *m = NULL;

	CHECK(service_map__new(&o, &m) == 0, "map");
	if (!m)
		return;
	for (int pid = 1000; pid < 101000; pid++) {
		service_map__get(m, pid, "short");
		service_map__forget(m, pid);
	}
	CHECK(service_map__tracked(m) == 0, "nothing live: %zu", service_map__tracked(m));
	CHECK(service_map__series(m) == 1, "one comm, one series");
	service_map__free(m);
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		printf("    could not remove %s\n", root);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_systemd);
	RUN(test_users);
	RUN(test_containers);
	RUN(test_cgroup_v1);
	RUN(test_small_buffer);
	RUN(test_map);
	RUN(test_churn);
	cleanup();
	UNIT_EXIT();
}
