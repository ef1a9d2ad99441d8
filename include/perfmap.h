/* SPDX-License-Identifier: GPL-2.0 */
/* JIT symbol maps, /tmp/perf-PID.map: "START SIZE NAME" per line, hex. */
#ifndef BPFSAMPLER_PERFMAP_H
#define BPFSAMPLER_PERFMAP_H

#include <stdint.h>
#include <sys/types.h>

struct perfmap;

/* A map is read up to this many bytes: a JVM's map of a day's compiles is
 * tens of MB, and a hostile process could write gigabytes. */
#define PERFMAP_MAX_BYTES (64UL << 20)
/* Longer lines (names of more than about 4 KB) are skipped. */
#define PERFMAP_LINE_MAX 4096

/* Loads path. As perf does, only a file owned by owner (the process's
 * user) or by root is read: -EPERM otherwise, so that another user cannot
 * plant names; -ELOOP for a symlink, -EINVAL for what is not a regular
 * file (a FIFO). Returns 0 or -errno. */
int perfmap__load(const char *path, uid_t owner, struct perfmap **out);
/* Bytes of the file left unread because of PERFMAP_MAX_BYTES. */
uint64_t perfmap__unread(const struct perfmap *pm);
/* The name of the entry containing addr, or NULL. */
const char *perfmap__find(const struct perfmap *pm, uint64_t addr);
void perfmap__free(struct perfmap *pm);

#endif
