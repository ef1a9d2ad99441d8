// SPDX-License-Identifier: GPL-2.0
/* Reassembly of synthetic record streams: CPUs interleaved, stack records
 * before and after their samples, lost records, duplicate ids, truncated and
 * unknown records, stack records sized by their depth, multi-segment stacks
 * and cycles. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "stream.h"
#include "unit.h"

static struct bpfs_rec_sample sample(uint32_t cpu, uint64_t seq, uint64_t t, uint64_t ustack,
				     uint32_t tid)
{
	struct bpfs_rec_sample r = {
		.hdr = { BPFS_REC_SAMPLE, cpu, seq },
		.time_ns = t,
		.period = 250000,
		.ustack_id = ustack,
		.pid = 100,
		.tid = tid,
	};

	memcpy(r.comm, "app", 4);
	return r;
}

static struct bpfs_rec_stack *stack_rec(uint32_t cpu, uint64_t seq, uint64_t id, uint64_t parent,
					uint32_t nr, uint64_t first_ip)
{
	static struct bpfs_rec_stack r;

	memset(&r, 0, sizeof(r));
	r.hdr = (struct bpfs_rec_hdr){ BPFS_REC_STACK, cpu, seq };
	r.id = id;
	r.seg.parent = parent;
	r.seg.nr = nr;
	for (uint32_t i = 0; i < nr; i++)
		r.seg.ips[i] = first_ip + i;
	return &r;
}

static struct stream *new_stream(bool keep)
{
	struct stream *st = NULL;

	CHECK(stream__new(&(struct stream_opts){ .keep_samples = keep }, &st) == 0, "new");
	return st;
}

static void test_interleaved_cpus_and_gaps(void)
{
	struct stream *st = new_stream(false);
	struct stream_stats ss;
	struct bpfs_rec_sample r;

	r = sample(0, 1, 10, 0, 1);
	stream__handle(st, &r, sizeof(r));
	r = sample(1, 1, 11, 0, 2);
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 2, 12, 0, 1);
	stream__handle(st, &r, sizeof(r));
	r = sample(1, 5, 13, 0, 2); /* 2, 3, 4 lost on CPU 1 */
	stream__handle(st, &r, sizeof(r));
	stream__stats(st, &ss);
	CHECK(ss.samples == 4 && ss.gaps == 3, "samples %llu gaps %llu",
	      (unsigned long long)ss.samples, (unsigned long long)ss.gaps);
	/* CPU 0 spent seqs up to 7: 3..7 never arrived. */
	CHECK(stream__close_cpu(st, 0, 7) == 0, "close");
	CHECK(stream__close_cpu(st, 1, 5) == 0, "close, nothing after");
	stream__stats(st, &ss);
	CHECK(ss.gaps == 3 + 5, "trailing gaps counted: %llu", (unsigned long long)ss.gaps);
	r = sample(0, 1, 14, 0, 1); /* replayed: older than seen */
	stream__handle(st, &r, sizeof(r));
	stream__stats(st, &ss);
	CHECK(ss.reordered == 1, "reordered %llu", (unsigned long long)ss.reordered);
	stream__free(st);
}

/* A fork or completion program takes number 2, an interrupt's sample takes
 * 3 and reaches the ring first: 2 arrives late and is not a gap. */
static void test_nested_record_arrives_late(void)
{
	struct stream *st = new_stream(false);
	struct stream_stats ss;
	struct bpfs_rec_sample r;
	uint64_t seq[] = { 1, 3, 2, 4, 7, 5, 9, 8 }; /* 6 never comes */

	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		r = sample(0, seq[i], 10 + i, 0, 1);
		stream__handle(st, &r, sizeof(r));
	}
	stream__stats(st, &ss);
	CHECK(ss.gaps == 1 && ss.late == 3 && ss.reordered == 0,
	      "gaps %llu late %llu reordered %llu", (unsigned long long)ss.gaps,
	      (unsigned long long)ss.late, (unsigned long long)ss.reordered);
	r = sample(0, 3, 20, 0, 1); /* a number seen before is a bug, not late */
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 6 + 100, 21, 0, 1); /* 10..105 missing */
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 6, 22, 0, 1); /* 6 is now beyond the window */
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 100, 23, 0, 1); /* still within it */
	stream__handle(st, &r, sizeof(r));
	stream__stats(st, &ss);
	CHECK(ss.reordered == 2 && ss.late == 4 && ss.gaps == 1 + 96 - 1,
	      "reordered %llu late %llu gaps %llu", (unsigned long long)ss.reordered,
	      (unsigned long long)ss.late, (unsigned long long)ss.gaps);
	/* the CPU spent 108: 107 and 108 never arrived */
	CHECK(stream__close_cpu(st, 0, 108) == 0, "close");
	stream__stats(st, &ss);
	CHECK(ss.gaps == 1 + 95 + 2, "gaps after close %llu", (unsigned long long)ss.gaps);
	stream__free(st);
}

