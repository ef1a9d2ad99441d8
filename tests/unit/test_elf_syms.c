// SPDX-License-Identifier: GPL-2.0
/* ELF symbols against fixture binaries built at test time (non-PIE, PIE,
 * stripped to .dynsym, a shared library, the vDSO), checked against nm and
 * readelf; edge cases (size 0, gaps, aliases, IFUNC) at addresses fixed by
 * the link; and the whole normalization path on a library this test loads. */
#include <dlfcn.h>
#include <elf.h>
#include <gelf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elf_plt.h"
#include "elf_syms.h"
#include "procmaps.h"
#include "unit.h"

#define FX(name) FIXTURE_DIR "/" name

struct nm_sym {
	uint64_t addr, size;
	char type;
	char name[128];
};

/* Each line of an oracle's output given to parse() with the next free slot
 * of out (elements of size bytes, at most max); parse says whether it
 * filled it. Returns how many were. */
static size_t read_oracle(const char *path, bool (*parse)(const char *line, void *slot),
			  void *out, size_t size, size_t max)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t n = 0;

	while (f && n < max && fgets(line, sizeof(line), f))
		n += parse(line, (char *)out + n * size);
	if (f)
		fclose(f);
	return n;
}

/* nm --defined-only -S: "ADDR SIZE TYPE NAME" for sized symbols. */
static bool parse_nm(const char *line, void *slot)
{
	struct nm_sym *s = slot;

	return sscanf(line, "%" SCNx64 " %" SCNx64 " %c %127s", &s->addr, &s->size, &s->type,
		      s->name) == 4;
}

static size_t read_nm(const char *path, struct nm_sym *out, size_t max)
{
	return read_oracle(path, parse_nm, out, sizeof(*out), max);
}

struct seg {
	uint64_t off, vaddr, filesz;
};

/* readelf -lW: "LOAD 0xOFF 0xVADDR 0xPADDR 0xFILESZ ..." */
static bool parse_phdr(const char *line, void *slot)
{
	struct seg *s = slot;
	uint64_t pa;

	return sscanf(line, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64,
		      &s->off, &s->vaddr, &pa, &s->filesz) == 4;
}

static size_t read_phdr(const char *path, struct seg *out, size_t max)
{
	return read_oracle(path, parse_phdr, out, sizeof(*out), max);
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

struct plt_label {
	uint64_t addr;
	char name[128];
};

/* objdump -d's labels in the PLT sections: "ADDR <getenv@plt>:", and PLT0
 * as "<.plt>" or "<first@plt-0x10>". */
static bool parse_plt_label(const char *line, void *slot)
{
	struct plt_label *l = slot;

	return sscanf(line, "%" SCNx64 " <%127[^>]>:", &l->addr, l->name) == 2;
}

static size_t read_plt_labels(const char *path, struct plt_label *out, size_t max)
{
	return read_oracle(path, parse_plt_label, out, sizeof(*out), max);
}

static bool is_plt0(const char *label)
{
	return !strcmp(label, ".plt") || strstr(label, "@plt-0x10");
}

/* The name a stub should have: objdump's, but an IFUNC's stub (objdump's
 * "*ABS*+0xRESOLVER@plt") after the IFUNC symbol at its resolver (nm's
 * type 'i'); PLT0 is "[plt]". */
static const char *plt_want(const struct plt_label *l, const struct nm_sym *syms, size_t n,
			    char *buf, size_t size)
{
	uint64_t resolver;

	if (is_plt0(l->name))
		return "[plt]";
	if (sscanf(l->name, "*ABS*+0x%" SCNx64 "@plt", &resolver) != 1)
		return l->name;
	for (size_t i = 0; i < n; i++)
		if (syms[i].addr == resolver && syms[i].type == 'i')
			snprintf(buf, size, "%s@plt", syms[i].name);
	return buf;
}

/* Every stub objdump names (oracle.plt; oracle.nm for IFUNCs) is named so,
 * at its start and inside it. Returns the number of stubs after PLT0. */
static int check_plt_names(const struct symtab *st, const char *oracle)
{
	struct plt_label l[32];
	struct nm_sym syms[64];
	char nm[4096], buf[160];
	size_t n = read_plt_labels(oracle, l, 32), nsyms;
	int named = 0;

	snprintf(nm, sizeof(nm), "%.*s.nm", (int)(strlen(oracle) - 4), oracle);
	nsyms = read_nm(nm, syms, 64);
	CHECK(n >= 5, "%s: objdump names %zu stubs", oracle, n);
	for (size_t i = 0; st && i < n; i++) {
		const char *want = plt_want(&l[i], syms, nsyms, strcpy(buf, "(no IFUNC in nm)"),
					    sizeof(buf));
		uint64_t off = 0;
		const char *at = symtab__find(st, l[i].addr, NULL);
		const char *in = symtab__find(st, l[i].addr + 5, &off);

		CHECK(at && !strcmp(at, want) && in && !strcmp(in, want) && off == 5,
		      "%s: 0x%" PRIx64 " is %s, got %s and %s+%" PRIu64, oracle, l[i].addr, want,
		      at ? at : "NULL", in ? in : "NULL", off);
		named += !is_plt0(l[i].name);
	}
	return named;
}

/* An IBT build's lazy stubs (.plt entry k + 1) push the index k of their
 * relocation, the function its .plt.sec entry k jumps to; objdump does not
 * name them. */
static void check_ibt_lazy_stubs(const struct symtab *st)
{
	struct plt_label l[32];
	size_t n = read_plt_labels(FX("fx_plt_ibt.plt"), l, 32), k = 0;
	uint64_t plt = 0, sec = 0;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].name, ".plt"))
			plt = l[i].addr;
	for (size_t i = 0; i < n; i++) {
		const char *got;

		/* .plt.got and IFUNCs are bound at load: no lazy stub */
		if (!strcmp(l[i].name, "__cxa_finalize@plt") || is_plt0(l[i].name) ||
		    !strncmp(l[i].name, "*ABS*", 5))
			continue;
		sec = sec ? sec : l[i].addr;
		got = symtab__find(st, plt + 16 * (1 + (l[i].addr - sec) / 16), NULL);
		CHECK(got && !strcmp(got, l[i].name), "lazy stub %zu: %s, got %s", k, l[i].name,
		      got ? got : "NULL");
		k++;
	}
	CHECK(plt && k >= 4, ".plt at 0x%" PRIx64 ", %zu lazy stubs", plt, k);
}

