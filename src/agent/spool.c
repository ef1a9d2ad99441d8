// SPDX-License-Identifier: GPL-2.0
/*
 * The spool (include/spool.h). Every change that must survive a crash is a
 * rename of a file fully written and fsync'ed under a temporary name,
 * followed by an fsync of the directory, so a final name never shows a
 * half-written file and a state, once returned, is on disk.
 *
 * A window's metadata (its Pyroscope series, bounds, rate) travels in the
 * data file itself, as the comment field of its gzip header (RFC 1952,
 * FCOMMENT): the file stays a plain gzip pprof that `go tool pprof` and
 * Pyroscope read (a gzip reader skips the comment), and a window is one
 * file, one create and one fsync. The series is not in the file name: it
 * is a Pyroscope name with labels ("app.cpu{k=v,...}") that may hold '/',
 * '{' and any label value, and is unbounded in length. Spools written
 * before kept it in a sidecar NAME.meta, renamed into place before the data
 * file; those are still read, moved and removed with their data file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "hashmap.h"
#include "log.h"
#include "outpath.h"
#include "spool.h"
#include "vec.h"

#define DATA_SUFFIX ".pb.gz"
#define META_SUFFIX ".meta"
#define TMP_PREFIX ATOMICFILE_PREFIX
#define META_MAGIC "bpfsampler-spool-meta 1"
#define META_MAX 8192
#define NAME_PART_MAX 64

static const char *const state_dir[] = {
	[SPOOL_PENDING] = ".",
	[SPOOL_SENT] = "sent",
	[SPOOL_REJECTED] = "rejected",
};
#define NR_STATES 3

struct win {
	char *name; /* data file name; the key of spool.by_name */
	/* interned in spool.strs: a few series per service and event, and
	 * a window per file retained (1 GB of spool: ~170,000) */
	const char *series, *service, *event;
	uint64_t from_s, until_s, sample_rate;
	uint64_t bytes;
	enum spool_state state;
	bool sidecar; /* metadata in NAME.meta (an older spool), not the file */
};

/* A window written in a batch (spool__begin): on disk under temporary
 * names, fsync'ed, waiting for spool__commit to rename it into place. */
struct staged {
	struct win *win;
	struct atomicfile data;
	uint64_t len; /* of the data */
};

struct spool {
	char *dir;
	char *host;
	int dirfd;		/* owns: the spool directory */
	int sfd[NR_STATES];	/* owns [1..]: state directories; [0] is dirfd */
	int lockfd;		/* owns: flock'ed DIR/.lock */
	struct spool_opts o;
	struct vec wins;	/* struct win *, every window indexed */
	struct hashmap *by_name; /* name -> struct win * */
	struct hashmap *strs;	 /* owns: interned strings (key and value) */
	bool batching;		/* between spool__begin and spool__commit */
	struct vec batch;	/* struct staged */
	struct spool_stats st;
};

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* s, as the spool's one copy of it (NULL: out of memory). */
static const char *intern(struct spool *sp, const char *s)
{
	char *copy = hashmap__find(sp->strs, s);

	if (copy)
		return copy;
	copy = strdup(s);
	if (!copy || hashmap__set(sp->strs, copy, copy, NULL)) {
		free(copy);
		return NULL;
	}
	return copy;
}

static void win_free(struct win *w)
{
	if (!w)
		return;
	free(w->name);
	free(w);
}

static void account(struct spool *sp, const struct win *w, int sign)
{
	sp->st.total_files += sign;
	sp->st.total_bytes += sign * (int64_t)w->bytes;
	if (w->state == SPOOL_PENDING) {
		sp->st.backlog_files += sign;
		sp->st.backlog_bytes += sign * (int64_t)w->bytes;
	}
}

static int fsync_dirfd(int fd)
{
	return fsync(fd) ? -errno : 0;
}

/* Writes buf to dirfd/name whole or not at all (atomicfile.h); mode 0640:
 * the group is how an operator's tools read the spool without root. */
static int write_atomic(int dirfd, const char *name, const void *buf, size_t len)
{
	struct atomicfile af;
	int err = atomicfile__open(&af, dirfd, name, 0640, 0);

	if (err)
		return err;
	err = atomicfile__write(&af, buf, len);
	if (err) {
		atomicfile__abort(&af);
		return err;
	}
	return atomicfile__commit(&af);
}

