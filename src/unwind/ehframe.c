// SPDX-License-Identifier: GPL-2.0
/*
 * .eh_frame and .debug_frame to unwind rows. The functions of .eh_frame
 * come from .eh_frame_hdr's sorted table (found through PT_GNU_EH_FRAME, so
 * a stripped file has it too); .debug_frame has no such table, so its FDEs
 * are read one after the other (dwarf_next_cfi), and only those for code
 * .eh_frame does not cover are kept. libdw runs each function's CFA
 * program, from whichever section it came: dwarf_cfi_addrframe gives the
 * row at an address and the range it covers, so stepping from range to
 * range lists the function's rows. Identical neighbours are merged.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ehframe.h"
#include "log.h"
#include "regfile.h"
#include "vec.h"

/* DWARF register numbers on x86_64. */
#define DW_REG_RBP 6
#define DW_REG_RSP 7
#define DW_REG_RA 16

/* Where a function's CFI is. */
enum func_src {
	SRC_EH = 0,	/* .eh_frame */
	SRC_DEBUG,	/* .debug_frame, the file's own or its debug file's */
	NR_SRC,
};

/* A function as its FDE covers it, in 16 bytes (a build lists every
 * function of the file: 95,000 for libLLVM). */
struct func {
	uint64_t start;
	uint32_t len; /* .debug_frame: its FDE's range; .eh_frame: what its rows
		       * cover, once read (0 before); capped at UINT32_MAX */
	int32_t fde;  /* .eh_frame: the FDE's address less .eh_frame_hdr's, as
		       * the header's table has it; FDE_DEBUG: .debug_frame's */
};

#define FDE_DEBUG INT32_MIN

static enum func_src func_src(const struct func *f)
{
	return f->fde == FDE_DEBUG ? SRC_DEBUG : SRC_EH;
}

static uint32_t cap_len(uint64_t len)
{
	return len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
}

/* A function's range as EHFRAME_FUNCS_ONLY keeps it: 12 bytes, not a
 * struct func's 16 (cc1, libLLVM and libclang-cpp have 45,000 to 95,000
 * functions each, and a profiler beside a build holds all three). */
struct frange {
	uint64_t start;
	uint32_t len;
} __attribute__((packed));

#define EHFRAME_PLT_SECS 4

struct ehframe {
	struct vec rows;  /* struct bpfs_unwind_row, sorted by pc */
	struct vec funcs; /* struct func, sorted by start; emptied into
			   * ranges once built with EHFRAME_FUNCS_ONLY */
	struct frange *ranges;
	size_t nr_ranges;
	const struct ehframe_sink *sink; /* rows handed on, not kept */
	size_t handed;			 /* rows handed on so far */
	struct vec segs;  /* struct ehframe_seg */
	uint64_t hdr_vaddr; /* .eh_frame_hdr's: struct func's fde is against it */
	struct ehframe_stats stats;
	bool funcs_only;  /* EHFRAME_FUNCS_ONLY: no rows kept */
	/* the PLT sections' [start, end): jumps, no calls (fp_row) */
	uint64_t plt[EHFRAME_PLT_SECS][2];
	size_t nr_plt;
};

/* .eh_frame_hdr encodings (LSB "Exception Frame Header"). */
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30

static bool (*cancel_fn)(void);

void ehframe__set_cancel(bool (*fn)(void))
{
	cancel_fn = fn;
}

static int32_t rd_s32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The function starts listed in .eh_frame_hdr, sorted. Only the encodings
 * every x86_64 toolchain writes (sdata4 relative to the header) are read. */
static int read_hdr_table(Elf *elf, struct vec *funcs, uint64_t *hdr_vaddr)
{
	const unsigned char *p;
	GElf_Phdr ph, *hdr = NULL;
	uint32_t count;
	Elf_Data *d;
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_GNU_EH_FRAME) {
			hdr = &ph;
			break;
		}
	}
	if (!hdr)
		return -ENOENT;
	d = elf_getdata_rawchunk(elf, hdr->p_offset, hdr->p_filesz, ELF_T_BYTE);
	if (!d || d->d_size < 12)
		return -EINVAL;
	p = d->d_buf;
	if (p[0] != 1 || (p[1] & 0x0f) != DW_EH_PE_sdata4 ||
	    p[2] != DW_EH_PE_udata4 || p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -ENOTSUP;
	memcpy(&count, p + 8, sizeof(count));
	if ((uint64_t)count * 8 > d->d_size - 12)
		return -EINVAL;
	if (vec__reserve(funcs, count))
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct func *f = vec__push(funcs);

		f->start = hdr->p_vaddr + (int64_t)rd_s32(p + 12 + 8 * i);
		f->fde = rd_s32(p + 16 + 8 * i);
		f->len = 0;
		if (f->fde == FDE_DEBUG)
			return -EINVAL; /* 2 GiB below the header: not an FDE */
	}
	*hdr_vaddr = hdr->p_vaddr;
	return 0;
}

static int read_segs(Elf *elf, struct vec *segs)
{
	GElf_Phdr ph;
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct ehframe_seg *s;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		s = vec__push(segs);
		if (!s)
			return -ENOMEM;
		s->offset = ph.p_offset;
		s->vaddr = ph.p_vaddr;
		s->filesz = ph.p_filesz;
	}
	return 0;
}

/* Whether ops is the PLT's CFA expression (binutils writes it for .plt):
 * rsp + 8 + ((((rip & 15) >= N)) << 3). *thr gets N. */
