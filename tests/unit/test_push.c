// SPDX-License-Identifier: GPL-2.0
/*
 * The push against a loopback stand-in for Pyroscope
 * (tests/tools/fake_pyroscope.py): a backlog survives the server being
 * down and answering 503, every window arrives once and in order per
 * series, a 400 moves the window aside for good, a restart resends
 * nothing, and the token never reaches the log. Only 127.0.0.1 is used.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "log.h"
#include "push.h"
#include "spool.h"
#include "unit.h"
#include "vec.h"

#define SERVER "tests/tools/fake_pyroscope.py"
#define TOKEN "s3cr3t-token-4242"

static char dir[64];
static char path_buf[256];

static const char *at(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", dir, name);
	return path_buf;
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd); /* nothing listens there until the server starts */
	return port;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* Starts the server on port with extra arguments; returns its pid once it
 * listens, or -1. */
static pid_t start_server(int port, const char *const *extra)
{
	char port_s[16], port_file[128], rec[128];
	const char *argv[24];
	int n = 0;
	pid_t pid;

	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(port_file, sizeof(port_file), "%s/port", dir);
	snprintf(rec, sizeof(rec), "%s/record.json", dir);
	unlink(port_file);
	argv[n++] = "python3";
	argv[n++] = SERVER;
	argv[n++] = "--port";
	argv[n++] = port_s;
	argv[n++] = "--port-file";
	argv[n++] = port_file;
	argv[n++] = "--record";
	argv[n++] = rec;
	argv[n++] = "--token";
	argv[n++] = TOKEN;
	while (extra && *extra && n < 23)
		argv[n++] = *extra++;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		execvp("python3", (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 100; i++) {
		if (!access(port_file, F_OK))
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		sleep_s(0.05);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

static void stop_server(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

/* A gzip'ed protobuf with a sample_type (field 1), like a real profile. */
static size_t gzip_buf(const void *in, size_t len, unsigned char *out, size_t cap)
{
	z_stream z = { 0 };
	size_t n = 0;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	z.next_in = (unsigned char *)in;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = cap;
	if (deflate(&z, Z_FINISH) == Z_STREAM_END)
		n = cap - z.avail_out;
	deflateEnd(&z);
	return n;
}

static size_t good_profile(unsigned char *out, size_t cap)
{
	static const unsigned char pb[] = { 0x0a, 4, 0x08, 1, 0x10, 2, 0x32, 0,
					    0x32, 3, 'c', 'p', 'u', 0x32, 7, 's',
					    'a', 'm', 'p', 'l', 'e', 's' };

	return gzip_buf(pb, sizeof(pb), out, cap);
}

static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r"), *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;

	while (f && m && (n = fread(chunk, 1, sizeof(chunk), f)))
		fwrite(chunk, 1, n, m);
	if (f)
		fclose(f);
	if (m)
		fclose(m);
	return buf;
}

struct req {
	char name[128];
	unsigned long from;
	int status;
};

/* The record is a JSON list the server writes; names hold no quotes. */
static int read_record(struct req *out, int max)
{
	char *text = slurp(at("record.json")), *p = text;
	int n = 0;

	while (p && n < max && (p = strstr(p, "\"name\": \""))) {
		char *q;

		p += 9;
		q = strchr(p, '"');
		if (!q)
			break;
		snprintf(out[n].name, sizeof(out[n].name), "%.*s", (int)(q - p), p);
		p = strstr(q, "\"from\": ");
		out[n].from = p ? strtoul(p + 8, NULL, 10) : 0;
		p = p ? strstr(p, "\"status\": ") : NULL;
		out[n].status = p ? atoi(p + 10) : 0;
		n++;
	}
	free(text);
	return n;
}

static const char *S1 = "bpfsampler.cpu{service_name=nginx.service,hostname=h1}";
static const char *S2 = "bpfsampler.cpu{service_name=db,hostname=h1}";

static void write_secret(const char *name, const char *text, mode_t mode)
{
	int fd = open(at(name), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write %s", name);
	if (fd >= 0) {
		fchmod(fd, mode);
		close(fd);
	}
}

static struct spool *open_spool(void)
{
	struct spool_opts o = { .dir = at("spool"), .host = "h1", .push = true };
	struct spool *sp = NULL;

	CHECK(spool__open(&o, &sp) == 0, "open spool");
	return sp;
}

static struct pusher *new_pusher(int port, const char *token_file)
{
	char url[64];
	struct push_opts o = { .url = url, .token_file = at(token_file), .connect_timeout_s = 1,
			       .timeout_s = 2, .backoff_min_s = 0.05, .backoff_max_s = 0.4 };
	struct pusher *p = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	CHECK(pusher__new(&o, &p) == 0, "new pusher");
	return p;
}

static uint64_t backlog(struct spool *sp)
{
	struct spool_stats st;

	spool__stats(sp, &st);
	return st.backlog_files;
}

static void check_delivery(void)
{
	struct req r[64];
	int n = read_record(r, 64), ok = 0, fails = 0, bad = 0;

	for (int i = 0; i < n; i++) {
		if (r[i].status == 503)
			fails++;
		if (r[i].from == 1015)
			bad++;
		if (r[i].status != 200)
			continue;
		ok++;
		for (int j = 0; j < i; j++) {
			if (r[j].status != 200 || strcmp(r[j].name, r[i].name))
				continue;
			CHECK(r[j].from != r[i].from, "%s %lu delivered twice", r[i].name, r[i].from);
			CHECK(r[j].from < r[i].from, "%s: %lu after %lu", r[i].name, r[i].from,
			      r[j].from);
		}
	}
	CHECK(ok == 6, "6 windows delivered, got %d", ok);
	CHECK(fails == 4, "4 answered 503, got %d", fails);
	CHECK(bad == 1, "the bad window was sent once, got %d", bad);
}

static void test_backlog_delivered_once_in_order(void)
{
	unsigned char good[256], bad[64];
	const char *fail503[] = { "--fail", "4", "--fail-status", "503", NULL };
	const char *fail429[] = { "--fail", "1", "--fail-status", "429", "--retry-after", "1",
				  NULL };
	size_t glen = good_profile(good, sizeof(good));
	size_t blen = gzip_buf("not a profile", 13, bad, sizeof(bad));
	int port = free_port(), saved_err = dup(2), logfd, rc;
	struct spool_stats st;
	struct push_result res;
	struct pusher *p = NULL;
	struct spool *sp;
	pid_t srv = -1;
	char *log = NULL;
	double t0;

	if (access(SERVER, R_OK) || system("python3 -c '' 2>/dev/null"))
		SKIP_TEST("needs python3 and " SERVER " (run from the source tree)");
	CHECK(port > 0 && glen && blen, "setup");
	sp = open_spool();
	if (!sp)
		return;
	for (int i = 0; i < 6; i++) {
		struct spool_window w = { .series = i % 2 ? S2 : S1, .service = i % 2 ? "db" : "nginx",
					  .event = "cpu", .from_s = 1000 + (i / 2) * 10,
					  .until_s = 1010 + (i / 2) * 10, .sample_rate = 99 };

		CHECK(spool__write(sp, &w, good, glen) == 0, "write %d", i);
	}
	/* Between S2's windows: a 400 must not hold back the ones after it. */
	struct spool_window wbad = { .series = S2, .service = "db", .event = "cpu",
				     .from_s = 1015, .until_s = 1020, .sample_rate = 99 };
	CHECK(spool__write(sp, &wbad, bad, blen) == 0, "write bad");
	write_secret("token", TOKEN "\n", 0600);
	write_secret("wrong", "not-the-token\n", 0600);

	/* Everything below logs into a file, at the most verbose level. */
	logfd = open(at("stderr.log"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fflush(stderr);
	dup2(logfd, 2);
	log_set_level(LOG_DEBUG);

	p = new_pusher(port, "token");
	if (!p)
		goto out;
	/* Down: a closed port, nothing delivered, nothing lost. */
	rc = pusher__drain(p, sp, 1.0);
	CHECK(rc == 0 && backlog(sp) == 7, "down: delivered %d, backlog %lu", rc,
	      (unsigned long)backlog(sp));

	/* Up, but 503 for the next 4 requests, then fine. */
	srv = start_server(port, fail503);
	CHECK(srv > 0, "server started");
	if (srv <= 0)
		goto out;
	t0 = time(NULL);
	while (backlog(sp) && time(NULL) - t0 < 10) {
		CHECK(pusher__drain(p, sp, 0.5) >= 0, "drain");
		sleep_s(0.05);
	}
	spool__stats(sp, &st);
	CHECK(st.backlog_files == 0 && st.delivered == 6 && st.rejected == 1,
	      "backlog %lu delivered %lu rejected %lu", (unsigned long)st.backlog_files,
	      (unsigned long)st.delivered, (unsigned long)st.rejected);
	check_delivery();

	/* A restart sends nothing again; the rejected window stays aside. */
	pusher__free(p);
	spool__free(sp);
	sp = open_spool();
	p = new_pusher(port, "token");
	if (!sp || !p)
		goto out;
	CHECK(backlog(sp) == 0, "nothing pending after restart");
	CHECK(pusher__drain(p, sp, 1.0) == 0, "nothing pushed after restart");
	{
		struct req r[64];

		CHECK(read_record(r, 64) == 11, "no new requests: %d", read_record(r, 64));
	}

	/* A wrong token: 401 is our configuration, the window waits. */
	pusher__free(p);
	p = new_pusher(port, "wrong");
	if (!p)
		goto out;
	struct spool_window w401 = { .series = S1, .service = "nginx", .event = "cpu",
				     .from_s = 2000, .until_s = 2010, .sample_rate = 99 };
	CHECK(spool__write(sp, &w401, good, glen) == 0, "write");
	CHECK(pusher__drain(p, sp, 1.0) == 0 && backlog(sp) == 1, "401: still pending");
	spool__stats(sp, &st);
	CHECK(st.rejected == 0, "401 did not reject");

	/* 429 with Retry-After: the server's pause is taken as given. */
	stop_server(srv);
	srv = start_server(port, fail429);
	pusher__free(p);
	p = new_pusher(port, "token");
	if (srv <= 0 || !p)
		goto out;
	CHECK(pusher__push(p, &w401, good, glen, &res) == PUSH_RETRY && res.http_status == 429 &&
	      res.retry_after_s == 1, "429: status %ld retry-after %.1f", res.http_status,
	      res.retry_after_s);
	CHECK(pusher__push(p, &w401, good, glen, &res) == PUSH_DELIVERED, "then delivered");
out:
	pusher__free(p);
	spool__free(sp);
	stop_server(srv);
	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	log_set_level(LOG_WARN);
	log = slurp(at("stderr.log"));
	if (!log)
		log = strdup("");
	/* PUSH_TEST_LOG=1 shows what an operator would read. */
	if (getenv("PUSH_TEST_LOG"))
		fputs(log, stderr);
	CHECK(!strstr(log, TOKEN), "the token is in the log:\n%s", log);
	CHECK(strstr(log, "rejected with HTTP 400"), "the rejection is logged:\n%s", log);
	CHECK(strstr(log, "HTTP 503"), "the 503 is logged:\n%s", log);
	free(log);
}

static void test_secret_files(void)
{
	struct push_opts o = { .url = "http://127.0.0.1:9", .token_file = at("tok") };
	struct pusher *p = NULL;

	write_secret("tok", TOKEN "\n", 0644);
	fflush(stderr);
	CHECK(pusher__new(&o, &p) == -EPERM, "world-readable token refused");
	write_secret("tok", "\n", 0600);
	CHECK(pusher__new(&o, &p) == -EINVAL, "empty token refused");
	write_secret("tok", "a\nb\n", 0600);
	CHECK(pusher__new(&o, &p) == -EINVAL, "two lines refused");
	write_secret("tok", TOKEN "\r\n", 0640);
	CHECK(pusher__new(&o, &p) == 0, "group-readable accepted with a warning");
	pusher__free(p);
	o.token_file = NULL;
	o.basic_auth_file = at("tok");
	CHECK(pusher__new(&o, &p) == -EINVAL, "basic auth without ':' refused");
	write_secret("tok", "user:pw\n", 0600);
	p = NULL;
	CHECK(pusher__new(&o, &p) == 0, "basic auth");
	pusher__free(p);
}

int main(void)
{
	char cmd[128];

	strcpy(dir, "/tmp/test_push.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	RUN(test_backlog_delivered_once_in_order);
	RUN(test_secret_files);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("could not remove %s\n", dir);
	UNIT_EXIT();
}
