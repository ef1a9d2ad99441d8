// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_plt.h"
#include "elf_syms.h"
#include "namepack.h"
#include "regfile.h"

/* A symbol as read, while the table is built. */
struct rawsym {
	uint64_t addr;
	uint64_t size;	  /* st_size; 0 for much hand-written asm */
	uint64_t scn_end; /* end of the symbol's section, or UINT64_MAX */
	const char *name; /* in the file's string table, read by libelf: valid
			   * until the file is closed; not terminated at len */
	uint32_t len;	  /* of the name as kept (see abi_len()) */
	unsigned char bind;
	bool from_symtab;
};

/* A symbol as kept: 16 bytes, for a compiler's or libLLVM's tens of
 * thousands (a profiler beside a build holds several such tables). */
struct sym {
	uint64_t addr;
	uint32_t len;  /* lookups stop at addr + len: see sym_len() */
	uint32_t name; /* ref in symtab->names */
};

struct seg {
	uint64_t off;
	uint64_t vaddr;
	uint64_t filesz;
};

/* Names are copied into a name set (compressed when large), so the ELF
 * file (and the copy of an in-memory image) is closed right after load: a
 * symtab pins no fd and no mapping however long the cache keeps it. */
struct symtab {
	struct sym *syms; /* sorted by addr, one per address */
	size_t nr;
	struct seg *segs;
	size_t nsegs;
	struct namepack *names; /* the kept symbols' names, each once */
	struct plt_table *plt;	/* PLT stubs' names (elf_plt.h), or NULL */
	char build_id[2 * 64 + 1];
	char debuglink[256]; /* .gnu_debuglink file name, "" if none */
	uint32_t debuglink_crc;
	bool has_symtab; /* a .symtab section with functions */
	bool has_debug_info; /* a .debug_info section with contents */
	bool maybe_go;	     /* a Go table (gopclntab.h) may be read */
	bool go;	     /* a Go binary (it has a .gopclntab) */
	char *path;	 /* loaded from; NULL for an image in memory */
};

/* elf_version() sets libelf-global state: once, even when two threads load
 * their first files at the same time. */
static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ok;

static void elf_init_once(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static int elf_init(void)
{
	pthread_once(&elf_once, elf_init_once);
	return elf_ok ? 0 : -ENOSYS;
}

static int read_segments(Elf *elf, struct symtab *st)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	st->segs = calloc(n ? n : 1, sizeof(*st->segs));
	if (!st->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		st->segs[st->nsegs++] = (struct seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	return 0;
}

/* Looks through one block of notes; true when it held a GNU build-ID,
 * written to hex (at least 2 * 64 + 1 bytes) as lowercase hex. */
static bool take_build_id(Elf_Data *data, char *hex)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const unsigned char *desc = (const unsigned char *)data->d_buf + desc_off;

		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) || !nh.n_descsz ||
		    nh.n_descsz > 64)
			continue;
		for (size_t i = 0; i < nh.n_descsz; i++)
			snprintf(hex + 2 * i, 3, "%02x", desc[i]);
		return true;
	}
	return false;
}

/* SHT_NOTE sections first; PT_NOTE segments when the section headers are
 * gone (sstrip, images rebuilt from memory), since the loader needs only
 * the program headers and such files still run. */
static bool read_build_id(Elf *elf, char *hex)
{
	Elf_Scn *scn = NULL;
	size_t n;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    take_build_id(elf_getdata(scn, NULL), hex))
			return true;
	}
	if (elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		Elf_Type type;
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		/* .note.gnu.property is 8-aligned, with 8-byte padding */
		type = ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
		if (take_build_id(elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, type), hex))
			return true;
	}
	return false;
}

/* .gnu_debuglink: a file name, NUL, padding to 4, then its CRC32. */
static void read_debuglink(Elf *elf, struct symtab *st)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *data;
		size_t len;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".gnu_debuglink"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || data->d_size < 8)
			return;
		len = strnlen(data->d_buf, data->d_size);
		if (len == 0 || len >= sizeof(st->debuglink) || ((len + 4) & ~3UL) + 4 > data->d_size)
			return;
		memcpy(st->debuglink, data->d_buf, len);
		st->debuglink[len] = '\0';
		memcpy(&st->debuglink_crc, (const char *)data->d_buf + ((len + 4) & ~3UL), 4);
		return;
	}
}

bool elf__has_contents(Elf *elf, const char *section)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, section))
			return true;
	}
	return false;
}

