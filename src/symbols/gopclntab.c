// SPDX-License-Identifier: GPL-2.0
/*
 * Go's pclntab, read as the Go runtime reads it (runtime/symtab.go), from
 * the facts of its layouts since Go 1.16:
 *  - a header: magic, two zero bytes, the instruction quantum, the pointer
 *    size, then words: nfunc, nfiles, (1.18+) textStart, and the offsets of
 *    funcnametab, cutab, filetab, pctab and the function table;
 *  - the function table: nfunc + 1 pairs (entry, offset of the function's
 *    _func) sorted by entry, the last pair's entry the end of the text;
 *    1.16: two words (entry an address); 1.18+: two uint32 (entry as an
 *    offset from textStart);
 *  - a _func: its entry, its name's offset in funcnametab, the offsets in
 *    pctab of its pc-value tables (pcfile, pcln; npcdata more, PCDATA_*
 *    indexed), its compile unit's index in cutab, (1.20+) its start line,
 *    nfuncdata, then npcdata uint32 and nfuncdata funcdata (1.16: words,
 *    8-aligned, absolute addresses; 1.18+: uint32 offsets from
 *    moduledata.gofunc, ~0 for none);
 *  - a pc-value table: (value delta zigzag-varint, pc delta varint times the
 *    quantum) pairs from the entry with value -1; a zero value delta past
 *    the first pair ends it;
 *  - the inline tree (FUNCDATA_InlTree, index 3) indexed by the value of
 *    PCDATA_InlTreeIndex (index 2) at a pc: 1.16-1.19 entries of 20 bytes
 *    (name offset at 12, parentPc at 16), 1.20+ of 16 (name offset at 4,
 *    parentPc at 8, start line at 12). parentPc is an offset from the
 *    function's entry of an instruction whose position is the call site:
 *    the file, line and next inline index are those at entry + parentPc,
 *    as the runtime's traceback walks them.
 * Every offset read from the file is checked against the bytes held: a
 * hostile table names nothing, it does not make us read elsewhere.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf_lines.h"
#include "gopclntab.h"
#include "hashmap.h"
#include "log.h"
#include "regfile.h"

#define MAGIC_116 0xfffffffaU
#define MAGIC_118 0xfffffff0U
#define MAGIC_120 0xfffffff1U
#define MAGIC_12 0xfffffffbU /* Go 1.2 to 1.15: not read */

#define PCDATA_INLTREEINDEX 2
#define FUNCDATA_INLTREE 3

/* Addresses answered before the cache starts again (dwarf_lines.c's). */
#define CACHE_MAX 16384
/* Inline depth kept, as dwarf_lines.c. */
#define MAX_FRAMES 32
/* Bytes of a segment read to find a table or the moduledata: a Go binary's
 * read-only segment is tens of MB at most. */
#define MAX_SEGMENT (512u << 20)

enum layout { L116, L118, L120 };

struct answer {
	size_t nr;
	struct dw_frame f[];
};

struct gopcln {
	uint8_t *tab;
	size_t tab_size;
	uint64_t tab_addr;
	uint8_t *data;
	size_t data_size;
	uint64_t data_addr;
	uint64_t gofunc;
	enum layout layout;
	unsigned int quantum;
	uint64_t nfunc;
	uint64_t text;
	/* offsets in tab */
	uint64_t funcnames, cutab, filetab, pctab, pcln;
	size_t functab_entry; /* bytes per function table entry */
	size_t func_size;     /* bytes of a _func before its pcdata */
	struct hashmap *cache; /* vaddr + 1 -> struct answer */
	struct dw_frame scratch[MAX_FRAMES];
};

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Whether [off, off + len) lies in the table. */
static bool in_tab(const struct gopcln *g, uint64_t off, uint64_t len)
{
	return off <= g->tab_size && len <= g->tab_size - off;
}

