// SPDX-License-Identifier: GPL-2.0
/*
 * The push to Pyroscope (include/push.h).
 *
 * What the server does with our request, read from Pyroscope's ingest
 * handler (pkg/ingester/pyroscope/ingest_handler.go, pkg/og/convert/pprof):
 * the query gives the series (`name`, parsed as app{labels}), the window
 * (`from`, `until`, Unix seconds), `sampleRate` (default 100 when absent)
 * and `spyName`; `format=pprof` makes it take the whole body as the pprof,
 * gzip'ed or not. A multipart body is only split into its `profile` part
 * when no format is given, so with format=pprof we send the raw gzip pprof
 * as application/octet-stream. Errors come back as JSON {code, message}:
 * 400 for bad metadata or an undecodable profile, 413 too large, 422 not
 * ingested, 429 rate limited, 408 when the body could not be read.
 *
 * Delivery is exactly once across restarts except for one window: a crash
 * (or power loss) between the server's 2xx and the rename into sent/ leaves
 * that window pending, and it is pushed again at the next start. Pyroscope
 * then holds its samples twice for that window's span.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hashmap.h"
#include "log.h"
#include "push.h"
#include "spool.h"
#include "vec.h"
#include "version.h"

#define SECRET_MAX 4096
#define ANSWER_KEEP 200

/* Why a series waits, and until when (CLOCK_MONOTONIC seconds). */
struct series_state {
	char *series; /* owned: the key; outlives the spool's entries */
	double resume_at;
	double backoff;	 /* the next pause before jitter, 0: healthy */
	unsigned failures;
};

