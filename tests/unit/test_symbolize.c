// SPDX-License-Identifier: GPL-2.0
/*
 * Normalization and symbolization against mappings this test makes in its
 * own address space: fx_swap_a.so and fx_swap_b.so (same layout, other
 * names and build-IDs) mapped in turn at one address, told to the
 * symbolizer as the BPF side would (generations, an exec), and a copy of a
 * library (same build-ID, parsed once) rewritten in place (read again).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "addrspace.h"
#include "dwarf_lines.h"
#include "elf_syms.h"
#include "filecache.h"
#include "procmaps.h"
#include "sideband.h"
#include "symbolize.h"
#include "unit.h"

#define FX(name) FIXTURE_DIR "/" name
#define ID_A "aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000"
#define ID_B "bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000"
/* the function's file offset in both libraries (nm: 0x1100, PT_LOAD at
 * offset = vaddr), checked against the symbol table below */
#define FN_OFF 0x1100

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Maps path whole, executable, at addr (NULL: anywhere); fills *am as the
 * BPF side's mapping record would. */
static void *map_file(const char *path, void *addr, struct as_mapping *am, uint32_t gen)
{
	struct stat sb;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &sb)) {
		printf("    cannot open %s\n", path);
		exit(1);
	}
	p = mmap(addr, sb.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | (addr ? MAP_FIXED : 0),
		 fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		printf("    cannot map %s\n", path);
		exit(1);
	}
	*am = (struct as_mapping){
		.gen = gen,
		.time_ns = now_ns(),
		.mm = 1,
		.start = (uintptr_t)p,
		.end = (uintptr_t)p + ((sb.st_size + 4095) & ~4095UL),
		.dev = ((uint64_t)major(sb.st_dev) << 20) | minor(sb.st_dev),
		.ino = sb.st_ino,
	};
	return p;
}

/* The symbol at addr, or the kind of place when none: "[unmapped]"... */
static const char *name_at_pid(struct symbolizer *sym, int pid, uintptr_t addr)
{
	struct sym_frame f;

	symbolizer__user(sym, pid, 0, addr, false, &f);
	if (f.name)
		return f.name;
	return f.kind == SYM_UNMAPPED ? "[unmapped]" : f.kind == SYM_ANON ? "[anon]" : "[no symbol]";
}

static const char *name_at_gen(struct symbolizer *sym, int pid, uint32_t gen, uintptr_t addr)
{
	struct sym_frame f;

	symbolizer__user(sym, pid, gen, addr, false, &f);
	if (f.name)
		return f.name;
	return f.kind == SYM_UNMAPPED ? "[unmapped]" : f.kind == SYM_ANON ? "[anon]" : "[no symbol]";
}

static const char *name_at(struct symbolizer *sym, uint32_t gen, uintptr_t addr)
{
	struct sym_frame f;

	symbolizer__user(sym, getpid(), gen, addr, false, &f);
	if (f.name)
		return f.name;
	return f.kind == SYM_UNMAPPED ? "[unmapped]" : f.kind == SYM_ANON ? "[anon]" : "[no symbol]";
}

