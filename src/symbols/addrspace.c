// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "addrspace.h"
#include "filecache.h"
#include "hashmap.h"
#include "log.h"
#include "perfmap.h"
#include "procmaps.h"
#include "vec.h"

/* A process's executable mappings as read from /proc at one time. */
struct snapshot {
	struct procmaps *maps;
	const struct mapped_file **files; /* maps->maps[i]'s file, or NULL */
	uint64_t mm;			  /* their address space; 0: not known */
	uint64_t read_ns;		  /* read by then (CLOCK_MONOTONIC) */
	struct snapshot *older;
};

/* Snapshots kept per process: one per image it exec'd, and with mappings
 * followed, one more each time a read finds something unmapped (samples
 * taken before still need it). The oldest go first. */
#define MAX_SNAPSHOTS 8

/* An executable file mapping made during the profile: what is at
 * [m.start, m.end) for the samples of generation gen and later, until a
 * later mapping covers the address. */
struct mapevent {
	uint32_t gen;
	uint64_t time_ns;
	bool exec;	  /* an exec: older events are of another image */
	uint64_t start_ns; /* an exec: when it began (the side-band's), 0: not known */
	uint64_t mm;
	struct procmap m; /* m.path owned; unset for an exec */
	const struct mapped_file *file;
};

struct proc {
	int pid;
	char comm[17];
	struct snapshot *snaps;	 /* newest first; NULL: never readable */
	unsigned int reads;	 /* times the maps were read */
	unsigned int eager;	 /* announcements read at once since exec */
	uid_t uid;		 /* real uid, for the perf map's owner check */
	int nspid;		 /* pid in its own pid namespace */
	bool ids_read;		 /* uid and nspid read (for a perf map) */
	struct perfmap *jit;	 /* /tmp/perf-PID.map, when it has JIT code */
	int64_t jit_size;	 /* its size when last read; -1: none there */
	uint64_t jit_check_ns;	 /* when a miss last looked at it again */
	int ppid;		 /* parent, when it forked us without exec */
	uint64_t mm;		 /* address space last announced */
	bool dirty;		 /* announced since the last read */
	bool refreshed;		 /* maps re-read once after a miss */
	unsigned int gone;	 /* sweeps that found it exited */
	bool queued;		 /* in addrspace.announced */
	unsigned int empty;	 /* reads in a row that found nothing */
	uint64_t retry_ns;	 /* in addrspace.retry: read again then; 0: not */
	uint64_t lost_ns;	 /* side-band records were last lost then */
	uint64_t exec_start_ns;	 /* the side-band saw its last exec begin then */
	struct mapevent *events; /* followed mappings, sorted by gen */
	size_t nr_events, cap_events;
};

struct addrspace {
	struct hashmap *procs; /* pid -> struct proc */
	struct vec announced;  /* pids to read at once (int) */
	struct vec retry;      /* pids to read again, not yet mapped (int) */
	procmaps_load_fn load; /* procmaps__load, or a test's */
	int self;	       /* our pid: never read as a parent */
	size_t max_procs;      /* processes known at most; 0: no bound */
	struct filecache *fc;
	bool tracking;	       /* mappings followed as made */
	addrspace_maps_fn on_maps;
	void *on_maps_ctx;
	struct addrspace_stats stats;
};

static void free_snapshots(struct addrspace *as, struct snapshot *s)
{
	while (s) {
		struct snapshot *older = s->older;

		for (size_t i = 0; s->files && i < s->maps->nr; i++)
			filecache__put(as->fc, s->files[i]);
		procmaps__free(s->maps);
		free(s->files);
		free(s);
		s = older;
	}
}

static void free_proc(struct addrspace *as, struct proc *p)
{
	free_snapshots(as, p->snaps);
	perfmap__free(p->jit);
	for (size_t e = 0; e < p->nr_events; e++) {
		free(p->events[e].m.path);
		filecache__put(as->fc, p->events[e].file);
	}
	free(p->events);
	free(p);
}

