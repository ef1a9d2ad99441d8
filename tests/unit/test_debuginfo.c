// SPDX-License-Identifier: GPL-2.0
/* Separate debug files: by build-ID under a debug root, by .gnu_debuglink
 * (CRC-checked), and rejected when they belong to another build. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "debuginfo.h"
#include "elf_syms.h"
#include "unit.h"

#define DBG(name) FIXTURE_DIR "/dbg/" name

/* The address of fx_local (static: never in .dynsym) from nm on the
 * unstripped build. */
static uint64_t fx_local_addr(void)
{
	FILE *f = fopen(DBG("byid.nm"), "r");
	char line[256], name[128], type;
	uint64_t addr = 0, size, a;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %127s", &a, &size, &type, name) == 4 &&
		    strcmp(name, "fx_local") == 0)
			addr = a;
	if (f)
		fclose(f);
	return addr;
}

static void test_by_build_id(void)
{
	const char *roots[] = { DBG("root") };
	struct debuginfo_opts o = { .roots = roots, .nr_roots = 1 };
	struct symtab *st = NULL, *dbg = NULL;
	uint64_t addr = fx_local_addr();
	const char *name;

	CHECK(addr, "fx_local in nm");
	CHECK(symtab__load(DBG("byid"), &st) == 0, "load stripped");
	if (!st)
		return;
	CHECK(!symtab__has_symtab(st), "stripped: no .symtab");
	CHECK(symtab__find(st, addr, NULL) == NULL, "no name without the debug file");
	CHECK(debuginfo__load(st, DBG("byid"), &o, &dbg) == 0, "found by build-ID");
	name = dbg ? symtab__find(dbg, addr + 1, NULL) : NULL;
	CHECK(name && strcmp(name, "fx_local") == 0, "fx_local named: %s", name ? name : "NULL");
	symtab__free(dbg);
	symtab__free(st);
}

static void test_wrong_build_rejected(void)
{
	const char *roots[] = { DBG("wrongroot") };
	struct debuginfo_opts o = { .roots = roots, .nr_roots = 1 };
	struct symtab *st = NULL, *dbg = NULL;

	CHECK(symtab__load(DBG("byid"), &st) == 0, "load stripped");
	if (!st)
		return;
	CHECK(debuginfo__load(st, DBG("byid"), &o, &dbg) == -ENOENT,
	      "another build's debug file under this build-ID is rejected");
	symtab__free(dbg);
	symtab__free(st);
}

static void test_debuglink(void)
{
	struct symtab *st = NULL, *dbg = NULL;
	unsigned int crc = 0, want = 0;
	const char *link;

	CHECK(symtab__load(DBG("link"), &st) == 0, "load");
	if (!st)
		return;
	link = symtab__debuglink(st, &want);
	CHECK(link && strcmp(link, "link.debug") == 0, "debuglink name: %s", link ? link : "NULL");
	CHECK(debuginfo__file_crc(DBG("link.debug"), &crc) == 0 && crc == want,
	      "our CRC32 is objcopy's: %08x vs %08x", crc, want);
	CHECK(debuginfo__load(st, DBG("link"), NULL, &dbg) == 0, "found beside the binary");
	CHECK(dbg && symtab__has_symtab(dbg), "with its .symtab");
	symtab__free(dbg);
	symtab__free(st);
}

static void test_bad_crc(void)
{
	struct symtab *st = NULL, *dbg = NULL;

	CHECK(symtab__load(DBG("badcrc"), &st) == 0, "load");
	if (!st)
		return;
	CHECK(symtab__debuglink(st, NULL), "has a debuglink");
	CHECK(debuginfo__load(st, DBG("badcrc"), NULL, &dbg) == -ENOENT,
	      "a debug file with the wrong CRC is rejected");
	symtab__free(dbg);
	symtab__free(st);
}

int main(void)
{
	RUN(test_by_build_id);
	RUN(test_wrong_build_rejected);
	RUN(test_debuglink);
	RUN(test_bad_crc);
	UNIT_EXIT();
}
