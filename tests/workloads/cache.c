// SPDX-License-Identifier: GPL-2.0
/*
 * cache SECONDS: main -> run_cache -> cache_hostile and cache_friendly in
 * turns, 5 ms of thread CPU time each per round, until SECONDS of wall time
 * passed since the start (the 256 MiB setup included: 0.3-0.7 s on a test
 * VM, its samples under main;make_cycle, mostly page faults).
 *
 * Both chase pointers along a random cyclic permutation (Sattolo's shuffle:
 * one cycle through every node) of 64-byte nodes, one per cache line, each
 * load depending on the one before:
 *   cache_hostile   over 256 MiB (4M nodes, 4 KiB pages, no huge pages):
 *                   nearly every load misses every cache level and the TLB;
 *   cache_friendly  over 16 KiB (256 nodes): stays in L1.
 *
 * GROUND TRUTH: cpu-clock/task-clock samples split equally between the two
 * (both under ...;main;run_cache), and the cache misses are overwhelmingly
 * in cache_hostile. The clock is checked after a chunk of loads of about
 * the same time in both (~20 us), the deadline advances from the previous
 * deadline (as in shares.c), so neither side gains from overshooting.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "burn.h"

#define USAGE "cache SECONDS"
#define BIG (256UL << 20)
#define SMALL (16UL << 10)
#define TURN_S 0.005
#ifndef HOSTILE_CHUNK
#define HOSTILE_CHUNK 128
#endif
#ifndef FRIENDLY_CHUNK
#define FRIENDLY_CHUNK 20000
#endif

struct node {
	struct node *next;
	char pad[64 - sizeof(struct node *)];
};

static struct node *big, *small;
static double deadline;	/* thread CPU time where the current turn ends */

/* Links the n nodes into one random cycle. */
static int make_cycle(struct node *a, size_t n)
{
	uint32_t *perm = malloc(n * sizeof(*perm));
	uint64_t x = 88172645463325252UL;

	if (!perm)
		return -1;
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n - 1; i > 0; i--) {	/* Sattolo: j < i */
		size_t j;
		uint32_t t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % i;
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		a[i].next = &a[perm[i]];
	free(perm);
	return 0;
}

static struct node *alloc_nodes(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, bytes, MADV_NOHUGEPAGE);	/* before the first touch */
	return p;
}

/* Walks from p until the turn's deadline; the loop lives in each function
 * (macro) so its samples land there. */
#define CHASE(p, chunk)                                                          \
	do {                                                                     \
		deadline += TURN_S;                                              \
		do {                                                             \
			for (int i_ = 0; i_ < (chunk); i_++)                     \
				(p) = (p)->next;                                 \
			BARRIER(p);                                              \
		} while (now_s(CLOCK_THREAD_CPUTIME_ID) < deadline);             \
	} while (0)

__attribute__((noinline)) struct node *cache_hostile(struct node *p)
{
	CHASE(p, HOSTILE_CHUNK);
	return p;
}

__attribute__((noinline)) struct node *cache_friendly(struct node *p)
{
	CHASE(p, FRIENDLY_CHUNK);
	return p;
}

__attribute__((noinline)) void run_cache(double end)
{
	struct node *h = big, *f = small;

	deadline = now_s(CLOCK_THREAD_CPUTIME_ID);
	do {
		h = cache_hostile(h);
		f = cache_friendly(f);
	} while (now_s(CLOCK_MONOTONIC) < end);
}

int main(int argc, char **argv)
{
	double end = clock_s(CLOCK_MONOTONIC);

	if (argc != 2)
		usage_exit(USAGE);
	end += arg_seconds(argv[1], USAGE);
	big = alloc_nodes(BIG);
	small = alloc_nodes(SMALL);
	if (!big || !small || make_cycle(big, BIG / sizeof(struct node)) ||
	    make_cycle(small, SMALL / sizeof(struct node))) {
		fprintf(stderr, "cache: out of memory\n");
		return 1;
	}
	run_cache(end);
	return 0;
}
