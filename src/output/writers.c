// SPDX-License-Identifier: GPL-2.0
#include <string.h>

#include "pprof.h"
#include "writer.h"

static const struct writer writers[] = {
	{ "folded", "folded", "one line per distinct stack, for flamegraph.pl (default)", false, false,
	  folded__write_profile },
	{ "samples", "samples", "one line per sample with its time, CPU, pid, tid and period", false, true,
	  samples__write_profile },
	{ "pprof", "pb.gz", "gzip-compressed profile.proto for go tool pprof, Pyroscope, Grafana", true,
	  false, pprof__write_profile, .lines = true },
	{ "svg", "svg", "an interactive flame graph (--inverted: icicle), for any web browser", false,
	  false, svg__write_profile },
	{ "top", "top", "the functions with the most samples, flat and cumulative (--top N rows)",
	  false, false, top__write_profile },
};

const struct writer *writer__find(const char *name)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

const struct writer *writer__all(size_t *nr)
{
	*nr = sizeof(writers) / sizeof(writers[0]);
	return writers;
}
