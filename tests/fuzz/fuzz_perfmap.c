// SPDX-License-Identifier: GPL-2.0
/*
 * /tmp/perf-PID.map: written by JITs, and by anyone who can write the
 * process's user's files. Read from a real file, as the symbolizer does.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "perfmap.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *pm = NULL;
	uint64_t probe[4] = { 0, 1, UINT64_MAX, 0 };
	const char *path = fuzz_file(data, size);

	if (size >= 8)
		memcpy(&probe[3], data, 8);
	if (perfmap__load(path, geteuid(), &pm))
		return 0;
	for (size_t i = 0; i < 4; i++) {
		const char *name = perfmap__find(pm, probe[i]);

		/* a name is one line of the file, never more */
		if (name && (strlen(name) > size || strlen(name) > PERFMAP_LINE_MAX ||
			     strchr(name, '\n')))
			abort();
	}
	if (perfmap__unread(pm) > size)
		abort();
	perfmap__free(pm);
	return 0;
}
