// SPDX-License-Identifier: GPL-2.0
/*
 * churn_child [MS]: burns MS milliseconds (default 5) of CPU in churn_work
 * and exits. The churn test runs hundreds of copies of it a second, each
 * copy a distinct file with its own build-ID, so every child is a new
 * process of a new executable: ground truth, their samples are under
 * main;churn_work.
 */
#include "burn.h"

static void __attribute__((noinline)) churn_work(double ms)
{
	spin_on(CLOCK_THREAD_CPUTIME_ID, ms / 1000);
}

int main(int argc, char **argv)
{
	churn_work(argc > 1 ? atof(argv[1]) : 5);
	return 0;
}
