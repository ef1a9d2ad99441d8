/* SPDX-License-Identifier: GPL-2.0 */
/* bpfsampler agent: continuous profiling in windows (docs/agent.md). */
#ifndef BPFSAMPLER_AGENT_H
#define BPFSAMPLER_AGENT_H

struct opts;

/* Samples until SIGTERM/SIGINT (or -d), one pprof per event and service
 * per window into the spool, pushed when asked. Returns 0 or -errno. */
int agent__run(const struct opts *o);

#endif