static int fallback_none(void *ctx, uint64_t id, struct bpfs_stack *out)
{
	return -ENOENT;
}

static int fallback_map(void *ctx, uint64_t id, struct bpfs_stack *out)
{
	if (id != 77)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->nr = 2;
	out->ips[0] = 0x700;
	out->ips[1] = 0x701;
	(*(int *)ctx)++;
	return 0;
}

static void test_stack_before_and_after(void)
{
	struct stream *st = new_stream(false);
	struct bpfs_rec_sample r;
	uint64_t ips[16];
	bool missing;
	size_t n;

	r = sample(0, 1, 10, 42, 1); /* its stack arrives later, on CPU 1 */
	stream__handle(st, &r, sizeof(r));
	stream__handle(st, stack_rec(1, 1, 42, 0, 3, 0x400), sizeof(struct bpfs_rec_stack));
	r = sample(0, 2, 11, 42, 1); /* and one after it */
	stream__handle(st, &r, sizeof(r));
	n = stream__unwind(st, 42, fallback_none, NULL, ips, 16, &missing);
	CHECK(n == 3 && !missing && ips[0] == 0x400 && ips[2] == 0x402, "n %zu", n);
	stream__free(st);
}

static void test_lost_stack_record(void)
{
	struct stream *st = new_stream(false);
	uint64_t ips[16];
	bool missing;
	int calls = 0;
	size_t n;

	/* never sent: found through the fallback (the BPF map), once */
	n = stream__unwind(st, 77, fallback_map, &calls, ips, 16, &missing);
	CHECK(n == 2 && !missing && ips[1] == 0x701, "fallback used: n %zu", n);
	n = stream__unwind(st, 77, fallback_map, &calls, ips, 16, &missing);
	CHECK(n == 2 && calls == 1, "fallback result cached: %d calls", calls);
	/* nowhere: reported missing */
	n = stream__unwind(st, 78, fallback_map, &calls, ips, 16, &missing);
	CHECK(n == 0 && missing, "missing segment reported");
	stream__free(st);
}

static void test_duplicates(void)
{
	struct stream *st = new_stream(false);
	struct stream_stats ss;
	uint64_t ips[16];
	bool missing;

	stream__handle(st, stack_rec(0, 1, 5, 0, 2, 0x100), sizeof(struct bpfs_rec_stack));
	stream__handle(st, stack_rec(1, 1, 5, 0, 2, 0x100), sizeof(struct bpfs_rec_stack));
	stream__handle(st, stack_rec(1, 2, 5, 0, 2, 0x900), sizeof(struct bpfs_rec_stack));
	stream__stats(st, &ss);
	CHECK(ss.duplicate_stacks == 2 && ss.conflicting_stacks == 1, "dup %llu conflict %llu",
	      (unsigned long long)ss.duplicate_stacks, (unsigned long long)ss.conflicting_stacks);
	stream__unwind(st, 5, NULL, NULL, ips, 16, &missing);
	CHECK(ips[0] == 0x100, "the first one is kept");
	stream__free(st);
}

/* The BPF stacks map emptied while sampling (sampler__clear_stacks): what
 * it held is kept, unless a record brought the same id since the last
 * emptying; after an emptying, the map's segment replaces an older copy. */
