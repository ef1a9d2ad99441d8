// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/PID/maps text. The kernel writes it, but the paths in it are file
 * names any user chooses (spaces, newlines, " (deleted)" of their own), and
 * the parser is also fed text from elsewhere by the tests.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "procmaps.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmaps *pm = NULL;
	FILE *f;

	if (!size)
		return 0; /* fmemopen() refuses an empty buffer */
	f = fmemopen((void *)data, size, "r");
	if (!f)
		abort();
	if (!procmaps__parse(f, 1, &pm)) {
		for (size_t i = 0; i < pm->nr; i++) {
			const struct procmap *m = &pm->maps[i];

			if (i && m->start < pm->maps[i - 1].start)
				abort(); /* promised sorted */
			if (!m->exec)
				abort(); /* only executable mappings are kept */
			if (m->path && (strlen(m->path) > size || strchr(m->path, '\n')))
				abort();
			procmaps__find(pm, m->start);
			procmaps__find(pm, m->end);
		}
		procmaps__find(pm, 0);
		procmaps__find(pm, UINT64_MAX);
	}
	procmaps__free(pm);
	fclose(f);
	return 0;
}
