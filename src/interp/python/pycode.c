// SPDX-License-Identifier: GPL-2.0
/*
 * A CPython code object read from another process: its name, file and line
 * table, and an instruction's line. Everything comes from memory we do not
 * trust (a process may be hostile, or free the object while we read): every
 * length is bounded, every string checked, a table that runs out ends the
 * search with line 0. The line table formats are CPython's own
 * (Objects/lnotab_notes.txt for 3.8-3.10, Objects/locations.md for 3.11+).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "interp_python.h"

int py_read_process(void *pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv((pid_t)(uintptr_t)pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static int read_u64(py_read_fn rd, void *ctx, uint64_t addr, uint64_t *v)
{
	return rd(ctx, addr, v, sizeof(*v));
}

/* Appends code point cp as UTF-8 to out (room for 4 more bytes checked by
 * the caller). */
static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp >= 0xd800 && cp < 0xe000)
		cp = 0xfffd; /* a lone surrogate: not UTF-8 */
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x10000)
		return put_utf8(out, cp);
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Characters of a compact str object as UTF-8; a control character or a
 * NUL becomes '?' (names end up in folded lines and SVG). */
static void decode_chars(const uint8_t *raw, uint64_t nchars, unsigned int kind, char *out,
			 size_t size)
{
	size_t o = 0;

	for (uint64_t i = 0; i < nchars && o + 5 < size; i++) {
		uint32_t cp = kind == 1 ? raw[i] :
			      kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8 :
					  (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
						  (uint32_t)raw[4 * i + 2] << 16 |
						  (uint32_t)raw[4 * i + 3] << 24;

		if (cp < 0x20 || cp == 0x7f)
			cp = '?';
		o += put_utf8(out + o, cp);
	}
	out[o] = 0;
}

/* A str object (PyUnicodeObject) at addr into out, truncated to fit. Only
 * the compact forms every code object name and file uses; anything else is
 * -EINVAL. */
static int read_str(const struct pylayout *l, uint64_t addr, py_read_fn rd, void *ctx,
		    char *out, size_t size)
{
	uint8_t raw[4 * (PY_MAX_NAME - 1)];
	uint64_t len, state = 0;
	unsigned int kind;
	uint64_t data;

	out[0] = 0;
	if (!addr || read_u64(rd, ctx, addr + l->str_length, &len) ||
	    rd(ctx, addr + l->str_state, &state, 4))
		return -EFAULT;
	kind = (state >> 2) & 7;
	if (!(state & (1 << 5)) || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL; /* not compact, or not a kind there is */
	data = addr + ((state & (1 << 6)) ? l->str_ascii_data : l->str_compact_data);
	if (len > PY_MAX_NAME - 1)
		len = PY_MAX_NAME - 1;
	if (len && rd(ctx, data, raw, len * kind))
		return -EFAULT;
	decode_chars(raw, len, kind, out, size);
	return 0;
}

/* A bytes object's contents (the line table), at most PY_MAX_LINES. */
static int read_bytes(const struct pylayout *l, uint64_t addr, py_read_fn rd, void *ctx,
		      uint8_t **out, uint32_t *n)
{
	uint64_t len;

	*out = NULL;
	*n = 0;
	if (!addr || read_u64(rd, ctx, addr + l->bytes_size, &len))
		return -EFAULT;
	if (len > PY_MAX_LINES)
		len = PY_MAX_LINES; /* lines past that stay unknown */
	if (!len)
		return 0;
	*out = malloc(len);
	if (!*out)
		return -ENOMEM;
	if (rd(ctx, addr + l->bytes_data, *out, len)) {
		free(*out);
		*out = NULL;
		return -EFAULT;
	}
	*n = (uint32_t)len;
	return 0;
}

int pycode__read(const struct pylayout *l, uint64_t addr, py_read_fn rd, void *ctx,
		 struct pycode *out)
{
	uint64_t name = 0, file = 0, lines = 0;
	uint32_t name_off = l->co_qualname != BPFS_PY_NONE ? l->co_qualname : l->co_name;
	int32_t first = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (read_u64(rd, ctx, addr + name_off, &name) ||
	    read_u64(rd, ctx, addr + l->co_filename, &file) ||
	    read_u64(rd, ctx, addr + l->co_lines, &lines) ||
	    rd(ctx, addr + l->co_firstlineno, &first, sizeof(first)))
		return -EFAULT;
	err = read_str(l, name, rd, ctx, out->name, sizeof(out->name));
	if (err)
		return err;
	if (!out->name[0])
		return -EINVAL;
	if (read_str(l, file, rd, ctx, out->file, sizeof(out->file)))
		out->file[0] = 0; /* a name without a file is still a name */
	out->firstlineno = first > 0 ? first : 0;
	err = read_bytes(l, lines, rd, ctx, &out->lines, &out->nr_lines);
	return err == -ENOMEM ? err : 0;
}

void pycode__free(struct pycode *c)
{
	if (!c)
		return;
	free(c->lines);
	c->lines = NULL;
	c->nr_lines = 0;
}

/* A line summed from a table of the process's: 64-bit, so a hostile table
 * cannot overflow it (found by fuzz_pycode), and one outside what a line
 * can be is no line. */
static int32_t line_ok(int64_t line)
{
	return line < 0 || line > INT32_MAX ? 0 : (int32_t)line;
}

/* 3.8-3.9: (byte offset increment, signed line increment) pairs. */
static int32_t line_lnotab(const uint8_t *t, uint32_t n, int64_t line, uint32_t off)
{
	uint32_t addr = 0;

	for (uint32_t i = 0; i + 1 < n; i += 2) {
		addr += t[i];
		if (addr > off)
			break;
		line += (int8_t)t[i + 1];
	}
	return line_ok(line);
}

/* 3.10: (byte length, signed line delta) pairs; -128: no line. */
static int32_t line_310(const uint8_t *t, uint32_t n, int64_t line, uint32_t off)
{
	uint32_t end = 0;

	for (uint32_t i = 0; i + 1 < n; i += 2) {
		uint32_t start = end;
		int8_t d = (int8_t)t[i + 1];

		if (d != -128)
			line += d;
		end = start + t[i];
		if (off >= start && off < end)
			return d == -128 ? 0 : line_ok(line);
	}
	return 0;
}

/* A varint of the location table: 6-bit chunks, low first, 0x40 = more. */
static uint32_t loc_varint(const uint8_t *t, uint32_t n, uint32_t *i)
{
	uint32_t v = 0, shift = 0;

	while (*i < n && shift < 32) {
		uint8_t b = t[(*i)++];

		v |= (uint32_t)(b & 0x3f) << shift;
		shift += 6;
		if (!(b & 0x40))
			break;
	}
	return v;
}

static int32_t loc_svarint(const uint8_t *t, uint32_t n, uint32_t *i)
{
	uint32_t u = loc_varint(t, n, i);

	return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

/* 3.11+: entries of 1-8 code units, each a first byte (1, code:4,
 * length-1:3) and what its code says follows. */
static int32_t line_locations(const uint8_t *t, uint32_t n, int64_t line, uint32_t unit)
{
	uint32_t i = 0, at = 0;

	while (i < n) {
		uint8_t b = t[i++];
		uint32_t code = (b >> 3) & 15, len = (b & 7) + 1;
		int32_t delta = 0;
		bool none = false;

		if (!(b & 0x80))
			return 0; /* not an entry's first byte: lost our place */
		if (code == 15) {
			none = true;
		} else if (code == 14) {
			delta = loc_svarint(t, n, &i);
			loc_varint(t, n, &i); /* end line delta */
			loc_varint(t, n, &i); /* column + 1 */
			loc_varint(t, n, &i); /* end column + 1 */
		} else if (code == 13) {
			delta = loc_svarint(t, n, &i);
		} else if (code >= 10) {
			delta = (int32_t)code - 10;
			i += 2; /* column, end column */
		} else {
			i += 1; /* column bits */
		}
		line += delta;
		if (unit >= at && unit < at + len)
			return none ? 0 : line_ok(line);
		at += len;
	}
	return 0;
}

int32_t pycode__line(const struct pylayout *l, const uint8_t *tab, uint32_t n, int32_t first,
		     uint32_t instr)
{
	if (instr == BPFS_PY_NO_INSTR || !tab)
		return 0;
	switch (l->lines) {
	case PY_LINES_LNOTAB:
		return line_lnotab(tab, n, first, instr * l->instr_bytes);
	case PY_LINES_310:
		return line_310(tab, n, first, instr * l->instr_bytes);
	case PY_LINES_LOCATIONS:
		return line_locations(tab, n, first, instr);
	}
	return 0;
}
