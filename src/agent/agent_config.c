// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_config.h"
#include "log.h"
#include "vec.h"

/* Config files are a few hundred bytes; a megabyte is a mistake (a log or a
 * binary given by accident), not a config. */
#define CONFIG_MAX_BYTES (1 << 20)

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* A long option's name: what getopt would take after "--". */
static bool valid_name(const char *s)
{
	if (!*s || *s == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_')
			return false;
	return true;
}

static const struct option *find_option(const struct option *known, const char *name)
{
	for (; known && known->name; known++)
		if (strcmp(known->name, name) == 0)
			return known;
	return NULL;
}

static bool is_true(const char *v)
{
	return !strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1");
}

static bool is_false(const char *v)
{
	return !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0");
}

static int push_arg(struct vec *out, const char *name, const char *value)
{
	char **slot;
	char *s;

	if (value ? asprintf(&s, "--%s=%s", name, value) < 0 : asprintf(&s, "--%s", name) < 0)
		return -ENOMEM;
	slot = vec__push(out);
	if (!slot) {
		free(s);
		return -ENOMEM;
	}
	*slot = s;
	return 0;
}

/*
 * One trimmed, non-empty, non-comment line into out. raw is the line as
 * written, for messages. Returns 0, -EINVAL (message printed) or -ENOMEM.
 */
static int parse_line(char *line, const char *raw, const char *file, int lineno,
		      const struct option *known, struct vec *out)
{
	const struct option *opt;
	char *eq = strchr(line, '=');
	char *name = line, *value = NULL;

	if (eq) {
		*eq = '\0';
		name = trim(line);
		value = trim(eq + 1);
	}
	if (!valid_name(name)) {
		if (name[0] == '-' && valid_name(name + strspn(name, "-")))
			p_err("config %s: line %d: '%s': write the option name without dashes",
			      file, lineno, raw);
		else if (strchr(name, '#'))
			p_err("config %s: line %d: '%s': a comment goes on a line of its own",
			      file, lineno, raw);
		else
			p_err("config %s: line %d: '%s': expected name = value", file, lineno, raw);
		return -EINVAL;
	}
	opt = find_option(known, name);
	if (known && !opt) {
		p_err("config %s: line %d: unknown option '%s' (the names are bpfsampler agent's "
		      "long options, see --help)", file, lineno, name);
		return -EINVAL;
	}
	if (!known || opt->has_arg == optional_argument)
		return push_arg(out, name, value && *value ? value : NULL);
	if (opt->has_arg == no_argument) {
		if (!value || is_true(value))
			return push_arg(out, name, NULL);
		if (is_false(value))
			return 0;
		p_err("config %s: line %d: '%s' is a flag: write '%s = true', '%s = false' or just "
		      "'%s'", file, lineno, raw, name, name, name);
		return -EINVAL;
	}
	if (!value || !*value) {
		p_err("config %s: line %d: '%s' needs a value: write '%s = VALUE'", file, lineno, raw,
		      name);
		return -EINVAL;
	}
	return push_arg(out, name, value);
}

int agent_config__parse(const char *text, const char *name, const struct option *known,
			struct vec *args)
{
	struct vec parsed = VEC_INIT(char *);
	char *copy, *line, *next, *raw, *shown;
	int lineno = 0, err = 0;

	copy = strdup(text);
	if (!copy) {
		err = -ENOMEM;
		goto out;
	}
	for (line = copy; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		raw = trim(line);
		/* '#' starts a comment only at the start of a line: values
		 * (URLs with fragments, label selectors) may hold one. */
		if (!*raw || *raw == '#')
			continue;
		shown = strdup(raw); /* parse_line cuts raw at '=' */
		if (!shown) {
			err = -ENOMEM;
			goto out;
		}
		err = parse_line(raw, shown, name, lineno, known, &parsed);
		free(shown);
		if (err)
			goto out;
	}
	err = parsed.nr ? vec__append(args, parsed.data, parsed.nr) : 0;
	if (err)
		goto out;
	parsed.nr = 0; /* the strings now belong to args */
out:
	if (err == -ENOMEM)
		p_err("config %s: out of memory while parsing", name);
	agent_config__free_args(&parsed);
	free(copy);
	return err;
}

int agent_config__check_owner(const char *path, const struct stat *st, uid_t euid)
{
	if (!S_ISREG(st->st_mode)) {
		p_err("config %s: not a regular file", path);
		return -EPERM;
	}
	/* Only a root process is steered into doing what its caller could
	 * not; an unprivileged agent reads what its user may read anyway. */
	if (euid != 0)
		return 0;
	if (st->st_uid != 0) {
		p_err("config %s: owned by uid %u, not root: it configures a process running as "
		      "root, so only root may own it (chown root:root %s)",
		      path, (unsigned int)st->st_uid, path);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		p_err("config %s: writable by %s: it configures a process running as root, so "
		      "only root may write it (chmod go-w %s)",
		      path, st->st_mode & S_IWOTH ? "everyone" : "its group", path);
		return -EPERM;
	}
	return 0;
}

/* The whole file, NUL-terminated; NULs inside are refused. */
static int read_all(int fd, const char *path, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nb;
	ssize_t n;
	int err;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= CONFIG_MAX_BYTES) {
				p_err("config %s: larger than %d bytes: is it the right file?", path,
				      CONFIG_MAX_BYTES);
				err = -EINVAL;
				goto err;
			}
			nb = realloc(buf, cap *= 2);
			if (!nb) {
				err = -ENOMEM;
				goto err;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			p_err("config %s: cannot read: %s", path, strerror(-err));
			goto err;
		}
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	if (strlen(buf) != len) {
		p_err("config %s: contains NUL bytes: a config is text", path);
		err = -EINVAL;
		goto err;
	}
	*out = buf;
	return 0;
err:
	free(buf);
	return err;
}

int agent_config__load(const char *path, const struct option *known, struct vec *args)
{
	char *text = NULL;
	struct stat st;
	int fd, err;

	/* The checks look at the open file, not the path: nothing can swap
	 * the file between the check and the read. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		p_err("config %s: cannot open: %s (check the --config path)", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		p_err("config %s: cannot stat: %s", path, strerror(-err));
		goto out;
	}
	err = agent_config__check_owner(path, &st, geteuid());
	if (err)
		goto out;
	err = read_all(fd, path, &text);
	if (err)
		goto out;
	err = agent_config__parse(text, path, known, args);
out:
	free(text);
	close(fd);
	return err;
}

void agent_config__free_args(struct vec *args)
{
	for (size_t i = 0; i < args->nr; i++)
		free(*(char **)vec__at(args, i));
	vec__free(args);
}
