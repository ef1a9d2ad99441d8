// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_features.h"
#include "probe_task_work.skel.h"
#include "procmaps.h"

/* What the probes look up in the kernel's BTF, all found in one parse of
 * it (10 ms here: each probe parsing it again cost start-up 60 ms with
 * --off-cpu), which is freed at once. */
struct btf_names {
	bool tp_exec;	/* btf_trace_sched_process_exec: tp_btf (5.5) */
	bool tp_switch; /* btf_trace_sched_switch */
	bool copy_task; /* BPF_FUNC_copy_from_user_task (5.18) */
	bool preempt;	/* bpf_preempt_disable and _enable (6.10) */
	bool task_work; /* bpf_task_work_schedule_resume_impl (6.18) */
};

static bool has_type(const struct btf *btf, const char *name, __u32 kind)
{
	return btf__find_by_name_kind(btf, name, kind) > 0;
}

/* Whether enum name has a value named value. */
static bool has_enum_value(const struct btf *btf, const char *name, const char *value)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_ENUM);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, btf_enum(t)[i].name_off), value))
			return true;
	return false;
}

static const struct btf_names *btf_names(void)
{
	static struct btf_names n;
	static bool read;
	struct btf *btf;

	if (read)
		return &n;
	read = true;
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return &n; /* no BTF: none of them */
	n.tp_exec = has_type(btf, "btf_trace_sched_process_exec", BTF_KIND_TYPEDEF);
	n.tp_switch = has_type(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	/* a helper of tracing programs only, which libbpf's helper probe
	 * does not load: the kernel's list of helpers names it */
	n.copy_task = has_enum_value(btf, "bpf_func_id", "BPF_FUNC_copy_from_user_task");
	n.preempt = has_type(btf, "bpf_preempt_disable", BTF_KIND_FUNC) &&
		    has_type(btf, "bpf_preempt_enable", BTF_KIND_FUNC);
	n.task_work = has_type(btf, "bpf_task_work_schedule_resume_impl", BTF_KIND_FUNC);
	btf__free(btf);
	return &n;
}

bool bpf_features__switch_tp_btf(void)
{
	return btf_names()->tp_switch;
}

static bool helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, id, NULL) == 1;
}

static bool probe_ringbuf(void)
{
	return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
}

/* The tracepoints' BTF types (btf_trace_<name>) come with tp_btf. */
static bool probe_tp_btf(void)
{
	return btf_names()->tp_exec;
}

/* An empty map answers a batch lookup with ENOENT; a kernel without the
 * command with EINVAL. */
static bool probe_batch_ops(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "bpfs_probe", 4, 4, 1, NULL);
	__u32 keys[1], vals[1], count = 1, out;
	bool has;

	if (fd < 0)
		return false;
	has = bpf_map_lookup_batch(fd, NULL, &out, keys, vals, &count, NULL) == 0 ||
	      errno == ENOENT;
	close(fd);
	return has;
}

static bool probe_task_btf(void)
{
	return helper(BPF_FUNC_get_current_task_btf);
}

/* r1 = atomic_fetch_add(*(u64 *)(r10 - 8), r1): the verifier refuses the
 * BPF_FETCH flag before 5.12. */
static bool probe_atomic_fetch(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0 },
		{ .code = BPF_STX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1,
		  .off = -8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1, .off = -8, .imm = BPF_ADD | BPF_FETCH },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "bpfs_probe", "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static bool probe_cookie(void)
{
	return helper(BPF_FUNC_get_attach_cookie);
}

static bool probe_task_pt_regs(void)
{
	return helper(BPF_FUNC_task_pt_regs);
}

static bool probe_loop(void)
{
	return helper(BPF_FUNC_loop);
}

static bool probe_copy_from_user_task(void)
{
	return btf_names()->copy_task;
}

static bool probe_ringbuf_dynptr(void)
{
	return helper(BPF_FUNC_ringbuf_reserve_dynptr);
}

