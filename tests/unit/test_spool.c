// SPDX-License-Identifier: GPL-2.0
/* The spool: atomic writes, what a crash leaves, names in time order,
 * retention, states that survive a restart, per-series order. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "spool.h"
#include "unit.h"
#include "vec.h"

static char dir[64];

static void fresh_dir(void)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("    could not remove %s\n", dir);
	}
	strcpy(dir, "/tmp/test_spool.XXXXXX");
	if (!mkdtemp(dir))
		dir[0] = '\0';
}

/* text as a gzip member (stored: sizes stay predictable), as the agent's
 * pprof encoder makes them; NULL when zlib fails. */
static void *gz(const void *text, size_t len, size_t *out_len)
{
	z_stream z = {};
	void *out = NULL;
	size_t cap;

	if (deflateInit2(&z, Z_NO_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	cap = deflateBound(&z, len) + 64;
	out = malloc(cap);
	z.next_in = (Bytef *)text;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = cap;
	if (!out || deflate(&z, Z_FINISH) != Z_STREAM_END) {
		free(out);
		out = NULL;
	}
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

/* Whether data[len] is a gzip member that decodes to expect[elen]. */
static bool gunzips_to(const void *data, size_t len, const void *expect, size_t elen)
{
	unsigned char buf[4096];
	z_stream z = {};
	bool ok;

	if (elen > sizeof(buf) || inflateInit2(&z, 16 + 15) != Z_OK)
		return false;
	z.next_in = (Bytef *)data;
	z.avail_in = len;
	z.next_out = buf;
	z.avail_out = sizeof(buf);
	ok = inflate(&z, Z_FINISH) == Z_STREAM_END && sizeof(buf) - z.avail_out == elen &&
	     !memcmp(buf, expect, elen);
	inflateEnd(&z);
	return ok;
}

/* spool__write of data as the agent gives it: a gzip member. */
static int put_n(struct spool *sp, const struct spool_window *w, const void *data, size_t n)
{
	size_t len = 0;
	void *g = gz(data, n, &len);
	int err = g ? spool__write(sp, w, g, len) : -ENOMEM;

	free(g);
	return err;
}

static int put(struct spool *sp, const struct spool_window *w, const char *text)
{
	return put_n(sp, w, text, strlen(text));
}

static struct spool *open_spool(uint64_t age, uint64_t bytes)
{
	struct spool_opts o = { .dir = dir, .host = "h1", .retain_age_s = age,
				.retain_bytes = bytes, .push = true };
	struct spool *sp = NULL;
	int err = spool__open(&o, &sp);

	CHECK(err == 0, "open %s: %d", dir, err);
	return sp;
}

static struct spool_window win(const char *series, const char *svc, uint64_t from)
{
	return (struct spool_window){ .series = series, .service = svc, .event = "cpu",
				      .from_s = from, .until_s = from + 10, .sample_rate = 99 };
}

static const char *S1 = "bpfsampler.cpu{service_name=nginx.service,hostname=h1}";
static const char *S2 = "bpfsampler.cpu{service_name=db/x,hostname=h1}";

static int count_prefix(const char *sub, const char *prefix)
{
	char path[128];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

static void touch(const char *sub, const char *name, const char *text);

static void test_atomic_write(void)
{
	const char *name = "h1.cpu.nginx.service.20261125T101500Z.pb.gz";
	struct spool_window w = win(S1, "nginx.service", 1795601700); /* 2026-11-25 10:15 */
	struct spool_stats st;
	char path[256];
	unsigned char buf[1024];
	size_t n = 0;
	struct stat stb;
	struct spool *sp;
	FILE *f;

	fresh_dir();
	sp = open_spool(0, 0);
	if (!sp)
		return;
	CHECK(put(sp, &w, "PROFILE") == 0, "write");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(stat(path, &stb) == 0, "%s exists", path);
	CHECK((stb.st_mode & 0777) == 0640, "mode %o", stb.st_mode & 0777);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	/* one file: the data still a gzip member (any reader skips the
	 * comment), the metadata in its header's comment */
	CHECK(gunzips_to(buf, n, "PROFILE", 7), "content decodes");
	CHECK(n > 10 && (buf[3] & 0x10) && strstr((char *)buf + 10, S1) &&
	      strstr((char *)buf + 10, "\nfrom=1795601700\n"),
	      "metadata in the gzip comment");
	CHECK(count_prefix(".", "h1.cpu.nginx.service.") == 1, "no sidecar");
	CHECK(count_prefix(".", ".tmp.") == 0, "no temporaries left");
	/* A '/' in a service must not make a subdirectory. */
	w = win(S2, "db/x", 1795601700);
	CHECK(put(sp, &w, "P2") == 0, "write db/x");
	CHECK(count_prefix(".", "h1.cpu.db_x.") == 1, "sanitized name");
	/* Newlines would break the metadata. */
	w.series = "a\nb";
	CHECK(put(sp, &w, "P") == -EINVAL, "newline refused");
	/* Only gzip members are stored: the metadata rides in the header. */
	w.series = S1;
	CHECK(spool__write(sp, &w, "PLAIN", 5) == -EINVAL, "not gzip: refused");
	spool__stats(sp, &st);
	CHECK(st.written == 2 && st.backlog_files == 2, "written %lu backlog %lu",
	      (unsigned long)st.written, (unsigned long)st.backlog_files);
	spool__free(sp);
	/* read back at the next start from the comment */
	sp = open_spool(0, 0);
	if (!sp)
		return;
	spool__stats(sp, &st);
	CHECK(st.backlog_files == 2 && st.total_bytes > 0, "reopened: %lu windows",
	      (unsigned long)st.backlog_files);
	spool__free(sp);
}

/* A spool written before the metadata moved into the gzip header: data
 * files with .meta sidecars are read, moved with their sidecar and
 * removed with it. */
static void test_legacy_sidecars(void)
{
	struct vec v = VEC_INIT(struct spool_entry);
	struct spool_entry *e;
	char text[512];
	struct spool *sp;

	fresh_dir();
	snprintf(text, sizeof(text),
		 "bpfsampler-spool-meta 1\nseries=%s\nservice=nginx\nevent=cpu\nfrom=100\n"
		 "until=110\nsample_rate=99\n", S1);
	touch(".", "h1.cpu.nginx.19700101T000140Z.pb.gz", "OLD");
	touch(".", "h1.cpu.nginx.19700101T000140Z.meta", text);
	touch(".", "h1.cpu.lone.19700101T000140Z.pb.gz", "NO METADATA");
	sp = open_spool(0, 0);
	if (!sp)
		return;
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 1, "the legacy window: %zu",
	      v.nr);
	e = v.nr ? vec__at(&v, 0) : NULL;
	CHECK(e && !strcmp(e->w.series, S1) && e->w.from_s == 100 && e->w.sample_rate == 99 &&
	      e->bytes == 3 + strlen(text), "its metadata and size");
	CHECK(e && spool__mark(sp, e->name, SPOOL_SENT) == 0, "marked sent");
	CHECK(count_prefix("sent", "h1.cpu.nginx.") == 2, "the sidecar moved with it");
	vec__free(&v);
	spool__free(sp);
	/* retention removes both */
	sp = open_spool(1, 0);
	if (!sp)
		return;
	CHECK(spool__prune(sp, 1000) == 1, "pruned");
	CHECK(count_prefix("sent", "h1.") == 0, "data and sidecar removed");
	CHECK(count_prefix(".", "h1.cpu.lone.") == 1, "a file without metadata is left alone");
	spool__free(sp);
}

static void touch(const char *sub, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "w");
	CHECK(f, "create %s", path);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_crash_leftovers(void)
{
	struct spool_window w = win(S1, "nginx", 1000);
	struct spool_stats st;
	struct vec v = VEC_INIT(struct spool_entry);
	char from[256], to[256];
	struct spool *sp;

	fresh_dir();
	sp = open_spool(0, 0);
	if (!sp)
		return;
	CHECK(put(sp, &w, "A") == 0, "write");
	spool__free(sp);
	/* A crash mid-write: a temporary; in an older spool, a sidecar renamed
	 * without its data file. A crash mid-mark: the data in sent/. */
	touch(".", ".tmp.h1.cpu.x.pb.gz.123.1", "half");
	touch(".", "h1.cpu.ghost.19700101T000000Z.meta", "bpfsampler-spool-meta 1\n");
	snprintf(from, sizeof(from), "%s/h1.cpu.nginx.19700101T001640Z.pb.gz", dir);
	snprintf(to, sizeof(to), "%s/sent/h1.cpu.nginx.19700101T001640Z.pb.gz", dir);
	CHECK(rename(from, to) == 0, "move data to sent/");
	sp = open_spool(0, 0);
	if (!sp)
		return;
	spool__stats(sp, &st);
	CHECK(st.temps_removed == 2, "removed %lu", (unsigned long)st.temps_removed);
	CHECK(count_prefix(".", ".tmp.") == 0 && count_prefix(".", "h1.cpu.ghost") == 0,
	      "leftovers gone");
	CHECK(spool__list(sp, SPOOL_SENT, &v) == 0 && v.nr == 1, "adopted as sent: %zu", v.nr);
	CHECK(count_prefix("sent", "h1.cpu.nginx.") == 1, "data moved to sent/ found there");
	vec__free(&v);
	spool__free(sp);
}

static void test_time_order(void)
{
	uint64_t t[] = { 1795602950, 1795601700, 1795603000, 1795602910 };
	struct vec v = VEC_INIT(struct spool_entry);
	struct spool *sp;

	fresh_dir();
	sp = open_spool(0, 0);
	if (!sp)
		return;
	for (int i = 0; i < 4; i++) {
		struct spool_window w = win(S1, "nginx", t[i]);

		CHECK(put(sp, &w, "x") == 0, "write %d", i);
	}
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 4, "list");
	for (size_t i = 1; i < v.nr; i++) {
		struct spool_entry *a = vec__at(&v, i - 1), *b = vec__at(&v, i);

		CHECK(a->w.from_s < b->w.from_s, "listed in time order at %zu", i);
		/* The names alone sort the same way (ls shows them in order). */
		CHECK(strcmp(a->name, b->name) < 0, "%s before %s", a->name, b->name);
	}
	vec__free(&v);
	spool__free(sp);
}

static void test_retention(void)
{
	struct spool_stats st;
	struct vec v = VEC_INIT(struct spool_entry);
	struct spool *sp;
	char blob[1000];
	int removed;

	memset(blob, 'z', sizeof(blob));
	fresh_dir();
	sp = open_spool(3600, 0);
	if (!sp)
		return;
	for (int i = 0; i < 5; i++) {
		struct spool_window w = win(S1, "nginx", 10000 + i * 1000);

		CHECK(put_n(sp, &w, blob, sizeof(blob)) == 0, "write %d", i);
	}
	/* now = 15000: windows ending at or before 11400 are older than an hour */
	removed = spool__prune(sp, 15000);
	CHECK(removed == 2, "age: removed %d", removed);
	spool__stats(sp, &st);
	CHECK(st.pruned == 2 && st.dropped_undelivered == 2 && st.backlog_files == 3,
	      "pruned %lu dropped %lu backlog %lu", (unsigned long)st.pruned,
	      (unsigned long)st.dropped_undelivered, (unsigned long)st.backlog_files);
	spool__free(sp);

	/* Size: settled windows go before pending ones, oldest first. */
	sp = open_spool(0, 2500);
	if (!sp)
		return;
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 3, "reopened with 3");
	if (v.nr == 3)
		CHECK(spool__mark(sp, ((struct spool_entry *)vec__at(&v, 2))->name, SPOOL_SENT) == 0,
		      "mark newest sent");
	vec__clear(&v);
	removed = spool__prune(sp, 15000);
	CHECK(removed == 1, "size: removed %d", removed);
	spool__stats(sp, &st);
	CHECK(st.total_bytes <= 2500 && st.dropped_undelivered == 0 && st.backlog_files == 2,
	      "total %lu dropped %lu", (unsigned long)st.total_bytes,
	      (unsigned long)st.dropped_undelivered);
	CHECK(count_prefix("sent", "h1.") == 0, "the sent window went first");
	/* The index is rebuilt after a prune: reads still work. */
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 2, "2 pending");
	if (v.nr) {
		void *data = NULL;
		size_t len = 0;

		CHECK(spool__read(sp, ((struct spool_entry *)vec__at(&v, 0))->name, &data, &len) == 0 &&
		      gunzips_to(data, len, blob, sizeof(blob)), "read after prune");
		free(data);
	}
	vec__free(&v);
	spool__free(sp);
}

