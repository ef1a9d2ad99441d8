// SPDX-License-Identifier: GPL-2.0
/*
 * cxxwork [SECONDS]: C++ names for the demangling tests (default 2 s).
 *
 * main -> geo::Grid<double>::relax(int) and
 * main -> work::churn(int) -> its lambda, in rounds of 10 ms of this
 * thread's CPU time each, until SECONDS of wall time passed.
 *
 * GROUND TRUTH: about half of the process's samples have the innermost
 * user frame
 *   geo::Grid<double>::relax(int)                      (_ZN3geo4GridIdE5relaxEi)
 * and half
 *   work::churn(int)::{lambda(int)#1}::operator()(int) const
 *                                                      (_ZZN4work5churnEiENKUliE_clEi)
 * under work::churn(int) (_ZN4work5churnEi). A namespace, a class template
 * method and a lambda: the three shapes of C++ name people meet most.
 * Every one is noinline (the lambda too), so each has its own frame.
 */
#include "burn.h"

#define USAGE "cxxwork [SECONDS]"

namespace geo {

template <typename T> class Grid {
public:
	explicit Grid(T seed) : seed_(seed) {}
	__attribute__((noinline)) T relax(int ms);

private:
	T seed_;
};

/* Burns ms of CPU time; the loop and the clock are inlined here. */
template <typename T> T Grid<T>::relax(int ms)
{
	return seed_ + (T)spin_on(CLOCK_THREAD_CPUTIME_ID, ms / 1000.0);
}

template class Grid<double>;

} // namespace geo

namespace work {

__attribute__((noinline)) unsigned long churn(int ms)
{
	auto burn = [](int n) __attribute__((noinline)) {
		return spin_on(CLOCK_THREAD_CPUTIME_ID, n / 1000.0);
	};
	unsigned long r = burn(ms);

	BARRIER(r); /* used after the call: not a tail call */
	return r;
}

} // namespace work

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? arg_seconds(argv[1], USAGE) : 2.0;
	double end = clock_s(CLOCK_MONOTONIC) + seconds;
	geo::Grid<double> grid(1.0);
	double sink = 0;

	if (argc > 2)
		usage_exit(USAGE);
	do {
		sink += grid.relax(10);
		sink += (double)work::churn(10);
	} while (clock_s(CLOCK_MONOTONIC) < end);
	return sink == 0.5; /* never: sink is used */
}