static void test_mappings_over_time(void)
{
	struct sym_location loc;
	struct symbolizer *sym;
	struct as_mapping am;
	size_t size;
	uintptr_t fn;
	void *base;

	CHECK(!symbolizer__new(NULL, &sym), "new");
	symbolizer__set_tracking(sym, true);
	/* a mapped before we look: known from /proc/self/maps only */
	base = map_file(FX("fx_swap_a.so"), NULL, &am, 0);
	fn = (uintptr_t)base + FN_OFF;
	size = am.end - am.start;
	symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");
	CHECK(!strcmp(name_at(sym, 0, fn), "fx_swap_a"), "gen 0: %s", name_at(sym, 0, fn));

	/* b replaces a at the same address, as gen 7 */
	munmap(base, size);
	map_file(FX("fx_swap_b.so"), base, &am, 7);
	symbolizer__note_mapping(sym, getpid(), &am);
	/* a maps read now would show b: samples of gen 0 must not see it */
	symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");
	CHECK(!strcmp(name_at(sym, 0, fn), "fx_swap_a"), "gen 0 after b: %s", name_at(sym, 0, fn));
	CHECK(!strcmp(name_at(sym, 7, fn), "fx_swap_b"), "gen 7: %s", name_at(sym, 7, fn));
	CHECK(!strcmp(name_at(sym, 9, fn), "fx_swap_b"), "gen 9: %s", name_at(sym, 9, fn));

	/* and a again, as gen 12 */
	munmap(base, size);
	map_file(FX("fx_swap_a.so"), base, &am, 12);
	symbolizer__note_mapping(sym, getpid(), &am);
	CHECK(!strcmp(name_at(sym, 11, fn), "fx_swap_b"), "gen 11: %s", name_at(sym, 11, fn));
	CHECK(!strcmp(name_at(sym, 12, fn), "fx_swap_a"), "gen 12: %s", name_at(sym, 12, fn));

	/* normalized: the file, its build-ID and the offset, per generation */
	CHECK(!symbolizer__normalize(sym, getpid(), 8, fn + 3, &loc), "normalize gen 8");
	CHECK(loc.build_id && !strcmp(loc.build_id, ID_B), "gen 8 build-ID %s", loc.build_id);
	CHECK(loc.path && strstr(loc.path, "fx_swap_b.so"), "gen 8 path %s", loc.path);
	CHECK(loc.file_offset == FN_OFF + 3 && loc.vaddr == FN_OFF + 3,
	      "offset %#lx vaddr %#lx", (unsigned long)loc.file_offset, (unsigned long)loc.vaddr);
	CHECK(loc.map_start == (uintptr_t)base && loc.map_pgoff == 0, "mapping");
	CHECK(!symbolizer__normalize(sym, getpid(), 0, fn, &loc), "normalize gen 0");
	CHECK(loc.build_id && !strcmp(loc.build_id, ID_A), "gen 0 build-ID %s (%s)", loc.build_id, loc.path);
	CHECK(!symbolizer__normalize(sym, getpid(), 13, fn, &loc) && loc.build_id &&
		      !strcmp(loc.build_id, ID_A), "gen 13 build-ID %s", loc.build_id);

	/* an exec at gen 20 into an image whose maps were never read: nothing
	 * of the old image may name its samples */
	am = (struct as_mapping){ .gen = 20, .exec = true, .mm = 2 };
	symbolizer__note_mapping(sym, getpid(), &am);
	CHECK(!strncmp(name_at(sym, 21, fn), "[unmapped]", 10), "after exec: %s",
	      name_at(sym, 21, fn));
	CHECK(!strcmp(name_at(sym, 19, fn), "fx_swap_a"), "before exec: %s", name_at(sym, 19, fn));
	munmap(base, size);
	symbolizer__free(sym);
}

/*
 * Side-band mappings get their gen when the loader reads them, after the
 * samples that followed them: in stream mode a sample's time gives it the
 * gen it should have carried; a sample of the gen before names a library
 * mapped where nothing was from the maps read; and once records are lost,
 * a maps read after the loss wins over a followed mapping it contradicts.
 */
