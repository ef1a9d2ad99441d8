/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's own health, in Prometheus text exposition format: written to
 * a *.prom file for node_exporter's textfile collector, and served on
 * --metrics-addr when asked for. The agent owns one struct metrics and
 * updates its fields directly; rendering reads a consistent copy.
 */
#ifndef BPFSAMPLER_METRICS_H
#define BPFSAMPLER_METRICS_H

#include <stdint.h>
#include <sys/socket.h>

/* Why samples were lost: the BPF side's loss buckets (sampler_abi.h). */
enum metrics_lost {
	METRICS_LOST_COUNTS_FULL,  /* counts map full (--map-entries) */
	METRICS_LOST_STACKS_FULL,  /* stacks map full (--stack-entries) */
	METRICS_LOST_COLLISION,    /* stack id collision */
	METRICS_LOST_BUSY,	   /* map bucket busy (NMI re-entry) */
	METRICS_LOST_RING_FULL,	   /* ring buffer full (--ring-size) */
	METRICS_LOST_NR,
};

/* The reason label's value of each enum metrics_lost. */
extern const char *const metrics_lost_reason[METRICS_LOST_NR];

/* One profile per event (-e): a handful at most. */
#define METRICS_MAX_EVENTS 8

struct metrics_event {
	char name[64];		    /* the event label, e.g. "cpu-clock" */
	uint64_t samples;	    /* counter: samples taken */
	uint64_t lost[METRICS_LOST_NR]; /* counter: samples lost, by reason */
};

struct metrics {
	struct metrics_event events[METRICS_MAX_EVENTS];
	unsigned int nr_events;
	uint64_t windows_written;     /* counter: profile windows written */
	uint64_t windows_pushed;      /* counter: windows the server accepted */
	uint64_t push_failures;	      /* counter: push attempts that failed */
	uint64_t push_retries;	      /* counter: push attempts that were retries */
	uint64_t push_rejected;	      /* counter: windows the server refused (4xx) */
	uint64_t backlog_files;	      /* gauge: windows waiting to be pushed */
	uint64_t backlog_bytes;	      /* gauge: their size on disk */
	uint64_t backlog_pruned;      /* counter: backlog files pruned (age, size) */
	uint64_t dropped_undelivered; /* counter: windows dropped never pushed */
	uint64_t processes_tracked;   /* gauge: processes with state in the agent */
	uint64_t processes_unfollowed; /* counter: records of processes not followed */
	uint64_t series_overflowed;   /* counter: processes folded into "other" */
	uint64_t mappings_lost;	      /* counter: side-band mapping records lost */
	uint64_t records_unsent;      /* counter: ring records not reserved (BPF) */
	uint64_t records_missing;     /* gauge: records missing by sequence number */
	uint64_t records_reordered;   /* counter: records seen twice or too late */
	uint64_t stack_segments_dropped; /* counter: emptied from the stacks map, not kept */
	uint64_t unwind_rows;	      /* gauge: unwind table rows held */
	uint64_t unwind_tables_built; /* counter: unwind tables built */
	uint64_t max_sample_rate;     /* gauge: perf_event_max_sample_rate now */
	uint64_t rss_bytes;	      /* gauge: the agent's resident memory */
	double cpu_seconds;	      /* counter: the agent's user+system CPU time */
};

/* The event called name, added (zeroed) when new; NULL when
 * METRICS_MAX_EVENTS are already there. */
struct metrics_event *metrics__event(struct metrics *m, const char *name);

/* Fills rss_bytes and cpu_seconds from this process. 0 or -errno. */
int metrics__sample_self(struct metrics *m);

/* The text exposition of m (malloc'ed, NUL-terminated), or NULL when out
 * of memory. */
char *metrics__render(const struct metrics *m);

/*
 * Writes the rendering to path atomically: a temporary file in the same
 * directory (a dot name, which the textfile collector does not read),
 * fsync'ed, renamed over path. Readers see the old file or the new one,
 * never half of one. 0 or -errno (message printed).
 */
int metrics__write_file(const struct metrics *m, const char *path);

/*
 * --metrics-addr: "127.0.0.1:9464", "[::1]:9464", or a port alone ("9464",
 * ":9464") which means 127.0.0.1. Only IP literals: no name lookups.
 * An address other than loopback is honoured, with a warning, only because
 * it was written out; nothing binds a public address by default.
 * 0 or -EINVAL (message printed).
 */
int metrics__parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

struct metrics_server;

/* Serves GET /metrics on addr (metrics__parse_addr) from libmicrohttpd's own
 * thread: the latest text published, empty until the first publish. */
int metrics_server__new(const char *addr, struct metrics_server **out);
/* The port bound (useful with port 0). */
int metrics_server__port(const struct metrics_server *s);
/* Renders m and makes it what /metrics returns. 0 or -ENOMEM. */
int metrics_server__publish(struct metrics_server *s, const struct metrics *m);
void metrics_server__free(struct metrics_server *s);

#endif
