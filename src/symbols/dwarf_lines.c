// SPDX-License-Identifier: GPL-2.0
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf_lines.h"
#include "elf_syms.h"
#include "hashmap.h"
#include "log.h"
#include "regfile.h"
#include "vec.h"

/* Addresses answered before the cache starts again: an agent that runs
 * for months sees ever more addresses of a big binary. */
#define CACHE_MAX 16384
/* Inline depth kept; deeper chains keep their innermost frames and the
 * real function. */
#define MAX_FRAMES 32

/* A compile unit's address range, for finding the unit of an address
 * without .debug_aranges (which not every compiler writes). */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off cu; /* offset of the unit's DIE */
};

/* An out-of-line function's address range in a unit: the functions of a
 * unit are listed once, at its first lookup, since a function's DIE may
 * sit anywhere in the tree (a C++ lambda's inside the class of the
 * function that made it, inside that function). */
struct fn_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

struct unit_fns {
	struct vec fns; /* struct fn_range, sorted by lo */
};

struct answer {
	size_t nr;
	struct dw_frame f[];
};

struct dwlines {
	char *path;	 /* for messages */
	int fd;		 /* owned; libelf reads sections through it */
	Elf *elf;
	Dwarf *dw;	 /* NULL until the first lookup */
	bool tried;	 /* dwarf_begin_elf was called */
	bool indexed;	 /* cus was built */
	struct vec cus;	 /* struct cu_range, sorted by lo */
	struct hashmap *cache; /* vaddr + 1 -> struct answer */
	/* Every string an answer holds, owned, once each: answers never point
	 * into libdw's memory, so it can be freed between windows while they
	 * stay (dwlines__trim). */
	struct hashmap *strs;
	struct hashmap *units; /* unit DIE offset + 1 -> struct unit_fns */
	struct dw_frame scratch[MAX_FRAMES];
};

int dwlines__open(const char *path, struct dwlines **out)
{
	struct dwlines *dl;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	dl->fd = -1;
	dl->cus = VEC_INIT(struct cu_range);
	dl->path = strdup(path);
	dl->cache = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	dl->strs = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	dl->units = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!dl->path || !dl->cache || !dl->strs || !dl->units) {
		err = -ENOMEM;
		goto err_free;
	}
	dl->fd = regfile__open(path, 0, NULL);
	if (dl->fd < 0) {
		err = dl->fd == -EINVAL ? -ENOEXEC : dl->fd;
		goto err_free;
	}
	/* Read, not mapped, as elf_syms.c: the file is someone else's and may
	 * shrink under us; a short read is an error, a mapping SIGBUS. */
	dl->elf = elf_begin(dl->fd, ELF_C_READ, NULL);
	if (!dl->elf || elf_kind(dl->elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto err_free;
	}
	if (!elf__has_contents(dl->elf, ".debug_info")) {
		err = -ENOENT;
		goto err_free;
	}
	*out = dl;
	return 0;

err_free:
	dwlines__free(dl);
	return err;
}

static void units_clear(struct dwlines *dl)
{
	void *val;

	for (size_t i = 0; dl->units && hashmap__next(dl->units, &i, NULL, &val);) {
		vec__free(&((struct unit_fns *)val)->fns);
		free(val);
	}
	hashmap__free(dl->units);
	dl->units = NULL;
}

static void strs_free(struct dwlines *dl)
{
	void *val;

	for (size_t i = 0; dl->strs && hashmap__next(dl->strs, &i, NULL, &val);)
		free(val);
	hashmap__free(dl->strs);
	dl->strs = NULL;
}

static void cache_free(struct dwlines *dl)
{
	void *val;

	for (size_t i = 0; dl->cache && hashmap__next(dl->cache, &i, NULL, &val);)
		free(val);
	hashmap__free(dl->cache);
	dl->cache = NULL;
}

void dwlines__free(struct dwlines *dl)
{
	if (!dl)
		return;
	cache_free(dl);
	units_clear(dl);
	strs_free(dl);
	vec__free(&dl->cus);
	if (dl->dw)
		dwarf_end(dl->dw);
	elf_end(dl->elf);
	if (dl->fd >= 0)
		close(dl->fd);
	free(dl->path);
	free(dl);
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* The address ranges of every compile unit, sorted. */
static int index_units(struct dwlines *dl)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t type;

	while (dwarf_get_units(dl->dw, cu, &cu, NULL, &type, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (type != DW_UT_compile && type != DW_UT_skeleton && type != DW_UT_partial)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			struct cu_range *r;

			if (hi <= lo)
				continue;
			r = vec__push(&dl->cus);
			if (!r)
				return -ENOMEM;
			*r = (struct cu_range){ lo, hi, dwarf_dieoffset(&cudie) };
		}
	}
	if (dl->cus.nr > 1)
		qsort(dl->cus.data, dl->cus.nr, sizeof(struct cu_range), cmp_range);
	return 0;
}

