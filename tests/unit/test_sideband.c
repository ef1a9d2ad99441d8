// SPDX-License-Identifier: GPL-2.0
/*
 * The side-band reader on records built here byte for byte as the kernel
 * writes them (PERF_RECORD_MMAP2, COMM with comm_exec, LOST, each with the
 * sample_id of TID|TIME|CPU at its end): fields and the file name are read
 * at the right offsets, a drain is handed on in time order, mappings of an
 * image left by exec, anonymous and [vdso] mappings and data mappings are
 * skipped, and lost records are counted and reported.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "sideband.h"
#include "unit.h"

struct seen {
	int nr;
	struct sideband_mapping m[8];
	char path[8][64];
	uint64_t lost;
	int lost_calls;
	int execs, exec_at; /* exec starts handed on; mappings before the last */
	struct sideband_mapping exec;
};

static void on_mapping(void *ctx, const struct sideband_mapping *m)
{
	struct seen *s = ctx;

	if (m->exec) {
		s->exec = *m;
		s->exec_at = s->nr;
		s->execs++;
		return;
	}
	if (s->nr >= 8)
		return;
	s->m[s->nr] = *m;
	snprintf(s->path[s->nr], sizeof(s->path[0]), "%s", m->path);
	s->m[s->nr].path = s->path[s->nr];
	s->nr++;
}

static void on_lost(void *ctx, uint64_t n)
{
	struct seen *s = ctx;

	s->lost += n;
	s->lost_calls++;
}

/* Appends the sample_id (pid, tid, time, cpu, res) and sets the size. */
static void finish(uint8_t *buf, size_t len, uint32_t pid, uint64_t time)
{
	struct perf_event_header *h = (void *)buf;
	uint32_t id[6] = { pid, pid, (uint32_t)time, (uint32_t)(time >> 32), 1, 0 };

	memcpy(buf + len, id, sizeof(id));
	h->size = len + sizeof(id);
}

static void feed_mmap2(struct sideband *sb, uint32_t pid, uint64_t time, uint64_t addr,
		       uint32_t prot, const char *name)
{
	uint8_t buf[256] = {};
	struct perf_event_header *h = (void *)buf;
	uint64_t *u64 = (void *)(buf + 16);
	uint32_t *u32 = (void *)(buf + 8);
	size_t name_len = (strlen(name) + 8) & ~7UL; /* NUL, padded to 8 */

	h->type = PERF_RECORD_MMAP2;
	u32[0] = pid;
	u32[1] = pid + 1;
	u64[0] = addr;	      /* addr */
	u64[1] = 0x3000;      /* len */
	u64[2] = 0x1000;      /* pgoff */
	u32[8] = 8;	      /* maj, at byte 40 */
	u32[9] = 3;	      /* min */
	u64[4] = 123456;      /* ino, at byte 48 */
	u64[5] = 7;	      /* ino_generation */
	u32[14] = prot;      /* at byte 64 */
	u32[15] = MAP_PRIVATE;
	strcpy((char *)buf + 72, name);
	finish(buf, 72 + name_len, pid, time);
	sideband__feed(sb, h);
}

static void feed_exec(struct sideband *sb, uint32_t pid, uint64_t time)
{
	uint8_t buf[128] = {};
	struct perf_event_header *h = (void *)buf;
	uint32_t *u32 = (void *)(buf + 8);

	h->type = PERF_RECORD_COMM;
	h->misc = PERF_RECORD_MISC_COMM_EXEC;
	u32[0] = u32[1] = pid;
	strcpy((char *)buf + 16, "newimage");
	finish(buf, 16 + 16, pid, time);
	sideband__feed(sb, h);
}

static void feed_lost(struct sideband *sb, uint64_t n)
{
	uint8_t buf[128] = {};
	struct perf_event_header *h = (void *)buf;
	uint64_t *u64 = (void *)(buf + 8);

	h->type = PERF_RECORD_LOST;
	u64[0] = 1;
	u64[1] = n;
	finish(buf, 24, 0, 1);
	sideband__feed(sb, h);
}

