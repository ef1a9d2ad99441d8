/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI between bpf/sampler.bpf.c and the loader. Only fixed-width fields,
 * enums and constants cross this boundary; both sides include this file, so a
 * change here rebuilds both (the Makefile tracks it for clang and gcc).
 * docs/design.md describes the records, the reassembly rules and the loss
 * model.
 */
#ifndef BPFSAMPLER_SAMPLER_ABI_H
#define BPFSAMPLER_SAMPLER_ABI_H

/* A stack is stored as a chain of segments of at most BPFS_SEG_FRAMES
 * frames: the segment holding the leaf names its parent (the next outer
 * segment), up to the root segment (parent 0). Segment boundaries are
 * counted from the root, so the outer parts of deep stacks are shared. The
 * kernel stack (bpf_get_stack, at most kernel.perf_event_max_stack = 127
 * frames) is always one segment. */
#define BPFS_SEG_FRAMES 127
#define BPFS_MAX_USER_DEPTH 1024 /* frame-pointer walk bound, --max-stack-depth */
#define BPFS_DEFAULT_DEPTH 1024
#define BPFS_COMM_LEN 16
/* Events sampled at once (-e a,b,...); each sample carries its index. */
#define BPFS_MAX_EVENTS 8

/* Segment ids are content hashes (frames + parent id) with open probing
 * and an exact comparison on every hit, so two different stacks never share
 * an id. 0 means "no stack". */
#define BPFS_STACK_PROBES 4

enum bpfs_mode {
	BPFS_MODE_AGGREGATE = 0, /* count in the `counts` map, spill to the rings */
	BPFS_MODE_STREAM = 1,	 /* one sample record per sample */
};

/* Counters kept per CPU in the `stats` map at event * BPFS_STAT_NR + stat:
 * every sample an event delivers lands in exactly one of KEPT, SPILLED,
 * STREAMED, DEFERRED, FIRST, IDLE, FILTERED or a LOST_* bucket of that event. The
 * counters from RECS_UNSENT on are not about one event: kept under event 0. */
enum bpfs_stat {
	BPFS_STAT_TAKEN = 0,	     /* program invocations */
	BPFS_STAT_KEPT,		     /* counted in the `counts` map */
	BPFS_STAT_SPILLED,	     /* `counts` full: sent as a sample record */
	BPFS_STAT_STREAMED,	     /* sent as a sample record (stream mode) */
	BPFS_STAT_DEFERRED,	     /* sent as a record whose user stack is
				      * completed at return to user space */
	BPFS_STAT_FIRST,	     /* aggregate mode: stored a new segment, so
				      * its key is new: sent as a sample record */
	BPFS_STAT_IDLE,		     /* pid 0 with idle excluded */
	BPFS_STAT_FILTERED,	     /* outside -p/-t/command */
	BPFS_STAT_LOST_COUNTS_FULL,  /* `counts` full and the ring too */
	BPFS_STAT_LOST_STACKS_FULL,  /* `stacks` map full (--stack-entries) */
	BPFS_STAT_LOST_COLLISION,    /* BPFS_STACK_PROBES slots held other stacks */
	BPFS_STAT_LOST_BUSY,	     /* map bucket locked (NMI re-entry), -EBUSY */
	BPFS_STAT_LOST_RING_FULL,    /* sample record not reserved: ring full */
	/* Not losses: the sample is kept with the stack marked incomplete. */
	BPFS_STAT_USTACK_ERR,	     /* user stack walk hit an unreadable page */
	BPFS_STAT_KSTACK_ERR,	     /* kernel stack unreadable */
	BPFS_STAT_USTACK_TRUNC,	     /* user stack hit --max-stack-depth */
	BPFS_STAT_KSTACK_TRUNC,	     /* kernel stack hit 127 frames */
	BPFS_STAT_USTACK_NOINFO,     /* user walk reached code it has no rule
				      * for (no table, no frame pointer) */
	BPFS_STAT_USTACK_BADFRAME,   /* user walk found a frame that cannot be
				      * (stack not rising, return address in no
				      * executable mapping) */
	BPFS_STAT_COMPLETIONS,	     /* user stacks walked at return to user space */
	BPFS_STAT_COMPLETION_ERR,    /* completion could not be scheduled or run */
	/* Records. Every record a CPU could not reserve is a gap in its seq. */
	BPFS_STAT_RECS_UNSENT,	     /* records of any type not reserved */
	BPFS_STAT_STACK_RECS_LOST,   /* of which stack records (kept in `stacks`) */
	BPFS_STAT_NOTIFY_LOST,	     /* new-key notification dropped */
	BPFS_STAT_FOLLOW_FULL,	     /* forked child not followed: `filter` full */
	BPFS_STAT_MAP_RECS_LOST,     /* exec record not reserved: a sample
				      * may be named after the older image */
	BPFS_STAT_RECS_AFTER_STOP,   /* record not numbered: the loader had
				      * stopped taking them (a completion or
				      * exec after the final drain) */
	BPFS_STAT_UFRAMES_FP,	     /* not samples: user frames stepped by frame
				      * pointers in code built with them
				      * (BPFS_UMAP_FP), no row looked up */
	BPFS_STAT_ROW_SEARCHES,      /* not samples: rows the interrupt's walk
				      * searched, its row cache missing them */
	BPFS_STAT_TAILS_TAKEN,	     /* user walks whose outer frames came from
				      * the CPU's tail memo, no row looked up */
	BPFS_STAT_SEGS_STORED,	     /* not samples: segments new to `stacks`,
				      * under event 0 (the loader empties the
				      * map when half of it is new) */
	BPFS_STAT_NR,
};

