// SPDX-License-Identifier: GPL-2.0
/*
 * PLT stubs named from the file itself (x86-64). A stub jumps through its
 * GOT slot (jmp *disp32(%rip)), and the dynamic relocation on that slot
 * names the function: JUMP_SLOT in .rela.plt for .plt and .plt.sec,
 * GLOB_DAT for .plt.got. An IBT build's lazy stubs (the .plt beside a
 * .plt.sec) jump to PLT0 instead, after pushing their index in .rela.plt.
 * A stub neither names (PLT0, the lazy binder's trampoline) is "[plt]":
 * still not its caller, and still one place in the profile.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_plt.h"
#include "vec.h"

struct plt_stub {
	uint64_t addr;
	uint32_t size;
	uint32_t name; /* offset among the names after the stubs */
};

/* One block: the stubs sorted by address, then their names. */
struct plt_table {
	size_t nr;
	size_t bytes; /* of the whole block */
	struct plt_stub stubs[];
};

/* A GOT slot and the function its relocation names: by its symbol, or
 * for an IRELATIVE one (libc's calls to its own memcpy) by the address of
 * the IFUNC resolver it is bound with. */
struct slot {
	uint64_t got;
	const char *name; /* in the file's string table: valid while it is open */
	uint64_t resolver;
};

/* What is read while the file is open. */
struct plt_read {
	Elf *elf;
	int fd; /* the file elf reads; -1: an image in memory */
	const struct plt_names *ifunc;
	size_t shstrndx;
	struct vec slots; /* struct slot, sorted by got */
	struct vec jump;  /* const char *: .rela.plt's names by index, NULL too */
	struct vec stubs; /* struct plt_stub */
	struct vec names; /* char */
};

#define PLT_UNNAMED "[plt]"

static const char *scn_name(const struct plt_read *r, const GElf_Shdr *sh)
{
	const char *name = elf_strptr(r->elf, r->shstrndx, sh->sh_name);

	return name ? name : "";
}

/* The name of symbol symi in the symbol table the relocations refer to. */
static const char *reloc_name(Elf *elf, const GElf_Shdr *rsh, size_t symi)
{
	Elf_Scn *scn = elf_getscn(elf, rsh->sh_link);
	Elf_Data *d;
	GElf_Shdr sh;
	GElf_Sym s;

	if (!symi || !scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d || !gelf_getsym(d, symi, &s))
		return NULL;
	return elf_strptr(elf, sh.sh_link, s.st_name);
}

static int add_reloc(struct plt_read *r, const GElf_Shdr *sh, const GElf_Rela *rela,
		     bool jump_table)
{
	unsigned int type = GELF_R_TYPE(rela->r_info);
	bool irelative = type == R_X86_64_IRELATIVE && rela->r_addend > 0;
	const char *name = NULL;
	struct slot *s;
	const char **j;

	if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT)
		name = reloc_name(r->elf, sh, GELF_R_SYM(rela->r_info));
	if (name && !*name)
		name = NULL;
	if (name || irelative) {
		s = vec__push(&r->slots);
		if (!s)
			return -ENOMEM;
		*s = (struct slot){ .got = rela->r_offset, .name = name,
				    .resolver = irelative ? rela->r_addend : 0 };
	}
	if (!jump_table)
		return 0;
	j = vec__push(&r->jump);
	if (!j)
		return -ENOMEM;
	*j = type == R_X86_64_JUMP_SLOT ? name : NULL;
	return 0;
}

/* A file's relocations read a chunk at a time, not as one Elf_Data:
 * libelf keeps a read file's sections in memory until elf_end, and
 * libLLVM's .rela.dyn (its RELATIVE ones) is 8.5 MB, a transient that put
 * an agent beside a build over its memory bound. x86-64's own layout
 * (Elf64_Rela, little-endian), checked by the caller. */
#define RELA_CHUNK 2048

