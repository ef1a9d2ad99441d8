// SPDX-License-Identifier: GPL-2.0
/* ELF symbols against fixture binaries built at test time (non-PIE, PIE,
 * stripped to .dynsym, a shared library, the vDSO), checked against nm and
 * readelf, and the whole normalization path on a library this test loads. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "elf_syms.h"
#include "procmaps.h"
#include "unit.h"

#define FX(name) FIXTURE_DIR "/" name

struct nm_sym {
	uint64_t addr, size;
	char type;
	char name[128];
};

/* nm --defined-only -S: "ADDR SIZE TYPE NAME" for sized symbols. */
static size_t read_nm(const char *path, struct nm_sym *out, size_t max)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		struct nm_sym s;

		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %127s", &s.addr, &s.size, &s.type,
			   s.name) == 4)
			out[n++] = s;
	}
	fclose(f);
	return n;
}

struct seg {
	uint64_t off, vaddr, filesz;
};

/* readelf -lW: "LOAD 0xOFF 0xVADDR 0xPADDR 0xFILESZ ..." */
static size_t read_phdr(const char *path, struct seg *out, size_t max)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		uint64_t pa;

		if (sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64,
			   &out[n].off, &out[n].vaddr, &pa, &out[n].filesz) == 4)
			n++;
	}
	fclose(f);
	return n;
}

/* Every sized function nm lists is found at its first and last byte, and
 * its file offset (through readelf's segments) maps back to its address. */
static void check_against_oracles(const char *bin, const char *nm, const char *phdr,
				  int *checked)
{
	struct nm_sym syms[256];
	struct seg segs[16];
	size_t n = read_nm(nm, syms, 256), ns = read_phdr(phdr, segs, 16);
	struct symtab *st = NULL;
	int err = symtab__load(bin, &st);

	CHECK(err == 0, "load %s: %d", bin, err);
	CHECK(n > 0 && ns > 0, "oracles for %s: %zu symbols, %zu segments", bin, n, ns);
	if (err)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t off = 0, back = 0, sym_off = 99;
		const char *got;

		if (syms[i].type != 'T' && syms[i].type != 't')
			continue;
		if (!syms[i].size)
			continue;
		got = symtab__find(st, syms[i].addr, &sym_off);
		CHECK(got && strcmp(got, syms[i].name) == 0 && sym_off == 0, "%s at 0x%" PRIx64
		      ": got %s", syms[i].name, syms[i].addr, got ? got : "NULL");
		got = symtab__find(st, syms[i].addr + syms[i].size - 1, &sym_off);
		CHECK(got && strcmp(got, syms[i].name) == 0 && sym_off == syms[i].size - 1,
		      "%s last byte: got %s", syms[i].name, got ? got : "NULL");
		for (size_t k = 0; k < ns; k++)
			if (syms[i].addr >= segs[k].vaddr &&
			    syms[i].addr < segs[k].vaddr + segs[k].filesz)
				off = syms[i].addr - segs[k].vaddr + segs[k].off;
		CHECK(symtab__off_to_vaddr(st, off, &back) == 0 && back == syms[i].addr,
		      "%s: offset 0x%" PRIx64 " -> 0x%" PRIx64, syms[i].name, off, back);
		(*checked)++;
	}
	symtab__free(st);
}

static void test_nopie(void)
{
	struct symtab *st = NULL;
	uint64_t v;
	int checked = 0;

	check_against_oracles(FX("fx_nopie"), FX("fx_nopie.nm"), FX("fx_nopie.phdr"), &checked);
	CHECK(checked >= 3, "fx_alpha, fx_beta, fx_local, main: %d checked", checked);
	CHECK(symtab__load(FX("fx_nopie"), &st) == 0, "load");
	if (!st)
		return;
	CHECK(symtab__build_id(st) &&
		      strcmp(symtab__build_id(st), "0123456789abcdef0123456789abcdef01234567") == 0,
	      "build-id %s", symtab__build_id(st) ? symtab__build_id(st) : "NULL");
	/* non-PIE: text is linked at 0x400000 + its offset, not at the offset */
	CHECK(symtab__off_to_vaddr(st, 0x1000, &v) == 0 && v == 0x401000, "0x1000 -> 0x%" PRIx64, v);
	CHECK(symtab__off_to_vaddr(st, 1ULL << 40, &v) == -ENOENT, "offset past the file");
	symtab__free(st);
}

static void test_pie_and_library(void)
{
	int checked = 0;

	check_against_oracles(FX("fx_pie"), FX("fx_pie.nm"), FX("fx_pie.phdr"), &checked);
	check_against_oracles(FX("libfx.so"), FX("libfx.so.nm"), FX("libfx.so.phdr"), &checked);
	CHECK(checked >= 6, "%d functions checked", checked);
}

