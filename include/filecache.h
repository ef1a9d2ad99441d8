/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The files processes map, each opened once the way its process sees it,
 * and their symbols. A file is known by (device, inode, mtime), so one
 * rewritten in place is read again; symbols are loaded once per build-ID,
 * so a library mapped by many processes, or the same library in several
 * containers' file systems, is parsed once. A stripped file's symbols come
 * from its debug file (debuginfo.h).
 */
#ifndef BPFSAMPLER_FILECACHE_H
#define BPFSAMPLER_FILECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct debuginfo_opts;
struct procmap;
struct symtab;
struct dwlines;
struct gopcln;
struct filecache;

/* What is known of one mapped file; lives while a mapping holds it
 * (filecache__open ... filecache__put), and a few sweeps more. */
struct mapped_file {
	const char *path;	 /* as first seen mapped */
	const char *build_id;	 /* lowercase hex, or NULL when it has none */
	const struct symtab *st; /* NULL: not an ELF file that could be read */
	struct dwlines *lines;	 /* its DWARF (or its debug file's); NULL:
				  * none, or --no-lines */
	struct gopcln *go;	 /* its Go table (gopclntab.h), read when it
				  * has no .symtab or no DWARF; NULL: none */
};

struct filecache_stats {
	uint64_t files;	       /* distinct (device, inode, mtime) opened */
	uint64_t unreadable;   /* of which could not be opened or read */
	uint64_t parsed;       /* symbol tables read from ELF files */
	uint64_t shared;       /* files whose build-ID's symbols were loaded */
	uint64_t debug_files;  /* separate debug files used */
	uint64_t dwarf_files;  /* files whose DWARF was opened for lines */
	uint64_t dwarf_released; /* DWARF reads freed at a sweep (dwlines__trim) */
	uint64_t dwarf_skipped;	 /* files with DWARF past the fd budget */
	uint64_t go_files;	 /* Go binaries whose .gopclntab was read */
	uint64_t symtab_bytes; /* memory of all symbol tables held */
	uint64_t released;     /* files released (no mapping held them) */
	uint64_t held;	       /* files held now (after the last sweep) */
	uint64_t fast;	       /* opens answered by filecache__known */
};

/* dbg (may be NULL) is kept by reference. */
int filecache__new(const struct debuginfo_opts *dbg, struct filecache **out);
void filecache__free(struct filecache *fc);
/*
 * The file behind mapping m (m->path is absolute) of process pid, opened
 * now: through /proc/PID/map_files while it is mapped (deleted files, other
 * mount namespaces), else /proc/PID/root/PATH, else PATH. NULL only when out
 * of memory.
 */
const struct mapped_file *filecache__open(struct filecache *fc, int pid,
					  const struct procmap *m);
/*
 * The file behind m when it is one already read and unchanged (same device,
 * inode and mtime, checked with fstat on a descriptor the cache holds),
 * held like filecache__open's; NULL otherwise: then filecache__open.
 */
const struct mapped_file *filecache__known(struct filecache *fc, const struct procmap *m);
/* The mapping that opened f is forgotten (f may be NULL). */
void filecache__put(struct filecache *fc, const struct mapped_file *f);
/* Releases the files no mapping has held for `idle` sweeps, and the
 * symbols of a build-ID no file uses any more: memory follows what is
 * mapped now, not everything ever seen. What libdw read of the files
 * still held is freed too (dwlines__trim: the answers stay, the DWARF is
 * read again only for a new address). Returns how many files went. */
size_t filecache__sweep(struct filecache *fc, unsigned int idle);
/* Asks the debuginfod servers (DEBUGINFOD_URLS) for the debug files of the
 * stripped files that had none locally, once each: after sampling, since
 * an answer can take seconds. The mapped files' symbols change in place. */
void filecache__fetch_remote(struct filecache *fc);
/* Whether files opened from now on get their DWARF read (on by default). */
void filecache__set_lines(struct filecache *fc, bool on);

/* The start (an ELF virtual address) of the function holding vaddr of f
 * (mapped by pid as m), from the FDEs of its .eh_frame: how frames of a
 * file without symbols are grouped per function. 0 when not known. */
uint64_t filecache__func_start(struct filecache *fc, const struct mapped_file *f, int pid,
				const struct procmap *m, uint64_t vaddr);
/* The symbols of this kernel's vDSO (every process maps the same), or NULL. */
const struct symtab *filecache__vdso(struct filecache *fc);
void filecache__stats(const struct filecache *fc, struct filecache_stats *out);

#endif
