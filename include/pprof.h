/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --format pprof: the profile model (profile.h) as pprof's profile.proto,
 * gzip-compressed, as `go tool pprof`, Pyroscope and Grafana read it. The
 * model follows profile.proto, so this is a plain encoding: ids and string
 * ids are the model's own.
 */
#ifndef BPFSAMPLER_PPROF_H
#define BPFSAMPLER_PPROF_H

#include <stddef.h>
#include <stdio.h>

struct profile;
struct writer_opts;

/* The gzip-compressed profile.proto of p in memory: *gz (the caller frees
 * it) holds *len bytes. Returns 0 or -errno (-ENOMEM). */
int pprof__encode(const struct profile *p, void **gz, size_t *len);
/* The same, written to f. Returns 0 or -errno (-ENOSPC...). */
int pprof__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f);

#endif