static bool plt_expr(const Dwarf_Op *ops, size_t nops, int32_t *thr)
{
	if (nops != 9 || ops[0].atom != DW_OP_breg7 || ops[0].number != 8 ||
	    ops[1].atom != DW_OP_breg16 || ops[1].number != 0 || ops[2].atom != DW_OP_lit15 ||
	    ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31 ||
	    ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl ||
	    ops[8].atom != DW_OP_plus)
		return false;
	*thr = ops[4].atom - DW_OP_lit0;
	return true;
}

/* A register saved at CFA + off: libdw spells it call_frame_cfa, then
 * plus_uconst (a two's complement offset) when off is not 0. */
static bool saved_at_cfa(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* The row at pc described by frame. */
static void make_row(Dwarf_Frame *fr, uint64_t pc, struct bpfs_unwind_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off;
	int32_t thr;

	memset(r, 0, sizeof(*r));
	r->pc = pc;
	r->cfa_type = BPFS_CFA_NONE;
	/* the return address first: undefined marks the outermost frame */
	if (dwarf_frame_register(fr, DW_REG_RA, mem, &ops, &nops))
		return;
	if (nops == 0 && ops == mem) {
		r->cfa_type = BPFS_CFA_END;
		return;
	}
	if (!saved_at_cfa(ops, nops, &off) || off != -8)
		return;
	if (dwarf_frame_cfa(fr, &ops, &nops))
		return;
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == DW_REG_RSP || ops[0].number == DW_REG_RBP) &&
	    (int64_t)ops[0].number2 >= INT32_MIN && (int64_t)ops[0].number2 <= INT32_MAX) {
		r->cfa_type = ops[0].number == DW_REG_RSP ? BPFS_CFA_RSP : BPFS_CFA_RBP;
		r->cfa_off = (int32_t)ops[0].number2;
	} else if (plt_expr(ops, nops, &thr)) {
		r->cfa_type = BPFS_CFA_PLT;
		r->cfa_off = thr;
	} else {
		return;
	}
	if (dwarf_frame_register(fr, DW_REG_RBP, mem, &ops, &nops))
		return;
	if (nops && saved_at_cfa(ops, nops, &off) && !(off & 7) && off / 8 >= INT16_MIN &&
	    off / 8 <= INT16_MAX) {
		r->rbp_type = BPFS_RBP_CFA;
		r->rbp_off = (int16_t)(off / 8);
	}
	/* anything else: the caller's rbp is ours, or cannot be had; a later
	 * rbp-based CFA is then checked by the walk (the stack must rise) */
}

static bool same_rule(const struct bpfs_unwind_row *a, const struct bpfs_unwind_row *b)
{
	return a->cfa_type == b->cfa_type && a->cfa_off == b->cfa_off &&
	       a->rbp_type == b->rbp_type && a->rbp_off == b->rbp_off;
}

/*
 * A row where no call is made, or whose step is the frame-pointer step:
 * the body of a function with a frame (CFA = rbp + 16, rbp saved at
 * CFA - 16: the step reads the return address at rbp + 8 and the caller's
 * rbp at rbp, as a frame-pointer step does); its prologue and epilogue
 * (CFA = rsp + 8, or rsp + 16 once rbp is pushed: a call needs the stack
 * 16-aligned and the frame set up, so no return address points there,
 * only a sample's innermost frame, which the walk looks up); the
 * outermost frame's; the PLT's (jumps). Anything else (a function that
 * calls without a frame: glibc's, a crt stub's sub $8, %rsp) may hold a
 * return address the step would walk wrong; so may a rule this reader
 * does not know, inside a function (stats.unsupported: ehframe_stats__fp
 * counts it too).
 */
static bool fp_row(const struct ehframe *t, const struct bpfs_unwind_row *r)
{
	bool pushed = r->rbp_type == BPFS_RBP_CFA && r->rbp_off == -2;

	for (size_t i = 0; i < t->nr_plt; i++)
		if (r->pc >= t->plt[i][0] && r->pc < t->plt[i][1])
			return true;
	switch (r->cfa_type) {
	case BPFS_CFA_NONE: /* between functions (inside one: stats.unsupported) */
	case BPFS_CFA_END:
	case BPFS_CFA_PLT:
		return true;
	case BPFS_CFA_RBP:
		return r->cfa_off == 16 && pushed;
	case BPFS_CFA_RSP:
		return r->cfa_off == 8 || (r->cfa_off == 16 && pushed);
	default:
		return false;
	}
}

/* Counts the final rows a frame-pointer step would walk wrong. */
static void count_not_fp(struct ehframe *t, const struct bpfs_unwind_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		t->stats.not_fp += !fp_row(t, &rows[i]);
}

/* Hands the first n rows kept to the sink, and forgets them. */
static int hand_on(struct ehframe *t, size_t n)
{
	int err = 0;

	count_not_fp(t, t->rows.data, n);
	if (t->sink->fn && n)
		err = t->sink->fn(t->sink->ctx, t->handed, t->rows.data, n);
	memmove(t->rows.data, vec__at(&t->rows, n), (t->rows.nr - n) * t->rows.elem);
	t->rows.nr -= n;
	t->handed += n;
	return err;
}

static int add_row(struct ehframe *t, const struct bpfs_unwind_row *r)
{
	struct bpfs_unwind_row *last = t->rows.nr ? vec__at(&t->rows, t->rows.nr - 1) : NULL, *n;

	if (t->funcs_only)
		return 0;
	if (last && same_rule(last, r))
		return 0;
	if (last && last->pc == r->pc) { /* an empty range: the later rule wins */
		*last = *r;
		return 0;
	}
	n = vec__push(&t->rows);
	if (!n)
		return -ENOMEM;
	*n = *r;
	/* the last stays: a later row at its pc, or of its rule, changes it */
	if (t->sink && t->rows.nr > t->sink->chunk)
		return hand_on(t, t->rows.nr - 1);
	return 0;
}