static void test_states_survive_reopen(void)
{
	struct vec v = VEC_INIT(struct spool_entry);
	char sent[256] = "", rej[256] = "";
	struct spool *sp, *again = NULL;
	struct spool_opts o = { .dir = dir, .host = "h1", .push = true };

	fresh_dir();
	sp = open_spool(0, 0);
	if (!sp)
		return;
	for (int i = 0; i < 3; i++) {
		struct spool_window w = win(S1, "nginx", 5000 + i * 10);

		CHECK(put(sp, &w, "x") == 0, "write");
	}
	CHECK(spool__open(&o, &again) == -EBUSY, "a second agent is refused");
	spool__free(again);
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 3, "3 pending");
	if (v.nr == 3) {
		snprintf(sent, sizeof(sent), "%s", ((struct spool_entry *)vec__at(&v, 0))->name);
		snprintf(rej, sizeof(rej), "%s", ((struct spool_entry *)vec__at(&v, 1))->name);
	}
	CHECK(spool__mark(sp, sent, SPOOL_SENT) == 0, "mark sent");
	CHECK(spool__mark(sp, rej, SPOOL_REJECTED) == 0, "mark rejected");
	CHECK(spool__mark(sp, "nope.pb.gz", SPOOL_SENT) == -ENOENT, "unknown name");
	spool__free(sp);

	sp = open_spool(0, 0);
	if (!sp)
		return;
	vec__clear(&v);
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 1, "1 pending: %zu", v.nr);
	CHECK(v.nr && ((struct spool_entry *)vec__at(&v, 0))->w.from_s == 5020, "the newest");
	vec__clear(&v);
	CHECK(spool__list(sp, SPOOL_SENT, &v) == 0 && v.nr == 1 &&
	      !strcmp(((struct spool_entry *)vec__at(&v, 0))->name, sent), "sent kept");
	vec__clear(&v);
	CHECK(spool__list(sp, SPOOL_REJECTED, &v) == 0 && v.nr == 1 &&
	      ((struct spool_entry *)vec__at(&v, 0))->w.sample_rate == 99 &&
	      !strcmp(((struct spool_entry *)vec__at(&v, 0))->w.series, S1), "rejected kept, meta");
	vec__free(&v);
	spool__free(sp);
}