/* Where a size-0 symbol's reach stops when no symbol follows it. */
static uint64_t section_end(Elf *elf, const GElf_Sym *s)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (s->st_shndx >= SHN_LORESERVE) /* SHN_ABS, SHN_XINDEX: unknown */
		return UINT64_MAX;
	scn = elf_getscn(elf, s->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
	    s->st_value < sh.sh_addr)
		return UINT64_MAX;
	return sh.sh_addr + sh.sh_size;
}

/* Go's linker names an assembly function's ELF symbol with its ABI
 * ("runtime.goexit.abi0"); the Go table, Go's own pprof and delve do not:
 * without it, a stripped build (named from its table) and the unstripped
 * one read the same. The name's length without it. */
static size_t abi_len(const char *name, size_t n)
{
	return n > 5 && !strcmp(name + n - 5, ".abi0") ? n - 5 : n;
}

/* The table while it is built: every function symbol of both tables,
 * aliases and duplicates included. Their names stay where libelf read
 * them (libLLVM's are 3.4 MB: no second copy while the table is built). */
struct build {
	struct rawsym *syms; /* NULL: the first pass, which only counts */
	size_t nr;
};

/* Counts (b->syms == NULL) or collects the function symbols of one
 * symbol table section. */
static size_t scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct symtab *st,
			   struct build *b)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0, found = 0, len;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym s;
		const char *name;
		int type;

		if (!gelf_getsym(data, i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		len = name ? strlen(name) : 0;
		if (!len || len > UINT32_MAX)
			continue;
		found++;
		if (sh->sh_type == SHT_SYMTAB)
			st->has_symtab = true;
		if (!b->syms)
			continue;
		b->syms[b->nr++] = (struct rawsym){
			.addr = s.st_value,
			.size = s.st_size,
			.scn_end = section_end(elf, &s),
			.name = name,
			.len = st->go ? abi_len(name, len) : len,
			.bind = GELF_ST_BIND(s.st_info),
			.from_symtab = sh->sh_type == SHT_SYMTAB,
		};
	}
	return found;
}

/* Both tables: .dynsym alone names exported functions of stripped files,
 * and duplicates of .symtab entries fold away by address. */
static size_t scan_all(Elf *elf, struct symtab *st, struct build *b)
{
	Elf_Scn *scn = NULL;
	size_t found = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			found += scan_symbols(elf, scn, &sh, st, b);
	}
	return found;
}

/* Aliases at one address: one name is kept. .symtab before .dynsym (its
 * names carry versions), then global before weak before local, then the
 * shorter name, then by bytes: the same name every run, and "getppid" wins
 * over "__GI___getppid". */
static int bind_rank(unsigned char b)
{
	return b == STB_GLOBAL ? 0 : b == STB_WEAK ? 1 : 2;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct rawsym *x = a, *y = b;
	size_t lx, ly;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->from_symtab != y->from_symtab)
		return x->from_symtab ? -1 : 1;
	if (bind_rank(x->bind) != bind_rank(y->bind))
		return bind_rank(x->bind) - bind_rank(y->bind);
	lx = x->len;
	ly = y->len;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return memcmp(x->name, y->name, lx);
}

/* A sized symbol ends where it says: an address past it (padding, or code of
 * a function we have no name for, like a static one in a stripped file) is
 * unknown, not the previous function. A size-0 symbol (asm without .size)
 * reaches the next symbol, but not past the end of its own section. Beyond
 * 4 GiB nothing is a function's. */
static uint32_t sym_len(const struct rawsym *s, uint64_t next)
{
	uint64_t end = s->size ? s->addr + s->size : next < s->scn_end ? next : s->scn_end;

	return end - s->addr > UINT32_MAX ? UINT32_MAX : (uint32_t)(end - s->addr);
}

/* Aliases at one address fold into the first (the preferred name), which
 * takes the largest size among them. Returns how many are left. */
static size_t fold_aliases(struct build *b)
{
	size_t k = 0;

	for (size_t i = 0; i < b->nr; i++) {
		struct rawsym *keep = k ? &b->syms[k - 1] : NULL;

		if (keep && keep->addr == b->syms[i].addr) {
			if (b->syms[i].size > keep->size)
				keep->size = b->syms[i].size;
			continue;
		}
		b->syms[k++] = b->syms[i];
	}
	return k;
}

/* The kept symbols and only their names (an alias's, a .dynsym copy of a
 * .symtab name, are left behind with the build). */