static void test_sideband_lag(void)
{
	struct symbolizer *sym;
	struct as_mapping am;
	uint64_t t_before, t_b;
	uintptr_t fn, fn2;
	void *base, *other;
	size_t size;

	CHECK(!symbolizer__new(NULL, &sym), "new");
	symbolizer__set_tracking(sym, true);
	base = map_file(FX("fx_swap_a.so"), NULL, &am, 0);
	fn = (uintptr_t)base + FN_OFF;
	size = am.end - am.start;
	symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");
	symbolizer__read_announced(sym);

	/* b replaces a; the loader reads its record later, as gen 5 */
	t_before = now_ns();
	munmap(base, size);
	map_file(FX("fx_swap_b.so"), base, &am, 5);
	t_b = am.time_ns;
	symbolizer__note_mapping(sym, getpid(), &am);
	CHECK(symbolizer__map_gen_at(sym, getpid(), 0, t_before) == 0, "sample before b: gen 0");
	CHECK(symbolizer__map_gen_at(sym, getpid(), 0, t_b + 1) == 5, "sample after b: gen 5");
	CHECK(symbolizer__map_gen_at(sym, getpid(), 5, t_b + 1) == 5, "gen 5 stays");
	/* an exec (gen 6, taken as it happened) ends the search */
	symbolizer__note_mapping(sym, getpid(),
				 &(struct as_mapping){ .gen = 6, .exec = true, .mm = 1,
						       .time_ns = t_b + 2 });
	am.gen = 7;
	am.time_ns = t_b + 3;
	symbolizer__note_mapping(sym, getpid(), &am);
	CHECK(symbolizer__map_gen_at(sym, getpid(), 5, t_b + 4) == 5,
	      "no gen past an exec after the sample");
	symbolizer__free(sym);

	/* a library mapped where nothing was: followed as gen 9, but a
	 * sample taken before the loader read it carries gen 8 */
	CHECK(!symbolizer__new(NULL, &sym), "new");
	symbolizer__set_tracking(sym, true);
	symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");
	symbolizer__read_announced(sym);
	other = map_file(FX("fx_swap_a.so"), NULL, &am, 9);
	fn2 = (uintptr_t)other + FN_OFF;
	symbolizer__note_mapping(sym, getpid(), &am);
	symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");
	symbolizer__read_announced(sym);
	CHECK(!strcmp(name_at(sym, 8, fn2), "fx_swap_a"), "gen 8 in a library mapped at gen 9: %s",
	      name_at(sym, 8, fn2));

	/* records lost: b's mapping at base was followed (gen 10), then
	 * replaced by a unseen; the maps read after the loss say a */
	munmap(base, size);
	map_file(FX("fx_swap_b.so"), base, &am, 10);
	symbolizer__note_mapping(sym, getpid(), &am);
	CHECK(!strcmp(name_at(sym, 10, fn), "fx_swap_b"), "followed b: %s", name_at(sym, 10, fn));
	munmap(base, size);
	map_file(FX("fx_swap_a.so"), base, &am, 0);
	symbolizer__on_mappings_lost(sym, 3);
	symbolizer__refresh(sym);
	CHECK(!strcmp(name_at(sym, 10, fn), "fx_swap_a"), "after the loss, the maps read: %s",
	      name_at(sym, 10, fn));
	munmap(base, size);
	munmap(other, am.end - am.start);
	symbolizer__free(sym);
}

/*
 * A process gone before its maps could be read, named from the side-band
 * alone. The BPF side takes an exec's gen at its end, after the kernel
 * mapped the new image, whose side-band mappings may have taken smaller
 * gens: the exec's start (the side-band's COMM record) puts them after it,
 * whichever of the three comes first. A pid no process has: no /proc.
 */
static void test_exec_after_its_mappings(void)
{
	static const int order[][3] = { { 0, 1, 2 }, { 2, 0, 1 }, { 0, 2, 1 }, { 1, 2, 0 } };
	const int pid = 2147483000;
	struct symbolizer *sym;
	struct as_mapping am;
	uintptr_t fn;
	void *base;
	uint64_t t0;

	base = map_file(FX("fx_swap_a.so"), NULL, &am, 4);
	fn = (uintptr_t)base + FN_OFF;
	am.path = FX("fx_swap_a.so");
	for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
		CHECK(!symbolizer__new(NULL, &sym), "new");
		symbolizer__set_tracking(sym, true);
		t0 = now_ns();
		for (int k = 0; k < 3; k++) {
			switch (order[o][k]) {
			case 0: /* the side-band: the exec begins */
				symbolizer__on_sideband_mapping(
					sym, &(struct sideband_mapping){ .exec = true, .pid = pid,
									 .time_ns = t0 },
					0);
				break;
			case 1: /* the side-band: ld.so mapped, read as gen 4 */
				am.time_ns = t0 + 10;
				symbolizer__note_mapping(sym, pid, &am);
				break;
			case 2: /* the BPF side: the exec ends, gen 6 */
				symbolizer__note_mapping(sym, pid,
							 &(struct as_mapping){ .gen = 6, .exec = true,
									       .mm = 2,
									       .time_ns = t0 + 20 });
				break;
			}
		}
		CHECK(!strcmp(name_at_gen(sym, pid, 6, fn), "fx_swap_a"),
		      "order %zu: a sample after the exec: %s", o, name_at_gen(sym, pid, 6, fn));
		CHECK(!strcmp(name_at_gen(sym, pid, 3, fn), "[unmapped]"),
		      "order %zu: a sample of the image it left: %s", o, name_at_gen(sym, pid, 3, fn));
		symbolizer__free(sym);
	}

	/* a second exec whose start the side-band lost: the first's start is
	 * not taken for it, and the first image's mapping stays the first's */
	CHECK(!symbolizer__new(NULL, &sym), "new");
	symbolizer__set_tracking(sym, true);
	t0 = now_ns();
	symbolizer__on_sideband_mapping(
		sym, &(struct sideband_mapping){ .exec = true, .pid = pid, .time_ns = t0 }, 0);
	symbolizer__note_mapping(sym, pid,
				 &(struct as_mapping){ .gen = 2, .exec = true, .mm = 2,
						       .time_ns = t0 + 5 });
	am.time_ns = t0 + 10;
	symbolizer__note_mapping(sym, pid, &am);
	symbolizer__note_mapping(sym, pid,
				 &(struct as_mapping){ .gen = 6, .exec = true, .mm = 3,
						       .time_ns = t0 + 20 });
	CHECK(!strcmp(name_at_gen(sym, pid, 5, fn), "fx_swap_a"), "the first image: %s",
	      name_at_gen(sym, pid, 5, fn));
	CHECK(!strcmp(name_at_gen(sym, pid, 6, fn), "[unmapped]"), "the second image: %s",
	      name_at_gen(sym, pid, 6, fn));
	symbolizer__free(sym);
	munmap(base, am.end - am.start);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			break;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return in < 0 || out < 0 ? -1 : 0;
}

