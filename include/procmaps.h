/* SPDX-License-Identifier: GPL-2.0 */
/* /proc/PID/maps: the executable mappings of one process. */
#ifndef BPFSAMPLER_PROCMAPS_H
#define BPFSAMPLER_PROCMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct procmap {
	uint64_t start; /* [start, end) in the process's address space */
	uint64_t end;
	uint64_t pgoff; /* file offset of start */
	uint64_t dev;	/* makedev(major, minor) */
	uint64_t inode;
	bool exec;	/* 'x' in perms */
	bool deleted;	/* path ended in " (deleted)"; path has it stripped */
	char *path;	/* NULL for anonymous; "[vdso]", "[stack]"... kept */
};

struct procmaps {
	int pid;
	size_t nr;
	struct procmap *maps; /* sorted by start */
};

/* Parses maps text from f (pid is stored as given). Keeps only executable
 * mappings. Returns 0 or -errno; *out is owned by the caller. */
int procmaps__parse(FILE *f, int pid, struct procmaps **out);
/* Reads /proc/PID/maps. -ENOENT/-ESRCH when the process is gone. */
int procmaps__load(int pid, struct procmaps **out);
typedef int (*procmaps_load_fn)(int pid, struct procmaps **out);
/* Whether the kernel answers PROCMAP_QUERY (Linux 6.11), which procmaps__load
 * then uses instead of parsing the text. */
bool procmaps__has_query(void);
/* The mapping containing addr, or NULL. Binary search. */
const struct procmap *procmaps__find(const struct procmaps *pm, uint64_t addr);
void procmaps__free(struct procmaps *pm);
/* /proc/PID/map_files/START-END: m's file while pid maps it there (a
 * deleted file, one in another mount namespace), into buf[size]. */
void procmaps__file_link(int pid, const struct procmap *m, char *buf, size_t size);
/* m's file, opened read-only: through its map_files link while pid maps
 * it, else by its path in pid's root when the inode there is still m's.
 * -ESRCH when pid has no address space left (exited, or a zombie): nothing
 * is known of the file, the next process of it may tell; else -errno. */
int procmaps__open_file(int pid, const struct procmap *m);

#endif
