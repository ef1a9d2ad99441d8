// SPDX-License-Identifier: GPL-2.0
/* kallsyms: text symbols only, modules named, hidden addresses, and the
 * live file. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ksyms.h"
#include "namepack.h"

/* ksyms__find's answer, or NULL (one at a time: a static copy). */
static const struct ksym *find(const struct ksyms *ks, uint64_t addr)
{
	static struct ksym k;

	return ksyms__find(ks, addr, &k) ? &k : NULL;
}
#include "unit.h"

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/bpfs-ksyms.XXXXXX");
	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "temp");
	close(fd);
	return path;
}

static void test_fixture(void)
{
	const char *text = "ffffffff81000000 T _stext\n"
			   "ffffffff81000100 t helper\n"
			   "ffffffff81000200 D some_data\n"
			   "ffffffff81000300 W weak_fn\n"
			   "ffffffffc0001000 t mod_fn\t[mymod]\n"
			   "ffffffffc0002000 T other_mod_fn\t[other]\n";
	char *path = write_tmp(text);
	const struct ksym *k;
	struct ksyms *ks = NULL;

	CHECK(ksyms__load(path, &ks) == 0, "load");
	if (!ks)
		return;
	CHECK(!ksyms__hidden(ks), "addresses visible");
	k = find(ks, 0xffffffff81000150);
	CHECK(k && strcmp(k->name, "helper") == 0 && !k->module, "helper");
	k = find(ks, 0xffffffff81000250);
	CHECK(k && strcmp(k->name, "helper") == 0, "data symbols are not functions: %s",
	      k ? k->name : "NULL");
	k = find(ks, 0xffffffff81000300);
	CHECK(k && strcmp(k->name, "weak_fn") == 0, "weak text kept");
	k = find(ks, 0xffffffffc0001010);
	CHECK(k && strcmp(k->name, "mod_fn") == 0 && k->module && strcmp(k->module, "mymod") == 0,
	      "module symbol with its module");
	CHECK(find(ks, 0xffffffff80000000) == NULL, "below the first");
	ksyms__free(ks);
	unlink(path);
}

/* Lines out of order, aliases at one address (in either order: the same
 * name wins), BPF and ftrace entries, a 600-byte name, odd lines skipped. */
static void test_aliases_and_odd_lines(void)
{
	static char longname[601];
	char text[2048];
	const struct ksym *k;
	struct ksyms *ks = NULL;
	char *path;

	memset(longname, 'x', sizeof(longname) - 1);
	snprintf(text, sizeof(text),
		 "ffffffff81000400 t __memcpy_local\n"
		 "ffffffff81000400 W memcpy_weak\n"
		 "ffffffff81000400 T memcpy_global\n"
		 "ffffffff81000500 W weak_then_local\n"
		 "ffffffff81000500 t weak_then_local_l\n"
		 "ffffffff81000000 T _stext\n"
		 "garbage line\n"
		 "ffffffff81000600\n"
		 "ffffffff81000700 T %s\n"
		 "ffffffffc0003000 t bpf_prog_0123456789abcdef_handle\t[bpf]\n"
		 "ffffffffc0004000 t a_fn\t[mod_a]\n"
		 "ffffffffc0004100 t b_fn\t[mod_b]\n"
		 "ffffffffc0004200 t a_fn2\t[mod_a]\n",
		 longname);
	path = write_tmp(text);
	CHECK(ksyms__load(path, &ks) == 0, "load");
	if (!ks)
		return;
	k = find(ks, 0xffffffff81000410);
	CHECK(k && strcmp(k->name, "memcpy_global") == 0, "global alias wins: %s",
	      k ? k->name : "NULL");
	k = find(ks, 0xffffffff81000500);
	CHECK(k && strcmp(k->name, "weak_then_local") == 0, "weak beats local: %s",
	      k ? k->name : "NULL");
	k = find(ks, 0xffffffff81000010);
	CHECK(k && strcmp(k->name, "_stext") == 0, "sorted");
	k = find(ks, 0xffffffff81000701);
	CHECK(k && strlen(k->name) == 600, "long name kept whole: %zu", k ? strlen(k->name) : 0);
	k = find(ks, 0xffffffffc0003008);
	CHECK(k && strcmp(k->name, "bpf_prog_0123456789abcdef_handle") == 0 && k->module &&
		      strcmp(k->module, "bpf") == 0,
	      "bpf program");
	k = find(ks, 0xffffffffc0004208);
	CHECK(k && strcmp(k->name, "a_fn2") == 0 && k->module && strcmp(k->module, "mod_a") == 0,
	      "module named after another module's lines: %s", k && k->module ? k->module : "NULL");
	k = find(ks, 0xffffffffc0004108);
	CHECK(k && k->module && strcmp(k->module, "mod_b") == 0, "mod_b");
	ksyms__free(ks);
	unlink(path);

	/* the same aliases listed the other way round */
	path = write_tmp("ffffffff81000400 T memcpy_global\n"
			 "ffffffff81000400 W memcpy_weak\n"
			 "ffffffff81000400 t __memcpy_local\n");
	ks = NULL;
	CHECK(ksyms__load(path, &ks) == 0, "load reversed");
	k = ks ? find(ks, 0xffffffff81000400) : NULL;
	CHECK(k && strcmp(k->name, "memcpy_global") == 0, "order does not matter: %s",
	      k ? k->name : "NULL");
	ksyms__free(ks);
	unlink(path);
}

