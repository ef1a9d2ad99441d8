// SPDX-License-Identifier: GPL-2.0
/*
 * Separate debug files: the input is a binary and a debug file, split at
 * the first "BPFSDBG!". The debug file is put where the binary's build-ID
 * and .gnu_debuglink send the search (a debug root's .build-id/ and beside
 * the binary), and debuginfo__load looks for it as for a mapped binary: it
 * is loaded, checked against the binary's build-ID and CRC, and laid out as
 * the binary.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "debuginfo.h"
#include "elf_syms.h"
#include "fuzz.h"

#define SEP "BPFSDBG!"

static char root[160], bin[160], byid[512], link_path[512];

static void cleanup(void)
{
	char d[400];

	unlink(bin);
	unlink(byid);
	unlink(link_path);
	/* root/.build-id/xx/, root/.build-id/, root/ */
	snprintf(d, sizeof(d), "%s/.build-id", root);
	for (unsigned int i = 0; i < 256; i++) {
		char sub[420];

		snprintf(sub, sizeof(sub), "%s/%02x", d, i);
		rmdir(sub);
	}
	rmdir(d);
	rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	snprintf(root, sizeof(root), "%s/root", fuzz_dir);
	snprintf(bin, sizeof(bin), "%s/bin", fuzz_dir);
	atexit(cleanup); /* runs before fuzz_setup's: the directory is empty then */
	return 0;
}

static void put(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
		perror("fuzz: writing an input file");
		abort();
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *dbg = memmem(data, size, SEP, strlen(SEP));
	size_t bin_size = dbg ? (size_t)(dbg - data) : size, dbg_size = 0;
	struct symtab *st = NULL, *out = NULL;
	struct debuginfo_opts o = { 0 };
	const char *roots[1] = { root }, *id, *link;
	unsigned int crc;

	if (dbg) {
		dbg += strlen(SEP);
		dbg_size = size - (dbg - data);
	}
	put(bin, data, bin_size);
	if (symtab__load(bin, &st))
		return 0;
	/* the places the search looks at, holding the debug file */
	byid[0] = link_path[0] = '\0';
	id = symtab__build_id(st);
	if (id && strlen(id) >= 3) {
		char d[400];

		snprintf(d, sizeof(d), "%s/.build-id", root);
		mkdir(root, 0700);
		mkdir(d, 0700);
		snprintf(d, sizeof(d), "%s/.build-id/%.2s", root, id);
		mkdir(d, 0700);
		snprintf(byid, sizeof(byid), "%s/%s.debug", d, id + 2);
		put(byid, dbg, dbg_size);
	}
	link = symtab__debuglink(st, NULL);
	if (link && !strchr(link, '/') && strcmp(link, "bin") && strcmp(link, "input") &&
	    strcmp(link, "root") && strcmp(link, ".") && strcmp(link, "..")) {
		snprintf(link_path, sizeof(link_path), "%s/%s", fuzz_dir, link);
		put(link_path, dbg, dbg_size);
		debuginfo__file_crc(link_path, &crc);
	}
	o.roots = roots;
	o.nr_roots = 1;
	if (!debuginfo__load(st, bin, &o, &out)) {
		uint64_t vaddr;

		if (!symtab__has_symtab(out))
			abort(); /* only a debug file with symbols is taken */
		if (!symtab__off_to_vaddr(out, 0, &vaddr))
			symtab__find(out, vaddr, NULL);
		symtab__free(out);
	}
	if (byid[0])
		unlink(byid);
	if (link_path[0])
		unlink(link_path);
	symtab__free(st);
	return 0;
}
