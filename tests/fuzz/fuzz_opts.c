// SPDX-License-Identifier: GPL-2.0
/*
 * The command line: the input is argv, one argument per NUL-separated
 * piece, parsed whole (getopt, every option's value parser, the checks
 * between options), and each piece also through the value parsers on their
 * own (durations, sizes, id lists, the --metrics-addr address).
 */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "metrics.h"
#include "opts.h"

#define MAX_ARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	/* --help and --version print to stdout, getopt to stderr: neither is
	 * wanted thousands of times a second (run with -close_fd_mask=3) */
	return 0;
}

static void values(const char *s)
{
	struct int_list l = {};
	struct sockaddr_storage ss;
	unsigned long long bytes;
	socklen_t len;
	double secs;

	if (!opts__parse_seconds(s, &secs) && !(secs >= 0))
		abort(); /* a duration is never negative or NaN */
	opts__parse_bytes(s, &bytes);
	if (!opts__parse_list(s, true, &l)) {
		for (size_t i = 0; i < l.nr; i++)
			for (size_t j = 0; j < i; j++)
				if (l.v[i] == l.v[j])
					abort(); /* lists are de-duplicated */
	}
	free(l.v);
	l = (struct int_list){};
	opts__parse_list(s, false, &l);
	free(l.v);
	metrics__parse_addr(s, &ss, &len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fuzz_str(data, size), *argv[MAX_ARGS + 2];
	int argc = 0;
	struct opts o;

	argv[argc++] = "bpfsampler";
	for (char *p = buf; argc <= MAX_ARGS && p <= buf + size; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	for (int i = 1; i < argc; i++)
		values(argv[i]);
	opts__parse(&o, argc, argv);
	opts__free(&o);
	free(buf);
	return 0;
}
