/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Side-band records: the executable file mappings every process makes, as
 * perf record follows them. One dummy software event per CPU
 * (PERF_COUNT_SW_DUMMY: it never samples) with mmap2 and comm_exec writes a
 * record for each new executable mapping and each exec into its own perf
 * ring; the kernel emits these from perf_event_mmap() and the exec path, so
 * no system call pays for them (a syscall tracepoint would put every task
 * on the slow system-call path). The rings are drained with the BPF rings;
 * each drain's records are ordered by time before they are handed on.
 */
#ifndef BPFSAMPLER_SIDEBAND_H
#define BPFSAMPLER_SIDEBAND_H

#include <stdbool.h>
#include <stdint.h>

/* An executable file mapping, from a PERF_RECORD_MMAP2; or with exec set,
 * the start of an exec (its PERF_RECORD_COMM: pid and time_ns only), which
 * comes before the new image's mappings. */
struct sideband_mapping {
	bool exec;
	uint32_t pid;
	uint32_t tid;
	uint64_t time_ns; /* CLOCK_MONOTONIC, the clock of the BPF records */
	uint64_t start;	  /* [start, end) of file (dev, ino) at offset pgoff */
	uint64_t end;
	uint64_t pgoff;
	uint64_t dev;	  /* the kernel's encoding: major << 20 | minor */
	uint64_t ino;
	const char *path; /* as the kernel named it; valid during the call */
};

/* Called in time order within a drain. */
typedef void (*sideband_mapping_fn)(void *ctx, const struct sideband_mapping *m);
/* The kernel dropped n records (a ring was full): mappings were missed. */
typedef void (*sideband_lost_fn)(void *ctx, uint64_t n);

struct sideband_opts {
	unsigned int size; /* bytes of ring per CPU: a power of 2, >= a page */
	/* Bytes in a ring that wake the reader (0: every record). More saves
	 * the reader's wake-ups, and delays each mapping's gen until the next
	 * drain (the caller's own timer). */
	unsigned int wakeup_bytes;
	sideband_mapping_fn on_mapping;
	sideband_lost_fn on_lost; /* may be NULL */
	void *ctx;
	bool no_events; /* tests: no perf events, records come by sideband__feed */
};

struct sideband_stats {
	uint64_t mappings;    /* executable file mappings handed on */
	uint64_t stale;	      /* mappings of an image its process left by exec
			       * before they were read: not handed on */
	uint64_t lost;	      /* records the kernel could not write, or we could not keep */
	uint64_t lost_events; /* times it happened */
	uint64_t max_lag_ns;  /* longest from a mapping to its handing on */
};

struct sideband;

/* Opens the events on every online CPU, enabled: mappings made from now on
 * are followed. -errno when the kernel refuses (explained on stderr). */
int sideband__new(const struct sideband_opts *o, struct sideband **out);
/* Readable when a ring has records (each record wakes it up). */
int sideband__epoll_fd(const struct sideband *sb);
/* One record, as the kernel wrote it (whole, with its sample_id): kept
 * until the end of the drain. */
struct perf_event_header;
void sideband__feed(struct sideband *sb, const struct perf_event_header *h);
/* Drains every ring, then hands the mappings on in time order. */
int sideband__consume(struct sideband *sb);
void sideband__stats(const struct sideband *sb, struct sideband_stats *out);
void sideband__free(struct sideband *sb);
/* Whether this kernel lets us open the event (probed once). */
bool sideband__supported(void);

#endif
