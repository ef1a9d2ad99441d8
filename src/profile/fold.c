// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "fold.h"
#include "log.h"
#include "profile.h"
#include "report.h"
#include "stream.h"
#include "symbolize.h"

struct folder {
	struct folder_opts o;
	struct report_opts ro[BPFS_MAX_EVENTS];
	struct profile *p[BPFS_MAX_EVENTS];
	struct report_stats rs[BPFS_MAX_EVENTS];
	double next_s; /* the next fold's time; 0: the first tick sets it */
	int err;
	/* while a tick folds */
	struct sampler *s;
	struct stream *stream;
	struct symbolizer *sym;
};

int folder__new(const struct folder_opts *o, struct folder **out)
{
	struct folder *f;
	const char *min = getenv("BPFS_DEBUG_FOLD_MIN");

	if (o->nr > BPFS_MAX_EVENTS)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->o = *o;
	memcpy(f->ro, o->ro, o->nr * sizeof(*o->ro));
	f->o.ro = f->ro;
	if (min) {
		f->o.min_procs = strtoull(min, NULL, 10);
		p_warn("BPFS_DEBUG_FOLD_MIN=%llu: exited processes folded in from that many "
		       "processes known (for tests)", f->o.min_procs);
	}
	*out = f;
	return 0;
}

void folder__free(struct folder *f)
{
	if (!f)
		return;
	for (size_t ev = 0; ev < BPFS_MAX_EVENTS; ev++)
		profile__free(f->p[ev]);
	free(f);
}

/* The profiles a fold adds to: made at the first fold after a take. */
static int ensure_profiles(struct folder *f)
{
	int err = 0;

	for (size_t ev = 0; ev < f->o.nr && !err; ev++)
		if (!f->p[ev])
			err = profile__new(&(struct profile_opts){ .demangle = f->o.demangle },
					   &f->p[ev]);
	return err;
}

static void fold_dying(void *ctx, const int *pids, size_t nr)
{
	struct folder *f = ctx;

	if (f->err)
		return;
	f->err = ensure_profiles(f);
	if (!f->err)
		f->err = report__fold(f->s, f->stream, f->sym,
				      &(struct report_fold){ .o = f->ro, .p = f->p, .rs = f->rs,
							     .nr = f->o.nr },
				      pids, nr);
	if (f->err)
		p_err("cannot fold the samples of exited processes: %s", strerror(-f->err));
}

static void fold_gone(void *ctx, int pid)
{
	struct folder *f = ctx;

	if (f->o.gone)
		f->o.gone(f->o.gone_ctx, pid);
}

static void say_tick(const struct folder *f)
{
	struct symbolizer_stats ys;

	symbolizer__stats(f->sym, &ys);
	p_dbg("fold: %llu processes known, %llu released; %llu files held, %llu released; "
	      "%zu stack segments; heap %.1f MB, symbols %.1f MB", (unsigned long long)ys.procs_live,
	      (unsigned long long)ys.procs_released, (unsigned long long)ys.files_held,
	      (unsigned long long)ys.files_released, stream__nr_segments(f->stream),
	      mallinfo2().uordblks / 1e6, ys.symtab_bytes / 1e6);
}

int folder__tick(struct folder *f, struct sampler *s, struct stream *stream,
		 struct symbolizer *sym, double now_s)
{
	struct symbolizer_stats ys;
	int err;

	if (!f || f->err || now_s < f->next_s || !f->next_s) {
		if (f && !f->next_s)
			f->next_s = now_s + FOLD_INTERVAL_S;
		return f ? f->err : 0;
	}
	f->next_s = now_s + FOLD_INTERVAL_S;
	symbolizer__stats(sym, &ys);
	if (ys.procs_live < f->o.min_procs)
		return 0;
	f->s = s;
	f->stream = stream;
	f->sym = sym;
	if (f->o.sweep_files)
		symbolizer__sweep_exited(sym, fold_dying, fold_gone, f);
	else
		symbolizer__sweep_processes(sym, fold_dying, fold_gone, f);
	if (!f->err && (err = report__forget_segments(s, stream))) {
		p_err("cannot forget the stack segments: %s", strerror(-err));
		f->err = err;
	}
	/* the pages of what went back to the system: freed in the middle of
	 * the heap they stay otherwise */
	malloc_trim(0);
	say_tick(f);
	return f->err;
}

struct profile *folder__take(struct folder *f, size_t ev, struct report_stats *folded)
{
	struct profile *p;

	memset(folded, 0, sizeof(*folded));
	if (!f || ev >= f->o.nr)
		return NULL;
	p = f->p[ev];
	f->p[ev] = NULL;
	*folded = f->rs[ev];
	memset(&f->rs[ev], 0, sizeof(f->rs[ev]));
	return p;
}
