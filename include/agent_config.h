/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's config file (--config FILE): the long options written one per
 * line, "name = value" or a bare "name" for a flag. It is turned into
 * "--name=value" strings for the same getopt parser the command line goes
 * through, so the file and the options cannot drift apart: an option the
 * parser does not know is an error in the file too.
 */
#ifndef BPFSAMPLER_AGENT_CONFIG_H
#define BPFSAMPLER_AGENT_CONFIG_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

struct option;
struct vec;

/*
 * Reads path and appends one malloc'ed "--name=value" (or "--name") string
 * per setting to args, a vec of char * (VEC_INIT(char *)), in file order.
 * known (the parser's long option table, ending with a zeroed entry) is
 * checked: unknown names, a flag given a value other than true/false, an
 * option that needs a value given none are errors. "name = false" adds
 * nothing. Every error is printed naming the file and line. Put the strings
 * before the command line's arguments so the command line wins.
 *
 * When running as root the file must be owned by root and writable by no
 * one else: it steers a root process.
 *
 * Returns 0, -EINVAL (bad contents), -EPERM (unsafe ownership or mode),
 * -ENOMEM or -errno of open/read. On error args holds what it held before.
 */
int agent_config__load(const char *path, const struct option *known, struct vec *args);

/* The same on text already read; name is used in messages only. */
int agent_config__parse(const char *text, const char *name, const struct option *known,
			struct vec *args);

/* Whether a file with st may configure a process running as euid: 0 or
 * -EPERM with the reason printed. Exported for tests. */
int agent_config__check_owner(const char *path, const struct stat *st, uid_t euid);

/* Frees the strings in args and args itself. */
void agent_config__free_args(struct vec *args);

#endif
