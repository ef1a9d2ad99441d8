// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU time (--off-cpu, the event offcpu-time): at every switch-out of a
 * selected thread its kernel and user stacks are taken with the sampler's
 * walkers and stored in the sampler's stack map, and the start of the block
 * is kept in `offstart`; at its switch-in the time it spent off the CPU is
 * added to those stacks in the sampler's `counts` map, under the event's
 * index, as the CPU profile counts its samples (stream mode: one sample
 * record per block, stamped with its start). A block still open at the end
 * is counted by the loader up to the end; threads off the CPU when the run
 * begins are found by a task iterator, with the stacks they sleep in.
 *
 * The sampler's code is included for its maps and helpers, none of its
 * programs; the loader hands this object the sampler's maps by fd
 * (src/capture/offcpu.c), so the stack ids, counts, rings and record
 * numbers are one set. docs/design.md, "Off-CPU time".
 */
#define BPFS_SAMPLER_NO_PROGS
#include "sampler.bpf.c"

#include "bpfsampler/offcpu_abi.h"

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

/* Set by the loader before load; a section of its own, so that this
 * object's .rodata stays the sampler's (the loader hands it the sampler's
 * by fd, and checks that the two are laid out alike). */
const volatile __u32 off_event SEC(".rodata.offcpu") = 0;
const volatile __u64 off_min_ns SEC(".rodata.offcpu") = 0;
/* The walk budget per CPU: walks a second (0: no bound) and the burst. */
const volatile __u64 off_walk_rate SEC(".rodata.offcpu") = 0;
const volatile __u64 off_walk_burst SEC(".rodata.offcpu") = 1;
/* -C: only switch-outs on the CPUs marked in offcpus count (perf's
 * --off-cpu -C); a thread found blocked at the start, on the CPU it last
 * ran on. */
const volatile bool off_some_cpus SEC(".rodata.offcpu") = false;

/* One byte per possible CPU, 1: chosen. Sized and filled by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} offcpus SEC(".maps");

static __always_inline bool cpu_chosen(__u32 cpu)
{
	__u8 *on;

	if (!off_some_cpus)
		return true;
	on = bpf_map_lookup_elem(&offcpus, &cpu);
	return on && *on;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BPFS_OFF_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} offstats SEC(".maps");

/* Threads off the CPU, by tid. Preallocated: inserted with the run queue
 * locked, where an allocation must not be attempted. Sized by the loader
 * (--off-cpu-threads). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpfs_off_start);
} offstart SEC(".maps");

/* A token bucket per CPU, in units of 1e-9 walk: a walk costs 1e9. */
struct walk_budget {
	__u64 last_ns;
	__u64 tokens;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_budget);
} offbudget SEC(".maps");

/* Each thread's last walked stacks and the user registers and system call
 * it left the CPU with: once the walk budget is spent, a switch-out with
 * the same registers, call and kind of wait takes these stacks again (a
 * thread blocking in one place again and again: a storm) instead of none.
 * LRU, preallocated; sized as `offstart`. */
struct off_last {
	__u64 ip, sp, orig_ax;
	__u64 kstack_id, ustack_id;
	__u32 flags; /* the key's, as walked */
	__u32 pad;
};

/* One for each kind of wait of a thread: a thread preempted now and then
 * keeps the stacks of its usual sleep. */
struct off_last_key {
	__u32 tid;
	__u32 kind; /* OFF_KIND bits of the key */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, struct off_last_key);
	__type(value, struct off_last);
} offlast SEC(".maps");

/* Per-CPU counters. The iterators run preemptible (migration off only), so
 * the scheduler's path may run on their CPU in the middle of an update: an
 * uncontended atomic add, a few ns, keeps the identities exact. */
static __always_inline void off_add(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&offstats, &which);

	if (v)
		__sync_fetch_and_add(v, n);
}

#define WALK_COST 1000000000ULL

