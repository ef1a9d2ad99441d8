/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPython processes of a run (src/interp/python/python.c): recognised
 * as their mappings are read, their offsets handed to BPF, the code objects
 * their samples name read once while they live, and their frames named.
 */
#ifndef BPFSAMPLER_PYREG_H
#define BPFSAMPLER_PYREG_H

#include <stdbool.h>
#include <stdint.h>

struct procmaps;
struct pyreg;

struct pyreg_stats {
	uint64_t interpreters;	 /* files found to be a CPython */
	uint64_t processes;	 /* processes whose Python frames are walked */
	uint64_t unsupported;	 /* processes of a version not walked */
	uint64_t update_errors;	 /* BPF py_procs entries refused */
	uint64_t code_records;	 /* code objects reported by BPF */
	uint64_t codes;		 /* code objects read and held */
	uint64_t code_unread;	 /* could not be read (gone, not a code object) */
	uint64_t codes_released; /* forgotten with their process */
	uint64_t code_reread;	 /* read again: another object at the address */
	uint64_t code_bytes;	 /* memory the names held take now */
	uint64_t files;		 /* files told apart, held now (bounded) */
};

/* A Python frame, named. Strings live until the process is forgotten. */
struct pyreg_frame {
	const char *name;  /* qualname, or a marker ("[python: ...]") */
	const char *file;  /* NULL: unknown */
	int32_t line;	   /* 0: unknown */
	int32_t first_line;
	bool marker;	   /* not a frame of the program's */
};

/* procs_fd: the BPF py_procs map (-1: none, for tests). */
int pyreg__new(int procs_fd, struct pyreg **out);
void pyreg__free(struct pyreg *r);
/* A process's executable mappings were read. */
void pyreg__note_maps(struct pyreg *r, int pid, const struct procmaps *pm);
/* BPF met code object code in pid (BPFS_REC_PY_CODE): read it now (or at
 * the next pyreg__read_pending when memory ran short before). */
void pyreg__on_code(struct pyreg *r, uint32_t pid, uint64_t code);
void pyreg__read_pending(struct pyreg *r);
/* The frame word (BPFS_PY_IS_FRAME) of a sample of pid. False when its code
 * object is not known (out then holds a marker to show). */
bool pyreg__name(struct pyreg *r, uint32_t pid, uint64_t word, struct pyreg_frame *out);
/* pid is gone: its BPF entry and names go. */
void pyreg__forget(struct pyreg *r, int pid);
void pyreg__stats(const struct pyreg *r, struct pyreg_stats *out);
/* A registry for the sampler's py_procs map, given to sym; *out NULL (and
 * 0) when the sampler walks no Python frames. */
struct sampler;
struct symbolizer;
int pyreg__start(struct sampler *s, struct symbolizer *sym, struct pyreg **out);

#endif