static void test_records(void)
{
	struct seen s = {};
	struct sideband_stats st;
	struct sideband *sb;

	CHECK(!sideband__new(&(struct sideband_opts){ .on_mapping = on_mapping,
						       .on_lost = on_lost,
						       .ctx = &s,
						       .no_events = true },
			     &sb),
	      "new");
	/* fed out of time order, as two CPUs' rings are drained */
	feed_mmap2(sb, 100, 3000, 0x7f0000002000, PROT_READ | PROT_EXEC, "/usr/lib/libb.so");
	feed_mmap2(sb, 100, 1000, 0x7f0000001000, PROT_READ | PROT_EXEC, "/usr/lib/liba.so");
	feed_mmap2(sb, 100, 1500, 0x7f0000005000, PROT_READ | PROT_EXEC, "//anon");
	feed_mmap2(sb, 100, 1600, 0x7f0000006000, PROT_READ | PROT_EXEC, "[vdso]");
	feed_mmap2(sb, 100, 1700, 0x7f0000007000, PROT_READ, "/usr/lib/data.bin");
	/* pid 200 mapped a library, then exec'd: that library is gone */
	feed_mmap2(sb, 200, 1200, 0x7f0000003000, PROT_READ | PROT_EXEC, "/old/lib.so");
	feed_exec(sb, 200, 1300);
	feed_mmap2(sb, 200, 1400, 0x7f0000004000, PROT_READ | PROT_EXEC, "/new/ld.so");
	feed_lost(sb, 17);
	CHECK(s.nr == 0, "nothing handed on before the drain ends (%d)", s.nr);
	CHECK(s.lost == 17 && s.lost_calls == 1, "lost reported at once: %llu",
	      (unsigned long long)s.lost);
	CHECK(!sideband__consume(sb), "consume");
	CHECK(s.nr == 3, "three mappings handed on, got %d", s.nr);
	CHECK(s.execs == 1 && s.exec.pid == 200 && s.exec.time_ns == 1300 && s.exec_at == 1,
	      "the exec's start handed on in time order: %d, pid %u at %llu after %d mappings",
	      s.execs, s.exec.pid, (unsigned long long)s.exec.time_ns, s.exec_at);
	if (s.nr == 3) {
		CHECK(!strcmp(s.path[0], "/usr/lib/liba.so") && s.m[0].time_ns == 1000,
		      "first in time: %s at %llu", s.path[0], (unsigned long long)s.m[0].time_ns);
		CHECK(!strcmp(s.path[1], "/new/ld.so") && s.m[1].pid == 200, "then %s", s.path[1]);
		CHECK(!strcmp(s.path[2], "/usr/lib/libb.so"), "last %s", s.path[2]);
		CHECK(s.m[0].pid == 100 && s.m[0].tid == 101, "pid %u tid %u", s.m[0].pid,
		      s.m[0].tid);
		CHECK(s.m[0].start == 0x7f0000001000 && s.m[0].end == 0x7f0000004000 &&
			      s.m[0].pgoff == 0x1000,
		      "range %#llx-%#llx pgoff %#llx", (unsigned long long)s.m[0].start,
		      (unsigned long long)s.m[0].end, (unsigned long long)s.m[0].pgoff);
		CHECK(s.m[0].dev == (8ULL << 20 | 3) && s.m[0].ino == 123456,
		      "dev %#llx ino %llu", (unsigned long long)s.m[0].dev,
		      (unsigned long long)s.m[0].ino);
	}
	sideband__stats(sb, &st);
	CHECK(st.mappings == 3 && st.stale == 1 && st.lost == 17 && st.lost_events == 1,
	      "stats: %llu mappings, %llu stale, %llu lost", (unsigned long long)st.mappings,
	      (unsigned long long)st.stale, (unsigned long long)st.lost);
	/* a record too short for its sample_id is ignored, not read past */
	{
		struct perf_event_header h = { .type = PERF_RECORD_MMAP2, .size = sizeof(h) };

		sideband__feed(sb, &h);
		CHECK(!sideband__consume(sb) && s.nr == 3, "short record ignored");
	}
	sideband__free(sb);
}

int main(void)
{
	RUN(test_records);
	UNIT_EXIT();
}