static void test_file_cache(void)
{
	char dir[] = "/tmp/test_symbolize.XXXXXX", copy[64];
	struct symbolizer_stats st0, st;
	struct symbolizer *sym;
	struct as_mapping am;
	void *a, *c, *c2;
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 1, 0 } };

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(copy, sizeof(copy), "%s/copy.so", dir);
	CHECK(!copy_file(FX("fx_swap_a.so"), copy), "copy");
	CHECK(!symbolizer__new(NULL, &sym), "new");
	symbolizer__set_tracking(sym, true);
	symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");

	/* the same build-ID in two files: symbols parsed once */
	symbolizer__stats(sym, &st0);
	a = map_file(FX("fx_swap_a.so"), NULL, &am, 1);
	symbolizer__note_mapping(sym, getpid(), &am);
	c = map_file(copy, NULL, &am, 2);
	symbolizer__note_mapping(sym, getpid(), &am);
	CHECK(!strcmp(name_at(sym, 2, (uintptr_t)c + FN_OFF), "fx_swap_a"), "copy: %s",
	      name_at(sym, 2, (uintptr_t)c + FN_OFF));
	symbolizer__stats(sym, &st);
	CHECK(st.files - st0.files == 2 && st.shared - st0.shared == 1 &&
		      st.parsed - st0.parsed == 1, "files +%lu, shared +%lu, parsed +%lu",
	      (unsigned long)(st.files - st0.files), (unsigned long)(st.shared - st0.shared),
	      (unsigned long)(st.parsed - st0.parsed));
	CHECK(st.symtab_bytes > st0.symtab_bytes, "symbol table bytes counted");

	/* the copy rewritten in place (same inode, new mtime): read again */
	CHECK(!copy_file(FX("fx_swap_b.so"), copy), "rewrite");
	CHECK(!utimensat(AT_FDCWD, copy, later, 0), "mtime");
	c2 = map_file(copy, NULL, &am, 3);
	symbolizer__note_mapping(sym, getpid(), &am);
	CHECK(!strcmp(name_at(sym, 3, (uintptr_t)c2 + FN_OFF), "fx_swap_b"), "rewritten: %s",
	      name_at(sym, 3, (uintptr_t)c2 + FN_OFF));
	/* the old mapping of the copy keeps the old file's names */
	CHECK(!strcmp(name_at(sym, 3, (uintptr_t)c + FN_OFF), "fx_swap_a"), "old copy: %s",
	      name_at(sym, 3, (uintptr_t)c + FN_OFF));
	munmap(a, am.end - am.start); /* all three of one size */
	munmap(c, am.end - am.start);
	munmap(c2, am.end - am.start);
	symbolizer__free(sym);
	unlink(copy);
	rmdir(dir);
}

/* The address of fx_inline's asm label (fixtures.mk writes it first in
 * fx_inline.a2l): its text is at file offset = vaddr, so the file mapped
 * whole has the label at base + it. */
static uint64_t fx_inline_mark(void)
{
	FILE *f = fopen(FX("fx_inline.a2l"), "r");
	unsigned long long a = 0;

	if (f && fscanf(f, "%llx", &a) != 1)
		a = 0;
	if (f)
		fclose(f);
	return a;
}