static void test_keep_segments_of_emptied_map(void)
{
	struct stream *st = new_stream(false);
	struct stream_stats ss;
	uint64_t ips[16];
	bool missing;
	size_t n;

	/* 9 came as a record; 8 never did (aggregate mode, or lost) */
	stream__handle(st, stack_rec(0, 1, 9, 0, 2, 0x900), sizeof(struct bpfs_rec_stack));
	CHECK(stream__keep_segment(st, 9, &stack_rec(0, 0, 9, 0, 2, 0x999)->seg) == 0, "keep 9");
	CHECK(stream__keep_segment(st, 8, &stack_rec(0, 0, 8, 9, 3, 0x800)->seg) == 0, "keep 8");
	stream__stacks_cleared(st);
	n = stream__unwind(st, 8, fallback_none, NULL, ips, 16, &missing);
	CHECK(n == 5 && !missing && ips[0] == 0x800 && ips[3] == 0x900,
	      "kept segment found with its parent, no fallback: n %zu", n);
	stream__stats(st, &ss);
	CHECK(ss.stacks_cleared == 1 && ss.segments_kept == 1, "cleared %llu kept %llu",
	      (unsigned long long)ss.stacks_cleared, (unsigned long long)ss.segments_kept);
	/* after the emptying, the map's 9 is the current one */
	CHECK(stream__keep_segment(st, 9, &stack_rec(0, 0, 9, 0, 1, 0x990)->seg) == 0, "keep 9 again");
	n = stream__unwind(st, 9, fallback_none, NULL, ips, 16, &missing);
	CHECK(n == 1 && ips[0] == 0x990, "newer copy replaces the older: n %zu", n);
	/* malformed ids and sizes are counted, not kept */
	struct bpfs_stack bad = { .nr = BPFS_SEG_FRAMES + 1 };
	CHECK(stream__keep_segment(st, 0, &bad) == 0 && stream__keep_segment(st, 4, &bad) == 0,
	      "malformed refused");
	stream__stats(st, &ss);
	CHECK(ss.malformed == 2 && ss.segments_kept == 2, "malformed %llu",
	      (unsigned long long)ss.malformed);
	stream__free(st);
}

static void test_truncated_and_unknown(void)
{
	struct stream *st = new_stream(true);
	struct bpfs_rec_sample r = sample(0, 1, 10, 0, 1);
	struct bpfs_rec_hdr odd = { 99, 0, 2 };
	struct stream_stats ss;
	size_t nr;

	stream__handle(st, &r, 6);			     /* shorter than a header */
	stream__handle(st, &r, sizeof(r) - 1);		     /* a cut sample */
	stream__handle(st, &odd, sizeof(odd));		     /* unknown type */
	stream__handle(st, stack_rec(0, 3, 9, 0, 1, 1), 40); /* a cut stack */
	stream__handle(st, stack_rec(0, 4, 0, 0, 1, 1), sizeof(struct bpfs_rec_stack)); /* id 0 */
	stream__stats(st, &ss);
	CHECK(ss.malformed == 5, "malformed %llu", (unsigned long long)ss.malformed);
	CHECK(ss.samples == 0, "nothing counted from them");
	stream__samples(st, &nr);
	CHECK(nr == 0, "no sample kept");
	stream__free(st);
}

/* handle_sized: a stack record as the BPF side sends it, sized by its
 * depth, in a buffer of exactly that size (ASan sees a read past it). */
static int handle_sized(struct stream *st, const struct bpfs_rec_stack *r, size_t size)
{
	void *buf = malloc(size ? size : 1);
	int err;

	memcpy(buf, r, size);
	err = stream__handle(st, buf, size);
	free(buf);
	return err;
}

