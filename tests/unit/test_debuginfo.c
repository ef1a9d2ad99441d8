// SPDX-License-Identifier: GPL-2.0
/* Separate debug files: by build-ID under a debug root, by .gnu_debuglink
 * (CRC-checked), from debuginfod (through a file:// URL, no server needed),
 * and rejected when they belong to another build. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debuginfo.h"
#include "dwarf_lines.h"
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

/* A debuglink names a file beside the binary, in a directory its owner
 * controls: a FIFO or a device there must be passed over, never read. */
static void test_debuglink_not_a_file(void)
{
	char dir[] = "/tmp/bpfsampler-unit-link.XXXXXX", bin[128], cand[128], cmd[512];
	struct symtab *st = NULL, *dbg = NULL;
	int status;
	pid_t pid;

	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(bin, sizeof(bin), "%s/link", dir);
	snprintf(cand, sizeof(cand), "%s/link.debug", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", DBG("link"), bin);
	CHECK(system(cmd) == 0, "copy");
	CHECK(symtab__load(bin, &st) == 0, "load");
	if (!st)
		return;
	for (int round = 0; round < 2; round++) {
		unlink(cand);
		CHECK(round ? symlink("/dev/zero", cand) == 0 : mkfifo(cand, 0600) == 0, "make");
		pid = fork();
		if (pid == 0) {
			alarm(5); /* a blocked open or an endless read fails the test */
			if (symtab__load(cand, &dbg) == 0 || dbg)
				_exit(2); /* loaded as ELF */
			_exit(debuginfo__load(st, bin, NULL, &dbg) == -ENOENT ? 0 : 1);
		}
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			      WEXITSTATUS(status) == 0,
		      "%s beside the binary: passed over, status %d",
		      round ? "a symlink to /dev/zero" : "a FIFO", status);
	}
	symtab__free(st);
	unlink(cand);
	unlink(bin);
	rmdir(dir);
}

/* A debuginfod tree libdebuginfod reads through file://: buildid/ID/debuginfo. */
static char dfd_dir[] = "/tmp/bpfsampler-unit-dfd.XXXXXX";
static bool dfd_ready;

static void test_debuginfod_tree(void)
{
	char path[PATH_MAX];

	CHECK(mkdtemp(dfd_dir), "mkdtemp %s: %s", dfd_dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/srv", dfd_dir);
	CHECK(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
	strcat(path, "/buildid");
	dfd_ready = mkdir(path, 0755) == 0;
	CHECK(dfd_ready, "mkdir %s: %s", path, strerror(errno));
}

static int serve(const struct symtab *st, const char *debug_file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/srv/buildid/%s", dfd_dir, symtab__build_id(st));
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	strcat(path, "/debuginfo");
	unlink(path);
	return symlink(debug_file, path) ? -errno : 0;
}

static void use_debuginfod(void)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "file://%s/srv", dfd_dir);
	setenv("DEBUGINFOD_URLS", path, 1);
	snprintf(path, sizeof(path), "%s/cache", dfd_dir);
	setenv("DEBUGINFOD_CACHE_PATH", path, 1);
}