/*
 * Whether every DWARF string section of elf ends with a NUL. libdw (0.188
 * at least) hands out DW_FORM_strp / line_strp names as pointers into
 * .debug_str / .debug_line_str without checking that they end inside it:
 * a file whose last string is unterminated makes it (and us) read past the
 * section's buffer. Decompressed here first when compressed: libdw then
 * finds them so and reads the same bytes.
 */
static bool strings_terminated(Elf *elf)
{
	static const char *const names[] = { ".debug_str", ".debug_line_str",
					     ".zdebug_str", ".zdebug_line_str" };
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return true; /* no section names: libdw finds no section either */
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;
		Elf_Data *d;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		for (i = 0; n && i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(n, names[i]))
				break;
		if (!n || i == sizeof(names) / sizeof(names[0]))
			continue;
		if (n[1] == 'z') {
			if (elf_compress_gnu(scn, 0, 0) < 0)
				return false;
		} else if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
			return false;
		}
		d = elf_getdata(scn, NULL);
		if (d && d->d_size && (!d->d_buf || ((const char *)d->d_buf)[d->d_size - 1]))
			return false;
	}
	return true;
}

static int start(struct dwlines *dl)
{
	dl->tried = true;
	if (!strings_terminated(dl->elf)) {
		p_warn("%s: its DWARF strings are not terminated; its frames get no source lines",
		       dl->path);
		return -EINVAL;
	}
	dl->dw = dwarf_begin_elf(dl->elf, DWARF_C_READ, NULL);
	if (!dl->dw) {
		p_warn("%s: cannot read its DWARF: %s; its frames get no source lines", dl->path,
		       dwarf_errmsg(-1));
		return -EINVAL;
	}
	return 0;
}

/* The table of every unit's ranges, built the first time .debug_aranges
 * does not answer: reading each unit's DIE costs tens of ms in a big
 * file (glibc's 2000 units), the aranges table far less. */
static void index_once(struct dwlines *dl)
{
	int err;

	dl->indexed = true;
	err = index_units(dl);
	if (err)
		p_warn("%s: cannot index its DWARF: %s", dl->path, strerror(-err));
	else
		p_dbg("%s: DWARF units of %zu address ranges indexed", dl->path, dl->cus.nr);
}

static unsigned long long range_lo(const void *e)
{
	return ((const struct cu_range *)e)->lo;
}

/* The unit covering vaddr: from .debug_aranges when it has it, else from
 * our own table. Ranges may nest (a unit's ranges around another's): look
 * back from the last one starting at or below vaddr. */
static bool unit_of(struct dwlines *dl, uint64_t vaddr, Dwarf_Die *cudie)
{
	long i;

	if (dwarf_addrdie(dl->dw, vaddr, cudie))
		return true;
	if (!dl->indexed)
		index_once(dl);
	i = bsearch_last_le(dl->cus.data, dl->cus.nr, dl->cus.elem, vaddr, range_lo);
	for (long k = 0; i >= 0 && k < 8; i--, k++) {
		const struct cu_range *r = vec__at(&dl->cus, i);

		if (vaddr < r->hi)
			return dwarf_offdie(dl->dw, r->cu, cudie) != NULL;
	}
	return false;
}

/* s (owned now: malloc'ed) kept in dl->strs, or the equal one there;
 * NULL when out of memory. */
static const char *keep_owned(struct dwlines *dl, char *s)
{
	char *known;

	if (!s || !dl->strs)
		goto err;
	known = hashmap__find(dl->strs, s);
	if (known) {
		free(s);
		return known;
	}
	if (hashmap__set(dl->strs, s, s, NULL))
		goto err;
	return s;
err:
	free(s);
	return NULL;
}

/* A string of libdw's, copied into dl->strs. */
static const char *keep(struct dwlines *dl, const char *s)
{
	const char *known;

	if (!s)
		return NULL;
	known = dl->strs ? hashmap__find(dl->strs, s) : NULL;
	return known ? known : keep_owned(dl, strdup(s));
}

/*
 * A source file as addr2line prints it: DWARF 5 line tables name files
 * relative to the unit's DW_AT_comp_dir. Kept in dl->strs.
 */
static const char *full_path(struct dwlines *dl, Dwarf_Die *cudie, const char *file)
{
	Dwarf_Attribute a;
	const char *dir;
	char *joined;

	if (!file || file[0] == '/')
		return keep(dl, file);
	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &a));
	if (!dir || !*dir || asprintf(&joined, "%s/%s", dir, file) < 0)
		return keep(dl, file);
	return keep_owned(dl, joined);
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s;

	s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	/* DW_AT_name through DW_AT_abstract_origin: an inlined instance
	 * names its function only there */
	return s ? s : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
}