int addrspace__new(struct filecache *fc, struct addrspace **out)
{
	struct addrspace *as = calloc(1, sizeof(*as));

	if (!as)
		return -ENOMEM;
	as->fc = fc;
	as->announced = VEC_INIT(int);
	as->retry = VEC_INIT(int);
	as->load = procmaps__load;
	as->self = getpid();
	as->procs = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	if (!as->procs) {
		free(as);
		return -ENOMEM;
	}
	*out = as;
	return 0;
}

void addrspace__free(struct addrspace *as)
{
	void *val;

	if (!as)
		return;
	for (size_t i = 0; hashmap__next(as->procs, &i, NULL, &val);)
		free_proc(as, val);
	hashmap__free(as->procs);
	vec__free(&as->announced);
	vec__free(&as->retry);
	free(as);
}

void addrspace__set_tracking(struct addrspace *as, bool on)
{
	as->tracking = on;
}

void addrspace__set_maps_reader(struct addrspace *as, procmaps_load_fn load)
{
	as->load = load ? load : procmaps__load;
}

void addrspace__set_maps_hook(struct addrspace *as, addrspace_maps_fn fn, void *ctx)
{
	as->on_maps = fn;
	as->on_maps_ctx = ctx;
}

void addrspace__set_max_procs(struct addrspace *as, size_t n)
{
	as->max_procs = n;
}

static struct proc *find_proc(const struct addrspace *as, int pid)
{
	return hashmap__find(as->procs, (void *)(uintptr_t)pid);
}

/* pid's record, made when new unless max_procs are known: NULL then, and
 * the record that asked (announcement, exec, mapping) counted unfollowed. */
static struct proc *get_proc(struct addrspace *as, int pid)
{
	struct proc *p = find_proc(as, pid);

	if (p)
		return p;
	if (as->max_procs && hashmap__size(as->procs) >= as->max_procs) {
		as->stats.unfollowed++;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (hashmap__set(as->procs, (void *)(uintptr_t)pid, p, NULL)) {
		free(p);
		return NULL;
	}
	return p;
}

static bool same_mapping(const struct procmap *a, const struct procmap *b)
{
	return a->start == b->start && a->dev == b->dev && a->inode == b->inode &&
	       a->pgoff == b->pgoff;
}

/* Whether a file mapping of old is not in new. */
static bool unmapped_since(const struct procmaps *old, const struct procmaps *new)
{
	for (size_t i = 0; i < old->nr; i++) {
		const struct procmap *m = &old->maps[i], *n;

		if (!m->path || m->path[0] != '/')
			continue;
		n = procmaps__find(new, m->start);
		if (!n || !same_mapping(m, n))
			return true;
	}
	return false;
}

/* Keeps s as p's newest snapshot: in place of the newest when it only adds
 * to it, else in front of it. */
static void keep_snapshot(struct addrspace *as, struct proc *p, struct snapshot *s)
{
	struct snapshot *head = p->snaps, **link;
	unsigned int n = 0;

	s->mm = p->mm;
	/* another mm: an exec since the last read */
	if (head && head->mm == p->mm &&
	    !(as->tracking && unmapped_since(head->maps, s->maps))) {
		s->older = head->older;
		head->older = NULL;
		free_snapshots(as, head);
		p->snaps = s;
		return;
	}
	s->older = head;
	p->snaps = s;
	for (link = &p->snaps; *link && n < MAX_SNAPSHOTS; link = &(*link)->older)
		n++;
	free_snapshots(as, *link);
	*link = NULL;
}

/* Real uid and the pid inside the process's own pid namespace. */
static void read_ids(struct proc *p)
{
	char path[64], line[256];
	FILE *f;

	p->nspid = p->pid;
	snprintf(path, sizeof(path), "/proc/%d/status", p->pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Uid:", 4))
			p->uid = strtoul(line + 4, NULL, 10);
		else if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t') ? strrchr(line, '\t') : line + 6;

			p->nspid = atoi(last);
		}
	}
	if (f)
		fclose(f);
}

/* Where the process's perf map is: inside its mount and pid namespaces
 * while it lives (alt false), else the host's /tmp (alt true). */
static void perf_map_path(struct proc *p, bool alt, char *path, size_t size)
{
	/* read here, not for every process: few have anonymous code */
	if (!p->ids_read) {
		read_ids(p);
		p->ids_read = true;
	}
	if (alt)
		snprintf(path, size, "/tmp/perf-%d.map", p->pid);
	else
		snprintf(path, size, "/proc/%d/root/tmp/perf-%d.map", p->pid, p->nspid);
}

