/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Function symbols of one ELF file: .symtab and .dynsym merged, sorted by
 * address, looked up by binary search. Also the file's PT_LOAD layout (to turn
 * a file offset into an ELF virtual address) and its GNU build-ID.
 */
#ifndef BPFSAMPLER_ELF_SYMS_H
#define BPFSAMPLER_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symtab;
struct Elf; /* libelf's */

/* Loads the symbols of the ELF file at path. Returns 0 or -errno
 * (-ENOEXEC: not an ELF file). A file with no symbols loads fine and has
 * symtab__nr_syms() == 0. */
int symtab__load(const char *path, struct symtab **out);
/* Only what finds the file's debug file (its path, build-ID and
 * .gnu_debuglink), no symbols: libLLVM's symbols and relocations are
 * 10 MB read, for a question about another file. */
int symtab__load_ids(const char *path, struct symtab **out);
/* The same from an ELF image in memory (e.g. the vDSO); buf is copied. */
int symtab__load_mem(const void *buf, size_t size, struct symtab **out);
void symtab__free(struct symtab *st);
/* Memory the symbol table takes (for the cache's accounting). */
size_t symtab__mem_bytes(const struct symtab *st);
/* Only the GNU build-ID of the ELF file at path, without reading its
 * symbols, as lowercase hex into hex[size]. Returns 0, -ENOENT when it has
 * none, -ENOEXEC when it is not ELF, or -errno. */
int elf_build_id__read(const char *path, char *hex, size_t size);

/* Name of the function containing ELF virtual address vaddr, else of the
 * PLT stub ("getenv@plt", elf_plt.h), or NULL. A symbol with size 0 covers up to the next symbol or the end of its section,
 * whichever comes first. *sym_off (may be NULL) gets vaddr - symbol start. */
const char *symtab__find(const struct symtab *st, uint64_t vaddr, uint64_t *sym_off);
/* File offset -> ELF virtual address through the PT_LOAD program headers.
 * Returns 0 or -ENOENT when no PT_LOAD segment covers off. */
int symtab__off_to_vaddr(const struct symtab *st, uint64_t off, uint64_t *vaddr);
/* Lowercase hex of NT_GNU_BUILD_ID, or NULL when the file has none. */
const char *symtab__build_id(const struct symtab *st);
size_t symtab__nr_syms(const struct symtab *st);
/* Whether the file has a .symtab with functions (not stripped). */
bool symtab__has_symtab(const struct symtab *st);
/* Whether the file has DWARF (a .debug_info with contents) for
 * dwarf_lines.h to read. */
bool symtab__has_debug_info(const struct symtab *st);
/* Whether the file may hold a Go table (gopclntab.h): it has a .gopclntab,
 * or no section headers at all. False for an image in memory. */
bool symtab__maybe_go(const struct symtab *st);
/* The path it was loaded from, NULL for an image in memory. */
const char *symtab__path(const struct symtab *st);
/* The .gnu_debuglink file name and its CRC32, or NULL. */
const char *symtab__debuglink(const struct symtab *st, uint32_t *crc);
/* Takes orig's PT_LOAD layout and PLT stubs for debug (a separate debug
 * file of orig: its program headers and PLT have no contents). */
int symtab__adopt_layout(struct symtab *debug, const struct symtab *orig);

/* Whether elf has a section called name with contents in the file (not
 * SHT_NOBITS, not empty): a debug file's code sections have none. */
bool elf__has_contents(struct Elf *elf, const char *section);

#endif
