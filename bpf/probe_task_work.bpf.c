// SPDX-License-Identifier: GPL-2.0
/*
 * The load probe of task_work completions (src/capture/bpf_features.c):
 * the shape of sampler.bpf.c's, a perf_event program that schedules a
 * callback reading user memory with bpf_copy_from_user. The kfunc in the
 * kernel's BTF is not enough: a 6.18 stable kernel (6.18.44) has it and
 * its verifier refuses such a callback in a program that is not
 * sleepable ("sleepable callback in a program that is not sleepable"),
 * which failed the whole sampler's load. Never attached: loaded once,
 * closed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "task_work.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct probe_work {
	struct bpf_task_work tw;
	__u64 word;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct probe_work);
} probe_works SEC(".maps");

static int probe_read(struct bpf_map *map, void *key, void *value)
{
	struct probe_work *p = value;

	bpf_copy_from_user(&p->word, sizeof(p->word), (void *)p->word);
	return 0;
}

SEC("perf_event")
int probe_task_work(void *ctx)
{
	struct probe_work *p;
	__u32 zero = 0;

	p = bpf_map_lookup_elem(&probe_works, &zero);
	if (p)
		bpf_task_work_schedule_resume_impl(bpf_get_current_task_btf(), &p->tw,
						   &probe_works, probe_read, NULL);
	return 0;
}