/* The perf map's size now (lstat, as perfmap__load opens: no symlink
 * followed), -1 when there is none. */
static int64_t perf_map_size(struct proc *p)
{
	char path[128];
	struct stat st;

	for (int alt = 0; alt < 2; alt++) {
		perf_map_path(p, alt, path, sizeof(path));
		if (!lstat(path, &st))
			return st.st_size;
	}
	return -1;
}

/*
 * A JIT's symbol map: /tmp/perf-NSPID.map seen from inside the process's
 * mount and pid namespaces, else the host's /tmp/perf-PID.map. Read only
 * when owned by the process's user or root, as perf checks.
 */
static void load_perf_map(struct proc *p)
{
	char path[128];
	struct perfmap *pm;
	int err;

	p->jit_size = perf_map_size(p);
	perf_map_path(p, false, path, sizeof(path));
	err = perfmap__load(path, p->uid, &pm);
	if (err == -ENOENT || err == -ESRCH) {
		perf_map_path(p, true, path, sizeof(path));
		err = perfmap__load(path, p->uid, &pm);
	}
	if (err == -EPERM)
		p_warn("ignoring %s: not owned by the process's user (uid %u) or root", path,
		       (unsigned int)p->uid);
	else if (err == -EINVAL)
		p_warn("ignoring %s: not a regular file", path);
	else if (err == -ELOOP)
		p_warn("ignoring %s: a symbolic link (a perf map must be the file itself)", path);
	if (err)
		return;
	if (perfmap__unread(pm))
		p_warn("%s: read its first %lu MiB only, %" PRIu64 " bytes left unread (a perf "
		       "map larger than that is not a JIT's)", path, PERFMAP_MAX_BYTES >> 20,
		       perfmap__unread(pm));
	perfmap__free(p->jit);
	p->jit = pm;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * A read that found no executable mapping: a zombie (it has exited: keep
 * what we had), or a process caught inside exec, whose new address space
 * has only its stack until the kernel maps the binary. An announcement
 * from there may be the process's only one (the BPF side announces an
 * address space once, and a static binary maps nothing later): read it
 * again soon, a few times, backing off, so its samples get their names and
 * its unwind tables. Seen on 5.10 and 6.1 for -- command.
 */
#define EMPTY_RETRIES 8
#define EMPTY_RETRY_NS 2000000ULL /* doubled at each retry: ~0.5 s in all */

static void retry_later(struct addrspace *as, struct proc *p)
{
	int *q;

	if (p->empty >= EMPTY_RETRIES) {
		p_dbg("pid %d: still no executable mapping after %u reads", p->pid, p->empty);
		return;
	}
	p_dbg("pid %d: no executable mapping yet (in exec, or exited): read again", p->pid);
	if (!p->retry_ns) {
		q = vec__push(&as->retry);
		if (!q)
			return;
		*q = p->pid;
	}
	p->retry_ns = now_ns() + (EMPTY_RETRY_NS << p->empty++);
	as->stats.empty_reads++;
}

static void load_maps(struct addrspace *as, struct proc *p)
{
	struct snapshot *s;
	bool anon_exec = false;
	struct procmaps *pm;
	int err;

	p->dirty = false;
	err = as->load(p->pid, &pm);
	if (err) {
		p_dbg("pid %d: maps unreadable: %s", p->pid, strerror(-err));
		return; /* gone: keep what we had */
	}
	if (!pm->nr) {
		procmaps__free(pm);
		retry_later(as, p);
		return;
	}
	p->empty = 0;
	p_dbg("pid %d: %zu executable mappings", p->pid, pm->nr);
	s = calloc(1, sizeof(*s));
	if (s)
		s->files = calloc(pm->nr, sizeof(*s->files));
	if (!s || !s->files) {
		free(s);
		procmaps__free(pm);
		return;
	}
	s->maps = pm;
	s->read_ns = now_ns();
	/* Open the files now, through /proc/PID/map_files, while the process
	 * lives: a deleted binary or one in another mount namespace cannot be
	 * opened by its path after it exits. Cached per file, so cheap. */
	for (size_t i = 0; i < pm->nr; i++) {
		if (pm->maps[i].path && pm->maps[i].path[0] == '/')
			s->files[i] = filecache__open(as->fc, p->pid, &pm->maps[i]);
		anon_exec |= !pm->maps[i].path;
	}
	if (as->on_maps)
		as->on_maps(as->on_maps_ctx, p->pid, pm,
			    (const struct mapped_file *const *)s->files);
	keep_snapshot(as, p, s);
	if (anon_exec)
		load_perf_map(p);
	if (!p->reads++)
		as->stats.processes++;
}