static void test_series_order(void)
{
	struct vec v = VEC_INIT(struct spool_entry);
	struct spool *sp;

	fresh_dir();
	sp = open_spool(0, 0);
	if (!sp)
		return;
	/* Interleaved series, written out of time order. */
	for (int i = 5; i >= 0; i--) {
		struct spool_window w = win(i % 2 ? S1 : S2, i % 2 ? "nginx" : "db", 100 + i * 10);

		CHECK(put(sp, &w, "x") == 0, "write %d", i);
	}
	/* Same host, event, service and start, another series: a new name. */
	struct spool_window twin = win("bpfsampler.cpu{service_name=db,pod=b}", "db", 100);
	CHECK(put(sp, &twin, "y") == 0, "twin written");
	spool__free(sp);
	sp = open_spool(0, 0);
	if (!sp)
		return;
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 7, "7 pending: %zu", v.nr);
	for (size_t i = 1; i < v.nr; i++) {
		struct spool_entry *a = vec__at(&v, i - 1), *b = vec__at(&v, i);
		int c = strcmp(a->w.series, b->w.series);

		CHECK(c < 0 || (c == 0 && a->w.from_s < b->w.from_s),
		      "grouped by series, in time order at %zu", i);
	}
	vec__free(&v);
	spool__free(sp);
}