static int keep_symbols(struct symtab *st, const struct build *b, size_t k)
{
	struct namepack_build nb;
	size_t len = 0;

	for (size_t i = 0; i < k; i++)
		len += b->syms[i].len + 1;
	st->syms = calloc(k ? k : 1, sizeof(*st->syms));
	if (!st->syms || namepack__begin(&nb, len))
		return -ENOMEM;
	for (size_t i = 0; i < k; i++) {
		const struct rawsym *r = &b->syms[i];

		st->syms[i] = (struct sym){
			.addr = r->addr,
			.len = sym_len(r, i + 1 < k ? b->syms[i + 1].addr : UINT64_MAX),
		};
		if (namepack__add(&nb, r->name, r->len, &st->syms[i].name))
			break;
	}
	st->nr = k;
	return namepack__finish(&nb, &st->names);
}

static int read_symbols(Elf *elf, struct symtab *st)
{
	struct build b = {};
	size_t n;
	int err = -ENOMEM;

	n = scan_all(elf, st, &b); /* first pass: how many */
	b.syms = calloc(n ? n : 1, sizeof(*b.syms));
	if (b.syms) {
		scan_all(elf, st, &b);
		qsort(b.syms, b.nr, sizeof(*b.syms), cmp_sym);
		err = keep_symbols(st, &b, fold_aliases(&b));
	}
	free(b.syms);
	return err;
}

/* A Go binary's table is its .gopclntab (.data.rel.ro.gopclntab in a PIE);
 * with no section headers at all (sstrip), it can only be found by its
 * header, so such a file is worth the look too. */
static bool has_go_table(Elf *elf)
{
	return elf__has_contents(elf, ".gopclntab") ||
	       elf__has_contents(elf, ".data.rel.ro.gopclntab");
}

static bool no_sections(Elf *elf)
{
	size_t nsec;

	return elf_getshdrnum(elf, &nsec) || nsec == 0;
}

static const char *find_symbol(const struct symtab *st, uint64_t vaddr, uint64_t *sym_off);

/* The IFUNC whose resolver is at vaddr: a PLT stub bound through it is
 * named after it. */
static const char *ifunc_name(const void *ctx, uint64_t vaddr)
{
	uint64_t off = 1;
	const char *name = find_symbol(ctx, vaddr, &off);

	return off ? NULL : name;
}

/* A table with only what finds the file's debug file: build-ID and
 * .gnu_debuglink (symtab__load_ids; load_elf reads the rest). */
static int load_ids(Elf *elf, struct symtab **out)
{
	struct symtab *st;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	read_build_id(elf, st->build_id);
	read_debuglink(elf, st);
	*out = st;
	return 0;
}

/* fd: the file elf reads (-1: an image in memory). */
static int load_elf(Elf *elf, int fd, struct symtab **out)
{
	struct symtab *st;
	int err;

	err = load_ids(elf, &st);
	if (err)
		return err;
	err = read_segments(elf, st);
	if (err)
		goto err_free;
	st->go = has_go_table(elf);
	st->maybe_go = st->go || no_sections(elf);
	err = read_symbols(elf, st);
	if (!err)
		err = elf_plt__read(elf, fd, &(struct plt_names){ .name_at = ifunc_name, .ctx = st },
				    &st->plt);
	if (err)
		goto err_free;
	st->has_debug_info = elf__has_contents(elf, ".debug_info");
	*out = st;
	return 0;

err_free:
	symtab__free(st);
	return err;
}

/* Opens path as ELF and calls fn on it and its descriptor (fn gets NULL
 * when libelf cannot read it). */
static int with_elf(const char *path, int (*fn)(Elf *elf, int fd, void *arg), void *arg)
{
	Elf *elf;
	int fd, err;

	err = elf_init();
	if (err)
		return err;
	fd = regfile__open(path, 0, NULL);
	if (fd < 0)
		return fd == -EINVAL ? -ENOEXEC : fd;
	/* Read, not mapped: the file belongs to someone else, who can truncate
	 * it while we parse, and a read past the end of a mapping is SIGBUS.
	 * libelf reads the headers now and each section as it is asked for:
	 * as fast as the mapping here (10 ms for libLLVM's 110 MB either way). */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	err = fn(elf, fd, arg);
	elf_end(elf);
	close(fd);
	return err;
}

struct id_out {
	char *hex;
	size_t size;
};

static int take_id(Elf *elf, int fd, void *arg)
{
	struct id_out *o = arg;
	char id[2 * 64 + 1] = "";

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return -ENOEXEC;
	if (!read_build_id(elf, id))
		return -ENOENT;
	if ((size_t)snprintf(o->hex, o->size, "%s", id) >= o->size)
		return -ENAMETOOLONG;
	return 0;
}

