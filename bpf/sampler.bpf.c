// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling side of bpfsampler: one perf_event program attached to a
 * timer (or counter) event on every CPU. Each sample takes the kernel stack
 * and the user stack (frame pointers, bpf_get_stack), stores each distinct
 * stack once in `stacks` and counts (pid, tid, comm, stacks) in `counts`.
 *
 * Every sample ends in exactly one bucket of the `stats` map (kept, idle,
 * filtered or lost by reason), so the loader can prove nothing vanished.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpfsampler/sampler_abi.h"

#define EEXIST 17
#define E2BIG 7
#define EBUSY 16

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load (rodata is frozen, so the verifier sees
 * constants and prunes the unused branches). */
const volatile __u32 filter_mode = BPFS_FILTER_NONE;
const volatile bool include_idle = false;
const volatile bool collect_user = true;
const volatile bool collect_kernel = true;
const volatile __u32 max_depth = BPFS_MAX_STACK_DEPTH;
/* Tests narrow stack ids to a few bits to force collisions and check that
 * colliding stacks are never merged (--debug-stack-id-bits). */
const volatile __u64 stack_id_mask = ~0ULL;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BPFS_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Sized by the loader (--map-entries, --stack-entries). Preallocated: a
 * BPF_F_NO_PREALLOC map allocates from per-CPU caches refilled by irq_work,
 * and in interrupt/NMI context a burst of new stacks drains them and inserts
 * fail with -ENOMEM (seen here at start-up), losing samples. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct bpfs_count_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, struct bpfs_stack);
} stacks SEC(".maps");

/* The tgids or tids selected by -p/-t/-- command. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* A window of user stack memory, read with one helper call: walking frames
 * inside it costs no helper call per frame. */
#define UWIN_WORDS 64

struct uwin {
	__u64 w[UWIN_WORDS + 1]; /* +1: w[off + 1] with off masked to 63 */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uwin);
} uwindow SEC(".maps");

/* Stacks are built here, not on the 512-byte BPF stack. Two slots, since
 * store_stack compares the new stack with one already in the map. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpfs_stack);
} scratch SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1; /* per-CPU slot: no atomics needed */
}

