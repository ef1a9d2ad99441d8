// SPDX-License-Identifier: GPL-2.0
/*
 * Where CPython keeps what the walk and the names need, per version.
 *
 * Each row was read off the pyenv builds on this machine with gdb
 * (offsetof on their DWARF: 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1,
 * 3.13.0) and checked against Debian's stripped python3.11 (3.11.2) by
 * profiling it; layouts do not change within a minor version (CPython's
 * ABI rule for these internal structures in a release series). 3.13
 * publishes the same offsets in _Py_DebugOffsets at the start of
 * _PyRuntime: they are taken from there, so a distribution's build that
 * moved a field is still read right.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interp_python.h"

#define N BPFS_PY_NONE

struct row {
	int minor;
	struct bpfs_py_offsets bpf;
	uint32_t co_name, co_qualname, co_filename, co_firstlineno, co_lines;
	enum py_lines lines;
	uint32_t instr_bytes;
	uint32_t str_ascii_data, str_compact_data;
};

/* bpf: model, runtime->interpreters.head, interp next, interp threads,
 * tstate next, thread_id, frame, cframe->current_frame, frame code, back,
 * instr, is_entry, owner, bytecode start, ob_type. */
static const struct row rows[] = {
	{ 8, { BPFS_PY_MODEL_FRAMEOBJ, 32, 0, 8, 8, 176, 24, N, 32, 24, 104, N, N, N, 8 },
	  112, N, 104, 40, 120, PY_LINES_LNOTAB, 1, 48, 72 },
	{ 9, { BPFS_PY_MODEL_FRAMEOBJ, 32, 0, 8, 8, 176, 24, N, 32, 24, 104, N, N, N, 8 },
	  112, N, 104, 40, 120, PY_LINES_LNOTAB, 1, 48, 72 },
	{ 10, { BPFS_PY_MODEL_FRAMEOBJ, 32, 0, 8, 8, 176, 24, N, 32, 24, 96, N, N, N, 8 },
	  112, N, 104, 40, 120, PY_LINES_310, 2, 48, 72 },
	{ 11, { BPFS_PY_MODEL_ENTRY_FLAG, 40, 0, 16, 8, 152, 56, 8, 32, 48, 56, 68, 69, 184, 8 },
	  120, 128, 112, 72, 136, PY_LINES_LOCATIONS, 2, 48, 72 },
	{ 12, { BPFS_PY_MODEL_CSTACK_SHIM, 40, 0, 72, 8, 136, 56, 0, 0, 8, 56, N, 70, 192, 8 },
	  120, 128, 112, 68, 136, PY_LINES_LOCATIONS, 2, 40, 56 },
	{ 13, { BPFS_PY_MODEL_CSTACK_SHIM, 632, 7264, 7344, 8, 152, 72, N, 0, 8, 56, N, 70, 200, 8 },
	  120, 128, 112, 68, 136, PY_LINES_LOCATIONS, 2, 40, 56 },
};

const char *pylayout__range(void)
{
	return "3.8-3.13";
}

static void from_row(const struct row *r, struct pylayout *l)
{
	*l = (struct pylayout){
		.minor = r->minor, .bpf = r->bpf, .co_name = r->co_name,
		.co_qualname = r->co_qualname, .co_filename = r->co_filename,
		.co_firstlineno = r->co_firstlineno, .co_lines = r->co_lines,
		.lines = r->lines, .instr_bytes = r->instr_bytes,
		.str_length = 16, .str_state = 32, .str_ascii_data = r->str_ascii_data,
		.str_compact_data = r->str_compact_data, .bytes_size = 16, .bytes_data = 32,
	};
}

/* _Py_DebugOffsets (3.13), as words from the cookie on: the index of each
 * field we take (Include/internal/pycore_runtime.h, 3.13). */
enum {
	DBG_RUNTIME_INTERPS = 5,
	DBG_INTERP_NEXT = 8,
	DBG_INTERP_THREADS = 9,
	DBG_TSTATE_NEXT = 21,
	DBG_TSTATE_FRAME = 23,
	DBG_TSTATE_THREAD_ID = 24,
	DBG_FRAME_PREVIOUS = 29,
	DBG_FRAME_EXECUTABLE = 30,
	DBG_FRAME_INSTR = 31,
	DBG_FRAME_OWNER = 33,
	DBG_CODE_FILENAME = 35,
	DBG_CODE_NAME = 36,
	DBG_CODE_QUALNAME = 37,
	DBG_CODE_LINETABLE = 38,
	DBG_CODE_FIRSTLINENO = 39,
	DBG_CODE_BYTECODE = 43,
	DBG_OBJECT_TYPE = 45,
	DBG_STR_STATE = 68,
	DBG_STR_LENGTH = 69,
	DBG_STR_ASCII_SIZE = 70,
};

static bool dbg_u32(const struct pybin *b, int i, uint32_t *out)
{
	if (b->dbg[i] > 1U << 20)
		return false; /* not an offset: a field list we do not know */
	*out = (uint32_t)b->dbg[i];
	return true;
}