/* Whether this CPU may walk one more pair of stacks now. */
static __always_inline bool walk_allowed(__u64 now)
{
	__u64 cap = off_walk_burst * WALK_COST, dt;
	struct walk_budget *b;
	__u32 zero = 0;

	if (!off_walk_rate)
		return true;
	b = bpf_map_lookup_elem(&offbudget, &zero);
	if (!b)
		return true;
	dt = now - b->last_ns;
	b->last_ns = now;
	if (dt > WALK_COST) /* a second refills any bucket */
		dt = WALK_COST;
	b->tokens += dt * off_walk_rate;
	if (b->tokens > cap)
		b->tokens = cap;
	if (b->tokens < WALK_COST)
		return false;
	b->tokens -= WALK_COST;
	return true;
}

/* task->__state, named state before Linux 5.14 (commit 2f064a59a11f). */
struct task_struct___pre514 {
	long state;
};

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* The current thread's user stack, from the registers it entered the
 * kernel with: it is switching out, so it is in the kernel. CPython's
 * frames as in a sample (the thread is current: its memory is readable). */
static __always_inline void off_user_stack(struct task_struct *task, struct bpfs_stack *seg,
					   struct bpfs_count_key *key)
{
	const struct bpfs_unwind_proc *proc = unwind_proc(key->pid);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct walk w = {};
	struct ustack *st;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&uscratch, &zero);
	w.win = bpf_map_lookup_elem(&uwindow, &zero);
	if (!st || !w.win)
		return;
	w.st = st;
	w.py = python_begin(key->pid, &w.pyc);
	walk_from(st, regs->ip, regs->bp, regs->sp, max_depth);
	user_walk(&w, proc, URD_IRQ);
	if (w.py)
		python_tail(st, w.py, w.pyc);
	user_walk_unchecked(st, proc);
	user_walk_marks(st, &key->flags);
	key->ustack_id = store_walk(st, seg, 0, true);
}

/* Both stacks of the thread switching out (current), into key. A stack
 * that cannot be stored is counted as the sampler counts it (the event's
 * LOST_* bucket) and left out; the block's time is still counted. */
static __always_inline void off_stacks(void *ctx, struct task_struct *task,
				       struct bpfs_count_key *key)
{
	struct bpfs_stack *seg;
	__u32 zero = 0;

	seg = bpf_map_lookup_elem(&segscratch, &zero);
	if (!seg)
		return;
	/* the program and bpf_trace_run4 are the innermost two frames: the
	 * stack starts in __schedule */
	if (collect_kernel)
		take_kernel_stack(ctx, seg, &key->kstack_id, &key->flags, false, 2);
	if (!task->mm)
		key->flags |= BPFS_F_KTHREAD;
	else if (collect_user)
		off_user_stack(task, seg, key);
}

#define OFF_KIND (BPFS_F_OFF_WAIT | BPFS_F_OFF_PREEMPTED)

static __always_inline void remember_stacks(struct task_struct *task,
					    const struct bpfs_count_key *key, struct off_last *l)
{
	struct off_last_key k = { key->tid, key->flags & OFF_KIND };
	struct pt_regs *regs;

	if (!task->mm)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	l->ip = regs->ip;
	l->sp = regs->sp;
	l->orig_ax = regs->orig_ax;
	l->kstack_id = key->kstack_id;
	l->ustack_id = key->ustack_id;
	l->flags = key->flags;
	l->pad = 0;
	bpf_map_update_elem(&offlast, &k, l, BPF_ANY);
}

/* The thread's last stacks, when it leaves from where it left then. */
static __always_inline bool reuse_stacks(struct task_struct *task, struct bpfs_count_key *key)
{
	struct off_last_key k = { key->tid, key->flags & OFF_KIND };
	struct off_last *l;
	struct pt_regs *regs;

	if (!task->mm)
		return false;
	l = bpf_map_lookup_elem(&offlast, &k);
	if (!l)
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (l->ip != regs->ip || l->sp != regs->sp || l->orig_ax != regs->orig_ax)
		return false;
	key->kstack_id = l->kstack_id;
	key->ustack_id = l->ustack_id;
	key->flags = l->flags;
	return true;
}