/* The NUL-terminated string at off in the table, or NULL. */
static const char *tab_str(const struct gopcln *g, uint64_t off)
{
	if (off >= g->tab_size || !memchr(g->tab + off, 0, g->tab_size - off))
		return NULL;
	return (const char *)g->tab + off;
}

/* ---- header and function table ---------------------------------------- */

static int read_header(struct gopcln *g, uint64_t text_hint)
{
	const uint8_t *h = g->tab;
	uint32_t magic;
	size_t words;

	if (g->tab_size < 8)
		return -EINVAL;
	magic = rd32(h);
	if (magic == MAGIC_12)
		return -ENOTSUP;
	if (magic != MAGIC_116 && magic != MAGIC_118 && magic != MAGIC_120)
		return -EINVAL;
	if (h[4] || h[5] || (h[6] != 1 && h[6] != 2 && h[6] != 4))
		return -EINVAL;
	if (h[7] != 8)
		return -ENOTSUP; /* a 32-bit program's table */
	g->layout = magic == MAGIC_116 ? L116 : magic == MAGIC_118 ? L118 : L120;
	g->quantum = h[6];
	words = g->layout == L116 ? 7 : 8;
	if (g->tab_size < 8 + words * 8)
		return -EINVAL;
	g->nfunc = rd64(h + 8);
	h += g->layout == L116 ? 24 : 32; /* past nfunc, nfiles (and textStart) */
	g->text = g->layout == L116 ? 0 : rd64(g->tab + 24);
	if (g->layout != L116 && !g->text)
		g->text = text_hint; /* a PIE's textStart, left to a relocation */
	g->funcnames = rd64(h);
	g->cutab = rd64(h + 8);
	g->filetab = rd64(h + 16);
	g->pctab = rd64(h + 24);
	g->pcln = rd64(h + 32);
	g->functab_entry = g->layout == L116 ? 16 : 8;
	g->func_size = g->layout == L118 ? 40 : 44;
	return 0;
}

/* Entry i of the function table: the function's entry address and its
 * _func's offset in the table (from pcln). */
static void functab_at(const struct gopcln *g, uint64_t i, uint64_t *entry, uint64_t *funcoff)
{
	const uint8_t *p = g->tab + g->pcln + i * g->functab_entry;

	if (g->layout == L116) {
		*entry = rd64(p);
		*funcoff = rd64(p + 8);
	} else {
		*entry = g->text + rd32(p);
		*funcoff = rd32(p + 4);
	}
}

/* The function table fits and is sorted: a binary search on it then finds
 * the one function that holds an address. */
static int check_functab(const struct gopcln *g)
{
	uint64_t prev = 0, entry, off;

	if (!g->nfunc || g->nfunc > g->tab_size / g->functab_entry ||
	    !in_tab(g, g->pcln, (g->nfunc + 1) * g->functab_entry))
		return -EINVAL;
	if (!in_tab(g, g->funcnames, 0) || !in_tab(g, g->cutab, 0) ||
	    !in_tab(g, g->filetab, 0) || !in_tab(g, g->pctab, 0))
		return -EINVAL;
	for (uint64_t i = 0; i <= g->nfunc; i++) {
		functab_at(g, i, &entry, &off);
		if (entry < prev)
			return -EINVAL;
		prev = entry;
	}
	return 0;
}

