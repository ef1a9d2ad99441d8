/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The spool: a directory of finished profile windows (gzip pprof files, the
 * window's metadata in the gzip header's comment). It is the agent's
 * product when nothing is pushed and the backlog when something is. Layout
 * (docs/agent.md):
 *
 *   DIR/NAME.pb.gz                           pending (or the product)
 *   DIR/sent/NAME.pb.gz                      delivered
 *   DIR/rejected/NAME.pb.gz                  refused by the server
 *   DIR/.tmp.*                               being written; a crash leaves them
 *
 * (Spools of earlier versions have a NAME.meta sidecar beside each file:
 * still read, moved and removed with it.)
 *
 * A window's state is the directory its data file is in; moving it is one
 * rename, so a state survives a restart as it was last set.
 */
#ifndef BPFSAMPLER_SPOOL_H
#define BPFSAMPLER_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spool;
struct vec;

struct spool_window {
	/* Pyroscope app name with labels, e.g.
	 * "bpfsampler.cpu{service_name=nginx.service,hostname=h1}" */
	const char *series;
	const char *service;
	const char *event;
	uint64_t from_s, until_s; /* window bounds, Unix seconds */
	uint64_t sample_rate;	  /* Hz, 0: not a timer */
};

struct spool_opts {
	const char *dir;       /* created 0750 if missing */
	const char *host;      /* first part of every file name */
	uint64_t retain_age_s; /* 0: no age limit */
	uint64_t retain_bytes; /* 0: no size limit */
	/* Windows wait for a pusher: pruning a pending one loses data and is
	 * counted as dropped undelivered. Off: the spool is the product. */
	bool push;
};

enum spool_state {
	SPOOL_PENDING = 0,
	SPOOL_SENT,
	SPOOL_REJECTED,
};

/* One window as listed; strings are owned by the spool and stay valid
 * until the window is pruned or the spool freed. */
struct spool_entry {
	struct spool_window w;
	const char *name; /* data file name, the window's id in the spool */
	uint64_t bytes;	  /* data and metadata on disk */
	enum spool_state state;
};

struct spool_stats {
	uint64_t backlog_files, backlog_bytes; /* pending now */
	uint64_t total_files, total_bytes;     /* every state, what retention sees */
	uint64_t written, written_bytes;
	uint64_t pruned, pruned_bytes;
	uint64_t dropped_undelivered; /* pruned while pending with push on */
	uint64_t delivered, rejected; /* marked since open */
	uint64_t temps_removed;	      /* left by a crash, removed at open */
};

/* Creates the directories if missing, locks the spool against a second
 * agent, removes what a crash left half-written and indexes the windows. */
int spool__open(const struct spool_opts *o, struct spool **out);
void spool__free(struct spool *sp);

/* Stores one window atomically, data being a gzip member without a comment
 * (what pprof__encode gives): the metadata goes into its header's comment,
 * and a final name never shows a partial file. Returns 0, -EINVAL (not such
 * a gzip member, or a line break in the metadata) or -errno. */
int spool__write(struct spool *sp, const struct spool_window *w, const void *data, size_t len);

/*
 * A batch: the windows written from begin to commit are staged (written
 * and fsync'ed under temporary names) and renamed into place together by
 * commit, with one directory fsync for the whole batch; none is listed,
 * read or pushed before commit has made it durable. Commit returns 0 or the
 * first error (each logged), with *written the windows now in the spool.
 * A batch not committed when the spool is freed is removed.
 */
void spool__begin(struct spool *sp);
int spool__commit(struct spool *sp, size_t *written);

/* Removes windows whose end is older than retain_age_s before now, then the
 * oldest while the spool exceeds retain_bytes (delivered and rejected ones
 * before pending ones: those are already safe on the server or will never
 * be). Returns the number of windows removed. */
int spool__prune(struct spool *sp, uint64_t now_s);

/* Fills out (a vec of struct spool_entry, VEC_INIT'ed by the caller, who
 * frees it) with the windows in state, grouped by series, each series in
 * time order. Returns 0 or -ENOMEM. */
int spool__list(struct spool *sp, enum spool_state state, struct vec *out);

/* Reads a window's data into *data (malloc'ed, the caller frees). */
int spool__read(struct spool *sp, const char *name, void **data, size_t *len);

/* Moves a window to another state on disk (renames, then fsyncs the
 * directories) before it returns. Returns 0, -ENOENT or -errno. */
int spool__mark(struct spool *sp, const char *name, enum spool_state to);

/* New retention limits (SIGHUP), applied at the next prune. */
void spool__set_retention(struct spool *sp, uint64_t age_s, uint64_t bytes);
void spool__stats(const struct spool *sp, struct spool_stats *st);
const char *spool__dir(const struct spool *sp);

#endif
