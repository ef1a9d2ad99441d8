// SPDX-License-Identifier: GPL-2.0
/* The agent's metrics: exact exposition lines, the atomic file, and the
 * HTTP endpoint fetched with a plain socket. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "unit.h"

static void fill(struct metrics *m)
{
	struct metrics_event *e;

	memset(m, 0, sizeof(*m));
	e = metrics__event(m, "cpu-clock");
	e->samples = 12345;
	e->lost[METRICS_LOST_RING_FULL] = 7;
	e = metrics__event(m, "r\"odd\\");
	e->samples = 1;
	m->windows_written = 10;
	m->windows_pushed = 9;
	m->push_failures = 2;
	m->push_retries = 3;
	m->push_rejected = 1;
	m->backlog_files = 4;
	m->backlog_bytes = 4096;
	m->backlog_pruned = 5;
	m->dropped_undelivered = 6;
	m->processes_tracked = 321;
	m->processes_unfollowed = 77;
	m->series_overflowed = 8;
	m->mappings_lost = 9;
	m->records_unsent = 12;
	m->records_missing = 13;
	m->records_reordered = 14;
	m->stack_segments_dropped = 15;
	m->unwind_rows = 28271;
	m->unwind_tables_built = 11;
	m->rss_bytes = 1 << 20;
	m->max_sample_rate = 25000;
	m->cpu_seconds = 1.5;
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return true;
	return false;
}

#define HAS(text, line) CHECK(has_line(text, line), "missing line: %s", line)

static void check_text(const char *t)
{
	HAS(t, "# HELP bpfsampler_samples_total Samples taken, by event.");
	HAS(t, "# TYPE bpfsampler_samples_total counter");
	HAS(t, "bpfsampler_samples_total{event=\"cpu-clock\"} 12345");
	HAS(t, "bpfsampler_samples_total{event=\"r\\\"odd\\\\\"} 1");
	HAS(t, "# TYPE bpfsampler_samples_lost_total counter");
	HAS(t, "bpfsampler_samples_lost_total{event=\"cpu-clock\",reason=\"ring_full\"} 7");
	HAS(t, "bpfsampler_samples_lost_total{event=\"cpu-clock\",reason=\"map_busy\"} 0");
	HAS(t, "bpfsampler_windows_written_total 10");
	HAS(t, "bpfsampler_windows_pushed_total 9");
	HAS(t, "bpfsampler_push_failures_total 2");
	HAS(t, "bpfsampler_push_retries_total 3");
	HAS(t, "bpfsampler_push_rejected_total 1");
	HAS(t, "# TYPE bpfsampler_backlog_files gauge");
	HAS(t, "bpfsampler_backlog_files 4");
	HAS(t, "bpfsampler_backlog_bytes 4096");
	HAS(t, "bpfsampler_backlog_pruned_total 5");
	HAS(t, "bpfsampler_windows_dropped_undelivered_total 6");
	HAS(t, "# TYPE bpfsampler_processes_tracked gauge");
	HAS(t, "bpfsampler_processes_tracked 321");
	HAS(t, "# TYPE bpfsampler_processes_unfollowed_total counter");
	HAS(t, "bpfsampler_processes_unfollowed_total 77");
	HAS(t, "bpfsampler_series_overflowed_total 8");
	HAS(t, "# TYPE bpfsampler_mappings_lost_total counter");
	HAS(t, "bpfsampler_mappings_lost_total 9");
	HAS(t, "# TYPE bpfsampler_records_unsent_total counter");
	HAS(t, "bpfsampler_records_unsent_total 12");
	HAS(t, "# TYPE bpfsampler_stack_segments_dropped_total counter");
	HAS(t, "bpfsampler_stack_segments_dropped_total 15");
	HAS(t, "# TYPE bpfsampler_records_missing gauge");
	HAS(t, "bpfsampler_records_missing 13");
	HAS(t, "# TYPE bpfsampler_records_out_of_order_total counter");
	HAS(t, "bpfsampler_records_out_of_order_total 14");
	HAS(t, "# TYPE bpfsampler_unwind_table_rows gauge");
	HAS(t, "bpfsampler_unwind_table_rows 28271");
	HAS(t, "bpfsampler_unwind_tables_built_total 11");
	HAS(t, "bpfsampler_kernel_max_sample_rate 25000");
	HAS(t, "bpfsampler_resident_memory_bytes 1048576");
	HAS(t, "# TYPE bpfsampler_cpu_seconds_total counter");
	HAS(t, "bpfsampler_cpu_seconds_total 1.500");
}

static void test_render(void)
{
	struct metrics m;
	char *t;
	int helps = 0, types = 0;

	fill(&m);
	t = metrics__render(&m);
	CHECK(t != NULL, "rendered");
	if (!t)
		return;
	check_text(t);
	/* Every metric has exactly one HELP and one TYPE, each line ends. */
	for (const char *p = t; (p = strstr(p, "# HELP ")); p++)
		helps++;
	for (const char *p = t; (p = strstr(p, "# TYPE ")); p++)
		types++;
	CHECK(helps == types && helps == 25, "25 metrics, %d HELP and %d TYPE", helps, types);
	CHECK(t[strlen(t) - 1] == '\n', "ends with a newline");
	CHECK(strstr(t, "bpfsampler_build_info{version=\"") != NULL, "build info");
	free(t);
}