/* The index of the function holding vaddr, or -1. */
static long func_index(const struct gopcln *g, uint64_t vaddr)
{
	uint64_t lo = 0, hi = g->nfunc, entry, off;

	functab_at(g, 0, &entry, &off);
	if (vaddr < entry)
		return -1;
	functab_at(g, g->nfunc, &entry, &off);
	if (vaddr >= entry)
		return -1;
	while (hi - lo > 1) { /* entry(lo) <= vaddr < entry(hi) */
		uint64_t mid = lo + (hi - lo) / 2;

		functab_at(g, mid, &entry, &off);
		if (entry <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return (long)lo;
}

/* ---- one function ------------------------------------------------------ */

struct fn {
	uint64_t entry;
	uint64_t off; /* of its _func in the table */
	uint32_t npcdata, nfuncdata;
};

/* Function i's _func, checked to lie in the table with its pcdata and
 * funcdata. */
static bool fn_at(const struct gopcln *g, uint64_t i, struct fn *f)
{
	uint64_t funcoff, rest;
	const uint8_t *p;

	functab_at(g, i, &f->entry, &funcoff);
	if (funcoff > g->tab_size - g->pcln)
		return false;
	f->off = g->pcln + funcoff;
	if (!in_tab(g, f->off, g->func_size))
		return false;
	p = g->tab + f->off;
	f->npcdata = rd32(p + (g->layout == L116 ? 32 : 28));
	f->nfuncdata = p[g->func_size - 1];
	/* 1.16: funcdata are words after the pcdata, 8-aligned */
	rest = (uint64_t)f->npcdata * 4;
	if (g->layout != L116)
		rest += f->nfuncdata * 4ull;
	else if (f->nfuncdata)
		rest += 4 + f->nfuncdata * 8ull; /* the padding, at most */
	return f->npcdata <= g->tab_size && in_tab(g, f->off + g->func_size, rest);
}

/* A uint32 field of f's _func at offset o of the 1.18 layout (1.16 puts
 * the entry in a word: 4 more from nameoff on). */
static uint32_t fn_u32(const struct gopcln *g, const struct fn *f, unsigned int o)
{
	return rd32(g->tab + f->off + o + (g->layout == L116 ? 4 : 0));
}

static const char *fn_name(const struct gopcln *g, const struct fn *f)
{
	uint32_t nameoff = fn_u32(g, f, 4);

	/* 0 is a name too: the first function's */
	if (nameoff >= g->tab_size - g->funcnames)
		return NULL;
	return tab_str(g, g->funcnames + nameoff);
}

/* One varint of a pc-value table at *p (an offset in the table). */
static bool varint(const struct gopcln *g, uint64_t *p, uint32_t *v)
{
	uint32_t shift = 0;

	*v = 0;
	while (*p < g->tab_size && shift < 35) {
		uint8_t b = g->tab[(*p)++];

		*v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

/*
 * The value of f's pc-value table at offset table (of pctab) for pc, or -1
 * when there is none or it does not cover pc. Each step reads at least two
 * bytes of the table: a loop ends at its end.
 */
static int32_t pcvalue(const struct gopcln *g, const struct fn *f, uint32_t table, uint64_t pc)
{
	uint64_t p = g->pctab + table, at = f->entry;
	int32_t val = -1;
	uint32_t uv, pcd;

	if (!table || table >= g->tab_size - g->pctab)
		return -1;
	for (;;) {
		bool first = at == f->entry;

		if (!varint(g, &p, &uv) || (uv == 0 && !first))
			return -1;
		/* wraps as the runtime's int32 does (a hostile table's deltas
		 * would overflow a signed sum: found by fuzz_gopclntab) */
		val = (int32_t)((uint32_t)val + (-(uv & 1) ^ (uv >> 1)));
		if (!varint(g, &p, &pcd))
			return -1;
		at += (uint64_t)pcd * g->quantum;
		if (pc < at)
			return val;
	}
}

/* File number fileno of f's compile unit, or NULL. */
static const char *fn_file(const struct gopcln *g, const struct fn *f, int32_t fileno)
{
	uint64_t idx = (uint64_t)fn_u32(g, f, 32) + (uint32_t)fileno;
	uint32_t off;

	if (fileno < 0 || idx > (g->tab_size - g->cutab) / 4 || !in_tab(g, g->cutab + idx * 4, 4))
		return NULL;
	off = rd32(g->tab + g->cutab + idx * 4);
	if (off == UINT32_MAX || off >= g->tab_size - g->filetab)
		return NULL;
	return tab_str(g, g->filetab + off);
}

/* The address of f's inline tree, or 0. */
static uint64_t inline_tree(const struct gopcln *g, const struct fn *f)
{
	uint64_t p = f->off + g->func_size + (uint64_t)f->npcdata * 4;

	if (f->nfuncdata <= FUNCDATA_INLTREE || !g->data)
		return 0;
	if (g->layout == L116) {
		if ((g->tab_addr + p) & 4) /* words are 8-aligned in memory */
			p += 4;
		return rd64(g->tab + p + FUNCDATA_INLTREE * 8);
	}
	if (!g->gofunc)
		return 0;
	uint32_t off = rd32(g->tab + p + FUNCDATA_INLTREE * 4);

	return off == UINT32_MAX ? 0 : g->gofunc + off;
}

struct inl {
	int32_t nameoff, parent_pc, start_line;
};

/* Entry ix of the inline tree at tree, read from the data held. */
static bool inl_at(const struct gopcln *g, uint64_t tree, int32_t ix, struct inl *out)
{
	uint64_t size = g->layout == L120 ? 16 : 20, at;
	const uint8_t *p;

	if (ix < 0 || tree < g->data_addr)
		return false;
	at = tree - g->data_addr + (uint64_t)ix * size;
	if (tree - g->data_addr > g->data_size || at > g->data_size || size > g->data_size - at)
		return false;
	p = g->data + at;
	if (g->layout == L120)
		*out = (struct inl){ (int32_t)rd32(p + 4), (int32_t)rd32(p + 8), (int32_t)rd32(p + 12) };
	else
		*out = (struct inl){ (int32_t)rd32(p + 12), (int32_t)rd32(p + 16), 0 };
	return true;
}

static const char *name_at(const struct gopcln *g, int32_t nameoff)
{
	if (nameoff < 0 || (uint64_t)nameoff >= g->tab_size - g->funcnames)
		return NULL;
	return tab_str(g, g->funcnames + nameoff);
}

/* The frames at vaddr into g->scratch, innermost first. */
static size_t resolve(struct gopcln *g, uint64_t vaddr)
{
	long i = func_index(g, vaddr);
	uint64_t pc = vaddr, tree;
	uint32_t pcfile, pcln, inlidx = 0;
	struct fn f;
	size_t n = 0;

	if (i < 0 || !fn_at(g, i, &f))
		return 0;
	pcfile = fn_u32(g, &f, 20);
	pcln = fn_u32(g, &f, 24);
	tree = inline_tree(g, &f);
	if (tree && f.npcdata > PCDATA_INLTREEINDEX)
		inlidx = rd32(g->tab + f.off + g->func_size + PCDATA_INLTREEINDEX * 4);
	for (;;) {
		int32_t ix = inlidx ? pcvalue(g, &f, inlidx, pc) : -1;
		int32_t line = pcvalue(g, &f, pcln, pc);
		struct dw_frame *d = &g->scratch[n];
		struct inl in;

		*d = (struct dw_frame){ .file = fn_file(g, &f, pcvalue(g, &f, pcfile, pc)),
					.line = line > 0 ? (uint32_t)line : 0 };
		if (n == MAX_FRAMES - 1 || ix < 0 || !inl_at(g, tree, ix, &in))
			break;
		d->function = name_at(g, in.nameoff);
		d->fn_line = in.start_line > 0 ? (uint32_t)in.start_line : 0;
		n++;
		/* parentPc: an instruction at the call site, in the caller */
		pc = f.entry + (uint32_t)in.parent_pc;
	}
	/* the real function, at the line where the others were inlined (a
	 * chain deeper than kept loses its outermost inlined callers) */
	g->scratch[n].function = fn_name(g, &f);
	g->scratch[n].fn_file = fn_file(g, &f, pcvalue(g, &f, pcfile, f.entry));
	if (g->layout == L120 && (int32_t)fn_u32(g, &f, 36) > 0)
		g->scratch[n].fn_line = fn_u32(g, &f, 36);
	return n + 1;
}

/* ---- the object -------------------------------------------------------- */

static void cache_free(struct gopcln *g)
{
	void *val;

	for (size_t i = 0; g->cache && hashmap__next(g->cache, &i, NULL, &val);)
		free(val);
	hashmap__free(g->cache);
	g->cache = NULL;
}

void gopcln__free(struct gopcln *g)
{
	if (!g)
		return;
	cache_free(g);
	free(g->tab);
	free(g->data);
	free(g);
}

static void *copy(const void *src, size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p && size)
		memcpy(p, src, size);
	return p;
}

int gopcln__parse(const struct gopcln_image *img, struct gopcln **out)
{
	struct gopcln *g = calloc(1, sizeof(*g));
	int err = -ENOMEM;

	if (!g)
		return -ENOMEM;
	g->tab = copy(img->tab, img->tab_size);
	g->tab_size = img->tab_size;
	g->tab_addr = img->tab_addr;
	g->cache = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!g->tab || !g->cache)
		goto err;
	if (img->data && img->data_size) {
		g->data = copy(img->data, img->data_size);
		if (!g->data)
			goto err;
		g->data_size = img->data_size;
		g->data_addr = img->data_addr;
	}
	g->gofunc = img->gofunc;
	err = read_header(g, img->text);
	if (!err)
		err = check_functab(g);
	if (err)
		goto err;
	*out = g;
	return 0;
err:
	gopcln__free(g);
	return err;
}

const char *gopcln__layout(const struct gopcln *g)
{
	return g->layout == L116 ? "1.16" : g->layout == L118 ? "1.18" : "1.20";
}

bool gopcln__has_inlines(const struct gopcln *g)
{
	return g->data && (g->layout == L116 || g->gofunc);
}

size_t gopcln__mem_bytes(const struct gopcln *g)
{
	return g ? sizeof(*g) + g->tab_size + g->data_size : 0;
}

size_t gopcln__nr_funcs(const struct gopcln *g)
{
	return g->nfunc;
}

int gopcln__func(const struct gopcln *g, size_t i, uint64_t *entry, const char **name)
{
	struct fn f;

	if (i >= g->nfunc)
		return -ERANGE;
	*name = fn_at(g, i, &f) ? fn_name(g, &f) : NULL;
	*entry = f.entry;
	return 0;
}

const char *gopcln__name(const struct gopcln *g, uint64_t vaddr, uint64_t *off)
{
	long i = func_index(g, vaddr);
	struct fn f;

	if (i < 0 || !fn_at(g, i, &f))
		return NULL;
	if (off)
		*off = vaddr - f.entry;
	return fn_name(g, &f);
}

static const struct answer *remember(struct gopcln *g, uint64_t vaddr, size_t n)
{
	struct answer *a;

	if (!g->cache)
		return NULL;
	if (hashmap__size(g->cache) >= CACHE_MAX) { /* full: start again */
		cache_free(g);
		g->cache = hashmap__new(hashmap__hash_int, hashmap__equal_int);
		if (!g->cache)
			return NULL;
	}
	a = malloc(sizeof(*a) + n * sizeof(struct dw_frame));
	if (!a)
		return NULL;
	a->nr = n;
	memcpy(a->f, g->scratch, n * sizeof(struct dw_frame));
	if (hashmap__set(g->cache, (void *)(uintptr_t)(vaddr + 1), a, NULL)) {
		free(a);
		return NULL;
	}
	return a;
}

int gopcln__find(struct gopcln *g, uint64_t vaddr, const struct dw_frame **frames, size_t *nr)
{
	const struct answer *a;
	size_t n;

	a = g->cache ? hashmap__find(g->cache, (void *)(uintptr_t)(vaddr + 1)) : NULL;
	if (!a) {
		n = resolve(g, vaddr);
		a = remember(g, vaddr, n);
		if (!a) { /* not kept, still right */
			*frames = g->scratch;
			*nr = n;
			return 0;
		}
	}
	*frames = a->f;
	*nr = a->nr;
	return 0;
}

/* ---- from an ELF file -------------------------------------------------- */

struct segment {
	uint64_t vaddr, size, offset; /* size: its bytes in the file */
	uint8_t *bytes;		      /* owned, NULL until read */
	bool write, exec;
};

struct elf_file {
	int fd;
	Elf *elf;
	struct segment seg[16];
	size_t nseg;
};

static void elf_file_close(struct elf_file *ef)
{
	for (size_t i = 0; i < ef->nseg; i++)
		free(ef->seg[i].bytes);
	elf_end(ef->elf);
	if (ef->fd >= 0)
		close(ef->fd);
}

/* Read, not mapped, as elf_syms.c: the file is someone else's and may
 * shrink under us; a short read is an error, a mapping SIGBUS. */
static int elf_file_open(const char *path, struct elf_file *ef)
{
	GElf_Ehdr eh;
	size_t nph;

	*ef = (struct elf_file){ .fd = -1 };
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	ef->fd = regfile__open(path, 0, NULL);
	if (ef->fd < 0)
		return ef->fd == -EINVAL ? -ENOEXEC : ef->fd;
	ef->elf = elf_begin(ef->fd, ELF_C_READ, NULL);
	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || !gelf_getehdr(ef->elf, &eh) ||
	    elf_getphdrnum(ef->elf, &nph))
		return -ENOEXEC;
	for (size_t i = 0; i < nph && ef->nseg < 16; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz ||
		    ph.p_filesz > MAX_SEGMENT)
			continue;
		ef->seg[ef->nseg++] = (struct segment){ .vaddr = ph.p_vaddr, .size = ph.p_filesz,
							.offset = ph.p_offset,
							.write = ph.p_flags & PF_W,
							.exec = ph.p_flags & PF_X };
	}
	return 0;
}

