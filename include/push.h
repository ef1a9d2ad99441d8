/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The push: spool windows to Grafana Pyroscope's HTTP ingest API
 * (POST URL/ingest?name=...&format=pprof, docs/agent.md), with
 * per-series in-order delivery and backoff.
 */
#ifndef BPFSAMPLER_PUSH_H
#define BPFSAMPLER_PUSH_H

#include <stddef.h>
#include <stdint.h>

struct pusher;
struct spool;
struct spool_window;

struct push_opts {
	const char *url;	     /* base, e.g. https://pyroscope:4040 */
	/* Credentials come from files, never argv (ps shows argv to all). */
	const char *token_file;	     /* Authorization: Bearer <content> */
	const char *basic_auth_file; /* user:password */
	const char *tenant;	     /* X-Scope-OrgID, multi-tenant servers */
	double connect_timeout_s;    /* 0: 5 */
	double timeout_s;	     /* whole request, 0: 30 */
	double backoff_min_s;	     /* first pause of a failing series, 0: 1 */
	double backoff_max_s;	     /* pauses double up to this, 0: 300 */
};

enum push_status {
	PUSH_DELIVERED = 0, /* 2xx */
	PUSH_RETRY,	    /* no answer, timeout, 5xx, 429, 408 (the series
			     * pauses), or an answer that says our configuration
			     * is wrong: 3xx, 401, 403, 404, 407 (every series
			     * pauses): not the window's fault */
	PUSH_REJECTED,	    /* other 4xx: this window will never be accepted */
};

struct push_result {
	enum push_status status;
	long http_status;     /* 0: no answer */
	double retry_after_s; /* the server's Retry-After, 0: none */
	int all_series;	      /* no answer or our configuration is wrong: no
			       * series can get through, pause them all */
	char msg[256];	      /* curl's error or the answer's first 200 bytes */
};

struct push_stats {
	uint64_t attempts, delivered, retried, rejected;
	uint64_t bytes_delivered;
};

/* Reads the credential files; fails on an unreadable or world-readable
 * one. Returns 0 or -errno. */
int pusher__new(const struct push_opts *o, struct pusher **out);
void pusher__free(struct pusher *p);
/* Reads the credential files again (rotation, SIGHUP). On failure the old
 * credentials stay. Returns 0 or -errno. */
int pusher__reload(struct pusher *p);

/* One request for one window, blocking at most timeout_s. Returns the
 * status also stored in r->status. */
enum push_status pusher__push(struct pusher *p, const struct spool_window *w, const void *data,
			      size_t len, struct push_result *r);

/* Pushes the spool's pending windows, oldest first per series, series taken
 * in turn; a series whose head must be retried pauses (its later windows
 * wait), others go on. Each delivered window is marked at once. Returns
 * within budget_s with the number delivered, or -errno. */
int pusher__drain(struct pusher *p, struct spool *sp, double budget_s);

void pusher__stats(const struct pusher *p, struct push_stats *st);

#endif