static void test_plt(void)
{
	static const char *const bins[] = { "fx_plt_lazy", "fx_plt_ibt", "fx_plt_now" };
	struct symtab *ibt = NULL, *dbg = NULL;
	char path[4096];

	for (size_t i = 0; i < sizeof(bins) / sizeof(*bins); i++) {
		struct symtab *st = NULL;

		snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, bins[i]);
		CHECK(symtab__load(path, &st) == 0, "load %s", bins[i]);
		strcat(path, ".plt");
		CHECK(check_plt_names(st, path) >= 5, "%s: named stubs", bins[i]);
		if (!strcmp(bins[i], "fx_plt_ibt"))
			ibt = st;
		else
			symtab__free(st);
	}
	if (ibt)
		check_ibt_lazy_stubs(ibt);
	/* the debug file's PLT is NOBITS: the binary's stubs are adopted */
	CHECK(symtab__load(FX("fx_plt_ibt.debug"), &dbg) == 0, "load the debug file");
	if (ibt && dbg) {
		struct plt_label l[32];
		size_t n = read_plt_labels(FX("fx_plt_ibt.plt"), l, 32);
		const char *before = n ? symtab__find(dbg, l[n - 1].addr, NULL) : "none";

		CHECK(!before, "the debug file alone names no stub: %s", before);
		CHECK(symtab__adopt_layout(dbg, ibt) == 0, "adopt");
		CHECK(check_plt_names(dbg, FX("fx_plt_ibt.plt")) >= 5, "debug file: named stubs");
	}
	symtab__free(dbg);
	symtab__free(ibt);
}