/*
 * .eh_frame read in one pass per function. libdw's dwarf_cfi_addrframe
 * answers for one address: it finds the FDE in a search tree and runs its
 * CFA program from the start up to that address, so listing a function's
 * rows ran the program once per row (glibc: 28k rows, 37 ms). Here each
 * FDE (found through .eh_frame_hdr's table) is run once, and a row is
 * made at every advance of the location, as libdw would report it: the
 * same rows, checked row for row against libdw over the system's
 * libraries (tests/unit/test_ehframe.c). What this reader does not know
 * (a CFA expression such as the PLT's, DW_CFA_set_loc, an augmentation
 * without 'z', a pointer encoding other than absolute or pc-relative, an
 * FDE whose start is not the table's) sends the function to libdw.
 */
#define DW_EH_PE_omit 0xff
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata8 0x0c

enum rule {
	RULE_UNDEF = 0, /* also unspecified: not in the CIE or the FDE */
	RULE_SAME,
	RULE_OFFSET,	/* saved at CFA + off */
	RULE_OTHER,	/* in a register, an expression, CFA + off as a value */
};

struct reg_rule {
	enum rule how;
	int64_t off;
};

/* The rules a row is made of: the CFA (a register plus an offset; -1: not
 * set; CFA_REG_PLT: the PLT's expression, cfa_off its threshold), the
 * return address's and rbp's. */
#define CFA_REG_PLT (-2)

struct cfa_state {
	int64_t cfa_reg;
	int64_t cfa_off;
	struct reg_rule ra, rbp;
};

#define CIE_CACHE 16
#define CFA_STACK 16

struct cie_info {
	uint64_t off;	 /* in .eh_frame */
	uint8_t fde_enc; /* how the FDE's pointers are encoded ('R') */
	uint8_t used;
	uint64_t caf;	 /* code alignment factor */
	int64_t daf;	 /* data alignment factor */
	struct cfa_state init; /* after the initial instructions */
};

struct eh_direct {
	Elf_Data *d; /* .eh_frame's bytes */
	uint64_t vaddr;
	unsigned char ident[EI_NIDENT];
	struct cie_info cies[CIE_CACHE];
	size_t ncies, next_slot;
};

struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

/* A LEB128 number, sign-extended when sign. */
static uint64_t rd_leb(struct cursor *c, bool sign)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (c->p < c->end) {
		uint8_t b = *c->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (sign && shift < 64 && (b & 0x40))
				v |= ~0ULL << shift;
			return v;
		}
	}
	c->bad = true;
	return 0;
}

static uint64_t rd_uleb(struct cursor *c)
{
	return rd_leb(c, false);
}

static int64_t rd_sleb(struct cursor *c)
{
	return (int64_t)rd_leb(c, true);
}

/* An offset the CIE's data alignment factor scales: a product that would
 * not fit makes the program bad, like any other unreadable operand. */
static int64_t rd_data(struct cursor *c, bool is_signed, int64_t daf)
{
	int64_t v = is_signed ? rd_sleb(c) : (int64_t)rd_uleb(c), off;

	if (__builtin_mul_overflow(v, daf, &off)) {
		c->bad = true;
		return 0;
	}
	return off;
}

static uint64_t rd_fixed(struct cursor *c, size_t n, bool sign)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	for (size_t k = 0; k < n; k++)
		v |= (uint64_t)c->p[k] << (8 * k);
	if (sign && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ULL << (8 * n);
	c->p += n;
	return v;
}

/* A pointer encoded as enc at the cursor; pcrel against its own address in
 * the section. false: an encoding this reader leaves to libdw. */
static bool rd_ptr(const struct eh_direct *eh, struct cursor *c, uint8_t enc, bool apply,
		   uint64_t *v)
{
	uint64_t at = eh->vaddr + (uint64_t)(c->p - (const uint8_t *)eh->d->d_buf);

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		*v = rd_fixed(c, 8, false);
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		*v = rd_fixed(c, 2, (enc & 0x0f) == DW_EH_PE_sdata2);
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		*v = rd_fixed(c, 4, (enc & 0x0f) == DW_EH_PE_sdata4);
		break;
	case DW_EH_PE_uleb128:
		*v = rd_uleb(c);
		break;
	case DW_EH_PE_sleb128:
		*v = (uint64_t)rd_sleb(c);
		break;
	default:
		return false;
	}
	if (c->bad || !apply)
		return !c->bad;
	switch (enc & 0x70) {
	case 0:
		return !(enc & 0x80);
	case DW_EH_PE_pcrel:
		*v += at;
		return !(enc & 0x80);
	default:
		return false;
	}
}

/* The PLT's CFA expression as binutils writes it for .plt and .plt.sec,
 * byte for byte (plt_expr reads it from libdw): rsp + 8 + (((rip & 15) >=
 * N) << 3), N a literal. true with *thr = N, the cursor past it; false
 * for any other expression (the function goes to libdw). */
