// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_features.h"
#include "features.h"
#include "sideband.h"
#include "log.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static unsigned long long meminfo_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* What our memory cgroup still allows (BPF maps are charged to it since
 * Linux 5.11), or 0 without a limit. */
static unsigned long long cgroup_left(void)
{
	static const char *const files[][2] = {
		{ "/sys/fs/cgroup%s/memory.max", "/sys/fs/cgroup%s/memory.current" },
		{ "/sys/fs/cgroup/memory%s/memory.limit_in_bytes",
		  "/sys/fs/cgroup/memory%s/memory.usage_in_bytes" },
	};
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[512], cg[2][512] = { "", "" }, path[1100];
	bool found[2] = {};

	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0::", 3)) {
			snprintf(cg[0], sizeof(cg[0]), "%s", line + 3);
			found[0] = true;
		} else if (strstr(line, ":memory:")) {
			snprintf(cg[1], sizeof(cg[1]), "%s", strstr(line, ":memory:") + 8);
			found[1] = true;
		}
	}
	if (f)
		fclose(f);
	for (int v = 1; v >= 0; v--) {
		unsigned long long max = 0, cur = 0;
		FILE *m, *c;

		if (!found[v])
			continue;
		snprintf(path, sizeof(path), files[v][0], strcmp(cg[v], "/") ? cg[v] : "");
		m = fopen(path, "r");
		snprintf(path, sizeof(path), files[v][1], strcmp(cg[v], "/") ? cg[v] : "");
		c = fopen(path, "r");
		if (m && c && fscanf(m, "%llu", &max) == 1 && fscanf(c, "%llu", &cur) == 1 &&
		    max < (1ULL << 60)) { /* "max", or v1's huge "no limit" */
			fclose(m);
			fclose(c);
			return max > cur ? max - cur : 1;
		}
		if (m)
			fclose(m);
		if (c)
			fclose(c);
	}
	return 0;
}

unsigned long long features__mem_available(const char **what)
{
	unsigned long long avail = meminfo_available(), left = cgroup_left();

	*what = "MemAvailable in /proc/meminfo";
	if (left && (!avail || left < avail)) {
		*what = "the limit of bpfsampler's memory cgroup";
		return left;
	}
	return avail;
}

long features__max_sample_rate(void)
{
	return read_long("/proc/sys/kernel/perf_event_max_sample_rate");
}

long features__max_stack(void)
{
	return read_long("/proc/sys/kernel/perf_event_max_stack");
}

int features__nr_cpus(void)
{
	return libbpf_num_possible_cpus();
}

bool features__cpu_online(int cpu)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	bool online = false;
	int lo, hi;
	char sep;

	if (!f)
		return cpu >= 0 && cpu < features__nr_cpus();
	/* A list of ranges such as "0-3,5\n". */
	while (!online && fscanf(f, "%d", &lo) == 1) {
		hi = lo;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &hi) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = '\n';
		}
		online = cpu >= lo && cpu <= hi;
		if (sep != ',')
			break;
	}
	fclose(f);
	return online;
}

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1U << (cap % 32));
}

static bool have_privileges(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = {};

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return has_cap(data, CAP_SYS_ADMIN) ||
	       (has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON));
}

static bool have_btf(void)
{
	return access("/sys/kernel/btf/vmlinux", R_OK) == 0;
}

/* Opens (and closes) a disabled cpu-clock event on CPU 0: tells us whether
 * perf events exist at all (CONFIG_PERF_EVENTS) and are allowed. */
static int probe_perf_events(void)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000,
		.disabled = 1,
	};
	int fd;

	fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int features__check(void)
{
	int err;

	if (!have_privileges()) {
		p_err("not enough privileges: run as root (sudo bpfsampler ...) or grant "
		      "CAP_BPF and CAP_PERFMON (setcap cap_bpf,cap_perfmon+ep bpfsampler)");
		return -EPERM;
	}
	if (!have_btf()) {
		p_err("this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): use a "
		      "kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's stock kernels are)");
		return -ENOTSUP;
	}
	err = probe_perf_events();
	if (err == -ENOENT || err == -ENOSYS || err == -EOPNOTSUPP) {
		p_err("this kernel has no perf events (perf_event_open: %s): use a kernel "
		      "built with CONFIG_PERF_EVENTS=y", strerror(-err));
		return err;
	}
	if (err == -EACCES || err == -EPERM) {
		p_err("perf_event_open is refused (%s): run as root, or lower "
		      "kernel.perf_event_paranoid, or grant CAP_PERFMON", strerror(-err));
		return err;
	}
	if (err) {
		p_err("cannot open a cpu-clock perf event: %s", strerror(-err));
		return err;
	}
	return 0;
}

bool features__has_task_work(void)
{
	/* Its records are numbered with preemption off (sampler.bpf.c). */
	return bpf_features__has(BPFF_TASK_WORK) && bpf_features__has(BPFF_PREEMPT_KFUNCS) &&
	       bpf_features__full_sampler();
}

bool features__has_mmap_tracking(void)
{
	/* perf's side-band records (a dummy event with mmap2, Linux 3.16;
	 * use_clockid, 4.1) for mappings, and the BTF tracepoint
	 * sched_process_exec for execs: neither costs a system call
	 * anything. Exec gens are taken with a fetching atomic (5.12): the
	 * full sampler's. */
	return sideband__supported() && bpf_features__has(BPFF_TP_BTF) &&
	       bpf_features__full_sampler();
}

bool features__has_python_walk(void)
{
	/* the walk loops under bpf_loop (5.17) and finds the thread's fs
	 * base through bpf_get_current_task_btf (5.11): the full program's;
	 * under the compat one Python frames stay native */
	return bpf_features__full_sampler();
}

void features__print(FILE *f)
{
	struct utsname u;

	uname(&u);
	fprintf(f, "kernel:                           %s %s\n", u.release, u.machine);
	fprintf(f, "libbpf:                           %u.%u\n", libbpf_major_version(),
		libbpf_minor_version());
	fprintf(f, "privileges (root/CAP_BPF+PERFMON): %s\n", have_privileges() ? "yes" : "no");
	fprintf(f, "kernel BTF:                       %s\n", have_btf() ? "yes" : "no");
	fprintf(f, "perf events (cpu-clock):          %s\n",
		probe_perf_events() == 0 ? "yes" : "no");
	fprintf(f, "task_work completion (6.18):      %s\n",
		features__has_task_work() ? "yes" : "no (stacks cut by a fault stay marked)");
	fprintf(f, "mapping changes (mmap2, exec):    %s\n",
		features__has_mmap_tracking()
			? "yes"
			: "no (names from the mappings read, which a later dlopen can replace)");
	fprintf(f, "CPython frames (bpf_loop, 5.17):  %s\n",
		features__has_python_walk() ? "yes, CPython 3.8-3.13" : "no (they stay native)");
	fprintf(f, "possible CPUs:                    %d\n", features__nr_cpus());
	fprintf(f, "perf_event_max_sample_rate:       %ld\n", features__max_sample_rate());
	fprintf(f, "perf_event_max_stack:             %ld\n", features__max_stack());
	bpf_features__print(f);
}