/* A frame in a file with DWARF: the symbol's name, and the inline chain
 * with lines (innermost first, the symbol's function last); none with
 * --no-lines. */
static void test_source_lines(void)
{
	uint64_t mark = fx_inline_mark();
	bool no_lines[] = { false, true, false };
	/* the last: .symtab in the binary, DWARF in its debug file (debuglink) */
	const char *file[] = { FX("fx_inline"), FX("fx_inline"), FX("fx_inline_link") };

	CHECK(mark, "mark address");
	for (size_t k = 0; k < 3; k++) {
		struct symbolizer *sym;
		struct as_mapping am;
		struct sym_frame f;
		void *p;

		CHECK(!symbolizer__new(&(struct symbolizer_opts){ .no_lines = no_lines[k] }, &sym),
		      "new");
		symbolizer__set_tracking(sym, true);
		symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");
		p = map_file(file[k], NULL, &am, 1);
		symbolizer__note_mapping(sym, getpid(), &am);
		symbolizer__user(sym, getpid(), 1, (uintptr_t)p + mark, false, &f);
		CHECK(f.name && !strcmp(f.name, "fx_outer"), "name %s", f.name ? f.name : "NULL");
		if (no_lines[k]) {
			CHECK(f.nr_lines == 0, "--no-lines: %zu lines", f.nr_lines);
		} else {
			CHECK(f.nr_lines == 3, "%s: %zu lines", file[k], f.nr_lines);
			CHECK(f.nr_lines == 3 && !strcmp(f.lines[0].function, "fx_inner") &&
				      !strcmp(f.lines[1].function, "fx_middle") &&
				      !strcmp(f.lines[2].function, "fx_outer") && f.lines[0].line &&
				      strstr(f.lines[0].file, "fx_inline.c"),
			      "inline chain");
		}
		munmap(p, am.end - am.start);
		symbolizer__free(sym);
	}
}

/* Files whose DWARF may be read hold an fd each: a quarter of the fd limit
 * at most. With a limit of 10, the third file with DWARF gets no lines. */
static void test_lines_fd_budget(void)
{
	const char *files[] = { FX("fx_swap_a.so"), FX("fx_swap_b.so"), FX("fx_inline") };
	struct rlimit old, low;
	struct symbolizer_stats st;
	struct symbolizer *sym;
	struct as_mapping am;
	void *p[3];
	size_t len[3], with_lines = 0;

	CHECK(!getrlimit(RLIMIT_NOFILE, &old), "getrlimit");
	low = (struct rlimit){ 10, old.rlim_max };
	CHECK(!setrlimit(RLIMIT_NOFILE, &low), "setrlimit");
	CHECK(!symbolizer__new(NULL, &sym), "new");
	CHECK(!setrlimit(RLIMIT_NOFILE, &old), "setrlimit back");
	symbolizer__set_tracking(sym, true);
	symbolizer__note_process(sym, getpid(), 0, 1, "test_symbolize");
	for (size_t i = 0; i < 3; i++) {
		struct sym_frame f;

		p[i] = map_file(files[i], NULL, &am, i + 1);
		len[i] = am.end - am.start;
		symbolizer__note_mapping(sym, getpid(), &am);
		symbolizer__user(sym, getpid(), i + 1, (uintptr_t)p[i] + FN_OFF, false, &f);
		with_lines += f.nr_lines > 0;
	}
	symbolizer__stats(sym, &st);
	CHECK(st.dwarf_files == 2 && st.dwarf_skipped == 1, "DWARF of %llu files, %llu skipped",
	      (unsigned long long)st.dwarf_files, (unsigned long long)st.dwarf_skipped);
	CHECK(with_lines == 2, "%zu files' frames with lines", with_lines);
	for (size_t i = 0; i < 3; i++)
		munmap(p[i], len[i]);
	symbolizer__free(sym);
}

/* The offset the test relies on, from our own ELF reader: both libraries
 * have their function at FN_OFF. */
static void test_fixture_layout(void)
{
	struct symtab *a, *b;
	uint64_t va;

	CHECK(!symtab__load(FX("fx_swap_a.so"), &a) && !symtab__load(FX("fx_swap_b.so"), &b),
	      "load");
	CHECK(!symtab__off_to_vaddr(a, FN_OFF, &va) && va == FN_OFF, "vaddr %#lx",
	      (unsigned long)va);
	CHECK(!strcmp(symtab__find(a, FN_OFF, NULL), "fx_swap_a") &&
		      !strcmp(symtab__find(b, FN_OFF, NULL), "fx_swap_b"), "names");
	symtab__free(a);
	symtab__free(b);
}

