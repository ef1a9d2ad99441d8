// SPDX-License-Identifier: GPL-2.0
/*
 * stackfan SECONDS [LEVELS]: main -> fan -> fan_K -> fan -> fan_K ... LEVELS
 * (default 24, at most 24) levels deep, K in 0..3 taken from a hash of a
 * counter, so nearly every call is a stack never seen before (4^LEVELS of
 * them); the leaf, fan_leaf, burns about 20 us.
 *
 * GROUND TRUTH: the samples are main;fan;fan_K;...;fan_leaf with 2 LEVELS
 * + 2 frames under main (about 50 at 24 levels: segments of the large
 * stacks map; 6 levels: 4096 stacks of about 20 frames, the small map's),
 * nearly all distinct: they fill any stack store.
 */
#include "burn.h"

#define USAGE "stackfan SECONDS [LEVELS]"
#define FAN_DEPTH 24

__attribute__((noinline)) unsigned long fan(int depth, unsigned long path);

__attribute__((noinline)) unsigned long fan_leaf(void)
{
	unsigned long x = 1;

	for (int i = 0; i < 20000; i++) {
		LCG_STEP(x);
		BARRIER(x);
	}
	return x;
}

#define FAN_FN(k)                                                                  \
	__attribute__((noinline)) unsigned long fan_##k(int depth, unsigned long path) \
	{                                                                          \
		unsigned long r = fan(depth - 1, path);                            \
		BARRIER(r);                                                        \
		return r + k;                                                      \
	}
FAN_FN(0)
FAN_FN(1)
FAN_FN(2)
FAN_FN(3)

__attribute__((noinline)) unsigned long fan(int depth, unsigned long path)
{
	unsigned long r;

	if (depth == 0)
		return fan_leaf();
	switch ((path >> (2 * depth)) & 3) {
	case 0: r = fan_0(depth, path); break;
	case 1: r = fan_1(depth, path); break;
	case 2: r = fan_2(depth, path); break;
	default: r = fan_3(depth, path); break;
	}
	BARRIER(r);
	return r;
}

int main(int argc, char **argv)
{
	unsigned long i = 0, r = 0;
	int levels = FAN_DEPTH;
	double end;

	if (argc < 2 || argc > 3)
		usage_exit(USAGE);
	if (argc == 3)
		levels = atoi(argv[2]);
	if (levels < 1 || levels > FAN_DEPTH)
		usage_exit(USAGE);
	end = clock_s(CLOCK_MONOTONIC) + arg_seconds(argv[1], USAGE);
	while (clock_s(CLOCK_MONOTONIC) < end) {
		unsigned long path = ++i * 0x9e3779b97f4a7c15UL;

		r += fan(levels, path ^ (path >> 29));
	}
	BARRIER(r);
	return 0;
}
