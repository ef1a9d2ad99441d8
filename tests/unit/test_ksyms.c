// SPDX-License-Identifier: GPL-2.0
/* kallsyms: text symbols only, modules named, hidden addresses, and the
 * live file. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ksyms.h"
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
	struct ksyms *ks;

	CHECK(ksyms__load(path, &ks) == 0, "load");
	CHECK(!ksyms__hidden(ks), "addresses visible");
	k = ksyms__find(ks, 0xffffffff81000150);
	CHECK(k && strcmp(k->name, "helper") == 0 && !k->module, "helper");
	k = ksyms__find(ks, 0xffffffff81000250);
	CHECK(k && strcmp(k->name, "helper") == 0, "data symbols are not functions: %s",
	      k ? k->name : "NULL");
	k = ksyms__find(ks, 0xffffffff81000300);
	CHECK(k && strcmp(k->name, "weak_fn") == 0, "weak text kept");
	k = ksyms__find(ks, 0xffffffffc0001010);
	CHECK(k && strcmp(k->name, "mod_fn") == 0 && k->module && strcmp(k->module, "mymod") == 0,
	      "module symbol with its module");
	CHECK(ksyms__find(ks, 0xffffffff80000000) == NULL, "below the first");
	ksyms__free(ks);
	unlink(path);
}

static void test_hidden(void)
{
	char *path = write_tmp("0000000000000000 T _stext\n0000000000000000 t helper\n");
	struct ksyms *ks;

	CHECK(ksyms__load(path, &ks) == 0, "load");
	CHECK(ksyms__hidden(ks), "kptr_restrict: all zero is hidden");
	CHECK(ksyms__find(ks, 0x1000) == NULL, "no names from zeroes");
	ksyms__free(ks);
	unlink(path);
}

static void test_live(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	uint64_t addr = 0;
	char line[256], name[128], type;
	const struct ksym *k;
	struct ksyms *ks;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 " %c %127s", &addr, &type, name) == 3 &&
		    strcmp(name, "schedule") == 0)
			break;
	if (f)
		fclose(f);
	if (!addr)
		SKIP_TEST("/proc/kallsyms hides addresses here (run as root)");
	CHECK(ksyms__load(NULL, &ks) == 0, "load /proc/kallsyms");
	k = ksyms__find(ks, addr + 1);
	CHECK(k && strcmp(k->name, "schedule") == 0, "schedule+1: %s", k ? k->name : "NULL");
	ksyms__free(ks);
}

int main(void)
{
	RUN(test_fixture);
	RUN(test_hidden);
	RUN(test_live);
	UNIT_EXIT();
}
