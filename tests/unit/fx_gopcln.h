/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small Go pclntab built by hand, in each layout gopclntab.c reads (Go
 * 1.16, 1.18, 1.20): Debian's go writes only one of them (1.19: 1.18's), so
 * the others are checked on this one, whose answer is known by
 * construction. Also the fuzz target's seeds (test_gopclntab --seeds DIR).
 *
 *   main.outer at FXG_TEXT, 0x40 bytes, file /src/a.go:
 *     [0x00, 0x10) line 10
 *     [0x10, 0x20) main.inl inlined (file /src/b.go, line 20), called from
 *                  the instruction at +0x08 (a.go:10)
 *     [0x20, 0x40) line 12
 *   main.other at FXG_TEXT + 0x40, 0x20 bytes, /src/b.go:30, no inlines
 * The inline tree lives outside the table, at FXG_DATA + 0x10 (Go 1.18+:
 * gofunc is FXG_DATA, the funcdata an offset from it; 1.16: an address).
 */
#ifndef BPFSAMPLER_FX_GOPCLN_H
#define BPFSAMPLER_FX_GOPCLN_H

#include <stdint.h>
#include <string.h>

#define FXG_TEXT 0x401000ULL
#define FXG_TAB 0x4b0000ULL
#define FXG_DATA 0x500000ULL

enum fxg_layout { FXG_116, FXG_118, FXG_120 };

struct fxg {
	uint8_t tab[1024];
	size_t tab_size;
	uint8_t data[64];
	size_t data_size;
};

static void fxg_put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void fxg_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Appends n bytes at *at of t, 8-aligned first when align; returns the
 * offset they went to. */
static size_t fxg_add(struct fxg *t, size_t *at, const void *src, size_t n, int align)
{
	size_t off;

	if (align)
		*at = (*at + 7) & ~(size_t)7;
	off = *at;
	memcpy(t->tab + off, src, n);
	*at += n;
	return off;
}

/* One _func at *at: its fixed part, then pcdata and funcdata. */
static size_t fxg_func(struct fxg *t, size_t *at, enum fxg_layout l, uint64_t entry,
		       uint32_t nameoff, uint32_t pcfile, uint32_t pcln, const uint32_t *pcdata,
		       uint32_t npcdata, uint32_t inltree, uint32_t nfuncdata, uint32_t start_line)
{
	uint8_t f[128] = {};
	size_t n = 0, off;

	if (l == FXG_116) {
		fxg_put64(f, entry);
		n = 8;
	} else {
		fxg_put32(f, (uint32_t)(entry - FXG_TEXT));
		n = 4;
	}
	fxg_put32(f + n, nameoff);
	fxg_put32(f + n + 16, pcfile);
	fxg_put32(f + n + 20, pcln);
	fxg_put32(f + n + 24, npcdata);
	fxg_put32(f + n + 28, 0); /* cuOffset */
	n += 32;
	if (l == FXG_120) {
		fxg_put32(f + n, start_line);
		n += 4;
	}
	f[n + 3] = (uint8_t)nfuncdata; /* funcID, flag, pad, nfuncdata */
	n += 4;
	for (uint32_t i = 0; i < npcdata; i++, n += 4)
		fxg_put32(f + n, pcdata[i]);
	off = fxg_add(t, at, f, n, 1);
	for (uint32_t i = 0; i < nfuncdata; i++) {
		uint8_t w[8] = {};

		if (l == FXG_116) {
			if (i == 0 && ((FXG_TAB + *at) & 4))
				*at += 4;
			fxg_put64(w, i == 3 ? FXG_DATA + inltree : 0);
			fxg_add(t, at, w, 8, 0);
		} else {
			fxg_put32(w, i == 3 ? inltree : UINT32_MAX);
			fxg_add(t, at, w, 4, 0);
		}
	}
	return off;
}