/* Flags of a sample (count key and sample record). */
enum bpfs_sample_flags {
	BPFS_F_USTACK_ERR = 1 << 0,
	BPFS_F_KSTACK_ERR = 1 << 1,
	BPFS_F_USTACK_TRUNC = 1 << 2,
	BPFS_F_KSTACK_TRUNC = 1 << 3,
	BPFS_F_KTHREAD = 1 << 4, /* no user address space */
	/* The interrupt-time walk stopped early (fault or --interrupt-depth);
	 * a completion record for this thread brings the whole user stack. */
	BPFS_F_USTACK_PENDING = 1 << 5,
	/* Why a user stack walked through unwind tables ended early (besides
	 * _ERR, a read fault, and _TRUNC, the depth limit). */
	BPFS_F_USTACK_NOINFO = 1 << 6,
	BPFS_F_USTACK_BADFRAME = 1 << 7,
	/* Walked by frame pointers alone, with no table or mapping check
	 * (--unwind fp, or a process whose tables are not loaded yet): the
	 * loader ends the stack at a return address in no mapping. */
	BPFS_F_USTACK_UNCHECKED = 1 << 8,
};

/* What -p/-t/-- command select; the `filter` map holds the ids. */
enum bpfs_filter_mode {
	BPFS_FILTER_NONE = 0,
	BPFS_FILTER_TGID,
	BPFS_FILTER_TID,
};

/* The value of a `filter` entry. */
enum bpfs_filter_state {
	BPFS_FILTER_SELECTED = 1,   /* its samples are kept */
	BPFS_FILTER_AFTER_EXEC = 2, /* kept once it has exec'd (-- command) */
};

struct bpfs_count_key {
	__u32 pid; /* tgid */
	__u32 tid;
	__u64 kstack_id;
	__u64 ustack_id;
	char comm[BPFS_COMM_LEN];
	__u32 flags; /* enum bpfs_sample_flags */
	__u32 event; /* index of the perf event (-e order) */
	/* The process's mapping generation at the sample: the gen of its
	 * newest executable file mapping (BPFS_REC_MAP), 0 when none was seen
	 * since sampling started. The loader names the sample's frames after
	 * the mappings that were live then, not after what is mapped at the
	 * end (dlclose + dlopen at the same address, exec). */
	__u32 map_gen;
	__u32 pad;
};

struct bpfs_count_val {
	__u64 samples;
	__u64 period; /* sum of the sample periods: events, for --weight period */
};

/* One segment of a stack; ips[0] is the innermost frame of the segment. */
struct bpfs_stack {
	__u64 parent; /* next outer segment, 0 at the root */
	__u32 nr;
	__u32 pad;
	__u64 ips[BPFS_SEG_FRAMES];
};

