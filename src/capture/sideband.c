// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "hashmap.h"
#include "log.h"
#include "sideband.h"
#include "vec.h"

/* PERF_RECORD_MMAP2 up to its file name. */
struct rec_mmap2 {
	struct perf_event_header hdr;
	__u32 pid, tid;
	__u64 addr, len, pgoff;
	__u32 maj, min;
	__u64 ino, ino_generation;
	__u32 prot, flags;
	char filename[];
};

/* The sample_id every record ends with (sample_id_all), for sample_type
 * TID | TIME | CPU, in that order. */
struct rec_id {
	__u32 pid, tid;
	__u64 time;
	__u32 cpu, res;
};

struct rec_lost {
	struct perf_event_header hdr;
	__u64 id, lost;
};

/* One record of a drain, kept until the drain is ordered. */
struct item {
	uint64_t time_ns;
	bool exec; /* a COMM record of an exec; else a mapping */
	struct sideband_mapping m;
	char *path;
};

struct sideband {
	struct sideband_opts opts;
	int map_fd; /* the PERF_EVENT_ARRAY perf_buffer wants; ours to close */
	struct perf_buffer *pb; /* owns the events and their rings */
	struct vec items;	/* struct item, this drain's records */
	struct sideband_stats stats;
};

/*
 * Exec mappings only (mmap_data = 0); comm_exec marks the COMM record of an
 * exec, which comes before the new image's mappings: a mapping older than
 * its process's exec is of the image it left. Times on CLOCK_MONOTONIC, the
 * clock of bpf_ktime_get_ns in the BPF records. By default a watermark of
 * one byte wakes the reader at every record: the loader gives a mapping its
 * generation when it reads it, and samples taken until then carry the one
 * before. The agent asks for a quarter of the ring (wakeup_bytes) and reads
 * the records at its drains instead.
 */
static void sideband_attr(struct perf_event_attr *attr, unsigned int wakeup_bytes)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_DUMMY;
	attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->sample_id_all = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->watermark = 1;
	attr->wakeup_watermark = wakeup_bytes ? wakeup_bytes : 1;
	attr->disabled = 1; /* libbpf enables it once its ring is mapped */
}