int elf_build_id__read(const char *path, char *hex, size_t size)
{
	return with_elf(path, take_id, &(struct id_out){ hex, size });
}

static int take_symtab(Elf *elf, int fd, void *out)
{
	/* elf_begin() fails (NULL) on what it cannot read: -ENOEXEC too */
	return load_elf(elf, fd, out);
}

static int take_ids(Elf *elf, int fd, void *out)
{
	return load_ids(elf, out);
}

static int load_path(const char *path, int (*fn)(Elf *elf, int fd, void *arg),
		     struct symtab **out)
{
	int err = with_elf(path, fn, out);

	if (!err && !((*out)->path = strdup(path))) {
		symtab__free(*out);
		return -ENOMEM;
	}
	return err;
}

int symtab__load(const char *path, struct symtab **out)
{
	return load_path(path, take_symtab, out);
}

int symtab__load_ids(const char *path, struct symtab **out)
{
	return load_path(path, take_ids, out);
}

int symtab__load_mem(const void *buf, size_t size, struct symtab **out)
{
	void *copy;
	Elf *elf;
	int err;

	err = elf_init();
	if (err)
		return err;
	/* elf_memory() takes a writable buffer it may convert in place; the
	 * caller's (the vDSO) is read-only and shared. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, size);
	elf = elf_memory(copy, size);
	err = load_elf(elf, -1, out);
	elf_end(elf);
	free(copy);
	return err;
}

size_t symtab__mem_bytes(const struct symtab *st)
{
	if (!st)
		return 0;
	return sizeof(*st) + st->nr * sizeof(*st->syms) + st->nsegs * sizeof(*st->segs) +
	       namepack__bytes(st->names) + plt_table__bytes(st->plt);
}

void symtab__free(struct symtab *st)
{
	if (!st)
		return;
	free(st->syms);
	free(st->segs);
	namepack__free(st->names);
	plt_table__free(st->plt);
	free(st->path);
	free(st);
}

static const char *find_symbol(const struct symtab *st, uint64_t vaddr, uint64_t *sym_off)
{
	size_t lo = 0, hi = st->nr;
	const struct sym *s;

	/* the first symbol above vaddr; only the one before can hold it */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &st->syms[lo - 1];
	if (vaddr - s->addr >= s->len)
		return NULL;
	if (sym_off)
		*sym_off = vaddr - s->addr;
	return namepack__get(st->names, s->name);
}

/* The function symbol holding vaddr, else the PLT stub. */
const char *symtab__find(const struct symtab *st, uint64_t vaddr, uint64_t *sym_off)
{
	const char *name = find_symbol(st, vaddr, sym_off);

	return name ? name : plt_table__find(st->plt, vaddr, sym_off);
}

int symtab__off_to_vaddr(const struct symtab *st, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct seg *g = &st->segs[i];

		if (off >= g->off && off < g->off + g->filesz) {
			*vaddr = off - g->off + g->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

const char *symtab__build_id(const struct symtab *st)
{
	return st->build_id[0] ? st->build_id : NULL;
}

size_t symtab__nr_syms(const struct symtab *st)
{
	return st->nr;
}

bool symtab__has_symtab(const struct symtab *st)
{
	return st->has_symtab;
}

const char *symtab__debuglink(const struct symtab *st, uint32_t *crc)
{
	if (!st->debuglink[0])
		return NULL;
	if (crc)
		*crc = st->debuglink_crc;
	return st->debuglink;
}

bool symtab__has_debug_info(const struct symtab *st)
{
	return st->has_debug_info;
}

bool symtab__maybe_go(const struct symtab *st)
{
	return st->maybe_go && st->path;
}

const char *symtab__path(const struct symtab *st)
{
	return st->path;
}

int symtab__adopt_layout(struct symtab *debug, const struct symtab *orig)
{
	bool take_plt = orig->plt && !debug->plt;
	struct plt_table *plt = take_plt ? plt_table__dup(orig->plt) : NULL;
	struct seg *segs;

	/* A debug file's own program headers may be stripped of content;
	 * the binary's are the truth for offsets. Its PLT has no contents. */
	segs = calloc(orig->nsegs ? orig->nsegs : 1, sizeof(*segs));
	if (!segs || (take_plt && !plt)) {
		free(segs);
		plt_table__free(plt);
		return -ENOMEM;
	}
	if (take_plt)
		debug->plt = plt;
	memcpy(segs, orig->segs, orig->nsegs * sizeof(*segs));
	free(debug->segs);
	debug->segs = segs;
	debug->nsegs = orig->nsegs;
	return 0;
}
