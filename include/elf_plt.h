/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names for the PLT stubs of one ELF file, as perf and objdump give them
 * ("getenv@plt"): a sample in a stub is in the calling file, at an address
 * no symbol covers. Read from the file's code and dynamic relocations
 * (x86-64); a separate debug file has neither, so its symbol table takes
 * the binary's (symtab__adopt_layout()).
 */
#ifndef BPFSAMPLER_ELF_PLT_H
#define BPFSAMPLER_ELF_PLT_H

#include <stddef.h>
#include <stdint.h>

struct Elf; /* libelf's */
struct plt_table;

/* How a stub bound through an IFUNC (an IRELATIVE relocation, as libc
 * calls its own memcpy) is named: after the function whose resolver is at
 * vaddr (its STT_GNU_IFUNC symbol), or NULL. The name is copied at once. */
struct plt_names {
	const char *(*name_at)(const void *ctx, uint64_t vaddr);
	const void *ctx;
};

/* The stubs of .plt, .plt.sec and .plt.got (ifunc may be NULL). fd: the
 * file elf reads, whose relocations are read from it in chunks (-1: an
 * image in memory, read through elf). *out is NULL when the file has none
 * (or is not x86-64). Returns 0 or -ENOMEM. */
int elf_plt__read(struct Elf *elf, int fd, const struct plt_names *ifunc,
		  struct plt_table **out);
/* The stub's name at ELF virtual address vaddr ("[plt]" for one that no
 * relocation names, like PLT0, the lazy binder's trampoline), with the
 * offset into it; NULL when vaddr is in no stub. t may be NULL. */
const char *plt_table__find(const struct plt_table *t, uint64_t vaddr, uint64_t *off);
/* A copy (NULL for NULL), or NULL when out of memory: check t first. */
struct plt_table *plt_table__dup(const struct plt_table *t);
size_t plt_table__bytes(const struct plt_table *t);
void plt_table__free(struct plt_table *t);

#endif
