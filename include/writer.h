/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Output formats. Every writer reads the profile model (profile.h) and
 * nothing else; they are listed in one table (src/output/writers.c), so a
 * new format is one file and one line there.
 */
#ifndef BPFSAMPLER_WRITER_H
#define BPFSAMPLER_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct profile;

struct writer_opts {
	bool annotate;	   /* folded: kernel frames get the _[k] suffix */
	bool inlines;	   /* folded, samples, top, svg: functions inlined at a
			    * frame are frames of their own, "NAME (inline)" */
	bool inverted;	   /* svg: an icicle graph (roots at the top) */
	unsigned int top;  /* top: rows shown; 0: all */
	const char *title; /* svg: the title; NULL: a default */
};

struct writer {
	const char *name;    /* --format NAME */
	const char *ext;     /* what %f in -o becomes: the file's extension */
	const char *help;    /* what it is, for --help */
	bool binary;	     /* not for a terminal: needs -o */
	bool timed;	     /* needs every sample with its time (stream) */
	/* Writes p to f. Returns 0 or -errno (the cause kept: -ENOSPC...). */
	int (*write)(const struct profile *p, const struct writer_opts *o, FILE *f);
	bool lines;	     /* shows source lines and inline frames: a run
			      * with no such format (and no --inline) reads
			      * no DWARF */
};

/* The writer called name, or NULL. */
const struct writer *writer__find(const char *name);
/* The table, for --help: *nr entries. */
const struct writer *writer__all(size_t *nr);

/* Each format's write function (src/output/NAME.c; pprof's is in pprof.h). */
int folded__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f);
int samples__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f);
int svg__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f);
int top__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f);

#endif
