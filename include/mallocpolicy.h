/* SPDX-License-Identifier: GPL-2.0 */
#ifndef BPFSAMPLER_MALLOCPOLICY_H
#define BPFSAMPLER_MALLOCPOLICY_H

/* Large blocks go back to the system when freed: blocks of 128 KiB or more
 * (the kernel's BTF while the programs load, unwind rows, symbol tables,
 * profiles) are mmap'd and unmapped when freed, and the heap's top is cut
 * past 128 KiB free. By default glibc raises the mmap threshold after each
 * such free (up to 32 MiB), and later large transients then stay as holes
 * in the heap. Called first thing by main, for the CLI and the agent. */
void mallocpolicy__return_large(void);

#endif