static __always_inline __u64 mix64(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static __always_inline __u64 stack_hash(const struct bpfs_stack *s, __u64 seed)
{
	__u64 h = mix64(seed ^ s->nr);

	for (int i = 0; i < BPFS_MAX_STACK_DEPTH; i++) {
		if (i >= s->nr)
			break;
		h = (h ^ s->ips[i]) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return mix64(h);
}

static __always_inline bool stack_equal(const struct bpfs_stack *a, const struct bpfs_stack *b)
{
	if (a->nr != b->nr)
		return false;
	for (int i = 0; i < BPFS_MAX_STACK_DEPTH; i++) {
		if (i >= a->nr)
			break;
		if (a->ips[i] != b->ips[i])
			return false;
	}
	return true;
}

/*
 * Returns the id of stack s in `stacks`, inserting it when new, or 0 when it
 * could not be stored (the reason is counted). The id is a content hash; on a
 * hit the frames are compared, and a different stack in the slot sends us to
 * the next probe, so two stacks can never be merged (unlike a STACK_TRACE map
 * with BPF_F_REUSE_STACKID/FAST_STACK_CMP, or one that drops on -EEXIST).
 */
static __always_inline __u64 store_stack(const struct bpfs_stack *s, __u64 seed)
{
	__u64 id = stack_hash(s, seed) & stack_id_mask;

	for (int probe = 0; probe < BPFS_STACK_PROBES; probe++) {
		struct bpfs_stack *old;
		long err;

		if (id == 0)
			id = 1;
		old = bpf_map_lookup_elem(&stacks, &id);
		if (!old) {
			err = bpf_map_update_elem(&stacks, &id, s, BPF_NOEXIST);
			if (!err)
				return id;
			if (err == -EBUSY) {
				stat_inc(BPFS_STAT_LOST_BUSY);
				return 0;
			}
			if (err != -EEXIST) {
				stat_inc(BPFS_STAT_LOST_STACKS_FULL);
				return 0;
			}
			/* Another CPU inserted this id just now: compare. */
			old = bpf_map_lookup_elem(&stacks, &id);
			if (!old)
				continue;
		}
		if (stack_equal(old, s))
			return id;
		id = mix64(id + 0x9e3779b97f4a7c15ULL) & stack_id_mask;
	}
	stat_inc(BPFS_STAT_LOST_COLLISION);
	return 0;
}

/* Stores a stack just read into scratch: false when the sample must be
 * dropped (already counted). */
static __always_inline bool store_taken(struct bpfs_stack *s, bool user, __u64 *id, __u32 *flags)
{
	if (s->nr == 0)
		return true;
	if (s->nr >= max_depth) {
		stat_inc(user ? BPFS_STAT_USTACK_TRUNC : BPFS_STAT_KSTACK_TRUNC);
		*flags |= user ? BPFS_F_USTACK_TRUNC : BPFS_F_KSTACK_TRUNC;
	}
	*id = store_stack(s, user ? 0x75 : 0x6b);
	return *id != 0;
}

/* The kernel stack through the kernel's own unwinder. A stack that cannot
 * be read is not a drop: the sample is kept with *flags marking it. */
static __always_inline bool take_kernel_stack(void *ctx, struct bpfs_stack *s, __u64 *id,
					      __u32 *flags)
{
	__u32 size = max_depth * sizeof(__u64);
	long n;

	if (size > sizeof(s->ips))
		size = sizeof(s->ips);
	n = bpf_get_stack(ctx, s->ips, size, 0);
	if (n < 0) {
		stat_inc(BPFS_STAT_KSTACK_ERR);
		*flags |= BPFS_F_KSTACK_ERR;
		return true;
	}
	s->nr = n / sizeof(__u64);
	return store_taken(s, false, id, flags);
}

/*
 * The user stack, walked through frame pointers here rather than with
 * bpf_get_stack(BPF_F_USER_STACK). The kernel's walker accepts any frame
 * pointer below TASK_SIZE, so every chain that ends the ABI's way (rbp = 0
 * from _start) or in code built without frame pointers (rbp = garbage, as in
 * Debian's glibc) ends with a read that page-faults; with page faults
 * disabled that costs about 700 ns per sample on these VMs (1347 -> 668 ns
 * measured with bpf_stats). Here a frame pointer must be 8-byte aligned,
 * above the stack pointer, within MAX_STACK_SPAN of it, and rise from frame
 * to frame (which also rules out cycles), so the walk ends without touching
 * an unmapped page.
 */
#define MAX_STACK_SPAN (64ULL << 20)

/* Reads the window at fp: the whole window when it is mapped, else just
 * the one frame (the window may run past the top of the stack). Returns the
 * number of words read, 0 on a fault. */
static __always_inline __u32 read_window(struct uwin *win, __u64 fp)
{
	if (!bpf_probe_read_user(win->w, UWIN_WORDS * sizeof(__u64), (void *)fp))
		return UWIN_WORDS;
	if (!bpf_probe_read_user(win->w, 2 * sizeof(__u64), (void *)fp))
		return 2;
	return 0;
}

struct walk {
	struct bpfs_stack *s;
	struct uwin *win;
	__u64 fp, sp, base;
	__u32 nr, words;
	bool fault;
};

/* One frame per call, from bpf_loop: the verifier checks the body once
 * instead of once per unrolled iteration. Returns 1 to stop. */
static long walk_frame(__u64 i, void *data)
{
	struct walk *w = data;
	__u32 nr = w->nr;
	__u64 off, next, ret;

	if (nr >= max_depth || nr >= BPFS_MAX_STACK_DEPTH)
		return 1;
	if (w->fp < w->sp || w->fp - w->sp >= MAX_STACK_SPAN || (w->fp & 7))
		return 1;
	off = (w->fp - w->base) / 8;
	if (!w->words || w->fp < w->base || off + 1 >= w->words) {
		w->base = w->fp;
		off = 0;
		w->words = read_window(w->win, w->fp);
		if (!w->words) {
			w->fault = true;
			return 1;
		}
	}
	off &= UWIN_WORDS - 1; /* a no-op (off + 1 < words); bounds it for the verifier */
	next = w->win->w[off];
	ret = w->win->w[off + 1];
	if (!ret)
		return 1;
	w->s->ips[nr] = ret;
	w->nr = nr + 1;
	if (next <= w->fp)
		return 1;
	w->sp = w->fp;
	w->fp = next;
	return 0;
}

static __always_inline bool take_user_stack(struct bpf_perf_event_data *ctx,
					    struct bpfs_stack *s, __u64 *id, __u32 *flags)
{
	__u64 cs = *(volatile __u64 *)&ctx->regs.cs;
	struct walk w = { .s = s, .nr = 1 };
	__u32 zero = 0;

	w.win = bpf_map_lookup_elem(&uwindow, &zero);
	if (!w.win)
		return true;
	if (cs & 3) { /* interrupted in user mode: these are its registers */
		s->ips[0] = ctx->regs.ip;
		w.fp = ctx->regs.bp;
		w.sp = ctx->regs.sp;
	} else { /* in the kernel: the registers saved at kernel entry */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		s->ips[0] = BPF_CORE_READ(regs, ip);
		w.fp = BPF_CORE_READ(regs, bp);
		w.sp = BPF_CORE_READ(regs, sp);
	}
	bpf_loop(BPFS_MAX_STACK_DEPTH, walk_frame, &w, 0);
	if (w.fault) {
		stat_inc(BPFS_STAT_USTACK_ERR);
		*flags |= BPFS_F_USTACK_ERR;
	}
	s->nr = w.nr;
	return store_taken(s, true, id, flags);
}

static __always_inline bool selected(__u32 pid, __u32 tid)
{
	__u32 key;

	if (filter_mode == BPFS_FILTER_NONE)
		return true;
	key = filter_mode == BPFS_FILTER_TGID ? pid : tid;
	return bpf_map_lookup_elem(&filter, &key) != NULL;
}

static __always_inline void notify_new_key(const struct bpfs_count_key *key)
{
	struct bpfs_rec_new_key *rec;

	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		stat_inc(BPFS_STAT_NOTIFY_LOST);
		return;
	}
	rec->type = BPFS_REC_NEW_KEY;
	rec->pid = key->pid;
	rec->tid = key->tid;
	__builtin_memcpy(rec->comm, key->comm, sizeof(rec->comm));
	bpf_ringbuf_submit(rec, 0);
}

static __always_inline void count_sample(const struct bpfs_count_key *key)
{
	__u64 one = 1, *val;
	long err;

	val = bpf_map_lookup_elem(&counts, key);
	if (val) {
		__sync_fetch_and_add(val, 1);
		stat_inc(BPFS_STAT_KEPT);
		return;
	}
	err = bpf_map_update_elem(&counts, key, &one, BPF_NOEXIST);
	if (!err) {
		stat_inc(BPFS_STAT_KEPT);
		notify_new_key(key);
		return;
	}
	if (err == -EEXIST) {
		val = bpf_map_lookup_elem(&counts, key);
		if (val) {
			__sync_fetch_and_add(val, 1);
			stat_inc(BPFS_STAT_KEPT);
			return;
		}
	}
	stat_inc(err == -EBUSY ? BPFS_STAT_LOST_BUSY : BPFS_STAT_LOST_COUNTS_FULL);
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct bpfs_count_key key = {};
	struct task_struct *task;
	struct bpfs_stack *s;
	__u32 zero = 0;

	stat_inc(BPFS_STAT_TAKEN);
	if (tid == 0 && !include_idle) {
		stat_inc(BPFS_STAT_IDLE);
		return 0;
	}
	if (!selected(pid, tid)) {
		stat_inc(BPFS_STAT_FILTERED);
		return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0; /* cannot happen: a one-entry array */

	key.pid = pid;
	key.tid = tid;
	bpf_get_current_comm(key.comm, sizeof(key.comm));

	/* Interrupted in user mode there is no kernel stack: skip the helper,
	 * which costs ~250 ns even when it finds nothing. */
	if (collect_kernel && !(*(volatile __u64 *)&ctx->regs.cs & 3) &&
	    !take_kernel_stack(ctx, s, &key.kstack_id, &key.flags))
		return 0;

	task = bpf_get_current_task_btf();
	if (!task->mm)
		key.flags |= BPFS_F_KTHREAD; /* kernel thread: no user stack */
	else if (collect_user && !take_user_stack(ctx, s, &key.ustack_id, &key.flags))
		return 0;

	count_sample(&key);
	return 0;
}

/* With -- command: follow the command's children (threads share the tgid
 * and need nothing). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid, cpid = child->tgid;
	__u8 one = 1;

	if (ppid == cpid || !bpf_map_lookup_elem(&filter, &ppid))
		return 0;
	if (bpf_map_update_elem(&filter, &cpid, &one, BPF_ANY))
		stat_inc(BPFS_STAT_FOLLOW_FULL);
	return 0;
}