/* The vDSO has no file: loaded from memory, checked against nm on a copy. */
static void test_vdso(void)
{
	const void *image = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct procmaps *pm = NULL;
	const struct procmap *m;
	struct nm_sym syms[64];
	char path[] = "/tmp/bpfs-vdso.XXXXXX", cmd[160], want_id[130] = "";
	struct symtab *st = NULL;
	size_t n = 0, size;
	int fd, found = 0;
	FILE *p;

	if (!image)
		SKIP_TEST("no vDSO in this process (vdso=0?)");
	CHECK(procmaps__load(getpid(), &pm) == 0, "maps");
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
	CHECK(n > 0, "nm found vdso symbols");
	for (size_t i = 0; st && i < n; i++) {
		const char *got = symtab__find(st, syms[i].addr, NULL);

		if (syms[i].type != 'T')
			continue;
		CHECK(got && (strcmp(got, syms[i].name) == 0 ||
			      strstr(syms[i].name, got) || strstr(got, syms[i].name)),
		      "vdso %s: got %s", syms[i].name, got ? got : "NULL");
		/* nm says "__vdso_clock_gettime@@LINUX_2.6"; the weak alias
		 * clock_gettime shares its address and must lose to it */
		if (strncmp(syms[i].name, "__vdso_clock_gettime@", 21) == 0)
			CHECK(got && strcmp(got, "__vdso_clock_gettime") == 0, "got %s",
			      got ? got : "NULL");
		found += got && strstr(got, "clock_gettime");
	}
	CHECK(found > 0, "clock_gettime among %zu vdso symbols", n);
	snprintf(cmd, sizeof(cmd), "readelf -n %s | sed -n 's/.*Build ID: *//p'", path);
	p = popen(cmd, "r");
	if (p && fgets(want_id, sizeof(want_id), p))
		want_id[strcspn(want_id, "\n")] = '\0';
	if (p)
		pclose(p);
	CHECK(!want_id[0] || (st && symtab__build_id(st) && !strcmp(symtab__build_id(st), want_id)),
	      "vdso build-id %s, readelf %s", st && symtab__build_id(st) ? symtab__build_id(st) : "NULL",
	      want_id);
	snprintf(cmd, sizeof(cmd), "%s.nm", path);
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

/* Reads a whole file into memory. */
static void *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n);
		if (buf && fread(buf, 1, n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*size = n;
	}
	fclose(f);
	return buf;
}

/* The PLT sections' [start, end) of the ELF image buf, at most max. */
static size_t plt_ranges(void *buf, size_t size, uint64_t r[][2], size_t max)
{
	Elf *elf = elf_memory(buf, size);
	Elf_Scn *scn = NULL;
	size_t shstrndx, n = 0;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx)) {
		elf_end(elf);
		return 0;
	}
	while ((scn = elf_nextscn(elf, scn)) && n < max) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strncmp(name, ".plt", 4) && sh.sh_type == SHT_PROGBITS) {
			r[n][0] = sh.sh_addr;
			r[n++][1] = sh.sh_addr + sh.sh_size;
		}
	}
	elf_end(elf);
	return n;
}

/* The number of stubs named @plt in [r[0], r[1]) of t. */
static size_t plt_named(const struct plt_table *t, const uint64_t r[2])
{
	size_t n = 0;

	for (uint64_t a = r[0]; a < r[1]; a += 8) {
		const char *name = plt_table__find(t, a, NULL);

		n += name && strstr(name, "@plt");
	}
	return n;
}

/* The relocations come from the descriptor, not from libelf's copy of
 * the section: an image whose relocations are zeroed names no stub
 * through libelf, and all of them with the file's descriptor beside it. */
static void check_relocs_from_fd(const char *path, void *buf, size_t size, const uint64_t r[2])
{
	struct plt_table *with_fd = NULL, *without = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = elf_memory(buf, size);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while (elf && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA && sh.sh_offset + sh.sh_size <= size)
			memset((char *)buf + sh.sh_offset, 0, sh.sh_size);
	CHECK(fd >= 0 && elf && !elf_plt__read(elf, fd, NULL, &with_fd) &&
		      !elf_plt__read(elf, -1, NULL, &without), "read the stubs both ways");
	CHECK(plt_named(without, r) == 0, "zeroed relocations: %zu named", plt_named(without, r));
	CHECK(plt_named(with_fd, r) >= 1000, "through the descriptor: %zu named",
	      plt_named(with_fd, r));
	plt_table__free(with_fd);
	plt_table__free(without);
	elf_end(elf);
	if (fd >= 0)
		close(fd);
}

/* A file's relocations are read from it in chunks of 2048 (elf_plt.c),
 * an image in memory through libelf: libstdc++'s .rela.dyn (4,158) and
 * .rela.plt (1,036) cross chunks, and both ways name every stub alike. */
