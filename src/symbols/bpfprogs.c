// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpfprogs.h"
#include "hashmap.h"
#include "log.h"

struct bpf_func {
	uint64_t start;
	uint64_t len;
	char *name; /* NULL until kallsyms named it */
};

struct bpfprogs {
	struct hashmap *seen;	 /* prog id -> (void *)1 */
	struct bpf_func *funcs;	 /* sorted by start before lookups */
	size_t nr, cap;
	bool sorted;
	bool usable;
	bool polled;	 /* once: later programs are named as they come */
};

int bpfprogs__new(struct bpfprogs **out)
{
	struct bpfprogs *bp = calloc(1, sizeof(*bp));

	if (!bp)
		return -ENOMEM;
	bp->seen = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!bp->seen) {
		free(bp);
		return -ENOMEM;
	}
	bp->sorted = true;
	*out = bp;
	return 0;
}

void bpfprogs__free(struct bpfprogs *bp)
{
	if (!bp)
		return;
	for (size_t i = 0; i < bp->nr; i++)
		free(bp->funcs[i].name);
	free(bp->funcs);
	hashmap__free(bp->seen);
	free(bp);
}

/* A program's image is freed when it is unloaded and its space reused: a
 * function at the start of an older one replaces it (samples carry no time
 * to tell them apart in the kernel). */
static int add_func(struct bpfprogs *bp, uint64_t start, uint64_t len)
{
	for (size_t i = 0; i < bp->nr; i++) {
		if (bp->funcs[i].start != start)
			continue;
		free(bp->funcs[i].name);
		bp->funcs[i] = (struct bpf_func){ .start = start, .len = len };
		return 0;
	}
	if (bp->nr == bp->cap) {
		size_t cap = bp->cap ? 2 * bp->cap : 64;
		struct bpf_func *v = realloc(bp->funcs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		bp->funcs = v;
		bp->cap = cap;
	}
	bp->funcs[bp->nr++] = (struct bpf_func){ .start = start, .len = len };
	bp->sorted = false;
	return 0;
}

/* The extents of program id's functions (the program and its subprograms,
 * each a symbol of its own). */
static int read_prog(struct bpfprogs *bp, uint32_t id)
{
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info), n;
	uint64_t *ksyms = NULL;
	uint32_t *lens = NULL;
	int fd, err;

	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return -errno; /* gone already, or not allowed */
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	n = info.nr_jited_ksyms < info.nr_jited_func_lens ? info.nr_jited_ksyms
							  : info.nr_jited_func_lens;
	if (!err && n) {
		ksyms = calloc(n, sizeof(*ksyms));
		lens = calloc(n, sizeof(*lens));
		if (!ksyms || !lens) {
			err = -ENOMEM;
			goto out;
		}
		memset(&info, 0, sizeof(info));
		info.nr_jited_ksyms = info.nr_jited_func_lens = n;
		info.jited_ksyms = (uintptr_t)ksyms;
		info.jited_func_lens = (uintptr_t)lens;
		len = sizeof(info);
		err = bpf_obj_get_info_by_fd(fd, &info, &len);
		for (uint32_t i = 0; !err && i < n; i++)
			err = add_func(bp, ksyms[i], lens[i]);
	}
out:
	free(ksyms);
	free(lens);
	close(fd);
	return err;
}

/* How many functions start at or below addr (funcs sorted). */
static size_t upto(const struct bpfprogs *bp, uint64_t addr)
{
	size_t lo = 0, hi = bp->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (bp->funcs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_func(const void *a, const void *b)
{
	const struct bpf_func *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int bpfprogs__add(struct bpfprogs *bp, uint64_t start, uint64_t len)
{
	return add_func(bp, start, len);
}

/*
 * Names the functions still unnamed from the [bpf] lines of f (kallsyms
 * text). A line is read whole whatever its length (names are up to
 * KSYM_NAME_LEN, 512 bytes, since Linux 6.1): the tail of a longer one is
 * never taken for a line of its own, nor a line whose fields run together.
 * Names longer than 255 bytes are left out (BPF ones are at most 8 + 16 +
 * 1 + 15).
 */
void bpfprogs__name_from(struct bpfprogs *bp, FILE *f)
{
	char *line = NULL, name[256];
	unsigned long long addr;
	size_t cap = 0;
	ssize_t len;

	if (!bp->sorted && bp->nr) {
		qsort(bp->funcs, bp->nr, sizeof(*bp->funcs), cmp_func);
		bp->sorted = true;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		int a_end = 0, t_end = 0, end = 0;
		size_t n;
		char type;

		/* "ADDR T NAME\t[bpf]": three fields apart, the type one
		 * character, the name whole */
		if (!strstr(line, "\t[bpf]") ||
		    sscanf(line, "%llx%n %c%n %255s%n", &addr, &a_end, &type, &t_end, name, &end) != 3 ||
		    !isspace((unsigned char)line[a_end]) || !isspace((unsigned char)line[t_end]) ||
		    (line[end] && !isspace((unsigned char)line[end])))
			continue;
		n = upto(bp, addr);
		if (n && bp->funcs[n - 1].start == addr && !bp->funcs[n - 1].name)
			bp->funcs[n - 1].name = strdup(name);
	}
	free(line);
}

static void name_funcs(struct bpfprogs *bp)
{
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return;
	bpfprogs__name_from(bp, f);
	fclose(f);
}

int bpfprogs__poll(struct bpfprogs *bp)
{
	bool added = false, first;
	uint32_t id = 0;
	int err = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		if (hashmap__find(bp->seen, (void *)(uintptr_t)id))
			continue;
		err = read_prog(bp, id);
		if (err == -EPERM || err == -EACCES)
			break;
		if (hashmap__set(bp->seen, (void *)(uintptr_t)id, (void *)1, NULL))
			return -ENOMEM;
		added |= !err;
		err = 0;
	}
	if (err) {
		p_dbg("cannot list BPF programs: %s", strerror(-err));
		return err;
	}
	bp->usable = true;
	first = !bp->polled;
	bp->polled = true;
	if (!added)
		return 0;
	qsort(bp->funcs, bp->nr, sizeof(*bp->funcs), cmp_func);
	bp->sorted = true;
	/* The programs loaded before the first poll (bpfsampler's own among
	 * them) are named from kallsyms at the end if still loaded: reading
	 * it costs ~65 ms of system time, so only programs that come later,
	 * and may go before the end, are named now. */
	if (!first)
		name_funcs(bp);
	return 0;
}

bool bpfprogs__usable(const struct bpfprogs *bp)
{
	return bp->usable;
}

bool bpfprogs__find(const struct bpfprogs *bp, uint64_t addr, const char **name,
		    uint64_t *start)
{
	size_t n = bp->sorted ? upto(bp, addr) : 0;

	/* addr - start: start + len may pass 2^64 */
	if (!n || addr - bp->funcs[n - 1].start >= bp->funcs[n - 1].len)
		return false;
	*name = bp->funcs[n - 1].name;
	*start = bp->funcs[n - 1].start;
	return true;
}