struct pusher {
	struct push_opts o;
	char *url;		  /* owned, no trailing '/' */
	char *tenant;		  /* owned */
	char *token;		  /* owned secret */
	char *userpwd;		  /* owned secret */
	CURL *curl;		  /* owns: one handle, so connections are reused */
	struct curl_slist *hdrs;  /* owns: built from the secrets */
	struct hashmap *series;	  /* series name -> struct series_state */
	/* No answer, or one that says our configuration is wrong: every
	 * series waits on this one, with its own growing backoff. */
	struct series_state server;
	uint64_t rng;
	char answer[ANSWER_KEEP + 1];
	size_t answer_len;
	struct push_stats st;
};

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void free_secret(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

/* Reads a one-line secret. World-readable is refused: every local user
 * already has it. Group-readable only warns: root:bpfsampler 0640 is a
 * legitimate way to hand it to the agent's group. */
static int read_secret(const char *path, const char *what, char **out)
{
	char *buf = NULL;
	struct stat stb;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		p_err("push: cannot open %s file %s: %s; check the path and that the agent may "
		      "read it", what, path, strerror(-err));
		return err;
	}
	if (fstat(fd, &stb)) {
		err = -errno;
		p_err("push: cannot stat %s file %s: %s", what, path, strerror(-err));
		goto cleanup;
	}
	if (!S_ISREG(stb.st_mode)) {
		err = -EINVAL;
		p_err("push: %s file %s is not a regular file", what, path);
		goto cleanup;
	}
	if (stb.st_mode & S_IROTH) {
		err = -EPERM;
		p_err("push: %s file %s is readable by every user (mode %04o); refusing it: run "
		      "chmod 600 %s (or 640 with a group only the agent is in)", what, path,
		      (unsigned)(stb.st_mode & 07777), path);
		goto cleanup;
	}
	if (stb.st_mode & (S_IRGRP | S_IWGRP))
		p_warn("push: %s file %s is group-accessible (mode %04o); make sure only the "
		       "agent is in its group", what, path, (unsigned)(stb.st_mode & 07777));
	buf = calloc(1, SECRET_MAX + 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	n = read(fd, buf, SECRET_MAX + 1);
	if (n < 0 || n > SECRET_MAX) {
		err = n < 0 ? -errno : -EFBIG;
		p_err("push: cannot read %s file %s: %s", what, path,
		      n < 0 ? strerror(-err) : "longer than 4096 bytes");
		goto cleanup;
	}
	/* Editors end files with a newline; it is not part of the secret. */
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	/* A line break inside would end our header and start another. */
	if (!n || strpbrk(buf, "\r\n") || strlen(buf) != (size_t)n) {
		err = -EINVAL;
		p_err("push: %s file %s is empty or holds more than one line; put the %s alone "
		      "on one line", what, path, what);
		goto cleanup;
	}
	*out = buf;
	buf = NULL;
cleanup:
	if (buf) {
		explicit_bzero(buf, SECRET_MAX + 1);
		free(buf);
	}
	close(fd);
	return err;
}

static int build_headers(struct pusher *p, struct curl_slist **out)
{
	struct curl_slist *h = NULL, *t;
	char *line = NULL;
	int err = -ENOMEM;

	/* No "Expect: 100-continue": curl would wait up to a second for it
	 * on large bodies, and the ingest handler never answers it early. */
	if (!(h = curl_slist_append(NULL, "Expect:")))
		goto cleanup;
	if (!(t = curl_slist_append(h, "Content-Type: application/octet-stream")))
		goto cleanup;
	if (p->token) {
		if (asprintf(&line, "Authorization: Bearer %s", p->token) < 0) {
			line = NULL;
			goto cleanup;
		}
		t = curl_slist_append(h, line);
		free_secret(&line);
		if (!t)
			goto cleanup;
	}
	if (p->tenant) {
		if (asprintf(&line, "X-Scope-OrgID: %s", p->tenant) < 0) {
			line = NULL;
			goto cleanup;
		}
		t = curl_slist_append(h, line);
		free(line);
		if (!t)
			goto cleanup;
	}
	*out = h;
	return 0;
cleanup:
	curl_slist_free_all(h);
	return err;
}

int pusher__reload(struct pusher *p)
{
	struct curl_slist *hdrs = NULL;
	char *token = NULL, *userpwd = NULL, *old_token = p->token;
	int err = 0;

	if (p->o.token_file && (err = read_secret(p->o.token_file, "token", &token)))
		goto cleanup;
	if (p->o.basic_auth_file &&
	    (err = read_secret(p->o.basic_auth_file, "basic auth", &userpwd)))
		goto cleanup;
	if (userpwd && !strchr(userpwd, ':')) {
		err = -EINVAL;
		p_err("push: basic auth file %s holds no ':'; write user:password",
		      p->o.basic_auth_file);
		goto cleanup;
	}
	p->token = token;
	err = build_headers(p, &hdrs);
	p->token = old_token;
	if (err)
		goto cleanup;
	/* Swap only when everything was read: a failed reload keeps pushing
	 * with what worked. */
	curl_slist_free_all(p->hdrs);
	p->hdrs = hdrs;
	free_secret(&p->token);
	free_secret(&p->userpwd);
	p->token = token;
	p->userpwd = userpwd;
	return 0;
cleanup:
	free_secret(&token);
	free_secret(&userpwd);
	return err;
}

int pusher__new(const struct push_opts *o, struct pusher **out)
{
	struct pusher *p;
	int err = -ENOMEM;

	if (!o->url || !*o->url) {
		p_err("push: no URL; give the Pyroscope server, e.g. http://pyroscope:4040");
		return -EINVAL;
	}
	if (o->tenant && strpbrk(o->tenant, "\r\n")) {
		p_err("push: the tenant holds a line break");
		return -EINVAL;
	}
	/* Reference-counted since curl 7.84; once per pusher is fine. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		p_err("push: libcurl failed to initialize (TLS library?)");
		return -EIO;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		curl_global_cleanup();
		return -ENOMEM;
	}
	p->o = *o;
	p->o.connect_timeout_s = o->connect_timeout_s > 0 ? o->connect_timeout_s : 5;
	p->o.timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
	p->o.backoff_min_s = o->backoff_min_s > 0 ? o->backoff_min_s : 1;
	p->o.backoff_max_s = o->backoff_max_s > 0 ? o->backoff_max_s : 300;
	p->url = strndup(o->url, strlen(o->url) - (o->url[strlen(o->url) - 1] == '/'));
	p->tenant = o->tenant && *o->tenant ? strdup(o->tenant) : NULL;
	p->series = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	p->curl = curl_easy_init();
	p->rng = (uint64_t)getpid() << 32 ^ (uint64_t)(now_mono() * 1e9) ^ 0x9e3779b97f4a7c15ULL;
	if (!p->url || (o->tenant && *o->tenant && !p->tenant) || !p->series || !p->curl)
		goto cleanup;
	err = pusher__reload(p);
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	if (err == -ENOMEM)
		p_err("push: out of memory setting up the push to %s", o->url);
	pusher__free(p);
	return err;
}

void pusher__free(struct pusher *p)
{
	const void *k;
	void *v;

	if (!p)
		return;
	for (size_t i = 0; p->series && hashmap__next(p->series, &i, &k, &v);) {
		struct series_state *ss = v;

		free(ss->series);
		free(ss);
	}
	hashmap__free(p->series);
	curl_slist_free_all(p->hdrs);
	if (p->curl)
		curl_easy_cleanup(p->curl);
	free_secret(&p->token);
	free_secret(&p->userpwd);
	free(p->url);
	free(p->tenant);
	free(p);
	curl_global_cleanup();
}

/* Keeps the first ANSWER_KEEP bytes of the answer for the log, swallows the
 * rest (returning less than given would abort the transfer). */
static size_t on_answer(char *ptr, size_t size, size_t nmemb, void *ctx)
{
	struct pusher *p = ctx;
	size_t n = size * nmemb, room = ANSWER_KEEP - p->answer_len;

	if (room) {
		size_t take = n < room ? n : room;

		memcpy(p->answer + p->answer_len, ptr, take);
		p->answer_len += take;
		p->answer[p->answer_len] = '\0';
	}
	return n;
}

/* One line for the log: no control characters, and never the token, even
 * if a proxy echoes our headers back. */
static void clean_msg(struct pusher *p, char *msg)
{
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	const char *secrets[] = { p->token, p->userpwd };

	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
		char *hit;

		if (!secrets[i] || !*secrets[i])
			continue;
		while ((hit = strstr(msg, secrets[i])))
			memset(hit, '*', strlen(secrets[i]));
	}
}

static char *ingest_url(struct pusher *p, const struct spool_window *w)
{
	char *name = curl_easy_escape(p->curl, w->series, 0);
	char rate[48] = "";
	char *url = NULL;

	if (!name)
		return NULL;
	/* Without sampleRate Pyroscope assumes 100 Hz; a window of a
	 * non-timer event has none, and its pprof carries its own period. */
	if (w->sample_rate)
		snprintf(rate, sizeof(rate), "&sampleRate=%" PRIu64, w->sample_rate);
	if (asprintf(&url, "%s/ingest?name=%s&from=%" PRIu64 "&until=%" PRIu64 "%s"
			   "&spyName=bpfsampler&format=pprof",
		     p->url, name, w->from_s, w->until_s, rate) < 0)
		url = NULL;
	curl_free(name);
	return url;
}

static enum push_status classify(long code, struct push_result *r)
{
	if (code >= 200 && code < 300)
		return PUSH_DELIVERED;
	/* The server answered, so it is reachable; an overloaded ingester
	 * or a rate limit may hold one series and not others. */
	if (code >= 500 || code == 429 || code == 408)
		return PUSH_RETRY;
	/* Redirects, bad credentials, wrong URL: our configuration, the same
	 * for every window. Rejecting would move the whole backlog aside
	 * while the operator fixes a token; waiting keeps it. */
	if (code < 200 || (code >= 300 && code < 400) || code == 401 || code == 403 ||
	    code == 404 || code == 407)
		return r->all_series = 1, PUSH_RETRY;
	return PUSH_REJECTED;
}

static void set_timeouts(struct pusher *p, double limit_s)
{
	double conn = p->o.connect_timeout_s < limit_s ? p->o.connect_timeout_s : limit_s;
	double all = p->o.timeout_s < limit_s ? p->o.timeout_s : limit_s;

	curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(conn * 1000) + 1);
	curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, (long)(all * 1000) + 1);
}

