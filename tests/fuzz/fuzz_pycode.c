// SPDX-License-Identifier: GPL-2.0
/*
 * What the loader reads from a CPython process (src/interp/python/): the
 * input is that process's memory, as a hostile or dying interpreter may
 * leave it. Byte 0 picks what is read: an ELF file said to be a CPython
 * (pybin), PyCode_Type's member table (pylayout), or a code object with its
 * strings and line table (pycode), for a version picked by byte 1; the
 * line of every instruction is then asked. Addresses in the memory are
 * offsets into the input, at BASE.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "interp_python.h"

#define BASE 0x10000ULL

struct mem {
	const uint8_t *data;
	size_t size;
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = ctx;

	if (addr < BASE || addr - BASE > m->size || len > m->size - (addr - BASE))
		return -14; /* EFAULT */
	memcpy(buf, m->data + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

static void code_object(const struct pylayout *l, const struct mem *m, uint64_t at)
{
	struct pycode c;

	if (pycode__read(l, at, rd, (void *)m, &c))
		return;
	if (strlen(c.name) >= sizeof(c.name) || strlen(c.file) >= sizeof(c.file) ||
	    c.nr_lines > PY_MAX_LINES)
		abort();
	for (uint32_t i = 0; i < 4096; i += 7)
		pycode__line(l, c.lines, c.nr_lines, c.firstlineno, i);
	pycode__line(l, c.lines, c.nr_lines, c.firstlineno, BPFS_PY_NO_INSTR);
	pycode__free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pybin b = { .major = 3 };
	struct mem m;
	struct pylayout l;

	if (size < 4)
		return 0;
	m = (struct mem){ data + 4, size - 4 };
	b.minor = PY_MIN_MINOR + data[1] % (PY_MAX_MINOR - PY_MIN_MINOR + 1);
	if (data[0] % 3 == 0) {
		if (!pybin__read_mem(m.data, m.size, &b) && pylayout__get(&b, &l) &&
		    l.bpf.frame_owner != BPFS_PY_NONE && l.bpf.frame_owner >= 128)
			abort(); /* the BPF side's window is 128 bytes */
		return 0;
	}
	/* 3.13's _Py_DebugOffsets from the input itself */
	if (b.minor >= 13) {
		memcpy(b.dbg, m.data, m.size < sizeof(b.dbg) ? m.size : sizeof(b.dbg));
		b.debug_offsets = true;
	}
	if (!pylayout__get(&b, &l))
		return 0;
	if (data[0] % 3 == 1)
		pylayout__from_members(&l, BASE + data[2], rd, &m);
	code_object(&l, &m, BASE + data[3]);
	return 0;
}