static void test_sized_stack_records(void)
{
	struct stream *st = new_stream(false);
	struct bpfs_rec_stack *r;
	struct stream_stats ss;
	uint64_t ips[2 * BPFS_SEG_FRAMES];
	bool missing;
	size_t n;

	CHECK(BPFS_REC_STACK_SIZE(0) == 40 && BPFS_REC_STACK_SIZE(BPFS_SEG_FRAMES) ==
		      sizeof(struct bpfs_rec_stack), "record sizes");
	/* a full root segment and a shallow leaf, each exactly its size */
	r = stack_rec(0, 1, 1, 0, BPFS_SEG_FRAMES, 0x1000);
	handle_sized(st, r, BPFS_REC_STACK_SIZE(BPFS_SEG_FRAMES));
	r = stack_rec(0, 2, 2, 1, 3, 0x2000);
	handle_sized(st, r, BPFS_REC_STACK_SIZE(3));
	n = stream__unwind(st, 2, NULL, NULL, ips, 2 * BPFS_SEG_FRAMES, &missing);
	CHECK(n == 3 + BPFS_SEG_FRAMES && !missing && ips[2] == 0x2002 && ips[3] == 0x1000 &&
		      ips[n - 1] == 0x1000 + BPFS_SEG_FRAMES - 1,
	      "exact-size records reassembled: n %zu", n);

	/* too short for its nr, by one byte and by a frame */
	r = stack_rec(0, 3, 3, 0, 5, 0x3000);
	handle_sized(st, r, BPFS_REC_STACK_SIZE(5) - 1);
	handle_sized(st, r, BPFS_REC_STACK_SIZE(4));
	/* more frames than a segment holds, whatever the size */
	r = stack_rec(0, 3, 4, 0, 0, 0x4000);
	r->seg.nr = BPFS_SEG_FRAMES + 1;
	handle_sized(st, r, sizeof(*r));
	r->seg.nr = UINT32_MAX; /* BPFS_REC_STACK_SIZE would overflow 32 bits */
	handle_sized(st, r, BPFS_REC_STACK_HEAD);
	/* shorter than the head: nr itself cannot be read */
	handle_sized(st, stack_rec(0, 3, 5, 0, 0, 0), BPFS_REC_STACK_HEAD - 1);
	/* a wild CPU number: not a sequence table of gigabytes */
	handle_sized(st, stack_rec(UINT32_MAX, 3, 5, 0, 1, 0), BPFS_REC_STACK_SIZE(1));
	stream__stats(st, &ss);
	CHECK(ss.malformed == 6 && ss.stack_records == 2, "malformed %llu stack records %llu",
	      (unsigned long long)ss.malformed, (unsigned long long)ss.stack_records);
	n = stream__unwind(st, 3, fallback_none, NULL, ips, 16, &missing);
	CHECK(n == 0 && missing, "a refused record is not a segment");

	/* an empty segment and a record larger than its nr are fine */
	handle_sized(st, stack_rec(0, 3, 6, 0, 0, 0), BPFS_REC_STACK_SIZE(0));
	handle_sized(st, stack_rec(0, 4, 7, 6, 2, 0x7000), sizeof(struct bpfs_rec_stack));
	n = stream__unwind(st, 7, NULL, NULL, ips, 16, &missing);
	CHECK(n == 2 && !missing && ips[1] == 0x7001, "empty root, larger record: n %zu", n);
	stream__stats(st, &ss);
	CHECK(ss.malformed == 6 && ss.stack_records == 4, "malformed %llu stack records %llu",
	      (unsigned long long)ss.malformed, (unsigned long long)ss.stack_records);
	stream__free(st);
}

static void test_segments_and_cycles(void)
{
	struct stream *st = new_stream(false);
	uint64_t ips[2 * BPFS_SEG_FRAMES];
	bool missing;
	size_t n;

	/* root segment 1 (127 frames), leaf segment 2 (3 frames) */
	stream__handle(st, stack_rec(0, 1, 1, 0, BPFS_SEG_FRAMES, 0x1000), sizeof(struct bpfs_rec_stack));
	stream__handle(st, stack_rec(0, 2, 2, 1, 3, 0x2000), sizeof(struct bpfs_rec_stack));
	n = stream__unwind(st, 2, NULL, NULL, ips, 2 * BPFS_SEG_FRAMES, &missing);
	CHECK(n == 3 + BPFS_SEG_FRAMES && !missing, "n %zu", n);
	CHECK(ips[0] == 0x2000 && ips[2] == 0x2002 && ips[3] == 0x1000 &&
		      ips[n - 1] == 0x1000 + BPFS_SEG_FRAMES - 1,
	      "leaf segment first, then its parent");
	n = stream__unwind(st, 2, NULL, NULL, ips, 5, &missing);
	CHECK(n == 5, "bounded by max: %zu", n);

	/* 10 -> 11 -> 10: a cycle must end */
	stream__handle(st, stack_rec(0, 3, 10, 11, 1, 0x10), sizeof(struct bpfs_rec_stack));
	stream__handle(st, stack_rec(0, 4, 11, 10, 1, 0x11), sizeof(struct bpfs_rec_stack));
	n = stream__unwind(st, 10, NULL, NULL, ips, 2 * BPFS_SEG_FRAMES, &missing);
	CHECK(n <= BPFS_MAX_USER_DEPTH / BPFS_SEG_FRAMES + 2, "cycle stopped at %zu", n);
	stream__free(st);
}

