// SPDX-License-Identifier: GPL-2.0
/*
 * longname [SECONDS]: a C++ function whose demangled name is over 4096
 * characters long (4360), for the tests that names stay whole (default 2 s).
 *
 * main -> spin_long<T>(double) with T a 60-deep nesting of
 * Pair_of_some_rather_long_type_name_for_tests<..., Leaf_of_a_long_name<N> >,
 * as template-heavy C++ (expression templates, parsers, ranges) produces.
 * The mangled name stays short (the template is named once, then by
 * substitution); the demangled one does not.
 *
 * GROUND TRUTH: nearly every sample of the process has the innermost user
 * frame spin_long<...>(double), the name `nm -C longname` prints for it
 * less its return type ("double "), which bpfsampler leaves out.
 */
#include "burn.h"

#define USAGE "longname [SECONDS]"

template <int N> struct Leaf_of_a_long_name {};
template <typename A, typename B> struct Pair_of_some_rather_long_type_name_for_tests {};

template <int N> struct Nest {
	typedef Pair_of_some_rather_long_type_name_for_tests<typename Nest<N - 1>::type,
							     Leaf_of_a_long_name<N> >
		type;
};
template <> struct Nest<0> {
	typedef Leaf_of_a_long_name<0> type;
};

template <typename T> __attribute__((noinline)) double spin_long(double seconds)
{
	return (double)spin_on(CLOCK_THREAD_CPUTIME_ID, seconds);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? arg_seconds(argv[1], USAGE) : 2.0;
	double end = clock_s(CLOCK_MONOTONIC) + seconds;
	double sink = 0;

	if (argc > 2)
		usage_exit(USAGE);
	do
		sink += spin_long<Nest<60>::type>(0.01);
	while (clock_s(CLOCK_MONOTONIC) < end);
	return sink == 0.5; /* never: sink is used */
}