static void fill_function(struct dwlines *dl, Dwarf_Die *cudie, struct dw_frame *f,
			  Dwarf_Die *die)
{
	int line;

	f->function = keep(dl, die_name(die));
	f->fn_file = full_path(dl, cudie, dwarf_decl_file(die));
	if (!dwarf_decl_line(die, &line) && line > 0)
		f->fn_line = line;
}

/* Where the inlined subroutine die was called: file and line of the
 * frame that contains it. */
static void call_site(struct dwlines *dl, Dwarf_Die *cudie, Dwarf_Die *die,
		      struct dw_frame *outer)
{
	Dwarf_Attribute a;
	Dwarf_Word file, line;
	Dwarf_Files *files;
	size_t nfiles;

	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &line))
		outer->line = line;
	if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &file) &&
	    !dwarf_getsrcfiles(cudie, &files, &nfiles) && file < nfiles)
		outer->file = full_path(dl, cudie, dwarf_filesrc(files, file, NULL, NULL));
}

/* Scopes may hold the function an address is in: descended into. */
static bool is_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block || tag == DW_TAG_entry_point;
}

/* Holders of functions that cover no address themselves (C++ namespaces,
 * and classes whose member functions GCC may define inside them). */
static bool is_holder(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

/*
 * The chain of scopes holding vaddr below parent, outermost first, into
 * chain[] (at most max). dwarf_getscopes would do, but past an inlined
 * instance it goes on with the scopes of the function's abstract
 * definition, not with those of the caller it was inlined into. Holders
 * add no scope to the chain: their nesting is bounded apart (holders,
 * as list_functions' depth), or a file nesting namespaces ten thousand
 * deep would take the stack.
 */
static size_t descend(Dwarf_Die *parent, uint64_t vaddr, Dwarf_Die *chain, size_t n, size_t max,
		      int holders)
{
	Dwarf_Die child;

	if (n >= max || dwarf_child(parent, &child))
		return n;
	do {
		int tag = dwarf_tag(&child);

		if (is_holder(tag)) {
			size_t got = holders < 64 ?
				descend(&child, vaddr, chain, n, max, holders + 1) : n;

			if (got > n)
				return got;
		} else if (is_scope(tag) && dwarf_haspc(&child, vaddr) == 1) {
			chain[n] = child;
			return descend(&child, vaddr, chain, n + 1, max, holders);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return n;
}

/* Tags whose children may hold out-of-line functions. */
static bool may_hold_functions(int tag)
{
	return is_holder(tag) || tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
	       tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit;
}

static int list_functions(Dwarf_Die *parent, struct vec *fns, int depth)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(parent, &child))
		return 0;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				struct fn_range *r;

				if (hi <= lo)
					continue;
				r = vec__push(fns);
				if (!r)
					return -ENOMEM;
				*r = (struct fn_range){ lo, hi, dwarf_dieoffset(&child) };
			}
		}
		if (may_hold_functions(tag) && list_functions(&child, fns, depth + 1))
			return -ENOMEM;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* The out-of-line functions of unit cudie, listed at its first lookup. */
static const struct unit_fns *unit_functions(struct dwlines *dl, Dwarf_Die *cudie)
{
	const void *key = (const void *)(uintptr_t)(dwarf_dieoffset(cudie) + 1);
	struct unit_fns *u = dl->units ? hashmap__find(dl->units, key) : NULL;

	if (u || !dl->units)
		return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->fns = VEC_INIT(struct fn_range);
	if (list_functions(cudie, &u->fns, 0) || hashmap__set(dl->units, key, u, NULL)) {
		vec__free(&u->fns);
		free(u);
		return NULL;
	}
	if (u->fns.nr > 1) /* a unit of no function has no array: qsort(NULL) is UB */
		qsort(u->fns.data, u->fns.nr, sizeof(struct fn_range), cmp_fn);
	return u;
}

static unsigned long long fn_lo(const void *e)
{
	return ((const struct fn_range *)e)->lo;
}

/* The innermost out-of-line function holding vaddr: of those whose range
 * holds it (a GNU C nested function's code may sit inside its parent's
 * range), the smallest. */