static void test_debuginfod(void)
{
	struct symtab *st = NULL, *dbg = NULL;
	uint64_t addr = fx_local_addr();
	const char *name;

	CHECK(dfd_ready, "a debuginfod tree");
	if (!dfd_ready)
		return;
	CHECK(symtab__load(DBG("byid"), &st) == 0, "load stripped");
	if (!st)
		return;
	CHECK(serve(st, DBG("byid.full")) == 0, "serve byid.full: %s", strerror(errno));
	unsetenv("DEBUGINFOD_URLS");
	CHECK(!debuginfo__remote_wanted() && debuginfo__fetch(st, &dbg) == -ENOENT,
	      "without DEBUGINFOD_URLS, no server is asked");
	use_debuginfod();
	CHECK(debuginfo__load(st, DBG("byid"), NULL, &dbg) == -ENOENT,
	      "the local search never asks a server (it runs while sampling)");
	CHECK(debuginfo__remote_wanted() && debuginfo__fetch(st, &dbg) == 0,
	      "fetched by build-ID");
	name = dbg ? symtab__find(dbg, addr + 1, NULL) : NULL;
	CHECK(name && strcmp(name, "fx_local") == 0, "fx_local named: %s", name ? name : "NULL");
	/* the fetched file's DWARF gives the lines (filecache opens it so) */
	CHECK(dbg && symtab__has_debug_info(dbg) && symtab__path(dbg), "the fetched file has DWARF");
	if (dbg && symtab__path(dbg)) {
		const struct dw_frame *fr = NULL;
		struct dwlines *dl = NULL;
		size_t nr = 0;

		CHECK(!dwlines__open(symtab__path(dbg), &dl), "open %s", symtab__path(dbg));
		CHECK(dl && !dwlines__find(dl, addr + 1, &fr, &nr) && nr && fr[nr - 1].line &&
			      fr[nr - 1].function && !strcmp(fr[nr - 1].function, "fx_local"),
		      "fx_local's line from the fetched file: %zu frames", nr);
		dwlines__free(dl);
	}
	symtab__free(dbg);
	symtab__free(st);
}

static void test_debuginfod_wrong_build(void)
{
	struct symtab *st = NULL, *dbg = NULL;

	CHECK(dfd_ready, "a debuginfod tree");
	if (!dfd_ready)
		return;
	/* badcrc's own debug file is rejected by CRC, so the server is asked,
	 * and serves another build's file */
	CHECK(symtab__load(DBG("badcrc"), &st) == 0, "load");
	if (!st)
		return;
	CHECK(serve(st, DBG("other.full")) == 0, "serve other.full: %s", strerror(errno));
	use_debuginfod();
	CHECK(debuginfo__load(st, DBG("badcrc"), NULL, &dbg) == -ENOENT, "no local file");
	CHECK(debuginfo__fetch(st, &dbg) == -ENOENT,
	      "a served debug file of another build is rejected");
	symtab__free(dbg);
	symtab__free(st);
}

static void test_debuginfod_asked_once(void)
{
	struct symtab *st = NULL, *dbg = NULL;
	char cmd[PATH_MAX + 32];

	CHECK(dfd_ready, "a debuginfod tree");
	if (!dfd_ready)
		return;
	CHECK(symtab__load(FIXTURE_DIR "/fx_stripped", &st) == 0, "load");
	if (!st)
		return;
	use_debuginfod();
	CHECK(debuginfo__fetch(st, &dbg) == -ENOENT, "not served yet");
	/* Now served, and libdebuginfod's own record of the miss removed:
	 * only our memory of the answer keeps it a miss. */
	CHECK(serve(st, FIXTURE_DIR "/fx_pie") == 0, "serve fx_pie: %s", strerror(errno));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/cache'", dfd_dir);
	CHECK(system(cmd) == 0, "%s", cmd);
	CHECK(debuginfo__fetch(st, &dbg) == -ENOENT, "a build-ID is asked once per run");
	symtab__free(dbg);
	symtab__free(st);
}

int main(void)
{
	char cmd[PATH_MAX + 32];

	/* Hermetic: the user's servers are never asked. */
	unsetenv("DEBUGINFOD_URLS");
	RUN(test_by_build_id);
	RUN(test_wrong_build_rejected);
	RUN(test_debuglink);
	RUN(test_bad_crc);
	RUN(test_debuglink_not_a_file);
	/* in this order: the client remembers every build-ID it asked */
	RUN(test_debuginfod_tree);
	RUN(test_debuginfod);
	RUN(test_debuginfod_wrong_build);
	RUN(test_debuginfod_asked_once);
	if (dfd_ready) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dfd_dir);
		if (system(cmd))
			printf("    cannot remove %s\n", dfd_dir);
	}
	UNIT_EXIT();
}