static void test_stripped(void)
{
	struct nm_sym syms[256];
	size_t n = read_nm(FX("fx_pie.nm"), syms, 256);
	struct symtab *st = NULL;
	int seen = 0;

	CHECK(symtab__load(FX("fx_stripped"), &st) == 0, "load stripped");
	if (!st)
		return;
	CHECK(symtab__nr_syms(st) > 0, "the .dynsym is still there");
	for (size_t i = 0; i < n; i++) {
		const char *got = symtab__find(st, syms[i].addr + 1, NULL);

		if (strcmp(syms[i].name, "fx_alpha") == 0 || strcmp(syms[i].name, "fx_beta") == 0) {
			CHECK(got && strcmp(got, syms[i].name) == 0, "exported %s: %s",
			      syms[i].name, got ? got : "NULL");
			seen++;
		}
		/* static: not in .dynsym. Unnamed, never another function's name. */
		if (strcmp(syms[i].name, "fx_local") == 0) {
			CHECK(got == NULL, "fx_local must not borrow a name: got %s", got);
			seen++;
		}
	}
	CHECK(seen == 3, "found the three functions in nm: %d", seen);
	symtab__free(st);
}

static void test_errors(void)
{
	struct symtab *st;
	char path[] = "/tmp/bpfs-notelf.XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0 && write(fd, "not an ELF file\n", 16) == 16, "temp file");
	close(fd);
	CHECK(symtab__load(path, &st) == -ENOEXEC, "a text file is -ENOEXEC");
	unlink(path);
	CHECK(symtab__load("/no/such/file", &st) == -ENOENT, "missing is -ENOENT");
	symtab__free(NULL);
}

/* The vDSO has no file: loaded from memory, checked against nm on a copy. */
static void test_vdso(void)
{
	const void *image = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct procmaps *pm = NULL;
	const struct procmap *m;
	struct nm_sym syms[64];
	char path[] = "/tmp/bpfs-vdso.XXXXXX", cmd[128];
	struct symtab *st = NULL;
	size_t n = 0, size;
	int fd, found = 0;

	CHECK(image && procmaps__load(getpid(), &pm) == 0, "vdso and maps");
	m = pm ? procmaps__find(pm, (uintptr_t)image) : NULL;
	CHECK(m && m->path && strcmp(m->path, "[vdso]") == 0, "the vdso mapping");
	if (!m)
		goto out;
	size = m->end - m->start;
	CHECK(symtab__load_mem(image, size, &st) == 0, "load the vdso from memory");
	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, image, size) == (ssize_t)size, "copy");
	close(fd);
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only -S %s > %s.nm 2>/dev/null", path, path);
	CHECK(system(cmd) == 0, "nm on the copy");
	snprintf(cmd, sizeof(cmd), "%s.nm", path);
	n = read_nm(cmd, syms, 64);
	for (size_t i = 0; st && i < n; i++) {
		const char *got = symtab__find(st, syms[i].addr, NULL);

		if (syms[i].type != 'T')
			continue;
		CHECK(got && (strcmp(got, syms[i].name) == 0 ||
			      strstr(syms[i].name, got) || strstr(got, syms[i].name)),
		      "vdso %s: got %s", syms[i].name, got ? got : "NULL");
		found += strstr(syms[i].name, "clock_gettime") != NULL;
	}
	CHECK(found > 0, "clock_gettime among %zu vdso symbols", n);
	unlink(path);
	unlink(cmd);
out:
	symtab__free(st);
	procmaps__free(pm);
}

/* The symbolizer's path on a library this process maps: address -> mapping
 * -> file offset -> ELF address -> name. */
static void test_normalize_loaded_library(void)
{
	void *h = dlopen(FX("libfx.so"), RTLD_NOW);
	void *fn = h ? dlsym(h, "lib_fn_two") : NULL;
	struct procmaps *pm = NULL;
	const struct procmap *m;
	struct symtab *st = NULL;
	uint64_t vaddr = 0;
	const char *name;

	CHECK(fn, "dlopen/dlsym: %s", dlerror());
	if (!fn)
		return;
	CHECK(procmaps__load(getpid(), &pm) == 0, "maps");
	m = procmaps__find(pm, (uintptr_t)fn + 4);
	CHECK(m && m->path && strstr(m->path, "libfx.so"), "mapping of libfx.so");
	if (m && symtab__load(m->path, &st) == 0) {
		CHECK(symtab__off_to_vaddr(st, (uintptr_t)fn + 4 - m->start + m->pgoff, &vaddr) == 0,
		      "offset -> vaddr");
		name = symtab__find(st, vaddr, NULL);
		CHECK(name && strcmp(name, "lib_fn_two") == 0, "got %s", name ? name : "NULL");
	}
	symtab__free(st);
	procmaps__free(pm);
	dlclose(h);
}

int main(void)
{
	RUN(test_nopie);
	RUN(test_pie_and_library);
	RUN(test_stripped);
	RUN(test_errors);
	RUN(test_vdso);
	RUN(test_normalize_loaded_library);
	UNIT_EXIT();
}