static void meta_name(char *out, size_t size, const char *data_name)
{
	size_t stem = strlen(data_name) - strlen(DATA_SUFFIX);

	snprintf(out, size, "%.*s" META_SUFFIX, (int)stem, data_name);
}

static char *meta_render(const struct spool_window *w)
{
	char *buf = NULL;

	if (asprintf(&buf,
		     META_MAGIC "\nseries=%s\nservice=%s\nevent=%s\nfrom=%" PRIu64
				"\nuntil=%" PRIu64 "\nsample_rate=%" PRIu64 "\n",
		     w->series, w->service ?: "", w->event ?: "", w->from_s, w->until_s,
		     w->sample_rate) < 0)
		return NULL;
	return buf;
}

/* Parses a sidecar into w (strings interned in sp). Returns 0, -EINVAL when it
 * is not ours or lacks a field, -ENOMEM. */
static int meta_parse(struct spool *sp, char *text, struct win *w)
{
	char *save = NULL, *line, *series = NULL, *service = "", *event = "";
	bool have_from = false, have_until = false;

	line = strtok_r(text, "\n", &save);
	if (!line || strcmp(line, META_MAGIC))
		return -EINVAL;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq++ = '\0';
		if (!strcmp(line, "series"))
			series = eq;
		else if (!strcmp(line, "service"))
			service = eq;
		else if (!strcmp(line, "event"))
			event = eq;
		else if (!strcmp(line, "from"))
			w->from_s = strtoull(eq, NULL, 10), have_from = true;
		else if (!strcmp(line, "until"))
			w->until_s = strtoull(eq, NULL, 10), have_until = true;
		else if (!strcmp(line, "sample_rate"))
			w->sample_rate = strtoull(eq, NULL, 10);
		/* Unknown keys: written by a newer agent; ignore. */
	}
	if (!series || !*series || !have_from || !have_until)
		return -EINVAL;
	w->series = intern(sp, series);
	w->service = intern(sp, service);
	w->event = intern(sp, event);
	return w->series && w->service && w->event ? 0 : -ENOMEM;
}

/* RFC 1952: the fixed header, and the flags of its optional fields. */
#define GZ_HEAD 10
#define GZ_FHCRC 0x02
#define GZ_FEXTRA 0x04
#define GZ_FNAME 0x08
#define GZ_FCOMMENT 0x10

/* Where the comment goes (or starts) in the gzip member gz: after the
 * header and its FEXTRA and FNAME fields. 0: not a gzip header we can
 * read (truncated, or not gzip). */
static size_t gz_comment_at(const uint8_t *gz, size_t len)
{
	size_t at = GZ_HEAD;

	if (len < GZ_HEAD || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8)
		return 0;
	if (gz[3] & GZ_FEXTRA) {
		if (len < at + 2)
			return 0;
		at += 2 + (gz[at] | gz[at + 1] << 8);
	}
	if (gz[3] & GZ_FNAME) {
		const uint8_t *nul = at < len ? memchr(gz + at, 0, len - at) : NULL;

		if (!nul)
			return 0;
		at = nul - gz + 1;
	}
	return at <= len ? at : 0;
}

/* data (a gzip member with no comment) with text as its comment, into a
 * new buffer. -EINVAL: data is not such a gzip member. */
static int gz_with_comment(const void *data, size_t len, const char *text, uint8_t **out,
			   size_t *out_len)
{
	const uint8_t *gz = data;
	size_t at = gz_comment_at(gz, len), tl = strlen(text);
	uint8_t *buf;

	/* a header CRC would cover the comment: zlib writes none */
	if (!at || gz[3] & (GZ_FCOMMENT | GZ_FHCRC))
		return -EINVAL;
	buf = malloc(len + tl + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, gz, at);
	buf[3] |= GZ_FCOMMENT;
	memcpy(buf + at, text, tl + 1);
	memcpy(buf + at + tl + 1, gz + at, len - at);
	*out = buf;
	*out_len = len + tl + 1;
	return 0;
}

/* The comment of the gzip header in head[len] (its NUL within head), or
 * NULL: no comment, or one longer than head. */