static void fxg_build(struct fxg *t, enum fxg_layout l)
{
	static const char names[] = "\0main.outer\0main.other\0main.inl";
	static const char files[] = "\0/src/a.go\0/src/b.go";
	/* (value delta zigzag, pc delta) pairs, then 0 */
	static const uint8_t pc_file0[] = { 2, 0x10, 2, 0x10, 1, 0x20, 0 };
	static const uint8_t pc_line0[] = { 22, 0x10, 20, 0x10, 15, 0x20, 0 };
	static const uint8_t pc_inl0[] = { 0, 0x10, 2, 0x10, 1, 0x20, 0 };
	static const uint8_t pc_file1[] = { 4, 0x20, 0 };
	static const uint8_t pc_line1[] = { 62, 0x20, 0 };
	size_t hdr = l == FXG_116 ? 64 : 72, at = hdr, fnames, cu, ftab, pct, pcln;
	uint32_t cutab[2] = { 1, 11 }, pf0, pl0, pi0, pf1, pl1, pcdata0[3];
	size_t fo0, fo1;
	uint8_t *h = t->tab;

	memset(t, 0, sizeof(*t));
	fnames = fxg_add(t, &at, names, sizeof(names), 0);
	cu = fxg_add(t, &at, cutab, sizeof(cutab), 1);
	ftab = fxg_add(t, &at, files, sizeof(files), 0);
	pct = at;
	at++; /* offset 0 of pctab means "no table" */
	pf0 = (uint32_t)(fxg_add(t, &at, pc_file0, sizeof(pc_file0), 0) - pct);
	pl0 = (uint32_t)(fxg_add(t, &at, pc_line0, sizeof(pc_line0), 0) - pct);
	pi0 = (uint32_t)(fxg_add(t, &at, pc_inl0, sizeof(pc_inl0), 0) - pct);
	pf1 = (uint32_t)(fxg_add(t, &at, pc_file1, sizeof(pc_file1), 0) - pct);
	pl1 = (uint32_t)(fxg_add(t, &at, pc_line1, sizeof(pc_line1), 0) - pct);
	/* the function table: 3 entries, then the _funcs */
	at = (at + 7) & ~(size_t)7;
	pcln = at;
	at += 3 * (l == FXG_116 ? 16 : 8);
	pcdata0[0] = pcdata0[1] = 0;
	pcdata0[2] = pi0;
	fo0 = fxg_func(t, &at, l, FXG_TEXT, 1, pf0, pl0, pcdata0, 3, 0x10, 4, 9) - pcln;
	fo1 = fxg_func(t, &at, l, FXG_TEXT + 0x40, 12, pf1, pl1, NULL, 0, 0, 0, 29) - pcln;
	for (int i = 0; i < 3; i++) {
		uint64_t entry = FXG_TEXT + (i == 0 ? 0 : i == 1 ? 0x40 : 0x60);
		uint64_t fo = i == 0 ? fo0 : i == 1 ? fo1 : 0;

		if (l == FXG_116) {
			fxg_put64(t->tab + pcln + i * 16, entry);
			fxg_put64(t->tab + pcln + i * 16 + 8, fo);
		} else {
			fxg_put32(t->tab + pcln + i * 8, (uint32_t)(entry - FXG_TEXT));
			fxg_put32(t->tab + pcln + i * 8 + 4, (uint32_t)fo);
		}
	}
	t->tab_size = at;
	/* the header */
	fxg_put32(h, l == FXG_116 ? 0xfffffffa : l == FXG_118 ? 0xfffffff0 : 0xfffffff1);
	h[6] = 1;
	h[7] = 8;
	fxg_put64(h + 8, 2);  /* nfunc */
	fxg_put64(h + 16, 2); /* nfiles */
	h += 24;
	if (l != FXG_116) {
		fxg_put64(h, FXG_TEXT);
		h += 8;
	}
	fxg_put64(h, fnames);
	fxg_put64(h + 8, cu);
	fxg_put64(h + 16, ftab);
	fxg_put64(h + 24, pct);
	fxg_put64(h + 32, pcln);
	/* the inline tree's one entry: main.inl, called from +0x08 */
	t->data_size = 0x30;
	if (l == FXG_120) {
		fxg_put32(t->data + 0x10 + 4, 23); /* nameOff */
		fxg_put32(t->data + 0x10 + 8, 8);  /* parentPc */
		fxg_put32(t->data + 0x10 + 12, 19); /* startLine */
	} else {
		t->data[0x10] = 0xff; /* parent -1 */
		t->data[0x11] = 0xff;
		fxg_put32(t->data + 0x10 + 4, 1);   /* file (per CU) */
		fxg_put32(t->data + 0x10 + 8, 10);  /* line of the call */
		fxg_put32(t->data + 0x10 + 12, 23); /* func_ */
		fxg_put32(t->data + 0x10 + 16, 8);  /* parentPc */
	}
}

#endif