/* A process that is gone: its file is reached by path only, and a file at
 * that path that is not the mapped one (another inode: replaced on disk)
 * is never read for its names. */
static void test_replaced_file(void)
{
	char path[] = FX("fx_swap_a.so");
	struct procmap m = { .start = 0x10000, .end = 0x20000, .path = path };
	const struct mapped_file *f;
	struct filecache *fc;
	struct stat sb;

	CHECK(!stat(path, &sb), "stat");
	CHECK(!filecache__new(NULL, &fc), "new");
	m.dev = sb.st_dev;
	m.inode = sb.st_ino + 1; /* mapped: another file that was at this path */
	f = filecache__open(fc, 0x7ffffff0, &m);
	CHECK(f && !f->st && !f->build_id, "another inode at the path: not read");
	m.inode = sb.st_ino;
	f = filecache__open(fc, 0x7ffffff0, &m);
	CHECK(f && f->st && f->build_id && !strcmp(f->build_id, ID_A), "the mapped inode: read");
	filecache__free(fc);
}

static void on_gone(void *ctx, int pid)
{
	*(int *)ctx = pid;
}

/* An agent runs for months: a process that exits is forgotten after the
 * grace sweeps, and a file only it mapped is released with its symbols. */
static void test_lifetimes(void)
{
	struct symbolizer_stats ys;
	struct symbolizer *sym;
	struct as_mapping am;
	int pipefd[2], gone = 0;
	uintptr_t fn;
	pid_t child;

	CHECK(!symbolizer__new(NULL, &sym) && !pipe(pipefd), "new");
	child = fork();
	if (!child) {
		map_file(FX("fx_swap_b.so"), NULL, &am, 0);
		if (write(pipefd[1], &am.start, sizeof(am.start)) < 0)
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(pipefd[0], &fn, sizeof(fn)) == sizeof(fn), "child mapped");
	fn += FN_OFF;
	symbolizer__note_process(sym, child, 0, 1, "child");
	CHECK(!strcmp(name_at_pid(sym, child, fn), "fx_swap_b"), "named while alive: %s",
	      name_at_pid(sym, child, fn));
	symbolizer__sweep(sym, on_gone, &gone);
	symbolizer__stats(sym, &ys);
	CHECK(ys.procs_live == 1 && !ys.procs_released && !gone, "alive: kept");

	unit_reap(child);
	symbolizer__sweep(sym, on_gone, &gone);
	symbolizer__stats(sym, &ys);
	CHECK(ys.procs_live == 1 && !gone, "exited: kept for one sweep (its last samples)");
	CHECK(!strcmp(name_at_pid(sym, child, fn), "fx_swap_b"), "named after exit");
	symbolizer__sweep(sym, on_gone, &gone);
	symbolizer__stats(sym, &ys);
	CHECK(ys.procs_live == 0 && ys.procs_released == 1 && gone == child,
	      "forgotten: live %llu released %llu gone %d", (unsigned long long)ys.procs_live,
	      (unsigned long long)ys.procs_released, gone);
	CHECK(ys.files_released == 0, "a file is kept idle for a while");
	symbolizer__sweep(sym, NULL, NULL);
	symbolizer__stats(sym, &ys);
	CHECK(ys.files_released >= 1 && ys.files_held == 0 && ys.symtab_bytes == 0,
	      "files released %llu, held %llu, symbol bytes %llu",
	      (unsigned long long)ys.files_released, (unsigned long long)ys.files_held,
	      (unsigned long long)ys.symtab_bytes);
	close(pipefd[0]);
	close(pipefd[1]);
	symbolizer__free(sym);
}

/* The maps reader of test_read_in_exec: its first `empty_left` reads find
 * no executable mapping, as a read of a process inside exec does. */
static int empty_left, reads;

static int read_after_exec(int pid, struct procmaps **out)
{
	reads++;
	if (empty_left > 0) {
		empty_left--;
		*out = calloc(1, sizeof(**out));
		return *out ? 0 : -ENOMEM;
	}
	return procmaps__load(pid, out);
}

