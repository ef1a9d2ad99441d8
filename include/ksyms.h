/* SPDX-License-Identifier: GPL-2.0 */
/* Kernel text symbols from /proc/kallsyms, modules included. */
#ifndef BPFSAMPLER_KSYMS_H
#define BPFSAMPLER_KSYMS_H

#include <stdbool.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module; /* NULL for vmlinux */
};

struct ksyms;

/* Loads path (NULL: /proc/kallsyms); text symbols only. Returns 0 or -errno.
 * When kptr_restrict hides addresses (all zero), loads no symbols and
 * ksyms__hidden() is true. */
int ksyms__load(const char *path, struct ksyms **out);
/* The symbol containing addr (the last one at or below it) into *out;
 * false when none. Its strings live as long as ks. */
bool ksyms__find(const struct ksyms *ks, uint64_t addr, struct ksym *out);
bool ksyms__hidden(const struct ksyms *ks);
void ksyms__free(struct ksyms *ks);

#endif