/* Segment s's bytes, read the first time (a short read: none). */
static const uint8_t *seg_bytes(struct elf_file *ef, struct segment *s)
{
	if (s->bytes)
		return s->bytes;
	s->bytes = malloc(s->size);
	if (s->bytes && pread(ef->fd, s->bytes, s->size, s->offset) != (ssize_t)s->size) {
		free(s->bytes);
		s->bytes = NULL;
	}
	return s->bytes;
}

static struct segment *seg_of(struct elf_file *ef, uint64_t vaddr)
{
	for (size_t i = 0; i < ef->nseg; i++)
		if (vaddr >= ef->seg[i].vaddr && vaddr - ef->seg[i].vaddr < ef->seg[i].size)
			return &ef->seg[i];
	return NULL;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* The section called *.gopclntab (.gopclntab; .data.rel.ro.gopclntab in a
 * PIE), or NULL; *addr its address. */
static Elf_Data *find_section(Elf *elf, const char *tail, uint64_t *addr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && ends_with(n, tail)) {
			*addr = sh.sh_addr;
			return elf_getdata(scn, NULL);
		}
	}
	return NULL;
}

/* The table in img->tab: its section, or one found by its header in a
 * read-only segment (section headers stripped too). */
static int find_table(struct elf_file *ef, struct gopcln_image *img, struct gopcln **probe)
{
	Elf_Data *d = find_section(ef->elf, ".gopclntab", &img->tab_addr);

	if (d && d->d_buf) {
		img->tab = d->d_buf;
		img->tab_size = d->d_size;
		return gopcln__parse(img, probe);
	}
	for (size_t i = 0; i < ef->nseg; i++) {
		struct segment *s = &ef->seg[i];
		const uint8_t *b;

		if (s->exec || !(b = seg_bytes(ef, s)))
			continue;
		for (uint64_t o = 0; o + 64 <= s->size; o += 8) {
			uint32_t m = rd32(b + o);

			if ((m != MAGIC_116 && m != MAGIC_118 && m != MAGIC_120) || b[o + 7] != 8)
				continue;
			img->tab = b + o;
			img->tab_size = s->size - o;
			img->tab_addr = s->vaddr + o;
			if (!gopcln__parse(img, probe))
				return 0;
		}
	}
	return -ENOENT;
}