static void test_events_cap(void)
{
	struct metrics m = {};
	char name[16];

	for (int i = 0; i < METRICS_MAX_EVENTS; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		CHECK(metrics__event(&m, name) != NULL, "event %d", i);
	}
	CHECK(metrics__event(&m, "e3") == &m.events[3], "found again, not added");
	CHECK(metrics__event(&m, "one-too-many") == NULL, "full");
}

static void test_sample_self(void)
{
	struct metrics m = {};
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < 20000000; i++)
		x += i;
	CHECK(metrics__sample_self(&m) == 0, "sampled");
	CHECK(m.rss_bytes > 100 * 1024 && m.rss_bytes < (1ULL << 32), "rss %llu",
	      (unsigned long long)m.rss_bytes);
	CHECK(m.cpu_seconds > 0, "cpu %f", m.cpu_seconds);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);

	if (f && buf)
		fread(buf, 1, 65535, f);
	if (f)
		fclose(f);
	return buf;
}

static void test_write_file(void)
{
	char dir[] = "/tmp/bpfs-metrics.XXXXXX", path[64], *t, *want;
	struct metrics m;
	struct stat st;

	CHECK(mkdtemp(dir) != NULL, "temp dir");
	snprintf(path, sizeof(path), "%s/agent.prom", dir);
	fill(&m);
	CHECK(metrics__write_file(&m, path) == 0, "written");
	m.windows_written = 11;
	CHECK(metrics__write_file(&m, path) == 0, "rewritten over the old one");
	t = slurp(path);
	want = metrics__render(&m);
	CHECK(t && want && !strcmp(t, want), "the file is the rendering");
	CHECK(has_line(t, "bpfsampler_windows_written_total 11"), "the new snapshot");
	free(want);
	free(t);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644,
	      "readable by node_exporter: %o", st.st_mode & 0777);
	unlink(path);
	CHECK(rmdir(dir) == 0, "no temporary file left behind: %s", strerror(errno));
	CHECK(metrics__write_file(&m, "/nonexistent-dir/x.prom") == -ENOENT,
	      "missing directory: -ENOENT");
}

