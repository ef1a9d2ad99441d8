/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI between bpf/sampler.bpf.c and the loader. Only fixed-width fields,
 * enums and constants cross this boundary; both sides include this file, so a
 * change here rebuilds both (the Makefile tracks it for clang and gcc).
 */
#ifndef BPFSAMPLER_SAMPLER_ABI_H
#define BPFSAMPLER_SAMPLER_ABI_H

/* bpf_get_stack() never returns more than kernel.perf_event_max_stack frames
 * (127 by default): the interrupt-time walk is bounded by that. */
#define BPFS_MAX_STACK_DEPTH 127
#define BPFS_COMM_LEN 16

/* Stack ids are content hashes with open probing and an exact comparison of
 * the frames on every hit, so two different stacks never share an id. 0 means
 * "no stack". */
#define BPFS_STACK_PROBES 4

/* Counters kept per CPU in the `stats` map, indexed by this enum. Every
 * sample the perf event delivers lands in exactly one of
 * KEPT, IDLE, FILTERED or a LOST_* bucket. */
enum bpfs_stat {
	BPFS_STAT_TAKEN = 0,	  /* program invocations */
	BPFS_STAT_KEPT,		  /* counted in the `counts` map */
	BPFS_STAT_IDLE,		  /* pid 0 with idle excluded */
	BPFS_STAT_FILTERED,	  /* outside -p/-t/command */
	BPFS_STAT_LOST_COUNTS_FULL,  /* `counts` map full (--map-entries) */
	BPFS_STAT_LOST_STACKS_FULL,  /* `stacks` map full (--stack-entries) */
	BPFS_STAT_LOST_COLLISION, /* BPFS_STACK_PROBES slots all held other stacks */
	BPFS_STAT_LOST_BUSY,	  /* map bucket locked (NMI re-entry), -EBUSY */
	/* Not losses: the sample is kept with the stack marked incomplete. */
	BPFS_STAT_USTACK_ERR,	  /* user stack unreadable */
	BPFS_STAT_KSTACK_ERR,	  /* kernel stack unreadable */
	BPFS_STAT_USTACK_TRUNC,	  /* user stack hit --max-stack-depth */
	BPFS_STAT_KSTACK_TRUNC,	  /* kernel stack hit --max-stack-depth */
	BPFS_STAT_NOTIFY_LOST,	  /* new-process notification dropped */
	BPFS_STAT_FOLLOW_FULL,	  /* forked child not followed: `filter` full */
	BPFS_STAT_NR,
};

/* Flags in bpfs_count_key.flags. */
enum bpfs_sample_flags {
	BPFS_F_USTACK_ERR = 1 << 0,
	BPFS_F_KSTACK_ERR = 1 << 1,
	BPFS_F_USTACK_TRUNC = 1 << 2,
	BPFS_F_KSTACK_TRUNC = 1 << 3,
	BPFS_F_KTHREAD = 1 << 4, /* no user address space */
};

/* What -p/-t/-- command select; the `filter` map holds the ids. */
enum bpfs_filter_mode {
	BPFS_FILTER_NONE = 0,
	BPFS_FILTER_TGID,
	BPFS_FILTER_TID,
};

struct bpfs_count_key {
	__u32 pid; /* tgid */
	__u32 tid;
	__u64 kstack_id;
	__u64 ustack_id;
	char comm[BPFS_COMM_LEN];
	__u32 flags; /* enum bpfs_sample_flags */
	__u32 pad;
};

struct bpfs_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[BPFS_MAX_STACK_DEPTH];
};

/* Records on the `events` ring buffer; each starts with its type. */
enum bpfs_rec_type {
	BPFS_REC_NEW_KEY = 1, /* first sample of a (pid, tid, comm, stacks) key */
};

struct bpfs_rec_new_key {
	__u32 type; /* BPFS_REC_NEW_KEY */
	__u32 pid;
	__u32 tid;
	char comm[BPFS_COMM_LEN];
};

#endif
