// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables from the .eh_frame, .eh_frame_hdr and .debug_frame of any
 * file a process maps (libdw runs each function's CFA program; compressed
 * .debug_frame goes through elf_compress). The input is a binary, and
 * optionally after the first "BPFSDBG!" its separate debug file, whose
 * .debug_frame is then read instead of the binary's own.
 */
#include <stdint.h>
#include <string.h>

#include "ehframe.h"
#include "fuzz.h"

#define SEP "BPFSDBG!"

static char dbg_path[128];

static void cleanup(void)
{
	unlink(dbg_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	snprintf(dbg_path, sizeof(dbg_path), "%s/debug", fuzz_dir);
	atexit(cleanup); /* before fuzz_setup's rmdir */
	return 0;
}

/* What a table promises: rows strictly sorted by pc, each rule one the BPF
 * walk knows, as many rows as its stats say and no more than the CFI could
 * describe, every row found at its own pc, functions holding what they
 * are asked for. */
static void check(const struct ehframe *t, size_t size)
{
	const struct bpfs_unwind_row *rows, *r;
	const struct ehframe_seg *segs;
	struct ehframe_stats st;
	size_t nr, nsegs;

	rows = ehframe__rows(t, &nr);
	segs = ehframe__segs(t, &nsegs);
	ehframe__stats(t, &st);
	/* each row is a range of a CFA program (a byte or more of it) or a
	 * function's start or end; a compressed .debug_frame may be ~1000
	 * times its size in the file */
	if (st.rows != nr || nr > 2048 * size + 16 || nsegs > size / 32)
		abort();
	if (ehframe__mem_bytes(t) < nr * sizeof(*rows))
		abort();
	for (size_t i = 0; i < nr; i++) {
		r = &rows[i];
		if (i && r->pc <= rows[i - 1].pc)
			abort(); /* unsorted or a duplicate pc */
		if (r->cfa_type > BPFS_CFA_END || r->rbp_type > BPFS_RBP_CFA)
			abort();
		if (r->cfa_type == BPFS_CFA_PLT && (r->cfa_off < 0 || r->cfa_off > 31))
			abort();
		if ((r->cfa_type == BPFS_CFA_NONE || r->cfa_type == BPFS_CFA_END) &&
		    (r->cfa_off || r->rbp_type || r->rbp_off))
			abort(); /* no rule, nothing else said */
		if (ehframe__find(t, r->pc) != r)
			abort();
		if (r->pc && ehframe__find(t, r->pc - 1) != (i ? r - 1 : NULL))
			abort();
		if (ehframe__func_start(t, r->pc) > r->pc)
			abort();
	}
	if (nr && ehframe__find(t, UINT64_MAX) != &rows[nr - 1])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *dbg = memmem(data, size, SEP, strlen(SEP));
	size_t bin_size = dbg ? (size_t)(dbg - data) : size;
	struct ehframe *t = NULL;
	const char *path;

	path = fuzz_file(data, bin_size);
	if (!ehframe__load(path, &t)) {
		check(t, size);
		ehframe__free(t);
	}
	if (dbg) {
		int fd = open(dbg_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		size_t dbg_size;

		dbg += strlen(SEP);
		dbg_size = size - (dbg - data);
		if (fd < 0 || (dbg_size && write(fd, dbg, dbg_size) != (ssize_t)dbg_size))
			abort();
		close(fd);
		t = NULL;
		if (!ehframe__load_debug(path, dbg_path, &t)) {
			check(t, size);
			ehframe__free(t);
		}
	}
	return 0;
}
