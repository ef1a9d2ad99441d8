/* SPDX-License-Identifier: GPL-2.0 */
/* A list of ids (CPUs, pids, tids) as the options give it to capture. */
#ifndef BPFSAMPLER_INT_LIST_H
#define BPFSAMPLER_INT_LIST_H

#include <stddef.h>

struct int_list {
	int *v;
	size_t nr;
};

#endif