static __always_inline void start_from_key(struct bpfs_off_start *s,
					   const struct bpfs_count_key *k, __u64 t)
{
	s->t_out = t;
	s->kstack_id = k->kstack_id;
	s->ustack_id = k->ustack_id;
	s->pid = k->pid;
	s->flags = k->flags;
	s->map_gen = k->map_gen;
	s->pad = 0;
	__builtin_memcpy(s->comm, k->comm, sizeof(s->comm));
}

/* The switch-out's key and start, per CPU rather than on the BPF stack:
 * the 6.1 verifier caps the frames of a call chain at 512 bytes, and the
 * switch-out's walk calls down to CPython's frame reader. The scheduler's
 * path does not nest on a CPU. */
struct out_scratch {
	struct bpfs_count_key key;
	struct bpfs_off_start s;
	struct off_last last;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct out_scratch);
} offscratch SEC(".maps");

static __always_inline void switch_out(void *ctx, bool preempt)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tid = task->pid, pid = task->tgid, state, zero = 0;
	struct bpfs_count_key *key;
	struct bpfs_off_start *s;
	struct out_scratch *sc;
	__u64 now;
	long err;

	off_add(BPFS_OFF_OUT, 1);
	if (!tid) {
		off_add(BPFS_OFF_OUT_IDLE, 1);
		return;
	}
	state = task_state(task);
	if (state & TASK_DEAD) {
		off_add(BPFS_OFF_OUT_DEAD, 1);
		return;
	}
	if (!selected(pid, tid) || !cpu_chosen(bpf_get_smp_processor_id())) {
		off_add(BPFS_OFF_OUT_FILTERED, 1);
		return;
	}
	sc = bpf_map_lookup_elem(&offscratch, &zero);
	if (!sc) { /* cannot happen (one entry per CPU); counted as a loss */
		off_add(BPFS_OFF_OUT_LOST_FULL, 1);
		return;
	}
	key = &sc->key;
	s = &sc->s;
	__builtin_memset(key, 0, sizeof(*key));
	now = bpf_ktime_get_ns();
	key->pid = pid;
	key->tid = tid;
	key->event = off_event;
	/* a blocked task leaves with a sleeping state; one that leaves
	 * runnable (preempted, yielding) only waits for a CPU */
	key->flags = preempt || state == TASK_RUNNING ? BPFS_F_OFF_PREEMPTED : BPFS_F_OFF_WAIT;
	*(__u64 *)key->comm = *(volatile __u64 *)task->comm;
	*(__u64 *)&key->comm[8] = *(volatile __u64 *)&task->comm[8];
	if (track_maps)
		key->map_gen = map_gen_of(pid);
	announce_process(key, false);
	if (walk_allowed(now)) {
		off_stacks(ctx, task, key);
		remember_stacks(task, key, &sc->last);
	} else if (reuse_stacks(task, key)) {
		off_add(BPFS_OFF_OUT_REUSED, 1);
	} else {
		key->flags |= BPFS_F_OFF_NOWALK;
		off_add(BPFS_OFF_OUT_NOWALK, 1);
	}
	start_from_key(s, key, now);
	err = bpf_map_update_elem(&offstart, &tid, s, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* a start the switch-in never ended: the iterator's, made
		 * as the thread was being switched in (on_cpu not set yet) */
		off_add(BPFS_OFF_OUT_REPLACED, 1);
		err = bpf_map_update_elem(&offstart, &tid, s, BPF_ANY);
	}
	off_add(err ? BPFS_OFF_OUT_LOST_FULL : BPFS_OFF_OUT_STARTED, 1);
}

/* A block of len ns that began at t_out, into the event's counts (or one
 * sample record in stream mode). */
static __always_inline void count_block(const struct bpfs_off_start *s, __u32 tid, __u64 len)
{
	struct bpfs_count_key key = {
		.pid = s->pid,
		.tid = tid,
		.kstack_id = s->kstack_id,
		.ustack_id = s->ustack_id,
		.flags = s->flags,
		.event = off_event,
		.map_gen = s->map_gen,
	};

	__builtin_memcpy(key.comm, s->comm, sizeof(key.comm));
	stat_inc_ev(off_event, BPFS_STAT_TAKEN);
	if (mode == BPFS_MODE_STREAM) {
		if (send_sample_at(&key, len, s->t_out, false))
			stat_inc_ev(off_event, BPFS_STAT_STREAMED);
		else
			stat_inc_ev(off_event, BPFS_STAT_LOST_RING_FULL);
		return;
	}
	count_sample(&key, len, false, COUNT_SHARED, false);
}