static int read_relocs_fd(struct plt_read *r, const GElf_Shdr *sh, bool jump_table)
{
	Elf64_Rela *buf = malloc(RELA_CHUNK * sizeof(*buf));
	size_t n = sh->sh_size / sizeof(*buf), got = 0;
	int err = buf ? 0 : -ENOMEM;

	while (!err && got < n) {
		size_t want = n - got < RELA_CHUNK ? n - got : RELA_CHUNK;
		ssize_t rd = pread(r->fd, buf, want * sizeof(*buf),
				   sh->sh_offset + got * sizeof(*buf));

		if (rd < (ssize_t)sizeof(*buf))
			break; /* the file shrank: what was read names what it can */
		for (size_t i = 0; !err && i < (size_t)rd / sizeof(*buf); i++)
			err = add_reloc(r, sh, &(GElf_Rela){ buf[i].r_offset, buf[i].r_info,
							     buf[i].r_addend }, jump_table);
		got += rd / sizeof(*buf);
	}
	free(buf);
	return err;
}

static int read_relocs(struct plt_read *r, Elf_Scn *scn, const GElf_Shdr *sh)
{
	bool jump_table = !strcmp(scn_name(r, sh), ".rela.plt");
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	Elf_Data *d;

	if (r->fd >= 0 && sh->sh_entsize == sizeof(Elf64_Rela))
		return read_relocs_fd(r, sh, jump_table);
	d = elf_getdata(scn, NULL);
	for (size_t i = 0; d && i < n; i++) {
		GElf_Rela rela;

		if (!gelf_getrela(d, i, &rela))
			break;
		if (add_reloc(r, sh, &rela, jump_table))
			return -ENOMEM;
	}
	return 0;
}

static unsigned long long slot_key(const void *e)
{
	return ((const struct slot *)e)->got;
}

static const char *slot_name(const struct plt_read *r, uint64_t got)
{
	long i = bsearch_last_le(r->slots.data, r->slots.nr, sizeof(struct slot), got, slot_key);
	const struct slot *s = i < 0 ? NULL : vec__at(&r->slots, i);

	if (!s || s->got != got)
		return NULL;
	if (!s->name && s->resolver && r->ifunc)
		return r->ifunc->name_at(r->ifunc->ctx, s->resolver);
	return s->name;
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool is_endbr64(const unsigned char *b, size_t len)
{
	return len >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa;
}

/* The function a stub of len bytes at addr reaches: through the GOT slot
 * its jmp reads, else by the .rela.plt index it pushes (at its start, or
 * after its endbr64). */
static const char *stub_target(const struct plt_read *r, const unsigned char *b, size_t len,
			       uint64_t addr)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		const char *name;

		if (b[i] != 0xff || b[i + 1] != 0x25)
			continue;
		name = slot_name(r, addr + i + 6 + (int32_t)le32(b + i + 2));
		if (name)
			return name;
	}
	for (size_t i = 0; i <= 4 && i + 5 <= len; i += 4) {
		uint32_t k;

		if (b[i] != 0x68 || (i && !is_endbr64(b, len)))
			continue;
		k = le32(b + i + 1);
		if (k < r->jump.nr)
			return *(const char **)vec__at(&r->jump, k);
	}
	return NULL;
}

static int add_stub(struct plt_read *r, uint64_t addr, uint32_t size, const char *name)
{
	size_t at = r->names.nr;
	struct plt_stub *s;
	int err;

	if (name) {
		err = vec__append(&r->names, name, strlen(name));
		if (!err)
			err = vec__append(&r->names, "@plt", sizeof("@plt"));
	} else {
		err = vec__append(&r->names, PLT_UNNAMED, sizeof(PLT_UNNAMED));
	}
	s = err || at > UINT32_MAX ? NULL : vec__push(&r->stubs);
	if (!s)
		return -ENOMEM;
	*s = (struct plt_stub){ .addr = addr, .size = size, .name = at };
	return 0;
}

/* Every entry of one PLT section, at its entry size (16 bytes; 8 for a
 * .plt.got without IBT). */