/* A segment of at most BPFS_SEG_SMALL frames is kept in `stacks_s`, whose
 * elements are a quarter of `stacks`' (an insert writes the whole value),
 * under an id with BPFS_STACK_ID_SMALL set; its layout is bpfs_stack's
 * first part. The hash part of every id is below that bit. */
#define BPFS_SEG_SMALL 31
#define BPFS_STACK_ID_SMALL (1ULL << 63)

struct bpfs_stack_small {
	__u64 parent;
	__u32 nr;
	__u32 pad;
	__u64 ips[BPFS_SEG_SMALL];
};

/* Records on the per-CPU rings (and the `events` ring); each starts with
 * this header. seq counts every record the CPU tried to send, so a gap in
 * seq is a record that was not reserved (and counted in `stats`). */
enum bpfs_rec_type {
	BPFS_REC_NEW_KEY = 1, /* first sample of a process (pid, comm): read its
			       * maps now, it may live only milliseconds */
	BPFS_REC_SAMPLE = 2,  /* the partial record: one sample */
	BPFS_REC_STACK = 3,   /* the continuation: one new stack segment */
	BPFS_REC_COMPLETE = 4, /* a thread's whole user stack, walked at return
				* to user space: completes its pending samples */
	BPFS_REC_MAP = 5,     /* a process exec'd: its mappings before this
			       * gen are gone */
};

struct bpfs_rec_hdr {
	__u32 type;
	__u32 cpu;
	__u64 seq;
};

struct bpfs_rec_new_key {
	struct bpfs_rec_hdr hdr; /* BPFS_REC_NEW_KEY */
	__u32 pid;
	__u32 tid;
	__u32 ppid; /* a child forked without exec maps what its parent did */
	__u32 pad;
	__u64 mm;   /* address-space identity: a new one is an exec (thread
		     * names differ too, so comm cannot tell) */
	char comm[BPFS_COMM_LEN];
};

struct bpfs_rec_sample {
	struct bpfs_rec_hdr hdr; /* BPFS_REC_SAMPLE */
	__u64 time_ns;		 /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u64 period;		 /* this sample's period (events or ns) */
	__u64 kstack_id;	 /* segment ids; 0: none */
	__u64 ustack_id;
	__u32 pid;
	__u32 tid;
	__u32 event;
	__u32 flags; /* enum bpfs_sample_flags */
	char comm[BPFS_COMM_LEN];
	__u32 map_gen; /* as in bpfs_count_key */
	__u32 pad;
};

struct bpfs_rec_complete {
	struct bpfs_rec_hdr hdr; /* BPFS_REC_COMPLETE */
	__u64 time_ns;		 /* when the walk ran: after its samples */
	__u64 ustack_id;	 /* 0: the walk failed too */
	__u32 pid;
	__u32 tid;
	__u32 flags; /* BPFS_F_USTACK_TRUNC / _ERR of the completed walk */
	__u32 pad;
};

/* Sent when a process execs (BPFS_MAP_F_EXEC: every mapping before this
 * gen is gone), with a wake-up: the loader reads the new image's maps.
 * File mappings come from perf's side-band mmap2 records, which the loader
 * reads itself (src/capture/sideband.c) and gives gens from the same
 * counter (map_gen_seq), so gens only rise; the process's later samples
 * carry the newest. */
enum bpfs_map_flags {
	BPFS_MAP_F_EXEC = 1 << 0, /* start..ino unset; mm is the new image's */
};

struct bpfs_rec_map {
	struct bpfs_rec_hdr hdr; /* BPFS_REC_MAP */
	__u64 time_ns;
	__u64 start;
	__u64 end;
	__u64 pgoff; /* file offset of start, bytes */
	__u64 dev;   /* the kernel's dev_t: major << 20 | minor */
	__u64 ino;
	__u64 mm;    /* address-space identity, as in bpfs_rec_new_key */
	__u32 pid;
	__u32 gen;
	__u32 flags; /* enum bpfs_map_flags */
	__u32 pad;
};