static void test_parse_addr(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (void *)&ss;
	struct sockaddr_in6 *in6 = (void *)&ss;
	socklen_t len;

	CHECK(metrics__parse_addr("127.0.0.1:9464", &ss, &len) == 0 && ss.ss_family == AF_INET &&
		      ntohs(in->sin_port) == 9464 &&
		      in->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "IPv4");
	CHECK(metrics__parse_addr("9464", &ss, &len) == 0 &&
		      in->sin_addr.s_addr == htonl(INADDR_LOOPBACK) && ntohs(in->sin_port) == 9464,
	      "port alone: loopback");
	CHECK(metrics__parse_addr(":0", &ss, &len) == 0 &&
		      in->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      ":port: loopback");
	CHECK(metrics__parse_addr("[::1]:80", &ss, &len) == 0 && ss.ss_family == AF_INET6 &&
		      IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) && ntohs(in6->sin6_port) == 80 &&
		      len == sizeof(*in6),
	      "[::1]");
	CHECK(metrics__parse_addr("0.0.0.0:9464", &ss, &len) == 0, "explicit wildcard: warned");
	CHECK(metrics__parse_addr("localhost:9464", &ss, &len) == -EINVAL, "no name lookups");
	CHECK(metrics__parse_addr("::1:80", &ss, &len) == -EINVAL, "IPv6 without brackets");
	CHECK(metrics__parse_addr("127.0.0.1:65536", &ss, &len) == -EINVAL, "port too big");
	CHECK(metrics__parse_addr("127.0.0.1:", &ss, &len) == -EINVAL, "no port");
	CHECK(metrics__parse_addr("[::1]80", &ss, &len) == -EINVAL, "no colon after ]");
	CHECK(metrics__parse_addr("", &ss, &len) == -EINVAL, "empty");
}

/* One request over a plain socket; the whole response, or NULL. */
static char *http_get(int port, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	char req[256], *buf = calloc(1, 65536);
	size_t len = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || !buf)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto fail;
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto fail;
	while (len < 65535 && (n = read(fd, buf + len, 65535 - len)) > 0)
		len += n;
	close(fd);
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void test_http(void)
{
	struct metrics_server *s = NULL;
	struct metrics m;
	char *r, *body;

	CHECK(metrics_server__new("127.0.0.1:0", &s) == 0, "server started");
	if (!s)
		return;
	CHECK(metrics_server__port(s) > 0, "ephemeral port %d", metrics_server__port(s));
	fill(&m);
	CHECK(metrics_server__publish(s, &m) == 0, "published");
	r = http_get(metrics_server__port(s), "/metrics");
	CHECK(r && !strncmp(r, "HTTP/1.1 200", 12), "200: %.40s", r ? r : "(no answer)");
	CHECK(r && strstr(r, "Content-Type: text/plain; version=0.0.4"), "exposition type");
	body = r ? strstr(r, "\r\n\r\n") : NULL;
	check_text(body ? body + 4 : "");
	free(r);

	m.windows_pushed = 99;
	metrics_server__publish(s, &m);
	r = http_get(metrics_server__port(s), "/metrics");
	CHECK(r && strstr(r, "\nbpfsampler_windows_pushed_total 99\n"), "the latest snapshot");
	free(r);

	r = http_get(metrics_server__port(s), "/");
	CHECK(r && !strncmp(r, "HTTP/1.1 404", 12), "404 elsewhere: %.40s", r ? r : "(none)");
	free(r);
	r = http_get(metrics_server__port(s), "/metrics/../etc/passwd");
	CHECK(r && !strncmp(r, "HTTP/1.1 404", 12), "404 for a longer path");
	free(r);
	metrics_server__free(s);
	metrics_server__free(NULL);
}

static void test_port_in_use(void)
{
	struct metrics_server *a = NULL, *b = NULL;
	char addr[32];

	CHECK(metrics_server__new("127.0.0.1:0", &a) == 0, "first");
	if (!a)
		return;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", metrics_server__port(a));
	CHECK(metrics_server__new(addr, &b) == -EADDRINUSE, "second on the same port refused");
	metrics_server__free(b);
	metrics_server__free(a);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_render);
	RUN(test_events_cap);
	RUN(test_sample_self);
	RUN(test_write_file);
	RUN(test_parse_addr);
	RUN(test_http);
	RUN(test_port_in_use);
	UNIT_EXIT();
}
