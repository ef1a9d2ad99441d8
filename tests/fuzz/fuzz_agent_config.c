// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's config file, then what it turns into: the "--name=value"
 * strings go through the same option parser as the agent's command line,
 * as bpfsampler agent --config does.
 */
#include <stdint.h>
#include <string.h>

#include "agent_config.h"
#include "fuzz.h"
#include "opts.h"
#include "vec.h"

#define MAX_ARGS 256

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vec args = VEC_INIT(char *);
	char *text = fuzz_str(data, size), *argv[MAX_ARGS + 3];
	int argc = 0;
	struct opts o;

	if (agent_config__parse(text, "fuzz.conf", opts__long_options(), &args)) {
		if (args.nr)
			abort(); /* on error args holds what it held before */
		goto out;
	}
	argv[argc++] = "bpfsampler";
	argv[argc++] = "agent";
	for (size_t i = 0; i < args.nr && argc < MAX_ARGS + 2; i++) {
		argv[argc] = *(char **)vec__at(&args, i);
		if (strncmp(argv[argc], "--", 2))
			abort(); /* every setting is a long option */
		argc++;
	}
	argv[argc] = NULL;
	opts__parse(&o, argc, argv);
	opts__free(&o);
out:
	agent_config__free_args(&args);
	free(text);
	return 0;
}