static char *gz_comment(uint8_t *head, size_t len)
{
	size_t at = gz_comment_at(head, len);

	if (!at || !(head[3] & GZ_FCOMMENT) || !memchr(head + at, 0, len - at))
		return NULL;
	return (char *)head + at;
}

static int read_at(int dirfd, const char *name, size_t max, char **out, size_t *len)
{
	struct stat stb;
	char *buf = NULL;
	size_t got = 0;
	int fd, err = 0;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &stb)) {
		err = -errno;
		goto cleanup;
	}
	if (max && (size_t)stb.st_size > max) {
		err = -EFBIG;
		goto cleanup;
	}
	/* One byte more, so a text file can be NUL-terminated. */
	buf = malloc(stb.st_size + 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (got < (size_t)stb.st_size) {
		ssize_t n = read(fd, buf + got, stb.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto cleanup;
		}
		got += n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return err;
}

/* The first bytes of dirfd/name, at most max, and its size. */
static int read_head(int dirfd, const char *name, size_t max, uint8_t *buf, size_t *len,
		     off_t *size)
{
	struct stat stb;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &stb))
		err = -errno;
	else if ((n = pread(fd, buf, max, 0)) < 0)
		err = -errno;
	else
		*len = n, *size = stb.st_size;
	close(fd);
	return err;
}

static off_t size_at(int dirfd, const char *name)
{
	struct stat stb;

	return fstatat(dirfd, name, &stb, 0) ? 0 : stb.st_size;
}

static struct win *find_win(struct spool *sp, const char *name)
{
	return sp->by_name ? hashmap__find(sp->by_name, name) : NULL;
}

static int index_win(struct spool *sp, struct win *w)
{
	struct win **slot;
	int err;

	slot = vec__push(&sp->wins);
	if (!slot)
		return -ENOMEM;
	err = sp->by_name ? hashmap__set(sp->by_name, w->name, w, NULL) : -ENOMEM;
	if (err) {
		sp->wins.nr--;
		return err;
	}
	*slot = w;
	account(sp, w, +1);
	return 0;
}

/* A data file whose sidecar is in another state's directory: a crash came
 * between the two renames of spool__mark, which moves the data first. */
static int adopt_meta(struct spool *sp, enum spool_state st, const char *meta)
{
	for (int o = 0; o < NR_STATES; o++) {
		if (o == (int)st)
			continue;
		if (!renameat(sp->sfd[o], meta, sp->sfd[st], meta))
			return 0;
	}
	return -ENOENT;
}

/* The metadata of window `name`: the comment of its gzip header, else a
 * sidecar (a spool written before: *sidecar set). *text is malloc'ed. */
static int read_meta(struct spool *sp, enum spool_state st, const char *name, char **text,
		     off_t *size, bool *sidecar)
{
	uint8_t head[GZ_HEAD + 2 + 4096 + META_MAX];
	char meta[NAME_MAX + 1], *c;
	size_t len = 0, tl;
	int err;

	*sidecar = false;
	err = read_head(sp->sfd[st], name, sizeof(head) - 1, head, &len, size);
	if (err)
		return err;
	c = gz_comment(head, len);
	if (c) {
		*text = strdup(c);
		return *text ? 0 : -ENOMEM;
	}
	*sidecar = true;
	meta_name(meta, sizeof(meta), name);
	err = read_at(sp->sfd[st], meta, META_MAX, text, &tl);
	if (err == -ENOENT && adopt_meta(sp, st, meta) == 0)
		err = read_at(sp->sfd[st], meta, META_MAX, text, &tl);
	if (!err)
		*size += size_at(sp->sfd[st], meta);
	return err;
}

static int load_one(struct spool *sp, enum spool_state st, const char *name)
{
	struct win *w;
	char *text = NULL;
	bool sidecar;
	off_t size = 0;
	int err;

	err = read_meta(sp, st, name, &text, &size, &sidecar);
	if (err) {
		p_warn("spool %s/%s: window %s has no readable metadata (neither in its gzip "
		       "header nor in a .meta file): %s; left alone, not pushed (remove it)",
		       sp->dir, state_dir[st], name, strerror(-err));
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		err = -ENOMEM;
		goto cleanup;
	}
	w->state = st;
	w->sidecar = sidecar;
	w->name = strdup(name);
	err = w->name ? meta_parse(sp, text, w) : -ENOMEM;
	if (err == -EINVAL) {
		p_warn("spool %s/%s: the metadata of %s is not a bpfsampler window's; left alone, "
		       "not pushed", sp->dir, state_dir[st], name);
		err = 0;
		goto cleanup;
	}
	if (err)
		goto cleanup;
	w->bytes = size;
	err = index_win(sp, w);
	if (err)
		goto cleanup;
	w = NULL;
cleanup:
	win_free(w);
	free(text);
	return err;
}