static bool probe_preempt_kfuncs(void)
{
	return btf_names()->preempt;
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* The kfunc, and a verifier that takes its sleepable callback from a
 * perf_event program (bpf/probe_task_work.bpf.c: a 6.18 stable kernel has
 * the first and refuses the second). Loaded quietly: a refusal is an
 * answer here, not an error to print. */
static bool probe_task_work(void)
{
	libbpf_print_fn_t print;
	struct probe_task_work_bpf *p;
	bool ok;

	if (!btf_names()->task_work)
		return false;
	print = libbpf_set_print(quiet_print);
	p = probe_task_work_bpf__open_and_load();
	libbpf_set_print(print);
	ok = p != NULL;
	probe_task_work_bpf__destroy(p);
	return ok;
}

struct feature {
	const char *name;
	const char *since;   /* the first mainline kernel with it */
	bool full_sampler;   /* the full sampling program calls it */
	const char *without; /* what bpfsampler does instead, and the loss */
	bool (*probe)(void);
};

#define COMPAT "the compat sampler (docs/design.md, \"Kernels\")"

static const struct feature features[BPFF_NR] = {
	[BPFF_RINGBUF] = { "BPF ring buffers", "5.8", false,
			   "none: bpfsampler does not run (a kernel before 5.8)", probe_ringbuf },
	[BPFF_TP_BTF] = { "BTF-enabled tracepoints", "5.5", false,
			  "no following of -- command's children or of execs", probe_tp_btf },
	[BPFF_BATCH_OPS] = { "batch map operations", "5.6", false,
			     "maps read and emptied one key at a time: slower drains",
			     probe_batch_ops },
	[BPFF_TASK_BTF] = { "bpf_get_current_task_btf", "5.11", true,
			    COMPAT ": task fields read by a helper each", probe_task_btf },
	[BPFF_ATOMIC_FETCH] = { "fetching atomics", "5.12", true,
				COMPAT ": no exec or mmap following (names after the "
				"mappings read, as --no-follow-mappings)",
				probe_atomic_fetch },
	[BPFF_COOKIE] = { "perf event attach cookies", "5.15", true,
			  COMPAT ": one program per event", probe_cookie },
	[BPFF_TASK_PT_REGS] = { "bpf_task_pt_regs", "5.15", true,
				COMPAT ": user registers read off the kernel stack, user "
				"stacks up to 127 frames",
				probe_task_pt_regs },
	[BPFF_LOOP] = { "bpf_loop", "5.17", true,
			COMPAT ": no unwind tables, user stacks through code without "
			"frame pointers are cut, marked (--unwind auto and dwarf act "
			"as fp)",
			probe_loop },
	[BPFF_COPY_FROM_USER_TASK] = { "bpf_copy_from_user_task", "5.18", false,
				       "off-CPU: threads blocked before the run have no user "
				       "stack (marked)",
				       probe_copy_from_user_task },
	[BPFF_RINGBUF_DYNPTR] = { "ring records sized at run time", "5.19", true,
				  COMPAT ": stack records copied once more",
				  probe_ringbuf_dynptr },
	[BPFF_PREEMPT_KFUNCS] = { "bpf_preempt_disable kfuncs", "6.10", false,
				  "no task_work completions (they need both)",
				  probe_preempt_kfuncs },
	[BPFF_PROCMAP_QUERY] = { "PROCMAP_QUERY ioctl", "6.11", false,
				 "mappings read by parsing /proc/PID/maps: slower",
				 procmaps__has_query },
	[BPFF_TASK_WORK] = { "task_work completions", "6.18", false,
			     "user stacks cut by a page fault stay cut, marked",
			     probe_task_work },
};

bool bpf_features__has(enum bpf_feature f)
{
	static signed char known[BPFF_NR]; /* 0 unprobed, 1 yes, -1 no */

	if (f >= BPFF_NR)
		return false;
	if (!known[f])
		known[f] = features[f].probe() ? 1 : -1;
	return known[f] > 0;
}

const char *bpf_features__name(enum bpf_feature f)
{
	return f < BPFF_NR ? features[f].name : "?";
}

const char *bpf_features__since(enum bpf_feature f)
{
	return f < BPFF_NR ? features[f].since : "?";
}

enum bpf_feature bpf_features__first_missing(void)
{
	for (int f = 0; f < BPFF_NR; f++)
		if (features[f].full_sampler && !bpf_features__has(f))
			return f;
	return BPFF_NR;
}

bool bpf_features__full_sampler(void)
{
	static int full = -1;

	/* BPFSAMPLER_COMPAT=1 runs the compat program on any kernel: the
	 * suite checks it on the host too, not only in the guests. */
	if (full < 0) {
		const char *env = getenv("BPFSAMPLER_COMPAT");

		full = bpf_features__first_missing() == BPFF_NR && !(env && *env == '1');
	}
	return full;
}

void bpf_features__print(FILE *f)
{
	fprintf(f, "sampling program:                 %s\n",
		bpf_features__full_sampler() ? "full" : "compat (kernel features missing, below)");
	for (int i = 0; i < BPFF_NR; i++) {
		bool has = bpf_features__has(i);

		fprintf(f, "  %-31s %-5s %s%s%s\n", features[i].name, features[i].since,
			has ? "yes" : "no", has ? "" : ": ", has ? "" : features[i].without);
	}
}