/* A block that ended (or the run did) at now: counted unless short. */
static __always_inline void end_block(const struct bpfs_off_start *s, __u32 tid, __u64 now)
{
	__u64 len = now > s->t_out ? now - s->t_out : 0;

	if (len < off_min_ns) {
		off_add(BPFS_OFF_IN_SHORT, 1);
		off_add(BPFS_OFF_IN_SHORT_NS, len);
		return;
	}
	off_add(BPFS_OFF_IN_COUNTED, 1);
	off_add(BPFS_OFF_IN_COUNTED_NS, len);
	count_block(s, tid, len);
}

/* Not inlined: its frame (a start and a count's key and value) is its
 * own, not added to the one the switch-out's walk calls down from (the 6.1
 * verifier caps the frames of a call chain at 512 bytes, and the walk's
 * chain reaches CPython's frame reader). */
static __noinline int switch_in(__u32 tid)
{
	struct bpfs_off_start *p, s;
	__u64 now, t;

	if (!tid)
		return 0;
	p = bpf_map_lookup_elem(&offstart, &tid);
	if (!p) {
		off_add(BPFS_OFF_IN_UNKNOWN, 1);
		return 0;
	}
	now = bpf_ktime_get_ns();
	/* exchanged, not read: a window's cut (off_cut) may move the start
	 * on another CPU now, and each nanosecond is counted once */
	t = __sync_lock_test_and_set(&p->t_out, now);
	s = *p;
	s.t_out = t;
	bpf_map_delete_elem(&offstart, &tid);
	off_add(BPFS_OFF_IN, 1);
	end_block(&s, tid, now);
	return 0;
}

/* The BTF tracepoint (5.5+): prev is current. */
SEC("tp_btf/sched_switch")
int BPF_PROG(off_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	switch_out(ctx, preempt);
	switch_in(next->pid);
	return 0;
}

/* The raw tracepoint, where the BTF one cannot attach: the arguments are
 * plain words, read through probe reads. */
SEC("raw_tp/sched_switch")
int BPF_PROG(off_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	switch_out(ctx, preempt);
	switch_in(BPF_CORE_READ(next, pid));
	return 0;
}

/* A blocked thread's user stack, from the registers it entered the kernel
 * with, read from its own memory (bpf_copy_from_user_task): the walk of
 * the interrupt, without CPython's frames (python.bpf.h reads only the
 * current thread's memory). */
static __always_inline void before_user_stack(struct task_struct *task, struct taskwalk *tw,
					      struct bpfs_count_key *key)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct walk w = { .st = &tw->st, .win = &tw->win, .task = task };
	const struct bpfs_unwind_proc *proc = unwind_proc(key->pid);

	walk_from(&tw->st, regs->ip, regs->bp, regs->sp, max_depth);
	user_walk(&w, proc, URD_TASK);
	user_walk_unchecked(&tw->st, proc);
	user_walk_marks(&tw->st, &key->flags);
	key->ustack_id = store_walk(&tw->st, &tw->seg, SEG_SRC_TASKWALK, true);
}

/*
 * A thread found off the CPU by the loader's task iterator right after the
 * tracepoint is attached: a start at this moment, with the kernel stack it
 * sleeps in (bpf_get_task_stack reads a sleeping task's saved stack) and,
 * from the sleepable iterator, its user stack. The scratch is taskwalk's:
 * an iterator runs preemptible, and the tracepoint may run on its CPU
 * meanwhile. A start the tracepoint recorded meanwhile is kept
 * (BPF_NOEXIST).
 */
