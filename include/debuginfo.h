/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Separate debug files, found where gdb and perf look: by build-ID under
 * each debug root (/usr/lib/debug and --debug-dir), then by .gnu_debuglink
 * beside the file, in its .debug/ and under each debug root, CRC-checked;
 * or, when DEBUGINFOD_URLS names servers, from debuginfod by build-ID
 * (each build-ID asked at most once per run). A debug file whose build-ID
 * differs from the binary's is rejected, wherever it came from. The same
 * search serves the symbols (debuginfo__load) and the unwind tables'
 * .debug_frame (debuginfo__find).
 */
#ifndef BPFSAMPLER_DEBUGINFO_H
#define BPFSAMPLER_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>

struct symtab;

struct debuginfo_opts {
	const char *const *roots; /* extra debug roots, searched first */
	size_t nr_roots;
	const char *sysroot;	  /* prefix for the standard paths, e.g.
				   * /proc/PID/root; NULL or "" for / */
};

/*
 * For a binary (st, loaded from the file whose path as the process sees it
 * is `path`), loads the symbols of its local debug file, laid out as the
 * binary. Returns 0 and *out, -ENOENT when there is none, or -errno.
 */
int debuginfo__load(const struct symtab *st, const char *path, const struct debuginfo_opts *o,
		    struct symtab **out);
/*
 * The path of the local debug file of the ELF file at `file` (whose path as
 * the process sees it is `path`), found as debuginfo__load finds one, that
 * has `section` with contents (".debug_frame" for unwind tables), into
 * out[size]. The candidate must carry file's build-ID (a warning names one
 * that does not: another build's addresses). Returns 0, -ENOENT when there
 * is none, or -errno. debuginfod is not asked.
 */
int debuginfo__find(const char *file, const char *path, const struct debuginfo_opts *o,
		    const char *section, char *out, size_t size);
/* Whether DEBUGINFOD_URLS names servers to ask. */
bool debuginfo__remote_wanted(void);
/* The same from the debuginfod servers, by build-ID: may wait on the
 * network (seconds), so callers ask after sampling, not while draining. */
int debuginfo__fetch(const struct symtab *st, struct symtab **out);
/* The CRC32 .gnu_debuglink uses, of a whole file. Returns 0 or -errno. */
int debuginfo__file_crc(const char *path, unsigned int *crc);

#endif
