// SPDX-License-Identifier: GPL-2.0
/*
 * -e event strings: names, modifiers, raw codes, /term=value/ lists, commas.
 * The input is the spec, then optionally a NUL and 12 bytes: the -F rate
 * and the -c period it is parsed with (both change the attr built).
 */
#include <stdint.h>
#include <string.h>

#include "events.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event_list list = {};
	unsigned int freq = 99;
	uint64_t period = 0;
	char err[256], name[512], *spec = fuzz_str(data, size);
	size_t len = strlen(spec);

	if (size - len > 12) {
		memcpy(&freq, data + len + 1, 4);
		memcpy(&period, data + len + 5, 8);
	}
	if (!freq)
		freq = 1; /* -F is at least 1 (opts.c checks) */
	err[0] = '\0';
	if (events__parse(spec, freq, (unsigned long)period, &list, err, sizeof(err))) {
		if (!err[0] || !memchr(err, '\0', sizeof(err)))
			abort(); /* a refusal always says why */
	} else {
		if (list.nr > EVENTS_MAX)
			abort();
		for (size_t i = 0; i < list.nr; i++) {
			if (!memchr(list.v[i].name, '\0', EVENT_NAME_LEN))
				abort();
			if (!events__output_name("p-%e.%e.folded", &list.v[i], name, sizeof(name)) &&
			    strchr(name, '/'))
				abort(); /* a file name, not a path */
			events__output_name("no-pattern", &list.v[i], name, 8);
		}
	}
	free(spec);
	return 0;
}