bool sideband__supported(void)
{
	static int has = -1;

	if (has < 0) {
		struct perf_event_attr attr;
		int fd;

		sideband_attr(&attr, 0);
		fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
		has = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return has;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static const struct rec_id *rec_id(const struct perf_event_header *h, size_t fixed)
{
	if (h->size < fixed + sizeof(struct rec_id))
		return NULL;
	return (const struct rec_id *)((const char *)h + h->size - sizeof(struct rec_id));
}

/* Anonymous code (JITs: named from perf maps) and the kernel's own
 * mappings ([vdso], read from our copy) are not files to open. */
static bool is_file(const struct rec_mmap2 *r, size_t name_len)
{
	if (!name_len || r->filename[0] == '[')
		return false;
	return strncmp(r->filename, "//anon", name_len) != 0 && r->ino;
}

static int keep_mmap2(struct sideband *sb, const struct perf_event_header *h)
{
	const struct rec_mmap2 *r = (const void *)h;
	const struct rec_id *id = rec_id(h, sizeof(*r));
	size_t name_len;
	struct item *it;

	if (!id || !(r->prot & PROT_EXEC))
		return 0;
	name_len = strnlen(r->filename, (const char *)id - r->filename);
	if (!is_file(r, name_len))
		return 0;
	it = vec__push(&sb->items);
	if (!it)
		return -ENOMEM;
	*it = (struct item){
		.time_ns = id->time,
		.m = { .pid = r->pid,
		       .tid = r->tid,
		       .time_ns = id->time,
		       .start = r->addr,
		       .end = r->addr + r->len,
		       .pgoff = r->pgoff,
		       .dev = (uint64_t)r->maj << 20 | (r->min & 0xfffff),
		       .ino = r->ino },
		.path = strndup(r->filename, name_len),
	};
	if (!it->path) {
		sb->items.nr--;
		return -ENOMEM;
	}
	return 0;
}

static int keep_exec(struct sideband *sb, const struct perf_event_header *h)
{
	/* PERF_RECORD_COMM: pid, tid, comm[] */
	const struct rec_id *id = rec_id(h, sizeof(*h) + 2 * sizeof(__u32));
	const __u32 *pid = (const void *)(h + 1);
	struct item *it;

	if (!id || !(h->misc & PERF_RECORD_MISC_COMM_EXEC))
		return 0;
	it = vec__push(&sb->items);
	if (!it)
		return -ENOMEM;
	*it = (struct item){ .time_ns = id->time, .exec = true, .m = { .pid = *pid } };
	return 0;
}

void sideband__feed(struct sideband *sb, const struct perf_event_header *h)
{
	const struct rec_lost *l = (const void *)h;
	uint64_t lost = 0;

	switch (h->type) {
	case PERF_RECORD_MMAP2:
		lost = keep_mmap2(sb, h) ? 1 : 0; /* out of memory: lost, and said */
		break;
	case PERF_RECORD_COMM:
		lost = keep_exec(sb, h) ? 1 : 0;
		break;
	case PERF_RECORD_LOST:
		if (h->size >= sizeof(*l))
			lost = l->lost;
		break;
	}
	if (!lost)
		return;
	/* the same path as the kernel's losses: counted, and the maps of
	 * every live process read again from /proc */
	sb->stats.lost += lost;
	sb->stats.lost_events++;
	if (sb->opts.on_lost)
		sb->opts.on_lost(sb->opts.ctx, lost);
}

static enum bpf_perf_event_ret on_record(void *ctx, int cpu, struct perf_event_header *h)
{
	sideband__feed(ctx, h);
	return LIBBPF_PERF_EVENT_CONT;
}

static int by_time(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* Hands on this drain's mappings in time order, but for those made before
 * an exec of their process in the same drain (of the image it left). */
static void dispatch(struct sideband *sb)
{
	struct hashmap *execs = NULL;
	uint64_t now = now_ns();

	qsort(sb->items.data, sb->items.nr, sizeof(struct item), by_time);
	for (size_t i = 0; i < sb->items.nr; i++) {
		struct item *it = vec__at(&sb->items, i);

		if (!it->exec)
			continue;
		if (!execs)
			execs = hashmap__new(hashmap__hash_int, hashmap__equal_int);
		/* sorted: the last exec of the pid wins */
		if (execs)
			hashmap__set(execs, (void *)(uintptr_t)(it->m.pid + 1UL),
				     (void *)(uintptr_t)it->time_ns, NULL);
	}
	for (size_t i = 0; i < sb->items.nr; i++) {
		struct item *it = vec__at(&sb->items, i);
		uintptr_t exec_ns;

		if (it->exec) {
			/* the image's boundary: the BPF side sees the exec
			 * only once the new image is mapped */
			it->m.exec = true;
			it->m.time_ns = it->time_ns;
			sb->opts.on_mapping(sb->opts.ctx, &it->m);
			continue;
		}
		exec_ns = execs ? (uintptr_t)hashmap__find(execs, (void *)(uintptr_t)(it->m.pid + 1UL))
				: 0;
		if (exec_ns > it->time_ns) {
			sb->stats.stale++;
		} else {
			it->m.path = it->path;
			sb->opts.on_mapping(sb->opts.ctx, &it->m);
			sb->stats.mappings++;
			if (now > it->time_ns && now - it->time_ns > sb->stats.max_lag_ns)
				sb->stats.max_lag_ns = now - it->time_ns;
		}
		free(it->path);
	}
	vec__clear(&sb->items);
	hashmap__free(execs);
}

int sideband__consume(struct sideband *sb)
{
	int err = sb->pb ? perf_buffer__consume(sb->pb) : 0;

	if (sb->items.nr)
		dispatch(sb);
	return err < 0 ? err : 0;
}

int sideband__epoll_fd(const struct sideband *sb)
{
	return sb->pb ? perf_buffer__epoll_fd(sb->pb) : -EINVAL;
}

void sideband__stats(const struct sideband *sb, struct sideband_stats *out)
{
	*out = sb->stats;
}

int sideband__new(const struct sideband_opts *o, struct sideband **out)
{
	long page = sysconf(_SC_PAGESIZE);
	int ncpu = libbpf_num_possible_cpus();
	struct perf_event_attr attr;
	struct sideband *sb;
	int err;

	if (ncpu < 0)
		return ncpu;
	if (!o->on_mapping || (!o->no_events && (o->size < page || (o->size & (o->size - 1)))))
		return -EINVAL;
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return -ENOMEM;
	sb->opts = *o;
	sb->items = VEC_INIT(struct item);
	sb->map_fd = -1;
	if (o->no_events) {
		*out = sb;
		return 0;
	}
	sb->map_fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, "bpfs_sideband", sizeof(int),
				    sizeof(int), ncpu, NULL);
	if (sb->map_fd < 0) {
		err = -errno;
		p_err("cannot create the side-band event array: %s", strerror(-err));
		goto err_free;
	}
	sideband_attr(&attr, o->wakeup_bytes < o->size ? o->wakeup_bytes : o->size / 2);
	sb->pb = perf_buffer__new_raw(sb->map_fd, o->size / page, &attr, on_record, sb, NULL);
	if (!sb->pb) {
		err = -errno;
		p_err("cannot open the side-band perf events (dummy, mmap2) that follow mappings: "
		      "%s; run with --no-follow-mappings to name frames after the mappings read "
		      "from /proc", strerror(-err));
		goto err_free;
	}
	*out = sb;
	return 0;
err_free:
	sideband__free(sb);
	return err;
}

void sideband__free(struct sideband *sb)
{
	if (!sb)
		return;
	perf_buffer__free(sb->pb); /* closes the events */
	if (sb->map_fd >= 0)
		close(sb->map_fd);
	for (size_t i = 0; i < sb->items.nr; i++)
		free(((struct item *)vec__at(&sb->items, i))->path);
	vec__free(&sb->items);
	free(sb);
}
