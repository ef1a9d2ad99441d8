// SPDX-License-Identifier: GPL-2.0
#include <malloc.h>

#include "mallocpolicy.h"

#define LARGE_BLOCK (128 * 1024)

void mallocpolicy__return_large(void)
{
	mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK);
	mallopt(M_TRIM_THRESHOLD, LARGE_BLOCK);
}