/*
 * Go 1.18+: moduledata.gofunc, the base of the funcdata offsets. The
 * runtime's firstmoduledata, in the writable data, starts with a pointer
 * to the table and a slice of its funcnametab; gofunc is the 39th word
 * (1.18, 1.19) or, with covctrs and ecovctrs before it, the 41st (1.20+).
 * Its 23rd word, text, is the table's textStart.
 */
static uint64_t find_gofunc(struct elf_file *ef, const struct gopcln *g)
{
	unsigned int at = g->layout == L118 ? 38 : 40;

	for (size_t i = 0; i < ef->nseg; i++) {
		struct segment *s = &ef->seg[i];
		const uint8_t *b;

		if (!s->write || !(b = seg_bytes(ef, s)))
			continue;
		for (uint64_t o = 0; o + (at + 1) * 8 <= s->size; o += 8) {
			if (rd64(b + o) != g->tab_addr || rd64(b + o + 8) != g->tab_addr + g->funcnames)
				continue;
			if (g->text && rd64(b + o + 22 * 8) != g->text)
				continue;
			return rd64(b + o + at * 8);
		}
	}
	return 0;
}

/* The bytes holding the inline trees: from gofunc to the end of its
 * segment (or to the table, when it follows in the same one); 1.16, whose
 * funcdata are addresses, the read-only segment of the table up to it. */
