// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/kallsyms lines (or a file given for it): addresses, types, names,
 * module tags; the format has grown before and may again.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "ksyms.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ksyms *ks = NULL;
	uint64_t probe[4] = { 0, 0xffffffff81000000ULL, UINT64_MAX, 0 };
	const char *path;

	/* the path NULL means /proc/kallsyms: the input always goes to a file */
	path = fuzz_file(data, size);
	if (size >= 8)
		memcpy(&probe[3], data, 8);
	if (ksyms__load(path, &ks))
		return 0;
	for (size_t i = 0; i < 4; i++) {
		struct ksym k;

		if (ksyms__find(ks, probe[i], &k) &&
		    (k.addr > probe[i] || strlen(k.name) > size ||
		     (k.module && strlen(k.module) > size)))
			abort();
	}
	ksyms__hidden(ks);
	ksyms__free(ks);
	return 0;
}