static void test_missing(void)
{
	struct ksyms *ks = NULL;

	CHECK(ksyms__load("/no/such/kallsyms", &ks) == -ENOENT && !ks, "missing is -ENOENT");
	ksyms__free(NULL);
}

/* No lines is not kptr_restrict: nothing says the addresses were hidden. */
static void test_empty(void)
{
	char *path = write_tmp("");
	struct ksyms *ks = NULL;

	CHECK(ksyms__load(path, &ks) == 0, "load");
	CHECK(ks && !ksyms__hidden(ks) && !find(ks, 0xffffffff81000000), "empty");
	ksyms__free(ks);
	unlink(path);
}

static void test_hidden(void)
{
	char *path = write_tmp("0000000000000000 T _stext\n0000000000000000 t helper\n");
	struct ksyms *ks = NULL;

	CHECK(ksyms__load(path, &ks) == 0, "load");
	if (!ks)
		return;
	CHECK(ksyms__hidden(ks), "kptr_restrict: all zero is hidden");
	CHECK(find(ks, 0x1000) == NULL, "no names from zeroes");
	ksyms__free(ks);
	unlink(path);
}

/* The live file: a well-known function and a module function, both found
 * by reading the file the plain way. */
static void test_live(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	uint64_t addr, sched = 0, mod_addr = 0;
	char line[1024], name[600], mod[128] = "", want_mod[128] = "", type;
	bool any_nonzero = false;
	struct timespec t0, t1;
	const struct ksym *k;
	struct ksyms *ks = NULL;

	while (f && fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%" SCNx64 " %c %599s [%127[^]]]", &addr, &type, name, mod);

		any_nonzero |= n >= 3 && addr;
		if (n == 3 && strcmp(name, "schedule") == 0)
			sched = addr;
		if (n == 4 && !mod_addr && (type == 't' || type == 'T') && strcmp(mod, "bpf")) {
			mod_addr = addr;
			strcpy(want_mod, mod);
		}
	}
	if (f)
		fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(ksyms__load(NULL, &ks) == 0, "load /proc/kallsyms");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!ks)
		return;
	printf("    loaded /proc/kallsyms in %.1f ms\n",
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	if (!any_nonzero) {
		CHECK(ksyms__hidden(ks), "all zero: hidden");
		ksyms__free(ks);
		SKIP_TEST("/proc/kallsyms hides addresses here (run as root)");
	}
	CHECK(!ksyms__hidden(ks), "addresses visible");
	CHECK(sched, "schedule is in /proc/kallsyms");
	k = find(ks, sched + 1);
	CHECK(k && strcmp(k->name, "schedule") == 0 && !k->module, "schedule+1: %s",
	      k ? k->name : "NULL");
	if (mod_addr) {
		k = find(ks, mod_addr);
		CHECK(k && k->addr == mod_addr && k->module && strcmp(k->module, want_mod) == 0,
		      "module function at 0x%" PRIx64 " in [%s]: got [%s]", mod_addr, want_mod,
		      k && k->module ? k->module : "NULL");
	}
	ksyms__free(ks);
}

/* A file whose names take more than NAMEPACK_PLAIN_MAX: kept as the
 * file's buffer, or compressed once namepack__compress_large was called;
 * the same answers either way, modules' names included. */
static void test_large(void)
{
	size_t cap = 4000 * 80, len = 0;
	char *text = malloc(cap + 1), *path;
	const struct ksym *k;
	struct ksyms *ks = NULL;

	CHECK(text, "memory");
	if (!text)
		return;
	for (int i = 0; i < 4000; i++)
		len += snprintf(text + len, cap - len, "%016llx t function_number_%06d_of_many%s\n",
				0xffffffff81000000ULL + i * 16ULL, i,
				i >= 3000 ? (i & 1 ? "\t[mod_odd]" : "\t[mod_even]") : "");
	path = write_tmp(text);
	free(text);
	CHECK(ksyms__load(path, &ks) == 0, "load");
	k = ks ? find(ks, 0xffffffff81000000ULL + 1234 * 16 + 5) : NULL;
	CHECK(k && strcmp(k->name, "function_number_001234_of_many") == 0 && !k->module,
	      "a vmlinux function: %s", k ? k->name : "NULL");
	k = ks ? find(ks, 0xffffffff81000000ULL + 3001 * 16) : NULL;
	CHECK(k && strcmp(k->name, "function_number_003001_of_many") == 0 && k->module &&
		      strcmp(k->module, "mod_odd") == 0,
	      "a module's function: %s [%s]", k ? k->name : "NULL",
	      k && k->module ? k->module : "NULL");
	k = ks ? find(ks, 0xffffffff81000000ULL + 3998 * 16 + 15) : NULL;
	CHECK(k && strcmp(k->name, "function_number_003998_of_many") == 0 && k->module &&
		      strcmp(k->module, "mod_even") == 0,
	      "another module's: %s", k ? k->name : "NULL");
	ksyms__free(ks);
	unlink(path);
}

int main(void)
{
	RUN(test_fixture);
	RUN(test_aliases_and_odd_lines);
	RUN(test_hidden);
	RUN(test_missing);
	RUN(test_empty);
	RUN(test_live);
	RUN(test_large);
	/* last, as it cannot be undone: the agent's way, the kernel's names
	 * compressed instead of kept in the file's own buffer */
	namepack__compress_large();
	RUN(test_live);
	RUN(test_aliases_and_odd_lines);
	RUN(test_large);
	UNIT_EXIT();
}
