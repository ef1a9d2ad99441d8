/* SPDX-License-Identifier: GPL-2.0 */
/* What this machine offers, probed once at start-up. */
#ifndef BPFSAMPLER_FEATURES_H
#define BPFSAMPLER_FEATURES_H

#include <stdbool.h>
#include <stdio.h>

/* Checks root or CAP_BPF+CAP_PERFMON (+CAP_SYS_ADMIN for older kernels),
 * kernel BTF and perf-event support. On failure prints one line naming what
 * is missing and what to do, and returns -errno. */
int features__check(void);
/* Number of possible CPUs (what per-CPU maps are sized by), or -errno. */
int features__nr_cpus(void);
bool features__cpu_online(int cpu);
/* kernel.perf_event_max_sample_rate, or -1 when unreadable. */
long features__max_sample_rate(void);
/* kernel.perf_event_max_stack, or -1 when unreadable. */
long features__max_stack(void);
/* Memory this process may still take, in bytes: MemAvailable, or less when
 * its memory cgroup (v2 memory.max, v1 memory.limit_in_bytes) leaves less;
 * what names the limit that applied. 0 when unknown. */
unsigned long long features__mem_available(const char **what);
/* Whether the kernel has bpf_task_work_schedule_resume (Linux 6.18): a
 * BPF callback in a thread's own context at its return to user space. */
bool features__has_task_work(void);
/* Whether executable mappings can be followed as they are made (the mmap
 * syscall's exit tracepoint and bpf_find_vma), so that each sample is named
 * after the mappings live when it was taken. */
bool features__has_mmap_tracking(void);
/* Whether CPython frames can be walked in BPF: bpf_loop (5.17) and
 * bpf_get_current_task_btf (5.11) in perf_event programs. */
bool features__has_python_walk(void);
/* The table printed by --version -v. */
void features__print(FILE *f);

#endif
