// SPDX-License-Identifier: GPL-2.0
/* BPF program functions: extents as bpf_prog_info gives them, names from
 * the [bpf] lines of kallsyms text, and lookups by address (no BPF needed:
 * bpfprogs__add and bpfprogs__name_from are what bpfprogs__poll uses). */
#include <stdlib.h>
#include <string.h>

#include "bpfprogs.h"
#include "unit.h"

#define BASE 0xffffffffc0001000ULL

/* name NULL: found with no name; "-": not found */
static void expect(const struct bpfprogs *bp, uint64_t addr, uint64_t start, const char *name)
{
	const char *got = NULL;
	uint64_t got_start = 0;
	bool found = bpfprogs__find(bp, addr, &got, &got_start);

	if (name && !strcmp(name, "-")) {
		CHECK(!found, "%#llx: found in %#llx", (unsigned long long)addr,
		      (unsigned long long)got_start);
		return;
	}
	CHECK(found && got_start == start, "%#llx: found %d at %#llx, want %#llx",
	      (unsigned long long)addr, found, (unsigned long long)got_start,
	      (unsigned long long)start);
	CHECK(name ? got && !strcmp(got, name) : !got, "%#llx: name '%s', want '%s'",
	      (unsigned long long)addr, got ? got : "(null)", name ? name : "(null)");
}

static void name_from(struct bpfprogs *bp, const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	CHECK(f, "fmemopen");
	if (!f)
		return;
	bpfprogs__name_from(bp, f);
	fclose(f);
}

static void test_names(void)
{
	char long_line[700];
	struct bpfprogs *bp = NULL;

	/* a name of 600 bytes: its line is longer than the 512 bytes read
	 * at a time before, and its tail from byte 511, which looks like a
	 * line, is not one */
	snprintf(long_line, sizeof(long_line), "%llx t bpf_prog_%0600d\t[bpf]\n", BASE + 0x300, 0);
	memcpy(long_line + 511, "ffffffffc0001400 t tail", 23);
	CHECK(!bpfprogs__new(&bp), "new");
	if (!bp)
		return;
	CHECK(!bpfprogs__add(bp, BASE + 0x100, 0x80), "add");
	CHECK(!bpfprogs__add(bp, BASE, 0x40), "add");
	CHECK(!bpfprogs__add(bp, BASE + 0x200, 0x40), "add");
	CHECK(!bpfprogs__add(bp, BASE + 0x400, 0x40), "add");
	CHECK(!bpfprogs__add(bp, UINT64_MAX - 0xf, 0x100), "add"); /* past 2^64 */
	name_from(bp, "ffffffffc0001000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]\n"
		      "ffffffffc0001100 t bpf_prog_0123456789abcdef_F\t[bpf]\n"
		      "ffffffffc0001100 t bpf_prog_0123456789abcdef_later\t[bpf]\n"
		      "ffffffff81000000 T _stext\n"
		      "ffffffffc0001200\xfft\xff""bpf_prog_fields_together\t[bpf]\n");
	name_from(bp, long_line);
	expect(bp, BASE, BASE, "bpf_prog_6deef7357e7b4530_sd_fw_egress");
	expect(bp, BASE + 0x3f, BASE, "bpf_prog_6deef7357e7b4530_sd_fw_egress");
	expect(bp, BASE + 0x40, 0, "-"); /* between functions */
	expect(bp, BASE + 0x17f, BASE + 0x100, "bpf_prog_0123456789abcdef_F"); /* first name */
	expect(bp, BASE + 0x200, BASE + 0x200, NULL); /* its line is not a line */
	expect(bp, BASE + 0x400, BASE + 0x400, NULL); /* only in a long line's tail */
	expect(bp, BASE - 1, 0, "-");
	expect(bp, UINT64_MAX, UINT64_MAX - 0xf, NULL);
	bpfprogs__free(bp);
}

int main(void)
{
	RUN(test_names);
	UNIT_EXIT();
}