static bool plt_bytes(struct cursor *c, int64_t *thr)
{
	static const uint8_t want[] = { DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and,
					0 /* DW_OP_litN */, DW_OP_ge, DW_OP_lit3, DW_OP_shl,
					DW_OP_plus };
	uint64_t len = rd_uleb(c);

	if (c->bad || len != sizeof(want) || (uint64_t)(c->end - c->p) < len)
		return false;
	for (size_t i = 0; i < sizeof(want); i++)
		if (i != 6 && c->p[i] != want[i])
			return false;
	if (c->p[6] < DW_OP_lit0 || c->p[6] > DW_OP_lit31)
		return false;
	*thr = c->p[6] - DW_OP_lit0;
	c->p += len;
	return true;
}

/* Runs CFA instructions [c->p, c->end) over *st. With a function (fr), a
 * row is made at every advance; without (the CIE's initial
 * instructions), none may advance. 0, or -1: not understood. */
struct fde_run {
	struct ehframe *t;
	uint64_t loc;  /* the current row's start */
	uint64_t stop; /* rows start below this: the FDE's end, the next function */
	uint64_t last_end; /* the end of the last row made; 0: none */
	int err;
};

static void state_row(const struct cfa_state *st, uint64_t pc, struct bpfs_unwind_row *r)
{
	memset(r, 0, sizeof(*r));
	r->pc = pc;
	r->cfa_type = BPFS_CFA_NONE;
	if (st->ra.how == RULE_UNDEF) {
		r->cfa_type = BPFS_CFA_END;
		return;
	}
	if (st->ra.how != RULE_OFFSET || st->ra.off != -8)
		return;
	if ((st->cfa_reg != DW_REG_RSP && st->cfa_reg != DW_REG_RBP &&
	     st->cfa_reg != CFA_REG_PLT) ||
	    st->cfa_off < INT32_MIN || st->cfa_off > INT32_MAX)
		return;
	r->cfa_type = st->cfa_reg == DW_REG_RSP ? BPFS_CFA_RSP :
		      st->cfa_reg == DW_REG_RBP ? BPFS_CFA_RBP : BPFS_CFA_PLT;
	r->cfa_off = (int32_t)st->cfa_off;
	if (st->rbp.how == RULE_OFFSET && !(st->rbp.off & 7) && st->rbp.off / 8 >= INT16_MIN &&
	    st->rbp.off / 8 <= INT16_MAX) {
		r->rbp_type = BPFS_RBP_CFA;
		r->rbp_off = (int16_t)(st->rbp.off / 8);
	}
}

static int add_row(struct ehframe *t, const struct bpfs_unwind_row *r);

static void run_emit(struct fde_run *fr, const struct cfa_state *st, uint64_t end)
{
	struct bpfs_unwind_row r;

	if (fr->err || fr->loc >= fr->stop || end <= fr->loc)
		return;
	state_row(st, fr->loc, &r);
	if (r.cfa_type == BPFS_CFA_NONE)
		fr->t->stats.unsupported++;
	fr->err = add_row(fr->t, &r);
	fr->last_end = end;
}

static struct reg_rule *tracked(struct cfa_state *st, uint64_t reg)
{
	return reg == DW_REG_RA ? &st->ra : reg == DW_REG_RBP ? &st->rbp : NULL;
}

/* A register's rule, for the two registers a row keeps (others ignored). */
static void set_rule(struct cfa_state *st, uint64_t reg, enum rule how, int64_t off)
{
	struct reg_rule *rr = tracked(st, reg);

	if (rr)
		*rr = (struct reg_rule){ how, off };
}

/* Back to the rule the CIE's initial instructions gave it. */
static void restore_rule(struct cfa_state *st, const struct cie_info *cie, uint64_t reg)
{
	struct reg_rule *rr = tracked(st, reg);

	if (rr)
		*rr = *tracked((struct cfa_state *)&cie->init, reg);
}

static int run_cfa(const struct cie_info *cie, struct cfa_state *st, struct cursor *c,
		   struct fde_run *fr)
{
	struct cfa_state stack[CFA_STACK];
	size_t depth = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = *c->p++;
		uint64_t reg, delta = 0;
		int64_t off;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			delta = op & 0x3f;
			goto advance;
		case DW_CFA_offset:
			set_rule(st, op & 0x3f, RULE_OFFSET, rd_data(c, false, cie->daf));
			continue;
		case DW_CFA_restore:
			restore_rule(st, cie, op & 0x3f);
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
			continue;
		case DW_CFA_advance_loc1:
			delta = rd_fixed(c, 1, false);
			goto advance;
		case DW_CFA_advance_loc2:
			delta = rd_fixed(c, 2, false);
			goto advance;
		case DW_CFA_advance_loc4:
			delta = rd_fixed(c, 4, false);
			goto advance;
		case DW_CFA_offset_extended:
			reg = rd_uleb(c);
			off = rd_data(c, false, cie->daf);
			goto set_offset;
		case DW_CFA_offset_extended_sf:
			reg = rd_uleb(c);
			off = rd_data(c, true, cie->daf);
set_offset:
			set_rule(st, reg, RULE_OFFSET, off);
			continue;
		case DW_CFA_restore_extended:
			restore_rule(st, cie, rd_uleb(c));
			continue;
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			set_rule(st, rd_uleb(c), op == DW_CFA_undefined ? RULE_UNDEF : RULE_SAME, 0);
			continue;
		case DW_CFA_register:
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
			reg = rd_uleb(c);
			if (op == DW_CFA_val_offset_sf)
				rd_sleb(c);
			else
				rd_uleb(c);
			goto other;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			reg = rd_uleb(c);
			off = (int64_t)rd_uleb(c);
			if (c->bad || off < 0 || off > c->end - c->p)
				return -1;
			c->p += off;
other:
			set_rule(st, reg, RULE_OTHER, 0);
			continue;
		case DW_CFA_remember_state:
			if (depth == CFA_STACK)
				return -1;
			stack[depth++] = *st;
			continue;
		case DW_CFA_restore_state:
			if (!depth)
				return -1;
			*st = stack[--depth];
			continue;
		case DW_CFA_def_cfa:
			st->cfa_reg = (int64_t)rd_uleb(c);
			st->cfa_off = (int64_t)rd_uleb(c);
			continue;
		case DW_CFA_def_cfa_sf:
			st->cfa_reg = (int64_t)rd_uleb(c);
			st->cfa_off = rd_data(c, true, cie->daf);
			continue;
		case DW_CFA_def_cfa_register:
			if (st->cfa_reg < 0)
				return -1;
			st->cfa_reg = (int64_t)rd_uleb(c);
			continue;
		case DW_CFA_def_cfa_offset:
			if (st->cfa_reg < 0)
				return -1;
			st->cfa_off = (int64_t)rd_uleb(c);
			continue;
		case DW_CFA_def_cfa_offset_sf:
			if (st->cfa_reg < 0)
				return -1;
			st->cfa_off = rd_data(c, true, cie->daf);
			continue;
		case DW_CFA_GNU_args_size:
			rd_uleb(c);
			continue;
		case DW_CFA_def_cfa_expression:
			if (!plt_bytes(c, &st->cfa_off))
				return -1;
			st->cfa_reg = CFA_REG_PLT;
			continue;
		default: /* other CFA expressions, set_loc, ... */
			return -1;
		}