/* 3.13's own offsets over the table's; false when one is not sane. */
static bool from_debug_offsets(const struct pybin *b, struct pylayout *l)
{
	struct bpfs_py_offsets *o = &l->bpf;
	uint32_t ascii = 0;
	bool ok = true;

	ok &= dbg_u32(b, DBG_RUNTIME_INTERPS, &o->runtime_interps);
	ok &= dbg_u32(b, DBG_INTERP_NEXT, &o->interp_next);
	ok &= dbg_u32(b, DBG_INTERP_THREADS, &o->interp_threads);
	ok &= dbg_u32(b, DBG_TSTATE_NEXT, &o->tstate_next);
	ok &= dbg_u32(b, DBG_TSTATE_FRAME, &o->tstate_frame);
	ok &= dbg_u32(b, DBG_TSTATE_THREAD_ID, &o->tstate_thread_id);
	ok &= dbg_u32(b, DBG_FRAME_PREVIOUS, &o->frame_back);
	ok &= dbg_u32(b, DBG_FRAME_EXECUTABLE, &o->frame_code);
	ok &= dbg_u32(b, DBG_FRAME_INSTR, &o->frame_instr);
	ok &= dbg_u32(b, DBG_FRAME_OWNER, &o->frame_owner);
	ok &= dbg_u32(b, DBG_CODE_BYTECODE, &o->code_bytecode);
	ok &= dbg_u32(b, DBG_OBJECT_TYPE, &o->object_type);
	ok &= dbg_u32(b, DBG_CODE_FILENAME, &l->co_filename);
	ok &= dbg_u32(b, DBG_CODE_NAME, &l->co_name);
	ok &= dbg_u32(b, DBG_CODE_QUALNAME, &l->co_qualname);
	ok &= dbg_u32(b, DBG_CODE_LINETABLE, &l->co_lines);
	ok &= dbg_u32(b, DBG_CODE_FIRSTLINENO, &l->co_firstlineno);
	ok &= dbg_u32(b, DBG_STR_STATE, &l->str_state);
	ok &= dbg_u32(b, DBG_STR_LENGTH, &l->str_length);
	ok &= dbg_u32(b, DBG_STR_ASCII_SIZE, &ascii);
	/* the BPF side reads a frame's fields from one 128-byte window */
	ok &= o->frame_back < 120 && o->frame_code < 120 && o->frame_instr < 120 &&
	      o->frame_owner < 128;
	if (ok && ascii != l->str_ascii_data)
		ok = false; /* the compact form's size follows from it */
	return ok;
}

bool pylayout__get(const struct pybin *b, struct pylayout *out)
{
	if (b->major != 3)
		return false;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (rows[i].minor != b->minor)
			continue;
		from_row(&rows[i], out);
		if (b->minor >= 13)
			return b->debug_offsets && from_debug_offsets(b, out);
		return true;
	}
	return false;
}

/* PyTypeObject: tp_basicsize at 32, tp_members at 240 (x86-64, 3.8-3.13);
 * PyMemberDef: name at 0, offset at 16, 40 bytes each. */
#define TP_BASICSIZE 32
#define TP_MEMBERS 240
#define MEMBER_SIZE 40
#define MAX_MEMBERS 64

static void take_member(struct pylayout *l, const char *name, uint32_t off, int *taken)
{
	static const struct {
		const char *name;
		size_t field;
	} fields[] = {
		{ "co_name", offsetof(struct pylayout, co_name) },
		{ "co_qualname", offsetof(struct pylayout, co_qualname) },
		{ "co_filename", offsetof(struct pylayout, co_filename) },
		{ "co_firstlineno", offsetof(struct pylayout, co_firstlineno) },
		{ "co_lnotab", offsetof(struct pylayout, co_lines) },
		{ "co_linetable", offsetof(struct pylayout, co_lines) },
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (strcmp(name, fields[i].name))
			continue;
		/* 3.10 keeps both; its co_lnotab is computed, not a member */
		if (!strcmp(name, "co_lnotab") && l->lines != PY_LINES_LNOTAB)
			return;
		if (!strcmp(name, "co_linetable") && l->lines == PY_LINES_LNOTAB)
			return;
		*(uint32_t *)((char *)l + fields[i].field) = off;
		(*taken)++;
	}
}

int pylayout__from_members(struct pylayout *l, uint64_t code_type, py_read_fn rd, void *ctx)
{
	uint64_t members = 0, basic = 0;
	int taken = 0;

	if (rd(ctx, code_type + TP_MEMBERS, &members, 8) ||
	    rd(ctx, code_type + TP_BASICSIZE, &basic, 8))
		return -EFAULT;
	/* 3.11+: the bytecode starts where the fixed part ends */
	if (l->minor >= 11 && basic >= 64 && basic < 4096)
		l->bpf.code_bytecode = (uint32_t)basic;
	for (int i = 0; members && i < MAX_MEMBERS; i++) {
		uint8_t m[MEMBER_SIZE];
		uint64_t name_p, off;
		char name[32] = {};

		if (rd(ctx, members + (uint64_t)i * MEMBER_SIZE, m, sizeof(m)))
			return taken ? taken : -EFAULT;
		memcpy(&name_p, m, 8);
		memcpy(&off, m + 16, 8);
		if (!name_p)
			break; /* the table's end */
		if (rd(ctx, name_p, name, sizeof(name) - 1) || off >= 4096)
			continue;
		take_member(l, name, (uint32_t)off, &taken);
	}
	return taken;
}