static bool function_of(struct dwlines *dl, Dwarf_Die *cudie, uint64_t vaddr, Dwarf_Die *out)
{
	const struct unit_fns *u = unit_functions(dl, cudie);
	const struct fn_range *best = NULL;
	long i;

	if (!u)
		return false;
	i = bsearch_last_le(u->fns.data, u->fns.nr, u->fns.elem, vaddr, fn_lo);
	for (long k = 0; i >= 0 && k < 16; i--, k++) {
		const struct fn_range *r = vec__at(&u->fns, i);

		if (vaddr < r->hi && (!best || r->hi - r->lo < best->hi - best->lo))
			best = r;
	}
	return best && dwarf_offdie(dl->dw, best->die, out);
}

static bool is_frame(Dwarf_Die *die)
{
	int tag = dwarf_tag(die);

	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram;
}

#define MAX_SCOPES 256

/* The frames at vaddr into dl->scratch: the scopes that are functions,
 * innermost first, up to the real (not inlined) one. */
static size_t resolve(struct dwlines *dl, uint64_t vaddr)
{
	struct dw_frame cur = {};
	Dwarf_Die cudie, scopes[MAX_SCOPES];
	Dwarf_Line *ln;
	size_t n = 0, skip = 0, nscopes;
	int lineno;

	if (!unit_of(dl, vaddr, &cudie))
		return 0;
	ln = dwarf_getsrc_die(&cudie, vaddr);
	if (ln && !dwarf_lineno(ln, &lineno) && lineno > 0) {
		cur.file = full_path(dl, &cudie, dwarf_linesrc(ln, NULL, NULL));
		cur.line = lineno;
	}
	/* the real function, then the scopes inlined into it */
	nscopes = 0;
	if (function_of(dl, &cudie, vaddr, &scopes[0]))
		nscopes = descend(&scopes[0], vaddr, scopes, 1, MAX_SCOPES, 0);
	size_t first = 0;

	for (size_t i = first; i < nscopes; i++)
		skip += is_frame(&scopes[i]);
	/* a chain deeper than we keep loses its innermost frames */
	skip = skip > MAX_FRAMES ? skip - MAX_FRAMES : 0;
	for (size_t i = nscopes; i-- > first;) {
		if (!is_frame(&scopes[i]))
			continue;
		if (skip) {
			skip--;
		} else {
			fill_function(dl, &cudie, &cur, &scopes[i]);
			dl->scratch[n++] = cur;
		}
		if (i == first)
			break;
		cur = (struct dw_frame){};
		call_site(dl, &cudie, &scopes[i], &cur);
	}
	/* no function DIE (assembly): the line alone */
	if (!n && cur.line)
		dl->scratch[n++] = cur;
	return n;
}

static const struct answer *remember(struct dwlines *dl, uint64_t vaddr, size_t n)
{
	size_t size = sizeof(struct answer) + n * sizeof(struct dw_frame);
	struct answer *a;

	if (!dl->cache)
		return NULL;
	a = malloc(size);
	if (!a)
		return NULL;
	a->nr = n;
	memcpy(a->f, dl->scratch, n * sizeof(struct dw_frame));
	if (hashmap__set(dl->cache, (void *)(uintptr_t)(vaddr + 1), a, NULL)) {
		free(a);
		return NULL;
	}
	return a;
}

int dwlines__find(struct dwlines *dl, uint64_t vaddr, const struct dw_frame **frames, size_t *nr)
{
	const struct answer *a;
	size_t n;
	int err;

	*frames = NULL;
	*nr = 0;
	a = dl->cache ? hashmap__find(dl->cache, (void *)(uintptr_t)(vaddr + 1)) : NULL;
	if (!a && (!dl->cache || hashmap__size(dl->cache) >= CACHE_MAX)) {
		/* full: start again, strings too (the scratch answer about to be
		 * made is the only one that will use them); no map: answers
		 * are right, only not kept */
		cache_free(dl);
		strs_free(dl);
		dl->cache = hashmap__new(hashmap__hash_int, hashmap__equal_int);
		dl->strs = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	}
	if (!a) {
		/* libdw only for what the cache does not know */
		if (!dl->tried && (err = start(dl)))
			return err;
		if (!dl->dw)
			return -EINVAL;
		n = resolve(dl, vaddr);
		a = remember(dl, vaddr, n);
		if (!a) { /* not cached, still right */
			*frames = dl->scratch;
			*nr = n;
			return 0;
		}
	}
	*frames = a->f;
	*nr = a->nr;
	return 0;
}

bool dwlines__trim(struct dwlines *dl)
{
	/* a file whose DWARF could not be read stays as it is: trying again
	 * would only say so again each window */
	if (!dl->dw)
		return false;
	units_clear(dl);
	dl->units = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	dwarf_end(dl->dw);
	dl->dw = NULL;
	dl->tried = false;
	dl->indexed = false;
	vec__free(&dl->cus);
	dl->cus = VEC_INIT(struct cu_range);
	return true;
}