advance:
		if (!fr || c->bad)
			return -1;
		delta *= cie->caf;
		if (delta) {
			uint64_t to = fr->loc + delta < fr->loc ? UINT64_MAX : fr->loc + delta;

			run_emit(fr, st, to);
			fr->loc = to;
			if (fr->loc >= fr->stop)
				return 0; /* no row starts past here */
		}
	}
	return c->bad ? -1 : 0;
}

static bool eh_direct_init(struct eh_direct *eh, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Ehdr ehdr;
	GElf_Shdr sh;

	memset(eh, 0, sizeof(*eh));
	if (!gelf_getehdr(elf, &ehdr) || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	memcpy(eh->ident, ehdr.e_ident, EI_NIDENT);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		/* lld types it SHT_X86_64_UNWIND */
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND) ||
		    (sh.sh_flags & SHF_COMPRESSED))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, ".eh_frame"))
			continue;
		eh->d = elf_getdata(scn, NULL);
		eh->vaddr = sh.sh_addr;
		return eh->d && eh->d->d_buf && eh->d->d_size;
	}
	return false;
}

/* The CIE at off, parsed and its initial instructions run; NULL when this
 * reader does not understand it. */
static const struct cie_info *eh_cie(struct eh_direct *eh, uint64_t off)
{
	struct cie_info *ci;
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	struct cursor c;
	const char *aug;
	size_t k = 0;

	for (size_t i = 0; i < eh->ncies; i++)
		if (eh->cies[i].off == off)
			return eh->cies[i].used ? &eh->cies[i] : NULL;
	if (eh->ncies < CIE_CACHE) {
		ci = &eh->cies[eh->ncies++];
	} else {
		ci = &eh->cies[eh->next_slot];
		eh->next_slot = (eh->next_slot + 1) % CIE_CACHE;
	}
	memset(ci, 0, sizeof(*ci));
	ci->off = off;
	if (dwarf_next_cfi(eh->ident, eh->d, true, off, &next, &e) || !dwarf_cfi_cie_p(&e))
		return NULL;
	aug = e.cie.augmentation;
	if (!aug || aug[0] != 'z' || !e.cie.augmentation_data)
		return NULL;
	c = (struct cursor){ e.cie.augmentation_data,
			     e.cie.augmentation_data + e.cie.augmentation_data_size };
	ci->fde_enc = DW_EH_PE_absptr;
	for (const char *a = aug + 1; *a; a++) {
		uint64_t ignored;
		uint8_t enc;

		switch (*a) {
		case 'R':
			ci->fde_enc = (uint8_t)rd_fixed(&c, 1, false);
			break;
		case 'L':
			rd_fixed(&c, 1, false);
			break;
		case 'P':
			enc = (uint8_t)rd_fixed(&c, 1, false);
			if (c.bad || !rd_ptr(eh, &c, enc & 0x7f, false, &ignored))
				return NULL;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return NULL;
		}
		if (c.bad || ++k > 8)
			return NULL;
	}
	ci->caf = e.cie.code_alignment_factor;
	ci->daf = e.cie.data_alignment_factor;
	/* before the CIE's own rules: the CFA unknown, every register
	 * unspecified (libdw's x86_64 defaults change neither rule kept) */
	ci->init = (struct cfa_state){ .cfa_reg = -1 };
	c = (struct cursor){ e.cie.initial_instructions, e.cie.initial_instructions_end };
	if (!ci->caf || run_cfa(ci, &ci->init, &c, NULL))
		return NULL;
	ci->used = 1;
	return ci;
}