static __always_inline void before_start(struct task_struct *task, const bool user)
{
	struct bpfs_count_key key = {};
	struct bpfs_off_start s;
	struct taskwalk *tw;
	__u32 zero = 0, tid, state;
	long n, err;

	tid = task->pid;
	if (!tid || task->on_cpu || task->exit_state)
		return;
	state = task_state(task);
	if ((state & TASK_DEAD) || !selected(task->tgid, tid) ||
	    !cpu_chosen(task->thread_info.cpu))
		return;
	tw = bpf_map_lookup_elem(&taskwalk, &zero);
	if (!tw)
		return;
	key.pid = task->tgid;
	key.tid = tid;
	key.flags = BPFS_F_OFF_BEFORE |
		    (state == TASK_RUNNING ? BPFS_F_OFF_PREEMPTED : BPFS_F_OFF_WAIT);
	bpf_probe_read_kernel(key.comm, sizeof(key.comm), task->comm);
	if (track_maps)
		key.map_gen = map_gen_of(key.pid);
	n = collect_kernel ? bpf_get_task_stack(task, tw->seg.ips, sizeof(tw->seg.ips), 0) : 0;
	if (n > 0) {
		tw->seg.nr = n / sizeof(__u64);
		tw->seg.parent = 0;
		key.kstack_id = store_segment(SEG_SRC_TASKWALK, 0x6b, true, tw->seg.nr);
	}
	if (!task->mm)
		key.flags |= BPFS_F_KTHREAD;
	else if (collect_user && user)
		before_user_stack(task, tw, &key);
	else if (collect_user) /* -K asks for none: nothing to mark */
		key.flags |= BPFS_F_OFF_NOUSER;
	start_from_key(&s, &key, bpf_ktime_get_ns());
	err = bpf_map_update_elem(&offstart, &tid, &s, BPF_NOEXIST);
	if (!err)
		off_add(BPFS_OFF_BEFORE, 1);
	else if (err != -EEXIST) /* EEXIST: the tracepoint has its start */
		off_add(BPFS_OFF_BEFORE_LOST, 1);
}

/* Sleepable (5.18's bpf_copy_from_user_task): with the user stack. */
SEC("iter.s/task")
int off_before_user(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		before_start(task, true);
	return 0;
}

/* The fallback where that cannot load: the user stack is not taken. */
SEC("iter/task")
int off_before(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		before_start(task, false);
	return 0;
}

/*
 * Run once by the loader over every task after the tracepoint is detached
 * and before the sampler's last drain: every thread still off the CPU is
 * counted up to now, the end of the run, as if it woke then (the profile
 * holds every blocked nanosecond of the run, not only the blocks that
 * ended in it). A task iterator rather than one over the map's elements:
 * this kernel refuses the latter's programs (EPERM at load, no log). The
 * entries it ends go, so the loader counts what no task claimed.
 */
SEC("iter/task")
int off_end(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct bpfs_off_start *p, s;
	__u64 now = bpf_ktime_get_ns();
	__u32 tid;

	if (!task)
		return 0;
	tid = task->pid;
	p = bpf_map_lookup_elem(&offstart, &tid);
	if (!p)
		return 0;
	s = *p;
	bpf_map_delete_elem(&offstart, &tid);
	off_add(BPFS_OFF_END, 1);
	off_add(BPFS_OFF_END_NS, now > s.t_out ? now - s.t_out : 0);
	end_block(&s, tid, now);
	return 0;
}

/*
 * The agent's window ends (offcpu__cut): every block still open is counted
 * up to now and goes on from now, so each window holds the off-CPU time of
 * its own span (a stream record stamped with the part's start lands in the
 * window that is closing, the rest in the next). The start is exchanged, as
 * the switch-in exchanges it.
 */
SEC("iter/task")
int off_cut(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct bpfs_off_start *p, s;
	__u64 now = bpf_ktime_get_ns(), t;
	__u32 tid;

	if (!task)
		return 0;
	tid = task->pid;
	p = bpf_map_lookup_elem(&offstart, &tid);
	if (!p)
		return 0;
	t = __sync_lock_test_and_set(&p->t_out, now);
	s = *p;
	s.t_out = t;
	off_add(BPFS_OFF_CUT, 1);
	end_block(&s, tid, now);
	return 0;
}