/* A batch: nothing visible under a final name nor listed before commit;
 * two series whose names sanitize alike in one batch get distinct files;
 * a batch never committed leaves nothing behind. */
static void test_batch(void)
{
	struct spool_window a = win(S1, "x/y", 2000), b = win(S2, "x_y", 2000);
	struct vec v = VEC_INIT(struct spool_entry);
	struct spool_stats st;
	size_t written = 99;
	struct spool *sp;

	fresh_dir();
	sp = open_spool(0, 0);
	if (!sp)
		return;
	spool__begin(sp);
	CHECK(put(sp, &a, "AAA") == 0, "stage a");
	CHECK(put(sp, &b, "BB") == 0, "stage b");
	CHECK(count_prefix(".", "h1.") == 0, "no final name before commit: %d",
	      count_prefix(".", "h1."));
	CHECK(count_prefix(".", ".tmp.") == 2, "staged as 2 temporaries: %d",
	      count_prefix(".", ".tmp."));
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 0, "none listed: %zu", v.nr);
	CHECK(spool__commit(sp, &written) == 0 && written == 2, "commit: %zu written", written);
	CHECK(count_prefix(".", ".tmp.") == 0, "no temporaries after commit");
	CHECK(count_prefix(".", "h1.cpu.x_y.") == 2, "both windows: %d",
	      count_prefix(".", "h1.cpu.x_y."));
	vec__clear(&v);
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 2, "2 listed: %zu", v.nr);
	spool__stats(sp, &st);
	CHECK(st.written == 2 && st.backlog_files == 2, "written %lu", (unsigned long)st.written);
	/* the next batch, never committed */
	a.from_s = b.from_s = 3000;
	spool__begin(sp);
	CHECK(put(sp, &a, "A") == 0, "stage again");
	spool__free(sp);
	CHECK(count_prefix(".", ".tmp.") == 0, "an uncommitted batch is removed");
	sp = open_spool(0, 0);
	if (!sp)
		return;
	vec__clear(&v);
	CHECK(spool__list(sp, SPOOL_PENDING, &v) == 0 && v.nr == 2, "reopened: 2 windows: %zu",
	      v.nr);
	/* an empty batch commits nothing */
	spool__begin(sp);
	CHECK(spool__commit(sp, &written) == 0 && written == 0, "empty batch");
	vec__free(&v);
	spool__free(sp);
}

int main(void)
{
	RUN(test_atomic_write);
	RUN(test_legacy_sidecars);
	RUN(test_batch);
	RUN(test_crash_leftovers);
	RUN(test_time_order);
	RUN(test_retention);
	RUN(test_states_survive_reopen);
	RUN(test_series_order);
	fresh_dir(); /* removes the last one */
	rmdir(dir);
	UNIT_EXIT();
}