static int read_stubs(struct plt_read *r, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	uint64_t ent = sh->sh_entsize >= 8 && sh->sh_entsize <= 32 ? sh->sh_entsize : 16;

	for (uint64_t off = 0; d && d->d_buf && off + ent <= d->d_size; off += ent) {
		const unsigned char *b = (const unsigned char *)d->d_buf + off;

		if (add_stub(r, sh->sh_addr + off, ent, stub_target(r, b, ent, sh->sh_addr + off)))
			return -ENOMEM;
	}
	return 0;
}

static bool is_plt(const struct plt_read *r, const GElf_Shdr *sh)
{
	const char *name = scn_name(r, sh);

	return sh->sh_type == SHT_PROGBITS && (sh->sh_flags & SHF_EXECINSTR) &&
	       (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got"));
}

/* The relocations first: the stubs are named from them. */
static int read_sections(struct plt_read *r, bool stubs)
{
	Elf_Scn *scn = NULL;
	int err = 0;

	while (!err && (scn = elf_nextscn(r->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (!stubs && sh.sh_type == SHT_RELA)
			err = read_relocs(r, scn, &sh);
		else if (stubs && is_plt(r, &sh))
			err = read_stubs(r, scn, &sh);
	}
	return err;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

static int cmp_stub(const void *a, const void *b)
{
	const struct plt_stub *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static const char *names_of(const struct plt_table *t)
{
	return (const char *)&t->stubs[t->nr];
}

static int pack(struct plt_read *r, struct plt_table **out)
{
	size_t head = sizeof(struct plt_table) + r->stubs.nr * sizeof(struct plt_stub);
	struct plt_table *t = malloc(head + r->names.nr);

	if (!t)
		return -ENOMEM;
	t->nr = r->stubs.nr;
	t->bytes = head + r->names.nr;
	memcpy(t->stubs, r->stubs.data, r->stubs.nr * sizeof(struct plt_stub));
	memcpy((char *)t + head, r->names.data, r->names.nr);
	qsort(t->stubs, t->nr, sizeof(*t->stubs), cmp_stub);
	*out = t;
	return 0;
}

int elf_plt__read(Elf *elf, int fd, const struct plt_names *ifunc, struct plt_table **out)
{
	struct plt_read r = {
		.elf = elf,
		.fd = fd,
		.ifunc = ifunc,
		.slots = VEC_INIT(struct slot),
		.jump = VEC_INIT(const char *),
		.stubs = VEC_INIT(struct plt_stub),
		.names = VEC_INIT(char),
	};
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, &r.shstrndx))
		return 0;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		r.fd = -1; /* not x86-64's own layout: libelf converts it */
	err = read_sections(&r, false);
	if (!err && r.slots.nr)
		qsort(r.slots.data, r.slots.nr, sizeof(struct slot), cmp_slot);
	if (!err)
		err = read_sections(&r, true);
	if (!err && r.stubs.nr)
		err = pack(&r, out);
	vec__free(&r.slots);
	vec__free(&r.jump);
	vec__free(&r.stubs);
	vec__free(&r.names);
	return err;
}

static unsigned long long stub_key(const void *e)
{
	return ((const struct plt_stub *)e)->addr;
}

const char *plt_table__find(const struct plt_table *t, uint64_t vaddr, uint64_t *off)
{
	long i = t ? bsearch_last_le(t->stubs, t->nr, sizeof(*t->stubs), vaddr, stub_key) : -1;

	if (i < 0 || vaddr - t->stubs[i].addr >= t->stubs[i].size)
		return NULL;
	if (off)
		*off = vaddr - t->stubs[i].addr;
	return names_of(t) + t->stubs[i].name;
}

struct plt_table *plt_table__dup(const struct plt_table *t)
{
	struct plt_table *c = t ? malloc(t->bytes) : NULL;

	if (c)
		memcpy(c, t, t->bytes);
	return c;
}

size_t plt_table__bytes(const struct plt_table *t)
{
	return t ? t->bytes : 0;
}

void plt_table__free(struct plt_table *t)
{
	free(t);
}
