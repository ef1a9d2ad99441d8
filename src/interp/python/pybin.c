// SPDX-License-Identifier: GPL-2.0
/*
 * Is this ELF file a CPython interpreter, and which? Told by what it
 * exports, never by its name (a distribution's libpython may be called
 * anything): _PyEval_EvalFrameDefault with _PyRuntime and PyCode_Type in
 * .dynsym or .symtab. The version: Py_Version's value (3.11+), else the
 * API the file exports, each call added in one version
 * (PyCode_NewWithPosOnlyArgs 3.8, PyFrame_GetCode 3.9, PyAIter_Check 3.10);
 * 3.6 and 3.7 are told apart the same way, and 2.7 (PyEval_EvalFrameEx,
 * no _PyEval_EvalFrameDefault) is recognised so that it can be said once.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "interp_python.h"
#include "regfile.h"

enum sym_id {
	S_EVAL,
	S_EVAL_COLD,
	S_RUNTIME,
	S_CODE_TYPE,
	S_PY_VERSION,
	S_EVAL_EX,	/* 2.7's evaluation function */
	S_STRING_TYPE,	/* 2.7 only */
	S_API_38,
	S_API_39,
	S_API_310,
	S_API_37,	/* _PyRuntime arrived in 3.7 */
	S_NR,
};

static const char *const sym_names[S_NR] = {
	[S_EVAL] = "_PyEval_EvalFrameDefault",
	[S_EVAL_COLD] = "_PyEval_EvalFrameDefault.cold",
	[S_RUNTIME] = "_PyRuntime",
	[S_CODE_TYPE] = "PyCode_Type",
	[S_PY_VERSION] = "Py_Version",
	[S_EVAL_EX] = "PyEval_EvalFrameEx",
	[S_STRING_TYPE] = "PyString_Type",
	[S_API_38] = "PyCode_NewWithPosOnlyArgs",
	[S_API_39] = "PyFrame_GetCode",
	[S_API_310] = "PyAIter_Check",
	[S_API_37] = "PyThread_tss_alloc",
};

struct found {
	bool have[S_NR];
	uint64_t addr[S_NR];
	uint64_t size[S_NR];
};

static void scan_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct found *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || (name[0] != '_' && name[0] != 'P'))
			continue;
		for (int k = 0; k < S_NR; k++) {
			if (!f->have[k] && !strcmp(name, sym_names[k])) {
				f->have[k] = true;
				f->addr[k] = s.st_value;
				f->size[k] = s.st_size;
			}
		}
	}
}

/* n bytes at vaddr, from the section that holds them in the file. */
static bool read_vaddr(Elf *elf, uint64_t vaddr, void *out, size_t n)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    vaddr < sh.sh_addr || vaddr + n > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || vaddr - sh.sh_addr + n > d->d_size)
			return false;
		memcpy(out, (char *)d->d_buf + (vaddr - sh.sh_addr), n);
		return true;
	}
	return false;
}

static bool exec_segment(Elf *elf, struct pybin *b)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			b->exec_off = ph.p_offset;
			b->exec_vaddr = ph.p_vaddr;
			return true;
		}
	}
	return false;
}

/* The version, from Py_Version (PY_VERSION_HEX) or the API exported. */
static void version(Elf *elf, const struct found *f, struct pybin *b)
{
	uint32_t hex;

	b->major = 3;
	b->minor = -1;
	if (f->have[S_PY_VERSION] && read_vaddr(elf, f->addr[S_PY_VERSION], &hex, 4)) {
		b->major = hex >> 24;
		b->minor = (hex >> 16) & 0xff;
		b->micro = (hex >> 8) & 0xff;
	} else if (f->have[S_API_310]) {
		b->minor = 10;
	} else if (f->have[S_API_39]) {
		b->minor = 9;
	} else if (f->have[S_API_38]) {
		b->minor = 8;
	} else if (f->have[S_RUNTIME] || f->have[S_API_37]) {
		b->minor = 7;
	} else {
		b->minor = 6;
	}
}

static int from_elf(Elf *elf, struct pybin *b)
{
	struct found f = {};
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	memset(b, 0, sizeof(*b));
	if (elf_kind(elf) != ELF_K_ELF)
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			scan_symtab(elf, scn, &sh, &f);
	if (!f.have[S_EVAL] && f.have[S_EVAL_EX] && f.have[S_STRING_TYPE] &&
	    f.have[S_CODE_TYPE]) {
		b->major = 2; /* 2.7: recognised, not walked */
		b->minor = 7;
		return exec_segment(elf, b) ? 0 : -ENOENT;
	}
	if (!f.have[S_EVAL] || !f.have[S_CODE_TYPE] || !exec_segment(elf, b))
		return -ENOENT;
	b->eval = f.addr[S_EVAL];
	b->eval_size = f.size[S_EVAL];
	b->eval_cold = f.have[S_EVAL_COLD] ? f.addr[S_EVAL_COLD] : 0;
	b->eval_cold_size = f.have[S_EVAL_COLD] ? f.size[S_EVAL_COLD] : 0;
	b->runtime = f.addr[S_RUNTIME];
	b->code_type = f.addr[S_CODE_TYPE];
	version(elf, &f, b);
	/* 3.13+: the offsets, behind their cookie */
	if (f.have[S_RUNTIME] && read_vaddr(elf, b->runtime, b->dbg, sizeof(b->dbg)) &&
	    !memcmp(b->dbg, "xdebugpy", 8))
		b->debug_offsets = true;
	if (!f.have[S_RUNTIME] && b->minor >= 7)
		return -ENOENT; /* a CPython 3.7+ always has it */
	return 0;
}

int pybin__read_mem(const void *buf, size_t size, struct pybin *out)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)buf, size);
	if (!elf)
		return -EINVAL;
	err = from_elf(elf, out);
	elf_end(elf);
	return err;
}

int pybin__read(const char *path, struct pybin *out)
{
	Elf *elf;
	int fd, err;

	elf_version(EV_CURRENT);
	/* a regular file only, mapped: as ehframe.c's open_elf */
	fd = regfile__open(path, 0, NULL);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	err = from_elf(elf, out);
	elf_end(elf);
	close(fd);
	return err;
}