/* First pass over one state directory: temporaries go, windows are indexed. */
/* A state's directory, to list (its own fd: readdir moves the offset). */
static DIR *open_state_dir(struct spool *sp, enum spool_state st)
{
	int fd = openat(sp->sfd[st], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return d;
}

static int scan_dir(struct spool *sp, enum spool_state st)
{
	struct dirent *de;
	DIR *d = open_state_dir(sp, st);
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			if (!unlinkat(sp->sfd[st], de->d_name, 0))
				sp->st.temps_removed++;
		} else if (has_suffix(de->d_name, DATA_SUFFIX) && de->d_name[0] != '.') {
			err = load_one(sp, st, de->d_name);
		}
	}
	closedir(d);
	return err;
}

/* Second pass: a sidecar with no data file is what a crash between the two
 * renames of spool__write leaves; the window was never written. */
static int remove_orphan_meta(struct spool *sp, enum spool_state st)
{
	char data[NAME_MAX + 1];
	struct dirent *de;
	DIR *d = open_state_dir(sp, st);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t stem = strlen(de->d_name) - strlen(META_SUFFIX);
		struct stat stb;

		if (!has_suffix(de->d_name, META_SUFFIX) || de->d_name[0] == '.')
			continue;
		snprintf(data, sizeof(data), "%.*s" DATA_SUFFIX, (int)stem, de->d_name);
		if (fstatat(sp->sfd[st], data, &stb, 0) && errno == ENOENT &&
		    !unlinkat(sp->sfd[st], de->d_name, 0))
			sp->st.temps_removed++;
	}
	closedir(d);
	return 0;
}

/* The spool's directory walked under the rules of outpath.h (a link or a
 * directory another user put in a sticky directory is refused); inside
 * it, the state directories and .lock are never symlinks: the agent made
 * them, so a link there was made by someone else. */
static int open_dirs(struct spool *sp, char *why, size_t size)
{
	if (mkdir(sp->dir, 0750) && errno != EEXIST)
		return -errno;
	sp->dirfd = outpath__open_dir(sp->dir, why, size);
	if (sp->dirfd < 0)
		return sp->dirfd;
	sp->sfd[SPOOL_PENDING] = sp->dirfd;
	for (int s = 1; s < NR_STATES; s++) {
		if (mkdirat(sp->dirfd, state_dir[s], 0750) && errno != EEXIST)
			return -errno;
		sp->sfd[s] = openat(sp->dirfd, state_dir[s],
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sp->sfd[s] < 0)
			return -errno;
	}
	return 0;
}