/* The rows of f read directly; false: left to libdw, nothing added. */
static bool read_function_direct(struct ehframe *t, struct eh_direct *eh, struct func *f,
				 uint64_t limit, uint64_t *pc, int *err)
{
	const struct cie_info *cie;
	struct fde_run fr = { .t = t };
	uint64_t start, range, aug;
	struct cfa_state st;
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	struct cursor c;
	size_t nr = t->rows.nr, unsupported = t->stats.unsupported;
	uint64_t fde = t->hdr_vaddr + (int64_t)f->fde;

	if (!eh->d || fde < eh->vaddr || fde - eh->vaddr >= eh->d->d_size)
		return false;
	if (dwarf_next_cfi(eh->ident, eh->d, true, fde - eh->vaddr, &next, &e) ||
	    dwarf_cfi_cie_p(&e))
		return false;
	cie = eh_cie(eh, e.fde.CIE_pointer);
	if (!cie)
		return false;
	c = (struct cursor){ e.fde.start, e.fde.end };
	if (!rd_ptr(eh, &c, cie->fde_enc, true, &start) ||
	    !rd_ptr(eh, &c, cie->fde_enc & 0x0f, false, &range) || start != f->start)
		return false;
	aug = rd_uleb(&c);
	if (c.bad || aug > (uint64_t)(c.end - c.p))
		return false;
	c.p += aug;
	if (t->funcs_only) { /* the range is all a function start needs */
		*pc = start + range < start ? UINT64_MAX : start + range;
		*err = 0;
		return true;
	}
	st = cie->init;
	fr.loc = start;
	fr.stop = start + range < start ? UINT64_MAX : start + range;
	if (limit < fr.stop)
		fr.stop = limit;
	if (run_cfa(cie, &st, &c, &fr) || fr.err) {
		/* undo: libdw reads the function again from its start */
		t->rows.nr = nr;
		t->stats.unsupported = unsupported;
		*err = fr.err;
		return !!fr.err;
	}
	/* the last rules hold to the FDE's end */
	run_emit(&fr, &st, start + range < start ? UINT64_MAX : start + range);
	*err = fr.err;
	*pc = fr.last_end ? fr.last_end : f->start;
	return true;
}

/* The CFI libdw reads, per section. .eh_frame's is made at the first
 * function the direct reader leaves to libdw (a signal trampoline's): its
 * first lookup indexes every FDE of the file, which cost libLLVM 3.8 MB
 * and 40 ms for its one PLT before the direct reader knew the PLT's
 * expression. .debug_frame's is made at the start. */
struct cfis {
	Elf *elf;
	Dwarf_CFI *cfi[NR_SRC];
	bool eh_tried;
};

static Dwarf_CFI *cfi_of(struct cfis *c, int src)
{
	if (src == SRC_EH && !c->cfi[SRC_EH] && !c->eh_tried) {
		c->eh_tried = true;
		c->cfi[SRC_EH] = dwarf_getcfi_elf(c->elf);
	}
	return c->cfi[src];
}

/* The rows of the function at funcs[i], up to the next function, from the
 * CFI it came from: one row builder for both sections. */
static int read_function(struct ehframe *t, struct cfis *cfis, struct eh_direct *eh, size_t i)
{
	struct func *f = vec__at(&t->funcs, i);
	Dwarf_CFI *cfi;
	uint64_t pc = f->start;
	uint64_t limit = i + 1 < t->funcs.nr ? f[1].start : UINT64_MAX;
	struct bpfs_unwind_row r;
	int err = 0;

	t->stats.fdes++;
	if (func_src(f) == SRC_EH && eh && read_function_direct(t, eh, f, limit, &pc, &err)) {
		if (err)
			return err;
		t->stats.direct++;
		goto done;
	}
	cfi = cfi_of(cfis, func_src(f));
	while (cfi && pc < limit) {
		Dwarf_Addr start, end;
		Dwarf_Frame *fr;

		if (dwarf_cfi_addrframe(cfi, pc, &fr))
			break;
		if (dwarf_frame_info(fr, &start, &end, NULL) < 0 || end <= pc) {
			free(fr);
			break;
		}
		make_row(fr, pc, &r);
		free(fr);
		if (r.cfa_type == BPFS_CFA_NONE)
			t->stats.unsupported++;
		err = add_row(t, &r);
		if (err)
			return err;
		pc = end;
	}
done:
	f->len = cap_len(pc - f->start);
	if (func_src(f) == SRC_EH)
		t->stats.eh_bytes += pc - f->start;
	/* past the function's last row, up to the next: no unwind info */
	if (pc < limit) {
		memset(&r, 0, sizeof(r));
		r.pc = pc;
		return add_row(t, &r);
	}
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return func_src(x) < func_src(y) ? -1 : func_src(x) > func_src(y); /* .eh_frame first */
}

static bool in_code(const struct ehframe *t, uint64_t addr)
{
	for (size_t i = 0; i < t->segs.nr; i++) {
		const struct ehframe_seg *s = vec__at(&t->segs, i);

		if (addr >= s->vaddr && addr < s->vaddr + s->filesz)
			return true;
	}
	return false;
}

/* The PLT sections' address ranges (fp_row). */
static void read_plt(struct ehframe *t, Elf *elf)
{
	static const char *const names[] = { ".plt", ".plt.sec", ".plt.got", ".iplt" };
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn)) && t->nr_plt < EHFRAME_PLT_SECS) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		for (size_t i = 0; n && i < sizeof(names) / sizeof(names[0]); i++) {
			if (strcmp(n, names[i]))
				continue;
			t->plt[t->nr_plt][0] = sh.sh_addr;
			t->plt[t->nr_plt++][1] = sh.sh_addr + sh.sh_size;
			break;
		}
	}
}

/* The section's bytes, decompressed when SHF_COMPRESSED (Debian's debug
 * files are); NULL when elf has none with contents. */
static Elf_Data *section_data(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name))
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return NULL;
		return elf_getdata(scn, NULL);
	}
	return NULL;
}

