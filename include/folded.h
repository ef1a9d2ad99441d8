/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Folded stacks, the input of flamegraph.pl: "frame0;frame1;...;leaf COUNT",
 * one line per distinct stack. Identical stacks added twice are merged; lines
 * are written sorted, so the output is deterministic.
 */
#ifndef BPFSAMPLER_FOLDED_H
#define BPFSAMPLER_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct folded;
struct profile;
struct pf_sample;

/* A sample's frames as folded text: comm first (or "[lost]" then
 * "[REASON]" for a lost sample), then the stack outermost first; kernel
 * frames get "_[k]" when annotate; with inlines, the functions inlined at
 * a frame follow it as "NAME (inline)", outermost first. kind[i] is frame
 * i's enum pf_kind, -1 for the comm. Names are whole however long: v[i]
 * is a string of the profile, or the name formatted in buf[i], or in
 * long_name[i] when it does not fit there (freed by the next call and by
 * folded_frames__free). Returns 0 or -ENOMEM. */
#define FOLDED_MAX_FRAMES 1200
struct folded_frames {
	const char *v[FOLDED_MAX_FRAMES];
	int kind[FOLDED_MAX_FRAMES];
	size_t nr;
	char buf[FOLDED_MAX_FRAMES][256];
	char *long_name[FOLDED_MAX_FRAMES];
	size_t nr_long; /* long_name[i] may be set for i < nr_long */
};
struct folded_frames *folded_frames__new(void);
void folded_frames__free(struct folded_frames *fr);
int folded__sample_frames(const struct profile *p, const struct pf_sample *s, bool annotate,
			  bool inlines, struct folded_frames *out);
/* Every sample of p into f, by its default value. Returns 0 or -ENOMEM. */
int folded__add_profile(struct folded *f, const struct profile *p, bool annotate, bool inlines);

int folded__new(struct folded **out);
void folded__free(struct folded *f);
/* frames[0] is the outermost frame (the comm). A ';' inside a frame would
 * split it, so it becomes ':'; control characters become '?'; an empty frame
 * becomes "[empty]". Returns 0 or -ENOMEM. */
int folded__add(struct folded *f, const char *const *frames, size_t nr, uint64_t count);
int folded__write(const struct folded *f, FILE *out);
/* Writes frames joined by ';', sanitized as folded__add does, whole. */
void folded__put_frames(FILE *out, const char *const *frames, size_t nr);
size_t folded__nr_lines(const struct folded *f);

#endif
