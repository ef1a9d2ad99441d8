/* SPDX-License-Identifier: GPL-2.0 */
/* JIT symbol maps, /tmp/perf-PID.map: "START SIZE NAME" per line, hex. */
#ifndef BPFSAMPLER_PERFMAP_H
#define BPFSAMPLER_PERFMAP_H

#include <stdint.h>
#include <sys/types.h>

struct perfmap;

/* Loads path. As perf does, only a file owned by owner (the process's user)
 * or by root is read: -EPERM otherwise, so that another user cannot plant
 * names. Returns 0 or -errno. */
int perfmap__load(const char *path, uid_t owner, struct perfmap **out);
/* The name of the entry containing addr, or NULL. */
const char *perfmap__find(const struct perfmap *pm, uint64_t addr);
void perfmap__free(struct perfmap *pm);

#endif
