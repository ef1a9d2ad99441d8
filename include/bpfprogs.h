/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The JIT images of BPF programs: /proc/kallsyms lists them as
 * "bpf_prog_TAG_NAME [bpf]", the way it lists a module's symbols, but with
 * no size, and only while the program is loaded. Polled while sampling,
 * each program's functions are kept with their extent (bpf_prog_info), so
 * a program unloaded before the end is still named, and an address in no
 * known program is never named after the program below it.
 */
#ifndef BPFSAMPLER_BPFPROGS_H
#define BPFSAMPLER_BPFPROGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct bpfprogs;

int bpfprogs__new(struct bpfprogs **out);
void bpfprogs__free(struct bpfprogs *bp);
/* Notes the programs loaded since the last call. Cheap when none is new
 * (one system call per loaded program). Returns 0 or -errno (-EPERM: the
 * programs cannot be listed; bpfprogs__usable() is false then). */
int bpfprogs__poll(struct bpfprogs *bp);
/* Whether polling works: then an address in no known program is in one
 * that was never seen. */
bool bpfprogs__usable(const struct bpfprogs *bp);
/* Whether addr is in a known program function: then *start is where it
 * begins and *name its kallsyms name, or NULL when it was loaded before
 * the first poll (kallsyms names it while it stays loaded). */
bool bpfprogs__find(const struct bpfprogs *bp, uint64_t addr, const char **name,
		    uint64_t *start);

/* What bpfprogs__poll does with its two inputs, for tests and the fuzzer:
 * a function as bpf_prog_info gives it (a start already known is replaced),
 * and names from the "ADDR TYPE NAME\t[bpf]" lines of f, kallsyms text.
 * Lookups find what was added only once bpfprogs__name_from has run. */
int bpfprogs__add(struct bpfprogs *bp, uint64_t start, uint64_t len);
void bpfprogs__name_from(struct bpfprogs *bp, FILE *f);

#endif