/*
 * Called when the BPF side announces a process: new, exec'd (new address
 * space), or with a changed number of mappings. The first few announcements
 * of a process are read at once (early in its life it may be gone in
 * milliseconds, and ld.so is still mapping libraries); after that, reads
 * are batched by addrspace__refresh(), since a process that keeps mapping
 * and unmapping memory would announce itself at every sample.
 */
#define EAGER_READS 8

/* Read as soon as the drain pass that brought the announcement ends: no
 * I/O while records are drained, or a busy ring never is. */
static void queue_read(struct addrspace *as, struct proc *p)
{
	int *q;

	if (p->queued)
		return;
	q = vec__push(&as->announced);
	if (q) {
		*q = p->pid;
		p->queued = true;
	} else {
		load_maps(as, p);
	}
}

void addrspace__note_process(struct addrspace *as, int pid, int ppid, uint64_t mm,
			     const char *comm)
{
	struct proc *p = get_proc(as, pid);

	if (!p)
		return;
	p_dbg("process %d (%s) announced (maps read %u times)", pid, comm, p->reads);
	if (!p->comm[0])
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	if (mm && p->mm && mm != p->mm) {
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
		p->eager = 0; /* an exec: a new life */
		p->empty = 0;
	}
	if (mm)
		p->mm = mm;
	if (p->eager++ < EAGER_READS)
		queue_read(as, p);
	else
		p->dirty = true;
	/* The parent's maps are the child's if the child is gone before its
	 * own could be read: read them too while it lives, but after the
	 * child's (the child may be gone by the time a large parent is read:
	 * seconds under emulation). Not ours: a child of -- command runs our
	 * code only between fork and exec. */
	if (ppid > 0 && ppid != pid) {
		p->ppid = ppid;
		if (ppid != as->self && !find_proc(as, ppid))
			addrspace__note_process(as, ppid, 0, 0, comm);
	}
}

/* The retries that are due; a read may queue its process again, at the
 * end, for later. */
static void read_retries(struct addrspace *as)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < as->retry.nr;) {
		int *q = vec__at(&as->retry, i);
		struct proc *p = find_proc(as, *q);

		if (p && p->retry_ns > now) {
			i++;
			continue;
		}
		*q = *(int *)vec__at(&as->retry, --as->retry.nr);
		if (!p || !p->retry_ns)
			continue; /* forgotten (its pid may be another's now) */
		p->retry_ns = 0;
		load_maps(as, p);
	}
}

void addrspace__read_announced(struct addrspace *as)
{
	for (size_t i = 0; i < as->announced.nr; i++) {
		struct proc *p = find_proc(as, *(int *)vec__at(&as->announced, i));

		if (!p)
			continue;
		p->queued = false;
		load_maps(as, p);
	}
	vec__clear(&as->announced);
	if (as->retry.nr)
		read_retries(as);
}

void addrspace__refresh(struct addrspace *as)
{
	void *val;

	addrspace__read_announced(as);
	for (size_t i = 0; hashmap__next(as->procs, &i, NULL, &val);) {
		struct proc *p = val;

		if (p->dirty)
			load_maps(as, p);
	}
}

/* " (deleted)" ends the name of a file unlinked while mapped. */
static char *undeleted(const char *path, size_t n)
{
	if (n > 10 && !strcmp(path + n - 10, " (deleted)"))
		n -= 10;
	return strndup(path, n);
}

/* The path of a mapping just made: as the kernel named it in the record
 * (the side-band's mmap2), else the map_files link while it is mapped (it
 * takes the process's mmap lock, which a process mapping in a loop then
 * waits for), else where a maps read saw it. filecache checks the inode
 * of whatever path it opens. */
