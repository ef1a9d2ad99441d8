// SPDX-License-Identifier: GPL-2.0
/*
 * ELF files as the symbolizer meets them (any file a process maps): symbols
 * from .symtab and .dynsym, PLT stubs named from their code and
 * relocations, program headers, the build-ID note (sections or PT_NOTE),
 * .gnu_debuglink. Both entry points: from a path (libelf reading
 * the file, as for every mapped binary) and from memory (the vDSO).
 */
#include <stdint.h>
#include <string.h>

#include "elf_syms.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

/* Every query on a loaded table, at addresses taken from the input itself
 * (the header's entry point and offsets land near its symbols). */
static void query(const struct symtab *st, const uint8_t *data, size_t size)
{
	uint64_t off, vaddr, probe[4] = { 0, 0x1000, UINT64_MAX, 0 };
	const char *link, *id;
	uint32_t crc;

	if (size >= 32)
		memcpy(&probe[3], data + 24, 8); /* e_entry of a 64-bit header */
	for (size_t i = 0; i < 4; i++) {
		const char *name = symtab__find(st, probe[i], &off);

		if (name && strlen(name) > size)
			abort(); /* a name longer than the file: read out of bounds */
		if (!symtab__off_to_vaddr(st, probe[i], &vaddr))
			symtab__find(st, vaddr, NULL);
	}
	id = symtab__build_id(st);
	if (id && strlen(id) > 128)
		abort();
	link = symtab__debuglink(st, &crc);
	if (link && strlen(link) >= 256)
		abort();
	symtab__nr_syms(st);
	symtab__has_symtab(st);
	symtab__mem_bytes(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab *mem = NULL, *file = NULL;
	char hex[2 * 64 + 1];
	const char *path;

	if (!symtab__load_mem(data, size, &mem))
		query(mem, data, size);

	path = fuzz_file(data, size);
	elf_build_id__read(path, hex, sizeof(hex));
	if (!symtab__load(path, &file)) {
		query(file, data, size);
		/* what debuginfo does with a debug file and its binary */
		if (mem && symtab__adopt_layout(file, mem) == 0)
			query(file, data, size);
	}
	symtab__free(file);
	symtab__free(mem);
	return 0;
}