static void test_plt_relocs_in_chunks(void)
{
	static const char lib[] = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	struct symtab *from_file = NULL, *from_mem = NULL;
	size_t size = 0, nr, named = 0, differ = 0;
	uint64_t r[4][2];
	void *buf;

	if (access(lib, R_OK))
		SKIP_TEST("no libstdc++.so.6 (g++ installs it)");
	buf = slurp(lib, &size);
	CHECK(buf && symtab__load(lib, &from_file) == 0 &&
		      symtab__load_mem(buf, size, &from_mem) == 0, "load libstdc++ both ways");
	nr = buf ? plt_ranges(buf, size, r, 4) : 0;
	for (size_t i = 0; from_file && from_mem && i < nr; i++)
		for (uint64_t a = r[i][0]; a < r[i][1]; a += 8) {
			const char *x = symtab__find(from_file, a, NULL);
			const char *y = symtab__find(from_mem, a, NULL);

			named += x && strstr(x, "@plt");
			if (!x || !y || strcmp(x, y)) {
				if (!differ++)
					printf("    at %#" PRIx64 ": %s from the file, %s from memory\n",
					       a, x ? x : "none", y ? y : "none");
			}
		}
	CHECK(nr >= 2 && differ == 0, "%zu PLT sections, %zu addresses named apart", nr, differ);
	CHECK(named >= 2000, "%zu stub addresses named @plt", named);
	if (buf && nr)
		check_relocs_from_fd(lib, buf, size, r[0]);
	symtab__free(from_file);
	symtab__free(from_mem);
	free(buf);
}

/* The file offset of fx_sized's bytes, found by scanning the file for them:
 * an oracle that reads no ELF structure at all. */
static int64_t magic_offset(const char *path)
{
	static const char magic[] = "FX-EDGES-MAGIC!!";
	size_t size = 0;
	char *buf = slurp(path, &size);
	int64_t off = -1;

	for (size_t i = 0; buf && i + sizeof(magic) - 1 <= size; i++)
		if (memcmp(buf + i, magic, sizeof(magic) - 1) == 0) {
			off = i;
			break;
		}
	free(buf);
	return off;
}

/* tests/fixtures/fx_edges.S: what each offset from its base must resolve to. */
static const struct {
	uint64_t at;
	const char *name; /* NULL: no function there */
	uint64_t sym_off;
	bool symtab_only; /* a local symbol: gone with .symtab */
} edges[] = {
	{ 0x00, "fx_sized", 0x00 },
	{ 0x0f, "fx_sized", 0x0f },
	{ 0x10, NULL },		/* past a sized function: an object, not code */
	{ 0x1f, NULL },
	{ 0x20, "fx_nosize", 0x00 },
	{ 0x3f, "fx_nosize", 0x1f }, /* size 0 reaches the next symbol */
	{ 0x40, "fx_alias_global", 0x00 },
	{ 0x4f, "fx_alias_global", 0x0f },
	{ 0x50, "fx_ifunc", 0x00 },
	{ 0x5f, "fx_ifunc", 0x0f },
	{ 0x60, "fx_tail", 0x00 },
	{ 0x7f, "fx_tail", 0x1f },
	{ 0x80, NULL },		/* a size-0 symbol stops at its section's end */
	{ 0x10000, NULL },
};

static void check_edges(const char *path, uint64_t base, bool stripped)
{
	struct symtab *st = NULL;
	int64_t moff = magic_offset(path);
	uint64_t v = 0;
	int err = symtab__load(path, &st);

	CHECK(err == 0, "load %s: %d", path, err);
	if (err)
		return;
	CHECK(symtab__has_symtab(st) == !stripped, "%s: has .symtab", path);
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		uint64_t sym_off = ~0ULL;
		const char *got = symtab__find(st, base + edges[i].at, &sym_off);

		CHECK((!got && !edges[i].name) ||
			      (got && edges[i].name && strcmp(got, edges[i].name) == 0 &&
			       sym_off == edges[i].sym_off),
		      "%s +0x%" PRIx64 ": want %s+0x%" PRIx64 ", got %s+0x%" PRIx64, path,
		      edges[i].at, edges[i].name ? edges[i].name : "NULL", edges[i].sym_off,
		      got ? got : "NULL", sym_off);
	}
	/* the bytes at file offset moff are linked at base (!= moff) */
	CHECK(moff > 0 && (uint64_t)moff != base, "%s: magic at 0x%" PRIx64, path, moff);
	CHECK(symtab__off_to_vaddr(st, moff, &v) == 0 && v == base,
	      "%s: offset 0x%" PRIx64 " -> 0x%" PRIx64 ", want 0x%llx", path, moff, v,
	      (unsigned long long)base);
	CHECK(symtab__off_to_vaddr(st, moff + 0x7f, &v) == 0 && v == base + 0x7f, "last byte");
	symtab__free(st);
}