/* Two agents sharing a spool would push every window twice. */
static int lock_spool(struct spool *sp)
{
	struct stat st;

	sp->lockfd = openat(sp->dirfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (sp->lockfd < 0)
		return -errno;
	if (fstat(sp->lockfd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL; /* a FIFO or device someone put there */
	if (flock(sp->lockfd, LOCK_EX | LOCK_NB))
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	return 0;
}

int spool__open(const struct spool_opts *o, struct spool **out)
{
	struct spool *sp;
	const char *what;
	char why[512];
	int err;

	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->dirfd = sp->lockfd = -1;
	for (int s = 0; s < NR_STATES; s++)
		sp->sfd[s] = -1;
	sp->o = *o;
	sp->wins = VEC_INIT(struct win *);
	sp->batch = VEC_INIT(struct staged);
	sp->dir = strdup(o->dir);
	sp->host = strdup(o->host && *o->host ? o->host : "localhost");
	sp->by_name = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	sp->strs = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	if (!sp->dir || !sp->host || !sp->by_name || !sp->strs) {
		err = -ENOMEM;
		what = "allocate";
		goto cleanup;
	}
	sp->o.dir = sp->dir;
	sp->o.host = sp->host;
	what = "create or open the directory";
	err = open_dirs(sp, why, sizeof(why));
	if (err && why[0]) {
		p_err("spool %s: %s", sp->dir, why);
		goto cleanup_quiet;
	}
	if (err)
		goto cleanup;
	err = lock_spool(sp);
	if (err == -EBUSY) {
		p_err("spool %s: another agent holds its lock (%s/.lock); give each agent its own "
		      "spool directory", sp->dir, sp->dir);
		goto cleanup_quiet;
	}
	what = "lock";
	if (err)
		goto cleanup;
	what = "scan";
	for (int s = 0; s < NR_STATES && !err; s++)
		err = scan_dir(sp, s);
	for (int s = 0; s < NR_STATES && !err; s++)
		err = remove_orphan_meta(sp, s);
	if (err)
		goto cleanup;
	if (sp->st.temps_removed)
		p_info("spool %s: removed %" PRIu64 " half-written files an earlier run left",
		       sp->dir, sp->st.temps_removed);
	*out = sp;
	return 0;
cleanup:
	p_err("spool %s: cannot %s: %s; check that the agent may create and write it", o->dir,
	      what, strerror(-err));
cleanup_quiet:
	spool__free(sp);
	return err;
}

static void discard_staged(struct spool *sp)
{
	for (size_t i = 0; i < sp->batch.nr; i++) {
		struct staged *b = vec__at(&sp->batch, i);

		atomicfile__discard(&b->data);
		win_free(b->win);
	}
	vec__clear(&sp->batch);
}

void spool__free(struct spool *sp)
{
	const void *key;

	if (!sp)
		return;
	discard_staged(sp); /* a batch never committed was never written */
	vec__free(&sp->batch);
	for (size_t i = 0; i < sp->wins.nr; i++)
		win_free(*(struct win **)vec__at(&sp->wins, i));
	vec__free(&sp->wins);
	hashmap__free(sp->by_name);
	for (size_t i = 0; sp->strs && hashmap__next(sp->strs, &i, &key, NULL);)
		free((void *)key);
	hashmap__free(sp->strs);
	for (int s = 1; s < NR_STATES; s++)
		if (sp->sfd[s] >= 0)
			close(sp->sfd[s]);
	if (sp->lockfd >= 0)
		close(sp->lockfd); /* drops the flock */
	if (sp->dirfd >= 0)
		close(sp->dirfd);
	free(sp->dir);
	free(sp->host);
	free(sp);
}

/* A file-name part: readable, no '/', no leading '.' (that would hide it
 * and look like our temporaries), bounded so a name fits NAME_MAX. */
static void sanitize(char *out, const char *in)
{
	size_t n = 0;

	for (; in && in[n] && n < NAME_PART_MAX; n++) {
		char c = in[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-' || (c == '.' && n);

		out[n] = ok ? c : '_';
	}
	if (!n)
		out[n++] = '_';
	out[n] = '\0';
}

static bool name_taken(struct spool *sp, const char *name)
{
	struct stat stb;

	if (find_win(sp, name))
		return true;
	for (size_t i = 0; i < sp->batch.nr; i++)
		if (!strcmp(((struct staged *)vec__at(&sp->batch, i))->win->name, name))
			return true;
	for (int s = 0; s < NR_STATES; s++)
		if (!fstatat(sp->sfd[s], name, &stb, AT_SYMLINK_NOFOLLOW))
			return true;
	return false;
}

/* HOST.EVENT.SERVICE.YYYYMMDDTHHMMSSZ.pb.gz: one host's files sort by event,
 * service, then time. Two series that share all three (labels beyond the
 * service) get -2, -3... */
static int make_name(struct spool *sp, const struct spool_window *w, char *out, size_t size)
{
	char host[NAME_PART_MAX + 1], ev[NAME_PART_MAX + 1], svc[NAME_PART_MAX + 1], ts[32];
	time_t t = w->from_s;
	struct tm tm;

	sanitize(host, sp->host);
	sanitize(ev, w->event);
	sanitize(svc, w->service);
	if (!gmtime_r(&t, &tm) || !strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm))
		return -EINVAL;
	for (int i = 1; i < 1000; i++) {
		if (i == 1)
			snprintf(out, size, "%s.%s.%s.%s" DATA_SUFFIX, host, ev, svc, ts);
		else
			snprintf(out, size, "%s.%s.%s.%s-%d" DATA_SUFFIX, host, ev, svc, ts, i);
		if (!name_taken(sp, out))
			return 0;
	}
	return -EEXIST;
}

static struct win *win_from(struct spool *sp, const struct spool_window *sw, const char *name)
{
	struct win *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->name = strdup(name);
	w->series = intern(sp, sw->series);
	w->service = intern(sp, sw->service ?: "");
	w->event = intern(sp, sw->event ?: "");
	w->from_s = sw->from_s;
	w->until_s = sw->until_s;
	w->sample_rate = sw->sample_rate;
	if (!w->name || !w->series || !w->service || !w->event) {
		win_free(w);
		return NULL;
	}
	return w;
}

/* One file of a batch: written and fsync'ed under its temporary name. */
static int stage_file(struct spool *sp, struct atomicfile *af, const char *name,
		      const void *buf, size_t len)
{
	int err = atomicfile__open(af, sp->dirfd, name, 0640, 0);

	if (err)
		return err;
	err = atomicfile__write(af, buf, len);
	if (err) {
		atomicfile__discard(af);
		return err;
	}
	return atomicfile__stage(af);
}

/* win into the batch, on disk under a temporary name; win is taken. */
static int stage(struct spool *sp, struct win *win, const void *data, size_t len)
{
	struct staged *b = vec__push(&sp->batch);
	int err;

	if (!b)
		return -ENOMEM;
	memset(b, 0, sizeof(*b));
	b->data.fd = -1;
	err = stage_file(sp, &b->data, win->name, data, len);
	if (err) {
		sp->batch.nr--;
		return err;
	}
	win->bytes = len;
	b->win = win;
	b->len = len;
	return 0;
}

void spool__begin(struct spool *sp)
{
	sp->batching = true;
}

/*
 * The batch into place: every file renamed (each one's commit point), then
 * one fsync of the directory, and only then are the windows indexed and so
 * pushed. One directory fsync per batch instead of one per window.
 */
int spool__commit(struct spool *sp, size_t *written)
{
	int err = 0, e;

	*written = 0;
	sp->batching = false;
	for (size_t i = 0; i < sp->batch.nr; i++) {
		struct staged *b = vec__at(&sp->batch, i);

		e = atomicfile__publish(&b->data);
		if (e) {
			p_err("spool %s: cannot rename %s into place: %s; the window is lost, "
			      "check the directory", sp->dir, b->win->name, strerror(-e));
			win_free(b->win);
			b->win = NULL;
			err = err ?: e;
		}
	}
	if (sp->batch.nr && fsync_dirfd(sp->dirfd))
		p_warn("spool %s: fsync of the directory: %s; windows of this batch may not "
		       "survive a power loss", sp->dir, strerror(errno));
	for (size_t i = 0; i < sp->batch.nr; i++) {
		struct staged *b = vec__at(&sp->batch, i);

		if (!b->win)
			continue;
		e = index_win(sp, b->win);
		if (e) {
			p_err("spool %s: out of memory indexing %s; it is on disk and is pushed "
			      "after the next start", sp->dir, b->win->name);
			win_free(b->win);
			err = err ?: e;
		} else {
			sp->st.written++;
			sp->st.written_bytes += b->len;
			(*written)++;
		}
		b->win = NULL;
	}
	vec__clear(&sp->batch);
	return err;
}

int spool__write(struct spool *sp, const struct spool_window *w, const void *data, size_t len)
{
	char name[NAME_MAX + 1];
	struct win *win = NULL;
	char *text = NULL;
	uint8_t *file = NULL;
	size_t flen = 0;
	const char *what = "name";
	int err;

	/* The metadata is line-based; Pyroscope names hold no newline either. */
	if (!w->series || !*w->series || strpbrk(w->series, "\r\n") ||
	    (w->service && strpbrk(w->service, "\r\n")) || (w->event && strpbrk(w->event, "\r\n"))) {
		p_err("spool %s: window from %" PRIu64 " has an empty series or a line break in "
		      "its series, service or event; not stored (a bug in the caller)", sp->dir,
		      w->from_s);
		return -EINVAL;
	}
	err = make_name(sp, w, name, sizeof(name));
	if (err)
		goto cleanup;
	what = "prepare";
	text = meta_render(w);
	win = win_from(sp, w, name);
	if (!text || !win) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = gz_with_comment(data, len, text, &file, &flen);
	if (err == -EINVAL) {
		p_err("spool %s: window %s is not a gzip member without a comment; not stored "
		      "(a bug in the caller)", sp->dir, name);
		goto out;
	}
	if (err)
		goto cleanup;
	if (sp->batching) {
		what = "stage";
		err = stage(sp, win, file, flen);
		if (err)
			goto cleanup;
		win = NULL;
		goto out;
	}
	what = "write";
	err = write_atomic(sp->dirfd, name, file, flen);
	if (err)
		goto cleanup;
	win->bytes = flen;
	err = index_win(sp, win);
	if (err) {
		p_err("spool %s: out of memory indexing %s; it is on disk and is pushed after "
		      "the next start", sp->dir, name);
		goto out;
	}
	win = NULL;
	sp->st.written++;
	sp->st.written_bytes += flen;
	goto out;
cleanup:
	p_err("spool %s: cannot %s window %s from %" PRIu64 ": %s; the window is lost, check "
	      "free space and permissions", sp->dir, what, w->series ?: "(no series)", w->from_s,
	      strerror(-err));
out:
	win_free(win);
	free(text);
	free(file);
	return err;
}

static int cmp_series_time(const void *a, const void *b)
{
	const struct win *x = *(struct win *const *)a, *y = *(struct win *const *)b;
	int c = strcmp(x->series, y->series);

	if (c)
		return c;
	if (x->from_s != y->from_s)
		return x->from_s < y->from_s ? -1 : 1;
	return strcmp(x->name, y->name);
}

int spool__list(struct spool *sp, enum spool_state state, struct vec *out)
{
	struct vec sel = VEC_INIT(struct win *);
	int err = 0;

	for (size_t i = 0; i < sp->wins.nr; i++) {
		struct win *w = *(struct win **)vec__at(&sp->wins, i);

		if (w->state == state && vec__append(&sel, &w, 1)) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	if (sel.nr)
		qsort(sel.data, sel.nr, sizeof(struct win *), cmp_series_time);
	for (size_t i = 0; i < sel.nr; i++) {
		struct win *w = *(struct win **)vec__at(&sel, i);
		struct spool_entry *e = vec__push(out);

		if (!e) {
			err = -ENOMEM;
			goto cleanup;
		}
		*e = (struct spool_entry){
			.w = { .series = w->series, .service = w->service, .event = w->event,
			       .from_s = w->from_s, .until_s = w->until_s,
			       .sample_rate = w->sample_rate },
			.name = w->name,
			.bytes = w->bytes,
			.state = w->state,
		};
	}
cleanup:
	vec__free(&sel);
	return err;
}

int spool__read(struct spool *sp, const char *name, void **data, size_t *len)
{
	struct win *w = find_win(sp, name);
	char *buf;
	int err;

	if (!w)
		return -ENOENT;
	err = read_at(sp->sfd[w->state], name, 0, &buf, len);
	if (err) {
		p_warn("spool %s/%s: cannot read window %s: %s", sp->dir, state_dir[w->state], name,
		       strerror(-err));
		return err;
	}
	*data = buf;
	return 0;
}

int spool__mark(struct spool *sp, const char *name, enum spool_state to)
{
	struct win *w = find_win(sp, name);
	char meta[NAME_MAX + 1];
	enum spool_state from;
	int err;

	if (!w)
		return -ENOENT;
	from = w->state;
	if (from == to)
		return 0;
	meta_name(meta, sizeof(meta), name);
	/* The data file's directory is the state: its rename commits. */
	if (renameat(sp->sfd[from], name, sp->sfd[to], name)) {
		err = -errno;
		p_err("spool %s: cannot move window %s to %s/: %s; it stays %s and may be pushed "
		      "again", sp->dir, name, state_dir[to], strerror(-err), state_dir[from]);
		return err;
	}
	account(sp, w, -1);
	w->state = to;
	account(sp, w, +1);
	if (to == SPOOL_SENT)
		sp->st.delivered++;
	else if (to == SPOOL_REJECTED)
		sp->st.rejected++;
	/* A sidecar (older spools) left behind is adopted at the next open. */
	if (w->sidecar && renameat(sp->sfd[from], meta, sp->sfd[to], meta))
		p_warn("spool %s: cannot move %s to %s/: %s; fixed at the next start", sp->dir,
		       meta, state_dir[to], strerror(errno));
	err = fsync_dirfd(sp->sfd[to]);
	if (!err)
		err = fsync_dirfd(sp->sfd[from]);
	if (err)
		p_warn("spool %s: fsync after moving %s: %s; after a power loss it may be pushed "
		       "again", sp->dir, name, strerror(-err));
	return 0;
}

static void remove_win(struct spool *sp, struct win *w)
{
	char meta[NAME_MAX + 1];

	meta_name(meta, sizeof(meta), w->name);
	/* Data first: a sidecar left alone is removed at the next open. */
	if (unlinkat(sp->sfd[w->state], w->name, 0) && errno != ENOENT)
		p_warn("spool %s/%s: cannot remove %s: %s", sp->dir, state_dir[w->state],
		       w->name, strerror(errno));
	if (w->sidecar)
		unlinkat(sp->sfd[w->state], meta, 0);
	account(sp, w, -1);
	sp->st.pruned++;
	sp->st.pruned_bytes += w->bytes;
	if (w->state == SPOOL_PENDING && sp->o.push)
		sp->st.dropped_undelivered++;
	win_free(w);
}

/* The map has no delete: after a prune (once per window written) the name
 * index is rebuilt from the windows kept, O(n). */
static int reindex(struct spool *sp)
{
	struct hashmap *m = hashmap__new(hashmap__hash_str, hashmap__equal_str);

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < sp->wins.nr; i++) {
		struct win *w = *(struct win **)vec__at(&sp->wins, i);

		if (hashmap__set(m, w->name, w, NULL)) {
			hashmap__free(m);
			return -ENOMEM;
		}
	}
	hashmap__free(sp->by_name);
	sp->by_name = m;
	return 0;
}

/* Order of removal under the size limit: settled windows (sent, rejected)
 * before pending ones, oldest first within each. */
static int cmp_prune(const void *a, const void *b)
{
	const struct win *x = *(struct win *const *)a, *y = *(struct win *const *)b;
	int px = x->state == SPOOL_PENDING, py = y->state == SPOOL_PENDING;

	if (px != py)
		return px - py;
	if (x->from_s != y->from_s)
		return x->from_s < y->from_s ? -1 : 1;
	return strcmp(x->name, y->name);
}

int spool__prune(struct spool *sp, uint64_t now_s)
{
	uint64_t dropped = sp->st.dropped_undelivered;
	size_t keep = 0;
	int removed = 0;

	if (sp->wins.nr)
		qsort(sp->wins.data, sp->wins.nr, sizeof(struct win *), cmp_prune);
	for (size_t i = 0; i < sp->wins.nr; i++) {
		struct win **slot = vec__at(&sp->wins, i);
		struct win *w = *slot;
		bool old = sp->o.retain_age_s && w->until_s + sp->o.retain_age_s <= now_s;
		bool big = sp->o.retain_bytes && sp->st.total_bytes > sp->o.retain_bytes;

		if (old || big) {
			remove_win(sp, w);
			removed++;
			continue;
		}
		*(struct win **)vec__at(&sp->wins, keep++) = w;
	}
	sp->wins.nr = keep;
	/* The old index names freed windows: it must not outlive this call. */
	if (removed && reindex(sp)) {
		hashmap__free(sp->by_name);
		sp->by_name = NULL;
		p_err("spool %s: out of memory rebuilding the index after pruning; windows cannot "
		      "be read or marked until the agent restarts", sp->dir);
		return -ENOMEM;
	}
	if (sp->st.dropped_undelivered > dropped)
		p_warn("spool %s: dropped %" PRIu64 " windows never pushed to stay within "
		       "retention; raise the spool's size or age limit or check the push target",
		       sp->dir, sp->st.dropped_undelivered - dropped);
	return removed;
}

void spool__set_retention(struct spool *sp, uint64_t age_s, uint64_t bytes)
{
	sp->o.retain_age_s = age_s;
	sp->o.retain_bytes = bytes;
}

void spool__stats(const struct spool *sp, struct spool_stats *st)
{
	*st = sp->st;
}

const char *spool__dir(const struct spool *sp)
{
	return sp->dir;
}