static int sum_counts(void *ctx, const struct bpfs_count_key *k, const struct bpfs_count_val *v)
{
	uint64_t *acc = ctx;

	acc[0] += v->samples;
	acc[1] += v->period;
	acc[2]++;
	return 0;
}

static void test_aggregation_and_order(void)
{
	struct stream *st = new_stream(true);
	struct bpfs_rec_sample r;
	const struct bpfs_rec_sample *s;
	uint64_t acc[3] = {};
	size_t nr;

	r = sample(1, 1, 30, 5, 2);
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 1, 20, 5, 2);
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 2, 25, 6, 2);
	stream__handle(st, &r, sizeof(r));
	stream__for_each_count(st, sum_counts, acc);
	CHECK(acc[0] == 3 && acc[1] == 3 * 250000 && acc[2] == 2, "samples %llu keys %llu",
	      (unsigned long long)acc[0], (unsigned long long)acc[2]);
	s = stream__samples(st, &nr);
	CHECK(nr == 3 && s[0].time_ns == 20 && s[1].time_ns == 25 && s[2].time_ns == 30,
	      "sorted by time");
	stream__free(st);
}

static int take_pid_100(void *ctx, const struct bpfs_count_key *k,
			const struct bpfs_count_val *v)
{
	uint64_t *taken = ctx;

	if (k->pid != 100)
		return 0;
	*taken += v->samples;
	return 1;
}

/* The one-shot run folding exited processes in: their counts are taken out,
 * then the segments nothing names any more go, once kept for two calls. */
static void test_take_counts_and_forget_segments(void)
{
	struct stream *st = new_stream(false);
	struct hashmap *used = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	const size_t rs = sizeof(struct bpfs_rec_stack);
	struct bpfs_rec_sample r;
	uint64_t acc[3] = {}, taken = 0;

	stream__handle(st, stack_rec(0, 1, 4, 0, 2, 0x400), rs);	/* root of 5 and 7 */
	stream__handle(st, stack_rec(0, 2, 5, 4, 2, 0x500), rs);	/* pid 100's */
	stream__handle(st, stack_rec(0, 3, 7, 4, 2, 0x700), rs);	/* pid 200's */
	stream__handle(st, stack_rec(0, 4, 8, 0, 2, 0x800), rs);	/* no one's */
	stream__handle(st, stack_rec(0, 5, 9, 0, 2, 0x900), rs);	/* the kernel's counts' */
	r = sample(0, 6, 10, 5, 1);
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 7, 11, 5, 1);
	stream__handle(st, &r, sizeof(r));
	r = sample(0, 8, 12, 7, 2);
	r.pid = 200;
	stream__handle(st, &r, sizeof(r));
	CHECK(stream__take_counts(st, take_pid_100, &taken) == 0 && taken == 2, "taken %llu",
	      (unsigned long long)taken);
	stream__for_each_count(st, sum_counts, acc);
	CHECK(acc[0] == 1 && acc[2] == 1, "pid 200's count stays: samples %llu keys %llu",
	      (unsigned long long)acc[0], (unsigned long long)acc[2]);
	CHECK(used && hashmap__set(used, (void *)9, (void *)1, NULL) == 0, "used");
	CHECK(stream__forget_segments(st, used) == 0 && stream__nr_segments(st) == 5,
	      "kept for two calls: %zu", stream__nr_segments(st));
	CHECK(stream__forget_segments(st, used) == 0 && stream__nr_segments(st) == 5,
	      "kept for two calls: %zu", stream__nr_segments(st));
	CHECK(stream__forget_segments(st, used) == 0 && stream__nr_segments(st) == 3,
	      "5 and 8 forgotten, 7 with its parent 4 and 9 kept: %zu", stream__nr_segments(st));
	hashmap__free(used);
	stream__free(st);
}

int main(void)
{
	RUN(test_interleaved_cpus_and_gaps);
	RUN(test_nested_record_arrives_late);
	RUN(test_stack_before_and_after);
	RUN(test_lost_stack_record);
	RUN(test_duplicates);
	RUN(test_keep_segments_of_emptied_map);
	RUN(test_truncated_and_unknown);
	RUN(test_sized_stack_records);
	RUN(test_segments_and_cycles);
	RUN(test_aggregation_and_order);
	RUN(test_take_counts_and_forget_segments);
	UNIT_EXIT();
}
