// SPDX-License-Identifier: GPL-2.0
/*
 * Symbol names as ELF files give them (anyone's: any string without a NUL)
 * to demangle(), our wrapper of libiberty's C++ and Rust demanglers.
 */
#include <stdint.h>
#include <string.h>

#include "demangle.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *raw = fuzz_str(data, size), *a, *b;

	/* a name stops at its first NUL, as in a string table */
	a = demangle(raw);
	if (a) {
		/* only mangled names (_Z C++ and legacy Rust, _R Rust v0) */
		if (raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R') || !*a)
			abort();
		/* the same name, demangled again, is the same */
		b = demangle(raw);
		if (!b || strcmp(a, b))
			abort();
		free(b);
	}
	free(a);
	free(raw);
	return 0;
}