/*
 * The functions of .debug_frame in elf (the file's own, or its debug
 * file's: the addresses are the same, as its build-ID is) that .eh_frame
 * (eh, may be NULL) does not cover: .eh_frame stays first. FDEs outside the
 * file's code are left out (the linker leaves discarded functions' FDEs at
 * address 0). Returns how many were added, or -errno.
 */
static int read_debug_frame(struct ehframe *t, Elf *elf, Dwarf_CFI *eh)
{
	Elf_Data *d = section_data(elf, ".debug_frame");
	Dwarf_Off off = 0, next;
	GElf_Ehdr ehdr;
	int added = 0;

	if (!d || !d->d_size || !gelf_getehdr(elf, &ehdr))
		return 0;
	while (off < d->d_size) {
		Dwarf_CFI_Entry e;
		uint64_t start, len;
		Dwarf_Frame *fr;
		struct func *f;
		int r = dwarf_next_cfi(ehdr.e_ident, d, false, off, &next, &e);

		if (r == 1)
			break;
		if (r < 0 || next <= off) {
			p_dbg(".debug_frame: unreadable entry at %#llx: the rest left out",
			      (unsigned long long)off);
			break;
		}
		off = next;
		if (dwarf_cfi_cie_p(&e))
			continue;
		/* x86_64: an 8-byte initial location and range (absptr) */
		if (e.fde.end - e.fde.start < 16)
			continue;
		memcpy(&start, e.fde.start, 8);
		memcpy(&len, e.fde.start + 8, 8);
		if (!len || !in_code(t, start))
			continue;
		if (eh && !dwarf_cfi_addrframe(eh, start, &fr)) {
			free(fr);
			t->stats.debug_shadowed++;
			continue;
		}
		f = vec__push(&t->funcs);
		if (!f)
			return -ENOMEM;
		f->start = start;
		f->len = cap_len(len);
		f->fde = FDE_DEBUG;
		added++;
	}
	return added;
}

/*
 * Rows for the file elf: its .eh_frame, then the .debug_frame of dbg (its
 * separate debug file) or, without one, its own. -ENOENT: neither has any
 * function.
 */
static int build(struct ehframe *t, Elf *elf, Elf *dbg, unsigned flags)
{
	struct cfis cfis = { .elf = elf };
	struct eh_direct eh, *direct = NULL;
	Elf *df = dbg ? dbg : elf;
	Dwarf *dw = NULL;
	size_t w = 0;
	int err, n;

	err = read_segs(elf, &t->segs);
	if (!err)
		read_plt(t, elf);
	if (!err)
		err = read_hdr_table(elf, &t->funcs, &t->hdr_vaddr);
	if (err && err != -ENOENT)
		return err;
	t->stats.code_bytes = 0;
	for (size_t i = 0; i < t->segs.nr; i++)
		t->stats.code_bytes += ((struct ehframe_seg *)vec__at(&t->segs, i))->filesz;
	t->stats.has_debug_frame = section_data(df, ".debug_frame") != NULL;
	if (t->stats.has_debug_frame) {
		/* libdw reads .debug_frame through a Dwarf handle only; a file
		 * with no other DWARF (only CFI) opens fine */
		dw = dwarf_begin_elf(df, DWARF_C_READ, NULL);
		cfis.cfi[SRC_DEBUG] = dw ? dwarf_getcfi(dw) : NULL;
		if (!cfis.cfi[SRC_DEBUG])
			p_dbg(".debug_frame: not readable by libdw: %s", dwarf_errmsg(-1));
		n = cfis.cfi[SRC_DEBUG] ?
			    read_debug_frame(t, df, t->funcs.nr ? cfi_of(&cfis, SRC_EH) : NULL) : 0;
		if (n < 0) {
			err = n;
			goto out;
		}
		t->stats.debug_fdes = n;
	}
	if (!t->funcs.nr) {
		err = -ENOENT;
		goto out;
	}
	/* sorted already by the linker; make sure, and drop duplicates (the
	 * .eh_frame one stays) */
	qsort(t->funcs.data, t->funcs.nr, sizeof(struct func), cmp_func);
	for (size_t i = 0; i < t->funcs.nr; i++) {
		struct func *f = vec__at(&t->funcs, i);

		if (!w || f->start != ((struct func *)vec__at(&t->funcs, w - 1))->start)
			*(struct func *)vec__at(&t->funcs, w++) = *f;
	}
	t->funcs.nr = w;
	err = 0;
	if (!(flags & EHFRAME_LIBDW_ONLY) && eh_direct_init(&eh, elf))
		direct = &eh;
	for (size_t i = 0; i < t->funcs.nr && !err; i++) {
		if (cancel_fn && i % EHFRAME_CANCEL_EVERY == 0 && cancel_fn())
			err = -ECANCELED;
		else
			err = read_function(t, &cfis, direct, i);
	}
	t->stats.rows = t->rows.nr;
	if (!t->sink) /* else counted as they are handed on */
		count_not_fp(t, t->rows.data, t->rows.nr);
out:
	if (cfis.cfi[SRC_EH])
		dwarf_cfi_end(cfis.cfi[SRC_EH]);
	if (dw)
		dwarf_end(dw); /* and the CFI it made */
	return err;
}