static char *mapping_path(const struct proc *p, const struct procmap *m, const char *seen)
{
	char link[96], buf[4096];
	ssize_t n;

	if (seen && seen[0] == '/')
		return undeleted(seen, strlen(seen));
	procmaps__file_link(p->pid, m, link, sizeof(link));
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		return undeleted(buf, n);
	}
	for (const struct snapshot *s = p->snaps; s; s = s->older)
		for (size_t i = 0; i < s->maps->nr; i++)
			if (s->maps->maps[i].path && same_mapping(&s->maps->maps[i], m))
				return strdup(s->maps->maps[i].path);
	return NULL;
}

/* Puts ev in p->events at its place by gen (an exec before the mappings of
 * its own gen); i: the place it is moved from, or p->nr_events for a new
 * one (room made). */
static size_t place_event(struct proc *p, const struct mapevent *ev, size_t i)
{
	for (; i > 0 && (p->events[i - 1].gen > ev->gen ||
			 (p->events[i - 1].gen == ev->gen && ev->exec && !p->events[i - 1].exec));
	     i--)
		p->events[i] = p->events[i - 1];
	p->events[i] = *ev;
	return i;
}

/*
 * The BPF side takes an exec's gen at its end (sched_process_exec), after
 * the kernel mapped the new image; the side-band's mappings of the image
 * may have taken theirs before. The exec at index x, whose start the
 * side-band gave, is moved before every mapping made between its start and
 * its end: samples of the new image find them, samples of the old one not.
 */
static void settle_exec(struct proc *p, size_t x)
{
	struct mapevent e = p->events[x];
	uint32_t gen = e.gen;

	if (!e.start_ns)
		return;
	for (size_t i = 0; i < x; i++) {
		const struct mapevent *m = &p->events[i];

		if (!m->exec && m->time_ns >= e.start_ns && m->time_ns <= e.time_ns &&
		    m->gen < gen)
			gen = m->gen;
	}
	if (gen == e.gen)
		return;
	e.gen = gen;
	place_event(p, &e, x);
}

/* After a mapping was placed at i, before the end: an exec after it that it
 * belongs to moves before it. */
static void settle_after(struct proc *p, size_t i)
{
	const struct mapevent *m = &p->events[i];

	for (size_t x = i + 1; x < p->nr_events; x++) {
		const struct mapevent *e = &p->events[x];

		if (e->exec && e->start_ns && e->start_ns <= m->time_ns && m->time_ns <= e->time_ns) {
			settle_exec(p, x);
			return;
		}
	}
}

/* The start of the exec e ended with, if the side-band gave it: after every
 * earlier exec of p. */
static uint64_t exec_start(const struct proc *p, const struct mapevent *e)
{
	if (!p->exec_start_ns || p->exec_start_ns > e->time_ns)
		return 0;
	for (size_t i = 0; i < p->nr_events; i++)
		if (p->events[i].exec && p->events[i].time_ns < e->time_ns &&
		    p->events[i].time_ns >= p->exec_start_ns)
			return 0;
	return p->exec_start_ns;
}