static enum push_status push_limited(struct pusher *p, const struct spool_window *w,
				     const void *data, size_t len, double limit_s,
				     struct push_result *r)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	curl_off_t retry_after = 0;
	char *url = ingest_url(p, w);
	CURLcode rc;
	long code = 0;

	memset(r, 0, sizeof(*r));
	p->answer_len = 0;
	p->answer[0] = '\0';
	p->st.attempts++;
	if (!url) {
		snprintf(r->msg, sizeof(r->msg), "out of memory");
		r->status = PUSH_RETRY;
		goto out;
	}
	curl_easy_setopt(p->curl, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(p->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, data);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->hdrs);
	curl_easy_setopt(p->curl, CURLOPT_USERPWD, p->userpwd);
	curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "bpfsampler/" BPFSAMPLER_VERSION);
	/* No signals: curl's resolver timeout would otherwise use SIGALRM. */
	curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, errbuf);
	set_timeouts(p, limit_s);
	rc = curl_easy_perform(p->curl);
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, NULL);
	free(url);
	if (rc != CURLE_OK) {
		/* No answer: the server is unreachable for every series. */
		r->all_series = 1;
		r->status = PUSH_RETRY;
		snprintf(r->msg, sizeof(r->msg), "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &code);
	if (curl_easy_getinfo(p->curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK &&
	    retry_after > 0)
		r->retry_after_s = retry_after;
	r->http_status = code;
	r->status = classify(code, r);
	snprintf(r->msg, sizeof(r->msg), "%s", p->answer);
out:
	clean_msg(p, r->msg);
	if (r->status == PUSH_DELIVERED) {
		p->st.delivered++;
		p->st.bytes_delivered += len;
	} else if (r->status == PUSH_RETRY) {
		p->st.retried++;
	} else {
		p->st.rejected++;
	}
	return r->status;
}

enum push_status pusher__push(struct pusher *p, const struct spool_window *w, const void *data,
			      size_t len, struct push_result *r)
{
	return push_limited(p, w, data, len, p->o.timeout_s, r);
}

static double jitter(struct pusher *p, double d)
{
	/* xorshift64: enough to spread a fleet's retries apart. */
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	/* Half fixed, half random: never less than half the backoff. */
	return d / 2 + d / 2 * ((p->rng >> 11) * 0x1.0p-53);
}

static struct series_state *series_state(struct pusher *p, const char *series)
{
	struct series_state *ss = hashmap__find(p->series, series);

	if (ss)
		return ss;
	ss = calloc(1, sizeof(*ss));
	if (!ss || !(ss->series = strdup(series)))
		goto fail;
	if (hashmap__set(p->series, ss->series, ss, NULL))
		goto fail;
	return ss;
fail:
	if (ss)
		free(ss->series);
	free(ss);
	return NULL;
}

/* Pauses a series after a failed head window: Retry-After when the server
 * gave one, else backoff_min doubling to backoff_max, with jitter. */
static double pause_series(struct pusher *p, struct series_state *ss, const struct push_result *r,
			   double now)
{
	double delay;

	ss->backoff = ss->backoff ? ss->backoff * 2 : p->o.backoff_min_s;
	if (ss->backoff > p->o.backoff_max_s)
		ss->backoff = p->o.backoff_max_s;
	delay = jitter(p, ss->backoff);
	if (r->retry_after_s > 0)
		delay = r->retry_after_s < p->o.backoff_max_s ? r->retry_after_s : p->o.backoff_max_s;
	ss->resume_at = now + delay;
	ss->failures++;
	return delay;
}

static void log_retry(struct pusher *p, const struct spool_entry *e, const struct push_result *r,
		      const struct series_state *ss, double delay)
{
	enum log_level lvl = ss->failures == 1 ? LOG_WARN : LOG_INFO;

	if (r->http_status)
		log_msg(lvl, "push %s: window %s answered HTTP %ld (%s); %s paused %.2f s, "
			"%u failures in a row%s", p->url, e->name, r->http_status, r->msg,
			ss == &p->server ? "every series" : "its series", delay, ss->failures,
			r->http_status == 401 || r->http_status == 403 ?
			"; check --push-token-file / --push-basic-auth-file" : "");
	else
		log_msg(lvl, "push %s: window %s not sent: %s; retrying in %.2f s, %u failures "
			"in a row; windows stay in the spool meanwhile", p->url, e->name, r->msg,
			delay, ss->failures);
}

struct group {
	size_t next, end; /* indexes into the pending list */
	struct series_state *ss;
	bool stopped;
};

/* Pushes one window; returns 1 delivered, 0 handled otherwise, -1 when the
 * whole drain must stop (every series paused). */
static int drain_one(struct pusher *p, struct spool *sp, struct group *g,
		     const struct spool_entry *e, double deadline)
{
	struct series_state *ss;
	struct push_result r;
	double now = now_mono(), delay;
	void *data = NULL;
	size_t len = 0;

	if (spool__read(sp, e->name, &data, &len)) {
		/* Unreadable now is unreadable later: do not block the series. */
		spool__mark(sp, e->name, SPOOL_REJECTED);
		g->next++;
		return 0;
	}
	push_limited(p, &e->w, data, len, deadline - now, &r);
	free(data);
	now = now_mono();
	switch (r.status) {
	case PUSH_DELIVERED:
		if (p->server.failures)
			p_info("push %s: delivering again after %u failures", p->url,
			       p->server.failures);
		else if (g->ss->failures)
			p_info("push %s: series %s delivered again after %u failures", p->url,
			       e->w.series, g->ss->failures);
		p->server.failures = g->ss->failures = 0;
		p->server.backoff = g->ss->backoff = 0;
		g->next++;
		/* At once: if this fails the window is pushed again later. */
		spool__mark(sp, e->name, SPOOL_SENT);
		return 1;
	case PUSH_REJECTED:
		p_err("push %s: window %s of %s rejected with HTTP %ld: %s; moved to %s/rejected, "
		      "not retried", p->url, e->name, e->w.series, r.http_status, r.msg,
		      spool__dir(sp));
		spool__mark(sp, e->name, SPOOL_REJECTED);
		g->next++;
		return 0;
	case PUSH_RETRY:
		break;
	}
	ss = r.all_series ? &p->server : g->ss;
	delay = pause_series(p, ss, &r, now);
	log_retry(p, e, &r, ss, delay);
	g->stopped = true;
	return r.all_series ? -1 : 0;
}

int pusher__drain(struct pusher *p, struct spool *sp, double budget_s)
{
	struct vec pend = VEC_INIT(struct spool_entry);
	struct vec groups = VEC_INIT(struct group);
	double deadline = now_mono() + budget_s;
	int delivered = 0, err = 0;
	bool progress = true;

	if (now_mono() < p->server.resume_at)
		return 0;
	err = spool__list(sp, SPOOL_PENDING, &pend);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < pend.nr; i++) {
		const struct spool_entry *e = vec__at(&pend, i);
		struct group *g = groups.nr ? vec__at(&groups, groups.nr - 1) : NULL;

		if (g && !strcmp(((struct spool_entry *)vec__at(&pend, g->next))->w.series,
				 e->w.series)) {
			g->end = i + 1;
			continue;
		}
		g = vec__push(&groups);
		if (!g) {
			err = -ENOMEM;
			goto cleanup;
		}
		g->next = i;
		g->end = i + 1;
		g->ss = series_state(p, e->w.series);
		if (!g->ss) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	/* Series in turn, one window each per round: a long backlog of one
	 * series does not starve the others within the budget. */
	while (progress) {
		progress = false;
		for (size_t i = 0; i < groups.nr; i++) {
			struct group *g = vec__at(&groups, i);
			double now = now_mono();
			int rc;

			if (g->stopped || g->next >= g->end)
				continue;
			if (now < g->ss->resume_at) {
				g->stopped = true;
				continue;
			}
			/* Less than 10 ms left cannot carry a request. */
			if (deadline - now < 0.01)
				goto cleanup;
			rc = drain_one(p, sp, g, vec__at(&pend, g->next), deadline);
			if (rc < 0)
				goto cleanup;
			delivered += rc;
			progress = true;
		}
	}
cleanup:
	if (err)
		p_err("push: out of memory listing the spool's pending windows");
	vec__free(&groups);
	vec__free(&pend);
	return err ? err : delivered;
}

void pusher__stats(const struct pusher *p, struct push_stats *st)
{
	*st = p->st;
}