/* Reads again and again for ms milliseconds, as the drain loop does. */
static void drain_for(struct addrspace *as, int ms)
{
	for (int i = 0; i < ms; i++) {
		addrspace__read_announced(as);
		usleep(1000);
	}
}

/* A process announced from inside exec (its binary not mapped yet), and
 * never again (5.10 and 6.1 under -- command): its maps are read again
 * until they are there, and a zombie's empty maps only a few times. */
static void test_read_in_exec(void)
{
	uint64_t here = (uintptr_t)&test_read_in_exec;
	struct addrspace_stats st;
	struct filecache *fc;
	struct addrspace *as;
	struct as_hit hit;

	CHECK(!filecache__new(NULL, &fc) && !addrspace__new(fc, &as), "new");
	addrspace__set_maps_reader(as, read_after_exec);
	empty_left = 2;
	addrspace__note_process(as, getpid(), 0, 1, "self");
	addrspace__read_announced(as);
	addrspace__stats(as, &st);
	CHECK(reads == 1 && st.empty_reads == 1, "first read: nothing mapped yet");
	drain_for(as, 100);
	addrspace__stats(as, &st);
	CHECK(reads == 3 && st.empty_reads == 2, "read again until mapped: %d reads, %llu empty",
	      reads, (unsigned long long)st.empty_reads);
	CHECK(!addrspace__find(as, getpid(), 0, here, &hit) && hit.file,
	      "named once mapped");

	empty_left = 1000; /* a zombie's maps: read a few times, then left */
	reads = 0;
	addrspace__note_process(as, getpid(), 0, 2, "self");
	drain_for(as, 1200);
	CHECK(reads == 9, "reads of maps that stay empty: %d (the first and 8 retries)", reads);
	CHECK(!addrspace__find(as, getpid(), 0, here, &hit) && hit.file,
	      "what was read before is kept");
	addrspace__free(as);
	filecache__free(fc);
}

/* With a bound on the processes known, one announced beyond it is not
 * followed (each of its records counted, its addresses not named) until an
 * exited one is forgotten. */
static void test_max_procs(void)
{
	uint64_t here = (uintptr_t)&test_max_procs;
	pid_t a = unit_sleeper(), b = unit_sleeper();
	struct addrspace_stats st;
	size_t n;
	struct filecache *fc;
	struct addrspace *as;
	struct as_hit hit;

	CHECK(a > 0 && b > 0, "children");
	CHECK(!filecache__new(NULL, &fc) && !addrspace__new(fc, &as), "new");
	addrspace__set_max_procs(as, 2);
	addrspace__note_process(as, getpid(), 0, 1, "self");
	addrspace__note_process(as, a, 0, 1, "a");
	addrspace__note_process(as, b, 0, 1, "b");
	addrspace__note_mapping(as, b, &(struct as_mapping){ .start = 0x1000, .end = 0x2000 });
	addrspace__read_announced(as);
	addrspace__stats(as, &st);
	CHECK(st.live == 2 && st.unfollowed == 2, "2 known, b's announcement and mapping not "
	      "followed: %llu, %llu",
	      (unsigned long long)st.live, (unsigned long long)st.unfollowed);
	CHECK(!addrspace__find(as, a, 0, here, &hit) && hit.file, "a followed");
	CHECK(addrspace__find(as, b, 0, here, &hit) == -ENOENT, "b not");

	unit_reap(a);
	n = addrspace__sweep(as, 1, NULL, NULL);
	CHECK(n == 1, "a forgotten once exited: %zu", n);
	addrspace__note_process(as, b, 0, 1, "b");
	addrspace__read_announced(as);
	addrspace__stats(as, &st);
	CHECK(st.live == 2 && st.unfollowed == 2, "b followed in a's place");
	CHECK(!addrspace__find(as, b, 0, here, &hit) && hit.file, "b named");
	unit_reap(b);
	addrspace__free(as);
	filecache__free(fc);
}

int main(void)
{
	RUN(test_fixture_layout);
	RUN(test_source_lines);
	RUN(test_lines_fd_budget);
	RUN(test_mappings_over_time);
	RUN(test_sideband_lag);
	RUN(test_exec_after_its_mappings);
	RUN(test_file_cache);
	RUN(test_replaced_file);
	RUN(test_lifetimes);
	RUN(test_read_in_exec);
	RUN(test_max_procs);
	UNIT_EXIT();
}