static void find_data(struct elf_file *ef, const struct gopcln *g, struct gopcln_image *img)
{
	uint64_t from = g->layout == L116 ? g->tab_addr : img->gofunc;
	struct segment *s = from ? seg_of(ef, from) : NULL;
	const uint8_t *b;
	uint64_t end;

	if (!s || !(b = seg_bytes(ef, s)))
		return;
	if (g->layout == L116)
		from = s->vaddr;
	end = s->vaddr + s->size;
	if (g->tab_addr > from && g->tab_addr < end)
		end = g->tab_addr;
	img->data = b + (from - s->vaddr);
	img->data_size = end - from;
	img->data_addr = from;
}

static uint64_t text_addr(Elf *elf)
{
	uint64_t addr = 0;

	find_section(elf, ".text", &addr);
	return addr;
}

/* The inline trees' bytes, given to a table parsed without them. */
static int attach_data(struct gopcln *g, const struct gopcln_image *img)
{
	g->data = copy(img->data, img->data_size);
	if (!g->data)
		return -ENOMEM;
	g->data_size = img->data_size;
	g->data_addr = img->data_addr;
	g->gofunc = img->gofunc;
	return 0;
}

int gopcln__open(const char *path, struct gopcln **out)
{
	struct gopcln_image img = {};
	struct gopcln *g = NULL;
	struct elf_file ef;
	int err;

	err = elf_file_open(path, &ef);
	if (err)
		goto out;
	img.text = text_addr(ef.elf);
	/* the table first: its layout says where its inline trees are */
	err = find_table(&ef, &img, &g);
	if (err)
		goto out;
	if (g->layout != L116)
		img.gofunc = find_gofunc(&ef, g);
	find_data(&ef, g, &img);
	if (img.data && img.data_size)
		err = attach_data(g, &img);
	else
		p_dbg("%s: Go %s+ table without its inline trees: no inline frames", path,
		      gopcln__layout(g));
	if (!err) {
		*out = g;
		g = NULL;
	}
out:
	gopcln__free(g);
	if (ef.fd >= 0 || ef.elf)
		elf_file_close(&ef);
	return err;
}