/* Sized by its depth: the record ends after seg.ips[seg.nr - 1], so it is
 * BPFS_REC_STACK_SIZE(seg.nr) bytes (40 + 8 per frame), not the whole
 * struct (1056). Typical segments are 5-30 frames; a fixed-size record was
 * most of the ring traffic in stream mode (issue #13). A record shorter
 * than its nr asks for, or with nr over BPFS_SEG_FRAMES, is malformed. */
struct bpfs_rec_stack {
	struct bpfs_rec_hdr hdr; /* BPFS_REC_STACK */
	__u64 id;
	struct bpfs_stack seg;	/* only seg.nr frames are sent */
};

#define BPFS_REC_STACK_HEAD __builtin_offsetof(struct bpfs_rec_stack, seg.ips)
#define BPFS_REC_STACK_SIZE(nr) (BPFS_REC_STACK_HEAD + (nr) * sizeof(__u64))

/*
 * Unwind tables (docs/design.md, "Unwinding without frame pointers"). The
 * loader turns a file's .eh_frame into rows sorted by pc (the file's own
 * virtual addresses), each valid from pc to the next row's pc, and writes
 * them into the `unwind_rows` array; each process's executable mappings go
 * into `unwind_procs` with the slice of rows of their file. x86_64 only.
 */
enum bpfs_cfa_type {
	BPFS_CFA_NONE = 0, /* no unwind info here, or a rule the walk cannot
			    * follow (expressions, other registers) */
	BPFS_CFA_RSP,	   /* CFA = rsp + cfa_off */
	BPFS_CFA_RBP,	   /* CFA = rbp + cfa_off */
	BPFS_CFA_PLT,	   /* the PLT's expression: CFA = rsp + 8, + 8 more
			    * when (rip & 15) >= cfa_off */
	BPFS_CFA_END,	   /* the return address is undefined: the outermost
			    * frame (_start, clone) */
};

enum bpfs_rbp_type {
	BPFS_RBP_SAME = 0, /* rbp is the caller's (or not recoverable) */
	BPFS_RBP_CFA,	   /* the caller's rbp is saved at CFA + rbp_off * 8 */
};

/* The return address is always at CFA - 8 (rows where it is not are NONE). */
struct bpfs_unwind_row {
	__u64 pc;
	__s32 cfa_off;
	__s16 rbp_off; /* in units of 8 bytes */
	__u8 cfa_type; /* enum bpfs_cfa_type */
	__u8 rbp_type; /* enum bpfs_rbp_type */
};

/* One executable mapping of a process: file address = address - bias.
 * row_nr 0: no table (anonymous or JIT code, a file without .eh_frame):
 * the walk takes a frame-pointer step there. */
struct bpfs_unwind_map {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 row_first;
	__u32 row_nr;
	__u32 table_id; /* never reused: keys the BPF side's row cache, which
			 * must not hand out a released table's rows */
	__u32 flags;	/* enum bpfs_umap_flags */
};

enum bpfs_umap_flags {
	/* Every row of the table is one a frame-pointer step walks alike at
	 * a return address (code built with frame pointers): the walk takes
	 * that step there, without a row lookup, past the innermost frame
	 * (which may be in a prologue: that one is looked up). */
	BPFS_UMAP_FP = 1,
};

/* Row-cache slots per CPU (bpf/unwind.bpf.h's unwind_cache, sized by the
 * loader for the possible CPUs; 40 bytes each). */
#define BPFS_UNWIND_CACHE_SLOTS 4096

/* Executable mappings kept per process; the loader counts the ones left
 * out (a return address in them ends the walk as a bad frame). */
#define BPFS_UNWIND_MAPS 128

struct bpfs_unwind_proc {
	__u32 nr; /* mappings in m, sorted by start */
	__u32 pad;
	struct bpfs_unwind_map m[BPFS_UNWIND_MAPS];
};

enum bpfs_unwind_mode {
	BPFS_UNWIND_FP = 0,   /* frame pointers only */
	BPFS_UNWIND_DWARF,    /* tables only: code without one ends the walk
			       * ([truncated: no unwind info]) */
	BPFS_UNWIND_AUTO,     /* tables where they exist, frame pointers
			       * elsewhere (the default) */
};

#endif