static void test_edges(void)
{
	check_edges(FX("fx_edges"), FX_EDGES_ADDR, false);
	check_edges(FX("fx_edges_pie"), FX_EDGES_PIE_ADDR, false);
	/* .dynsym keeps the global and the weak alias, the global wins again */
	check_edges(FX("fx_edges_stripped"), FX_EDGES_PIE_ADDR, true);
}

/* Without section headers (as sstrip leaves a file, or an image rebuilt from
 * memory) the build-ID is still in the PT_NOTE segment. */
static void test_build_id_from_phdrs(void)
{
	size_t size = 0;
	unsigned char *buf = slurp(FX("fx_nopie"), &size);
	struct symtab *st = NULL, *file = NULL;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	const char *id;
	int err;

	CHECK(buf && size > sizeof(*eh), "read fx_nopie");
	if (!buf)
		return;
	if (eh->e_ident[EI_CLASS] != ELFCLASS64) {
		free(buf);
		SKIP_TEST("the header surgery below is for 64-bit ELF");
	}
	err = symtab__load_mem(buf, size, &st);
	CHECK(err == 0 && symtab__load(FX("fx_nopie"), &file) == 0, "from memory: %d", err);
	CHECK(st && file && symtab__nr_syms(st) == symtab__nr_syms(file) &&
		      symtab__nr_syms(st) > 0,
	      "memory and file agree");
	symtab__free(file);
	symtab__free(st);
	st = NULL;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	err = symtab__load_mem(buf, size, &st);
	CHECK(err == 0, "no section headers: %d", err);
	if (!err) {
		id = symtab__build_id(st);
		CHECK(id && strcmp(id, "0123456789abcdef0123456789abcdef01234567") == 0,
		      "build-id from PT_NOTE: %s", id ? id : "NULL");
		CHECK(symtab__nr_syms(st) == 0 && !symtab__has_symtab(st), "no tables, no symbols");
	}
	symtab__free(st);
	free(buf);
}

/* A library file truncated while it is being read (by its owner, while a
 * process maps it): reading through a mapping of it would die of SIGBUS. */
static const char *trunc_path = "/tmp/bpfs-test-truncated.so";
static volatile int trunc_go;

static void *truncate_soon(void *arg)
{
	while (!trunc_go)
		;
	usleep(rand() % 300);
	if (truncate(trunc_path, 4096))
		return NULL;
	return NULL;
}

static void truncate_while_reading(const char *src_path, int rounds)
{
	struct stat st;
	char *buf;
	int fd = open(src_path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || !(buf = malloc(st.st_size)) ||
	    read(fd, buf, st.st_size) != st.st_size)
		_exit(3);
	close(fd);
	for (int i = 0; i < rounds; i++) {
		struct symtab *t = NULL;
		pthread_t th;

		fd = open(trunc_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, buf, st.st_size) != st.st_size)
			_exit(3);
		close(fd);
		trunc_go = 0;
		pthread_create(&th, NULL, truncate_soon, NULL);
		trunc_go = 1;
		if (!symtab__load(trunc_path, &t))
			symtab__free(t);
		pthread_join(th, NULL);
	}
	free(buf);
	_exit(0);
}

static void test_truncated_while_read(void)
{
	char libc[512] = "";
	int status;
	pid_t pid;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "/libc.so.6")) {
			snprintf(libc, sizeof(libc), "%s", strchr(line, '/'));
			libc[strcspn(libc, "\n")] = '\0';
			break;
		}
	if (f)
		fclose(f);
	CHECK(libc[0], "libc's path from /proc/self/maps");
	if (!libc[0])
		return;
	pid = fork();
	if (pid == 0)
		truncate_while_reading(libc, 30);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "child");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reading a file truncated meanwhile: %s %d",
	      WIFSIGNALED(status) ? "killed by signal" : "exit status",
	      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	unlink(trunc_path);
}

int main(void)
{
	RUN(test_nopie);
	RUN(test_pie_and_library);
	RUN(test_stripped);
	RUN(test_edges);
	RUN(test_plt);
	RUN(test_plt_relocs_in_chunks);
	RUN(test_build_id_from_phdrs);
	RUN(test_errors);
	RUN(test_truncated_while_read);
	RUN(test_vdso);
	RUN(test_normalize_loaded_library);
	UNIT_EXIT();
}
