// SPDX-License-Identifier: GPL-2.0
/*
 * --format samples: one line per sample, in time order,
 * "SECONDS.NS CPU PID TID PERIOD EVENT frames", frames as in folded output.
 * Only the samples kept with their time are written (lost samples have
 * none: the summary counts them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "folded.h"
#include "profile.h"
#include "report.h"
#include "writer.h"

int samples__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f)
{
	const char *event = profile__str(p, profile__meta_c(p)->event);
	struct folded_frames *fr = folded_frames__new();
	int err = 0;

	if (!fr)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(p); i++) {
		const struct pf_sample *s = profile__sample(p, i);

		if (!s->time_ns)
			continue;
		err = folded__sample_frames(p, s, o->annotate, o->inlines, fr);
		if (err)
			break;
		fprintf(f, "%" PRIu64 ".%09" PRIu64 " %u %u %u %" PRId64 " %s ",
			s->time_ns / 1000000000, s->time_ns % 1000000000, s->cpu, s->pid, s->tid,
			s->values[REPORT_VALUE_PERIOD], event);
		folded__put_frames(f, fr->v, fr->nr);
		fputc('\n', f);
	}
	folded_frames__free(fr);
	if (err)
		return err;
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}
