/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI between bpf/offcpu.bpf.c and its loader (src/capture/offcpu.c).
 * The off-CPU unit shares the sampler's count and stack maps (its keys are
 * struct bpfs_count_key of sampler_abi.h, with event = the index of the
 * offcpu-time event), so only what is its own is here: the blocks still
 * open, its counters and the flags it adds to a key. docs/design.md,
 * "Off-CPU time", describes the data path and the loss model.
 */
#ifndef BPFSAMPLER_OFFCPU_ABI_H
#define BPFSAMPLER_OFFCPU_ABI_H

/* Flags an off-CPU key carries besides the sampler's (enum
 * bpfs_sample_flags uses the low bits; these stay clear of them). */
enum bpfs_off_flags {
	BPFS_F_OFF_WAIT = 1 << 16,	/* switched out by choice: sleeping,
					 * waiting for I/O or a lock */
	BPFS_F_OFF_PREEMPTED = 1 << 17, /* switched out while runnable: waited
					 * for a CPU */
	BPFS_F_OFF_BEFORE = 1 << 18,	/* off the CPU when the run began:
					 * the stacks are the ones it sleeps
					 * in, found by a task iterator */
	BPFS_F_OFF_NOWALK = 1 << 19,	/* the walk budget (--off-cpu-walks)
					 * was spent: no stack was taken */
	BPFS_F_OFF_NOUSER = 1 << 20,	/* its user stack could not be
					 * read: a kernel without
					 * bpf_copy_from_user_task (5.18) */
};

/* A thread off the CPU: when it left and with which stacks, keyed by tid
 * in `offstart` from its switch-out to its switch-in. */
struct bpfs_off_start {
	__u64 t_out; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u64 kstack_id;
	__u64 ustack_id;
	__u32 pid;
	__u32 flags; /* enum bpfs_sample_flags | enum bpfs_off_flags */
	__u32 map_gen;
	__u32 pad;
	char comm[16];
};

/* Counters, per CPU, in the `offstats` array. Every switch-out of a thread
 * lands in exactly one of OUT_IDLE, OUT_FILTERED, OUT_DEAD, OUT_STARTED,
 * OUT_LOST_FULL. Every start ends in one of IN (a switch-in), END (the
 * run's end), OUT_REPLACED, or is gone at the end (the loader counts it):
 * STARTED + BEFORE = IN + END + OUT_REPLACED + gone. Every IN, END and CUT
 * (a window's part of a block) is IN_SHORT or IN_COUNTED; the sampler's
 * `stats` buckets of the event then say what became of a counted one:
 * kept, spilled or lost. */
enum bpfs_off_stat {
	BPFS_OFF_OUT = 0,	   /* switch-outs seen */
	BPFS_OFF_OUT_IDLE,	   /* the idle task */
	BPFS_OFF_OUT_FILTERED,	   /* outside -p/-t/command */
	BPFS_OFF_OUT_DEAD,	   /* an exiting task's last switch */
	BPFS_OFF_OUT_STARTED,	   /* a block started (in `offstart`) */
	BPFS_OFF_OUT_LOST_FULL,	   /* `offstart` full (--off-cpu-threads) */
	BPFS_OFF_OUT_NOWALK,	   /* started without stacks: walk budget */
	BPFS_OFF_OUT_REUSED,	   /* started with the thread's last stacks: walk
				    * budget spent, same user registers, system
				    * call and kind of wait as then */
	BPFS_OFF_OUT_REPLACED,	   /* started over a start never ended (one the
				    * start's iterator made as the thread was
				    * being switched in): that one is dropped */
	BPFS_OFF_IN,		   /* switch-ins that ended a block */
	BPFS_OFF_IN_SHORT,	   /* shorter than --off-cpu-min: not counted */
	BPFS_OFF_IN_SHORT_NS,	   /* their nanoseconds */
	BPFS_OFF_IN_COUNTED,	   /* added to the event's counts */
	BPFS_OFF_IN_COUNTED_NS,	   /* their nanoseconds */
	BPFS_OFF_IN_UNKNOWN,	   /* no start: a thread new since the run began
				    * (its first run), or one whose start was
				    * lost (OUT_LOST_FULL) */
	BPFS_OFF_END,		   /* blocks still open at the end: counted up
				    * to it, as IN_SHORT or IN_COUNTED */
	BPFS_OFF_END_NS,	   /* their nanoseconds */
	BPFS_OFF_CUT,		   /* parts of open blocks counted at a window's
				    * end (the agent), as IN_SHORT or
				    * IN_COUNTED; the block goes on */
	BPFS_OFF_BEFORE,	   /* threads found off the CPU at the start, and
				    * recorded */
	BPFS_OFF_BEFORE_LOST,	   /* found, not recorded: `offstart` full */
	BPFS_OFF_STAT_NR,
};

#endif
