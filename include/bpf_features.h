/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the running kernel's BPF offers, each feature probed once (never
 * guessed from the version number) and kept as data: the first kernel that
 * has it, and what bpfsampler does and what the user loses without it. The
 * same table is printed by --version -v and written in docs/design.md,
 * "Kernels".
 */
#ifndef BPFSAMPLER_BPF_FEATURES_H
#define BPFSAMPLER_BPF_FEATURES_H

#include <stdbool.h>
#include <stdio.h>

enum bpf_feature {
	BPFF_RINGBUF,	     /* BPF ring buffers (5.8): the floor */
	BPFF_TP_BTF,	     /* BTF-enabled tracepoints (5.5) */
	BPFF_BATCH_OPS,	     /* batch map operations (5.6) */
	BPFF_TASK_BTF,	     /* bpf_get_current_task_btf (5.11) */
	BPFF_ATOMIC_FETCH,   /* fetching atomics (5.12) */
	BPFF_COOKIE,	     /* bpf_get_attach_cookie on perf events (5.15) */
	BPFF_TASK_PT_REGS,   /* bpf_task_pt_regs (5.15) */
	BPFF_LOOP,	     /* bpf_loop (5.17) */
	BPFF_COPY_FROM_USER_TASK, /* bpf_copy_from_user_task (5.18) */
	BPFF_RINGBUF_DYNPTR, /* ring records sized at run time (5.19) */
	BPFF_PREEMPT_KFUNCS, /* bpf_preempt_disable/enable (6.10) */
	BPFF_PROCMAP_QUERY,  /* the PROCMAP_QUERY ioctl (6.11) */
	BPFF_TASK_WORK,	     /* bpf_task_work_schedule_resume (6.18) */
	BPFF_NR
};

/* Whether the kernel has f; probed at the first call, then remembered. */
bool bpf_features__has(enum bpf_feature f);
/* The feature's name and the first mainline kernel that has it. */
const char *bpf_features__name(enum bpf_feature f);
const char *bpf_features__since(enum bpf_feature f);
/* Whether the full sampling program loads here (every helper it calls);
 * else the compat program runs (docs/design.md, "Kernels"). */
bool bpf_features__full_sampler(void);
/* Whether the kernel's BTF names sched_switch's tracepoint (tp_btf), else
 * the raw tracepoint is the way (the off-CPU unit). */
bool bpf_features__switch_tp_btf(void);
/* The first feature the full program needs that this kernel lacks, or
 * BPFF_NR when none is missing. */
enum bpf_feature bpf_features__first_missing(void);
/* The table: feature, first kernel, here or not, and what is lost. */
void bpf_features__print(FILE *f);

#endif
