// SPDX-License-Identifier: GPL-2.0
/*
 * GET /metrics over HTTP, served by libmicrohttpd: parsing HTTP from
 * whoever can reach the port is not something to hand-write. MHD runs its
 * own thread; the agent publishes a rendered snapshot under a mutex.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"

struct metrics_server {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock; /* guards text: published by the agent, read by MHD */
	char *text;
	int port;
};

static int parse_port(const char *s, unsigned int *port)
{
	char *end;
	unsigned long v;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (v > 65535)
		return -EINVAL;
	*port = v;
	return 0;
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

int metrics__parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (void *)ss;
	struct sockaddr_in6 *in6 = (void *)ss;
	char host[INET6_ADDRSTRLEN + 1] = "127.0.0.1";
	const char *port_s = s, *colon, *close;
	unsigned int port;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		close = strchr(s, ']');
		if (!close || close[1] != ':')
			goto bad;
		hlen = close - s - 1;
		port_s = close + 2;
		if (hlen >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, hlen);
		host[hlen] = '\0';
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			goto bad;
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
	} else {
		colon = strrchr(s, ':');
		if (colon && memchr(s, ':', colon - s)) {
			p_err("invalid --metrics-addr '%s': write an IPv6 address in brackets, e.g. "
			      "[::1]:9464", s);
			return -EINVAL;
		}
		/* "9464" and ":9464" leave the host at loopback. */
		if (colon && colon > s) {
			hlen = colon - s;
			if (hlen >= sizeof(host))
				goto bad;
			memcpy(host, s, hlen);
			host[hlen] = '\0';
		}
		if (colon)
			port_s = colon + 1;
		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			goto bad;
		in->sin_family = AF_INET;
		*len = sizeof(*in);
	}
	if (parse_port(port_s, &port))
		goto bad;
	/* sin_port and sin6_port share their offset. */
	if (ss->ss_family == AF_INET)
		in->sin_port = htons(port);
	else
		in6->sin6_port = htons(port);
	if (!is_loopback(ss))
		p_warn("--metrics-addr %s is not a loopback address: the agent's metrics are "
		       "reachable from other machines (firewall the port, or use 127.0.0.1)", s);
	return 0;
bad:
	p_err("invalid --metrics-addr '%s': give IP:PORT, [IPv6]:PORT or PORT (loopback), e.g. "
	      "127.0.0.1:9464; host names are not looked up", s);
	return -EINVAL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *body,
			     const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct metrics_server *s = cls;
	enum MHD_Result ret;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", "text/plain");
	if (strcmp(url, "/metrics"))
		return reply(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", "text/plain");
	/* MHD copies the text: the lock is held only for the copy. */
	pthread_mutex_lock(&s->lock);
	ret = reply(c, MHD_HTTP_OK, s->text ? s->text : "",
		    "text/plain; version=0.0.4; charset=utf-8");
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* A listening socket on ss; bound here rather than by MHD so a failure
 * says why (address in use, not an address of this machine). */
static int listen_on(const char *addr, const struct sockaddr_storage *ss, socklen_t len,
		     int *port)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int fd, one = 1, err;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		p_err("metrics server %s: socket: %s", addr, strerror(-err));
		return err;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len)) {
		err = -errno;
		p_err("metrics server %s: bind: %s (%s)", addr, strerror(-err),
		      err == -EADDRINUSE ? "another process has the port: pick another"
					 : "check the --metrics-addr address");
		goto err;
	}
	if (listen(fd, 16) || getsockname(fd, (struct sockaddr *)&bound, &blen)) {
		err = -errno;
		p_err("metrics server %s: listen: %s", addr, strerror(-err));
		goto err;
	}
	*port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	return fd;
err:
	close(fd);
	return err;
}

int metrics_server__new(const char *addr, struct metrics_server **out)
{
	struct metrics_server *s;
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err;

	err = metrics__parse_addr(addr, &ss, &len);
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s) {
		p_err("metrics server %s: out of memory", addr);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	fd = listen_on(addr, &ss, len, &s->port);
	if (fd < 0) {
		err = fd;
		goto err;
	}
	/* From here MHD owns fd: MHD_stop_daemon closes it. Few connections
	 * and a short timeout: a scraper needs one, a slow client gets none
	 * of the agent's memory for long. */
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
					  (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_LIMIT, 8u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024, MHD_OPTION_END);
	if (!s->mhd) {
		err = -EIO;
		p_err("metrics server %s: libmicrohttpd did not start (out of threads or memory?); "
		      "run without --metrics-addr or use the metrics file", addr);
		/* Whether a failed start closed fd varies by MHD version: close
		 * it only if still open (no other thread runs yet to reuse it). */
		if (fcntl(fd, F_GETFD) >= 0)
			close(fd);
		goto err;
	}
	*out = s;
	return 0;
err:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return err;
}

int metrics_server__port(const struct metrics_server *s)
{
	return s->port;
}

int metrics_server__publish(struct metrics_server *s, const struct metrics *m)
{
	char *text = metrics__render(m), *old;

	if (!text)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	old = s->text;
	s->text = text;
	pthread_mutex_unlock(&s->lock);
	free(old);
	return 0;
}

void metrics_server__free(struct metrics_server *s)
{
	if (!s)
		return;
	/* Joins MHD's thread: no handler runs after this. */
	MHD_stop_daemon(s->mhd);
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s);
}
