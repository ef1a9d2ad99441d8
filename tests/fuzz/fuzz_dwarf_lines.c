// SPDX-License-Identifier: GPL-2.0
/*
 * Source lines and inline frames from the DWARF of any file a process maps
 * (.debug_info, .debug_line, .debug_aranges, .debug_ranges/.debug_rnglists,
 * compressed or not, through libdw). Addresses asked: the entry point, the
 * function symbols and points across each executable section, as the
 * profile asks for the addresses its samples hit.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <string.h>

#include "dwarf_lines.h"
#include "fuzz.h"

#define MAX_PROBES 64
#define MAX_FRAMES 32 /* dwarf_lines.c's depth */

/* The addresses to ask, read with libelf itself (not the code under test). */
static size_t probes(const uint8_t *data, size_t size, uint64_t *out)
{
	char *copy = malloc(size ? size : 1); /* libelf may write to it */
	Elf *elf = copy ? elf_memory(memcpy(copy, data, size), size) : NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t n = 0;

	out[n++] = 0;
	if (!elf) {
		free(copy);
		return n;
	}
	if (gelf_getehdr(elf, &eh))
		out[n++] = eh.e_entry;
	while (n < MAX_PROBES && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh))
			break;
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_size) {
			for (uint64_t k = 0; k < 4 && n < MAX_PROBES; k++)
				out[n++] = sh.sh_addr + k * (sh.sh_size / 4);
		}
		if (sh.sh_type != SHT_SYMTAB || !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && n < MAX_PROBES; i++) {
			if (gelf_getsym(d, i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
			    sym.st_value) {
				out[n++] = sym.st_value;
				if (sym.st_size > 1 && n < MAX_PROBES)
					out[n++] = sym.st_value + sym.st_size / 2;
			}
		}
	}
	elf_end(elf);
	free(copy);
	return n;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* At most the depth kept, and strings that end (their length is not
 * bounded by the file's: .debug_str may be compressed). */
static void check_frames(const struct dw_frame *f, size_t nr)
{
	size_t len = 0;

	if (nr > MAX_FRAMES || (nr && !f))
		abort();
	for (size_t i = 0; i < nr; i++) {
		len += f[i].function ? strlen(f[i].function) : 0;
		len += f[i].fn_file ? strlen(f[i].fn_file) : 0;
		len += f[i].file ? strlen(f[i].file) : 0;
	}
	if (len == SIZE_MAX)
		abort(); /* not reached: only for the reads above */
}

static bool same_frames(const struct dw_frame *a, size_t na, const struct dw_frame *b,
			size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		if (!same_str(a[i].function, b[i].function) ||
		    !same_str(a[i].fn_file, b[i].fn_file) || !same_str(a[i].file, b[i].file) ||
		    a[i].line != b[i].line || a[i].fn_line != b[i].fn_line)
			return false;
	}
	return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	elf_version(EV_CURRENT);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dwlines *dl = NULL, *fresh = NULL;
	const struct dw_frame *f, *g;
	uint64_t addr[MAX_PROBES];
	size_t n = probes(data, size, addr), nf, ng;
	const char *path = fuzz_file(data, size);

	if (dwlines__open(path, &dl))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (dwlines__find(dl, addr[i], &f, &nf))
			goto out; /* unreadable DWARF: said once, nothing more to ask */
		check_frames(f, nf);
	}
	/* libdw's memory freed between windows: the answers stay, and the
	 * same file read again from the start (addresses in another order)
	 * answers the same */
	dwlines__trim(dl);
	if (dwlines__open(path, &fresh))
		abort();
	for (size_t i = n; i-- > 0;) {
		if (dwlines__find(fresh, addr[i], &g, &ng) || dwlines__find(dl, addr[i], &f, &nf))
			abort();
		check_frames(g, ng);
		if (!same_frames(f, nf, g, ng))
			abort();
	}
out:
	dwlines__free(fresh);
	dwlines__free(dl);
	return 0;
}