static Elf *open_elf(const char *path, int *fd, int *err)
{
	Elf *elf;

	/* a regular file only: a FIFO put at the path would block the open
	 * forever. Mapped, unlike elf_syms.c's reads: libelf's reading mode
	 * leaks section names' buffers on some malformed files (elf_strptr,
	 * elfutils 0.188; found by fuzz_ehframe), and a leak per file made is
	 * growth an unprivileged user can drive. The mapping's risk, a file
	 * truncated while its table is built (SIGBUS), is its owner's doing
	 * and is not handled (docs/design.md, "Unwinding without frame
	 * pointers", Tables). */
	*fd = regfile__open(path, 0, NULL);
	if (*fd < 0) {
		*err = *fd;
		return NULL;
	}
	elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(*fd);
		*fd = -1;
		*err = -EINVAL;
		return NULL;
	}
	return elf;
}

/* The functions' ranges, compact, in place of the build's struct funcs. */
static int keep_ranges(struct ehframe *t)
{
	t->ranges = malloc((t->funcs.nr ? t->funcs.nr : 1) * sizeof(*t->ranges));
	if (!t->ranges)
		return -ENOMEM;
	for (size_t i = 0; i < t->funcs.nr; i++) {
		const struct func *f = vec__at(&t->funcs, i);

		t->ranges[i].start = f->start;
		t->ranges[i].len = f->len;
	}
	t->nr_ranges = t->funcs.nr;
	vec__free(&t->funcs);
	return 0;
}

static int load(const char *path, const char *debug_path, unsigned flags,
		const struct ehframe_sink *sink, struct ehframe **out)
{
	int fd = -1, dfd = -1, err = 0;
	Elf *elf = NULL, *dbg = NULL;
	struct ehframe *t;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (sink && !sink->chunk)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->sink = sink;
	t->rows = VEC_INIT(struct bpfs_unwind_row);
	t->funcs = VEC_INIT(struct func);
	t->segs = VEC_INIT(struct ehframe_seg);
	t->funcs_only = flags & EHFRAME_FUNCS_ONLY;
	elf = open_elf(path, &fd, &err);
	if (elf && debug_path)
		dbg = open_elf(debug_path, &dfd, &err);
	if (elf && (dbg || !debug_path))
		err = build(t, elf, dbg, flags);
	if (!err && t->funcs_only)
		err = keep_ranges(t);
	if (!err && t->sink) {
		err = hand_on(t, t->rows.nr);
		t->stats.rows = t->handed;
	}
	t->stats.debug_file = dbg && !err;
	if (dbg) {
		elf_end(dbg);
		close(dfd);
	}
	if (elf) {
		elf_end(elf);
		close(fd);
	}
	if (err) {
		ehframe__free(t);
		return err;
	}
	t->sink = NULL; /* the caller's, used during the call only */
	*out = t;
	return 0;
}

int ehframe__load_flags(const char *path, const char *debug_path, unsigned flags,
			struct ehframe **out)
{
	return load(path, debug_path, flags, NULL, out);
}

int ehframe__load_sink(const char *path, const struct ehframe_sink *sink, struct ehframe **out)
{
	return load(path, NULL, 0, sink, out);
}

int ehframe__load_debug(const char *path, const char *debug_path, struct ehframe **out)
{
	return ehframe__load_flags(path, debug_path, 0, out);
}

int ehframe__load(const char *path, struct ehframe **out)
{
	return ehframe__load_debug(path, NULL, out);
}

void ehframe__free(struct ehframe *t)
{
	if (!t)
		return;
	vec__free(&t->rows);
	vec__free(&t->funcs);
	vec__free(&t->segs);
	free(t->ranges);
	free(t);
}

const struct bpfs_unwind_row *ehframe__rows(const struct ehframe *t, size_t *nr)
{
	*nr = t->rows.nr;
	return t->rows.data;
}

static unsigned long long row_key(const void *e)
{
	return ((const struct bpfs_unwind_row *)e)->pc;
}

static unsigned long long func_key(const void *e)
{
	return ((const struct func *)e)->start;
}

const struct bpfs_unwind_row *ehframe__find(const struct ehframe *t, uint64_t pc)
{
	long i = bsearch_last_le(t->rows.data, t->rows.nr, sizeof(struct bpfs_unwind_row), pc,
				 row_key);

	return i < 0 ? NULL : vec__at(&t->rows, i);
}

static unsigned long long range_key(const void *e)
{
	return ((const struct frange *)e)->start;
}

static uint64_t range_start(const struct ehframe *t, uint64_t pc)
{
	long i = bsearch_last_le(t->ranges, t->nr_ranges, sizeof(*t->ranges), pc, range_key);
	const struct frange *r = i < 0 ? NULL : &t->ranges[i];

	return r && pc - r->start < r->len ? r->start : 0;
}

uint64_t ehframe__func_start(const struct ehframe *t, uint64_t pc)
{
	long i;
	const struct func *f;

	if (t->ranges)
		return range_start(t, pc);
	i = bsearch_last_le(t->funcs.data, t->funcs.nr, sizeof(struct func), pc, func_key);
	f = i < 0 ? NULL : vec__at(&t->funcs, i);
	return f && pc - f->start < f->len ? f->start : 0;
}

const struct ehframe_seg *ehframe__segs(const struct ehframe *t, size_t *nr)
{
	*nr = t->segs.nr;
	return t->segs.data;
}

void ehframe__stats(const struct ehframe *t, struct ehframe_stats *out)
{
	*out = t->stats;
}

size_t ehframe__mem_bytes(const struct ehframe *t)
{
	if (!t)
		return 0;
	return sizeof(*t) + t->rows.cap * t->rows.elem + t->funcs.cap * t->funcs.elem +
	       t->segs.cap * t->segs.elem + t->nr_ranges * sizeof(*t->ranges);
}
