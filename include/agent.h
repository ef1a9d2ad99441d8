/* SPDX-License-Identifier: GPL-2.0 */
/* bpfsampler agent: continuous profiling in windows (docs/agent.md). */
#ifndef BPFSAMPLER_AGENT_H
#define BPFSAMPLER_AGENT_H

struct opts;

/* Parses the options again (the config file and the command line, as at
 * start) into out, for SIGHUP. Returns 0, or -EINVAL with the reason
 * printed. */
typedef int (*agent_reparse_fn)(void *ctx, struct opts *out);

/* Samples until SIGTERM/SIGINT (or -d), one pprof per event and service
 * per window into the spool, pushed when asked. On SIGHUP, reparse (may be
 * NULL) reads the options again. Returns 0 or -errno. */
int agent__run(const struct opts *o, agent_reparse_fn reparse, void *ctx);

#endif
