/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kfunc that schedules a callback at the thread's return to user
 * space (Linux 6.18+), declared once for the sampler and its load probe
 * (bpf/probe_task_work.bpf.c). Weak: absent from older kernels, where
 * the sampler's use of it is dead code (use_task_work is false).
 */
#ifndef BPFSAMPLER_TASK_WORK_BPF_H
#define BPFSAMPLER_TASK_WORK_BPF_H

extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

#endif