static int add_event(struct proc *p, const struct mapevent *ev)
{
	size_t i;

	if (p->nr_events == p->cap_events) {
		size_t cap = p->cap_events ? 2 * p->cap_events : 8;
		struct mapevent *v = realloc(p->events, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->events = v;
		p->cap_events = cap;
	}
	/* Records of several CPUs' rings arrive out of gen order. */
	i = place_event(p, ev, p->nr_events);
	p->nr_events++;
	if (ev->exec)
		settle_exec(p, i);
	else if (i + 1 < p->nr_events)
		settle_after(p, i);
	return 0;
}

void addrspace__note_exec_start(struct addrspace *as, int pid, uint64_t time_ns)
{
	struct proc *p = get_proc(as, pid);

	if (!p)
		return;
	p->exec_start_ns = time_ns;
	/* the BPF side's exec may have come first: the first one after it */
	for (size_t x = 0; x < p->nr_events; x++) {
		struct mapevent *e = &p->events[x];

		if (e->exec && e->time_ns >= time_ns) {
			if (!e->start_ns) {
				e->start_ns = time_ns;
				settle_exec(p, x);
			}
			return;
		}
	}
}

void addrspace__note_mapping(struct addrspace *as, int pid, const struct as_mapping *am)
{
	struct proc *p = get_proc(as, pid);
	struct mapevent ev = {
		.gen = am->gen,
		.time_ns = am->time_ns,
		.exec = am->exec,
		.mm = am->mm,
		.m = { .start = am->start, .end = am->end, .pgoff = am->pgoff, .inode = am->ino,
		       .exec = true, .dev = makedev(am->dev >> 20, am->dev & 0xfffff) },
	};

	if (!p)
		return;
	if (ev.exec)
		ev.start_ns = exec_start(p, &ev);
	if (!ev.exec) {
		as->stats.mappings++;
		/* A file already read (every process maps libc): named as
		 * first seen, with no readlink through /proc. */
		ev.file = filecache__known(as->fc, &ev.m);
		if (ev.file) {
			ev.m.path = strdup(ev.file->path);
			if (!ev.m.path) {
				filecache__put(as->fc, ev.file);
				ev.file = NULL;
			}
		} else {
			ev.m.path = mapping_path(p, &ev.m, am->path);
			if (ev.m.path)
				ev.file = filecache__open(as->fc, pid, &ev.m);
		}
		if (!ev.file || !ev.file->st) {
			as->stats.mappings_unopened++;
			p_dbg("pid %d: mapping %" PRIx64 "-%" PRIx64 " of inode %" PRIu64
			      " could not be read", pid, am->start, am->end, am->ino);
		}
		if (!ev.m.path)
			ev.m.path = strdup("[unknown file]");
	}
	if (add_event(p, &ev)) {
		free(ev.m.path);
		filecache__put(as->fc, ev.file);
	}
}

uint32_t addrspace__gen_at(const struct addrspace *as, int pid, uint32_t gen, uint64_t time_ns)
{
	const struct proc *p = find_proc(as, pid);
	uint32_t at = gen;

	if (!p)
		return gen;
	/* Events are sorted by gen. An exec's gen is taken as it happens, so
	 * one after gen came after the sample: what follows it is of a later
	 * image. */
	for (size_t i = 0; i < p->nr_events; i++) {
		const struct mapevent *e = &p->events[i];

		if (e->gen <= gen)
			continue;
		if (e->exec)
			break;
		if (e->time_ns <= time_ns)
			at = e->gen;
	}
	return at;
}

void addrspace__mappings_lost(struct addrspace *as)
{
	uint64_t now = now_ns();
	void *val;

	for (size_t i = 0; hashmap__next(as->procs, &i, NULL, &val);) {
		struct proc *p = val;

		if (p->gone)
			continue;
		p->lost_ns = now;
		if (!p->dirty) {
			p->dirty = true;
			as->stats.reread_after_loss++;
		}
	}
}

/* Side-band records were lost after e was made: e may have been unmapped
 * and replaced unseen. A maps read since the loss that shows another
 * mapping at addr wins (for every sample of e's gen or later: which of
 * them came after the replacement is not known). */
static bool replaced_unseen(const struct proc *p, const struct mapevent *e, uint64_t addr,
			    struct as_hit *hit)
{
	if (p->lost_ns <= e->time_ns)
		return false;
	for (const struct snapshot *s = p->snaps; s && s->read_ns > p->lost_ns; s = s->older) {
		const struct procmap *m = procmaps__find(s->maps, addr);

		if (!m)
			continue;
		if (same_mapping(m, &e->m))
			return false;
		hit->m = m;
		hit->file = s->files[m - s->maps->maps];
		return true;
	}
	return false;
}

/* The newest followed mapping of p made at or before gen that covers addr,
 * back to the last exec before gen (*exec_mm: the image it made, else 0). */
static const struct mapevent *find_followed(const struct proc *p, uint32_t gen, uint64_t addr,
					    uint64_t *exec_mm)
{
	*exec_mm = 0;
	for (size_t i = p->nr_events; i-- > 0;) {
		const struct mapevent *e = &p->events[i];

		if (e->gen > gen)
			continue;
		if (e->exec) {
			*exec_mm = e->mm;
			return NULL;
		}
		if (addr >= e->m.start && addr < e->m.end)
			return e;
	}
	return NULL;
}

/* The first followed mapping of p made after gen that covers addr, in the
 * image a sample of gen was in (up to the next exec). */
static const struct mapevent *find_followed_after(const struct proc *p, uint32_t gen,
						  uint64_t addr)
{
	for (size_t i = 0; i < p->nr_events; i++) {
		const struct mapevent *e = &p->events[i];

		if (e->gen <= gen)
			continue;
		if (e->exec)
			return NULL;
		if (addr >= e->m.start && addr < e->m.end)
			return e;
	}
	return NULL;
}

/* Whether mapping m of snapshot s may be one made after gen, which was not
 * there yet for a sample of gen: a mapping made after gen, before s was
 * read, of the same file at the same place. (A file mapped again where it
 * was before, after s was read, does not make s's older mapping of it
 * new.) */
static bool made_after(const struct proc *p, const struct snapshot *s, const struct procmap *m,
		       uint32_t gen)
{
	for (size_t i = p->nr_events; i-- > 0 && p->events[i].gen > gen;) {
		const struct mapevent *e = &p->events[i];

		if (!e->exec && e->time_ns <= s->read_ns && same_mapping(&e->m, m))
			return true;
	}
	return false;
}

/* Whether a sample of gen can be in the image whose maps were read as mm
 * (0: not known): the image of the last exec before gen, or with no exec
 * before gen, an image older than the first exec after it. */
static bool image_at(const struct proc *p, uint64_t mm, uint32_t gen, uint64_t exec_mm)
{
	if (!mm || exec_mm)
		return !mm || mm == exec_mm;
	for (size_t i = 0; i < p->nr_events; i++)
		if (p->events[i].exec && p->events[i].gen > gen && p->events[i].mm == mm)
			return false;
	return true;
}

/* The mapping of snapshot s that covers addr, if it was there at gen
 * (unless !strict: if it was there at all). */
static bool find_read(const struct proc *p, const struct snapshot *s, uint32_t gen,
		      uint64_t exec_mm, uint64_t addr, bool strict, struct as_hit *hit)
{
	const struct procmap *m = procmaps__find(s->maps, addr);

	if (!m || !image_at(p, s->mm, gen, exec_mm) || (strict && made_after(p, s, m, gen)))
		return false;
	hit->m = m;
	hit->file = s->files[m - s->maps->maps];
	return true;
}

/*
 * What p had mapped at addr at gen: followed mappings first (they are
 * newer than any maps read), then the maps read from /proc. A mapping the
 * side-band brought gets its gen when the loader reads it, so a sample
 * taken just after the mapping was made may carry the gen before it: when
 * nothing that was there at gen covers addr, a mapping made after gen that
 * does is the best answer (samples of a library dlopen'ed where none was,
 * ld.so's early work after exec), never [unmapped].
 */
static bool find_own(const struct proc *p, uint32_t gen, uint64_t addr, struct as_hit *hit)
{
	uint64_t exec_mm;
	const struct mapevent *e = find_followed(p, gen, addr, &exec_mm);

	if (e && replaced_unseen(p, e, addr, hit))
		return true;
	if (e) {
		hit->m = &e->m;
		hit->file = e->file;
		return true;
	}
	for (int strict = 1; strict >= 0; strict--)
		for (const struct snapshot *s = p->snaps; s; s = s->older)
			if (find_read(p, s, gen, exec_mm, addr, strict, hit))
				return true;
	/* nothing read covers it (a process gone before its maps could be
	 * read): what the side-band saw it map just after gen (aggregated
	 * stacks have no time to put them right, as stream mode does) */
	e = find_followed_after(p, gen, addr);
	if (e) {
		hit->m = &e->m;
		hit->file = e->file;
		return true;
	}
	return false;
}

int addrspace__find(struct addrspace *as, int pid, uint32_t gen, uint64_t addr,
		    struct as_hit *hit)
{
	struct proc *p = find_proc(as, pid), *parent = NULL;

	*hit = (struct as_hit){};
	if (!p)
		return -ENOENT;
	hit->jit = p->jit;
	if (find_own(p, gen, addr, hit))
		return 0;
	if (p->ppid && p->ppid != p->pid)
		parent = find_proc(as, p->ppid);
	/* Gone before its maps could be read: a child forked without exec
	 * (same comm) has its parent's mappings (as they are now: when it
	 * forked is not known). */
	if (!p->snaps && parent && !strcmp(parent->comm, p->comm))
		return find_own(parent, UINT32_MAX, addr, hit) ? 0 : -ENOENT;
	/* A library loaded after we last read the maps: read them once more. */
	if (!p->refreshed) {
		p->refreshed = true;
		load_maps(as, p);
		if (find_own(p, gen, addr, hit))
			return 0;
	}
	/* Not in any image of its own: a sample between fork and exec, whose
	 * address space was still a copy of the parent's. */
	if (parent && find_own(parent, UINT32_MAX, addr, hit))
		return 0;
	return -ENOENT;
}

/* Exited: no process has the pid (a zombie still has it: kept until it is
 * reaped). A pid reused since is announced anew, as an exec. */
static bool exited(int pid)
{
	return kill(pid, 0) && errno == ESRCH;
}

size_t addrspace__sweep(struct addrspace *as, unsigned int grace, addrspace_gone_fn gone,
			void *ctx)
{
	return addrspace__sweep_exited(as, grace, NULL, gone, ctx);
}

size_t addrspace__sweep_exited(struct addrspace *as, unsigned int grace,
			       addrspace_dying_fn dying, addrspace_gone_fn gone, void *ctx)
{
	struct hashmap *parents = hashmap__new(hashmap__hash_int, hashmap__equal_int);
	struct vec dead = VEC_INIT(int);
	const void *key;
	void *val;
	size_t n;

	/* parents of children known: a child's samples before its exec are
	 * named by its parent's mappings (addrspace__find) */
	for (size_t i = 0; parents && hashmap__next(as->procs, &i, &key, &val);) {
		struct proc *p = val;

		if (p->ppid && p->ppid != p->pid &&
		    hashmap__set(parents, (void *)(uintptr_t)p->ppid, (void *)1, NULL)) {
			hashmap__free(parents);
			parents = NULL;
		}
	}
	for (size_t i = 0; hashmap__next(as->procs, &i, &key, &val);) {
		struct proc *p = val;
		int *pid;

		if (!exited(p->pid)) {
			p->gone = 0;
			continue;
		}
		if (++p->gone < grace)
			continue;
		if (parents && hashmap__find(parents, (void *)(uintptr_t)p->pid))
			continue;
		pid = vec__push(&dead);
		if (pid)
			*pid = p->pid;
	}
	/* their last samples are named while the mappings are still here */
	if (dying && dead.nr)
		dying(ctx, dead.data, dead.nr);
	for (size_t i = 0; i < dead.nr; i++) {
		int pid = *(int *)vec__at(&dead, i);

		if (!hashmap__delete(as->procs, (void *)(uintptr_t)pid, NULL, &val))
			continue;
		free_proc(as, val);
		as->stats.released++;
		if (gone)
			gone(ctx, pid);
	}
	as->stats.live = hashmap__size(as->procs);
	hashmap__free(parents);
	n = dead.nr;
	vec__free(&dead);
	return n;
}

void addrspace__stats(const struct addrspace *as, struct addrspace_stats *out)
{
	*out = as->stats;
	out->live = hashmap__size(as->procs);
}

/* A miss in the perf map held: a JIT appends to its map as it compiles,
 * into code it mapped long before, and the maps (so the perf map) are read
 * only when the mappings change. Read again when its size changed, at
 * most once per JIT_RECHECK_NS a process. */
#define JIT_RECHECK_NS 1000000000ULL

const struct perfmap *addrspace__jit_again(struct addrspace *as, int pid)
{
	struct proc *p = find_proc(as, pid);
	uint64_t now = now_ns();

	if (!p)
		return NULL;
	if (p->jit_check_ns && now - p->jit_check_ns < JIT_RECHECK_NS)
		return p->jit;
	p->jit_check_ns = now;
	if (perf_map_size(p) != p->jit_size)
		load_perf_map(p);
	return p->jit;
}
