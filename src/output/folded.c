// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "hashmap.h"
#include "profile.h"
#include "writer.h"

struct line {
	uint64_t count;
	char text[]; /* the joined frames, also the hashmap key */
};

struct folded {
	struct hashmap *lines;
	char *buf; /* scratch for joining */
	size_t cap;
};

int folded__new(struct folded **out)
{
	struct folded *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->lines = hashmap__new(hashmap__hash_str, hashmap__equal_str);
	if (!f->lines) {
		free(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

void folded__free(struct folded *f)
{
	void *val;

	if (!f)
		return;
	for (size_t i = 0; hashmap__next(f->lines, &i, NULL, &val);)
		free(val);
	hashmap__free(f->lines);
	free(f->buf);
	free(f);
}

static int reserve(struct folded *f, size_t need)
{
	char *nb;

	if (need <= f->cap)
		return 0;
	nb = realloc(f->buf, need * 2);
	if (!nb)
		return -ENOMEM;
	f->buf = nb;
	f->cap = need * 2;
	return 0;
}

/* A frame's character as folded text: ';' would split the frame, control
 * characters would break the line. */
static char sanitized(char c)
{
	if (c == ';')
		return ':';
	if ((unsigned char)c < 0x20 || c == 0x7f)
		return '?';
	return c;
}

/* Appends frame at buf+len, sanitized; returns the new length. */
static size_t put_frame(char *buf, size_t len, const char *frame)
{
	if (!*frame)
		frame = "[empty]";
	for (const char *p = frame; *p; p++)
		buf[len++] = sanitized(*p);
	return len;
}

int folded__add(struct folded *f, const char *const *frames, size_t nr, uint64_t count)
{
	size_t need = 1, len = 0;
	struct line *line;

	for (size_t i = 0; i < nr; i++)
		need += strlen(frames[i]) + sizeof("[empty];");
	if (reserve(f, need))
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		if (i)
			f->buf[len++] = ';';
		len = put_frame(f->buf, len, frames[i]);
	}
	f->buf[len] = '\0';

	line = hashmap__find(f->lines, f->buf);
	if (line) {
		line->count += count;
		return 0;
	}
	line = malloc(sizeof(*line) + len + 1);
	if (!line)
		return -ENOMEM;
	line->count = count;
	memcpy(line->text, f->buf, len + 1);
	if (hashmap__set(f->lines, line->text, line, NULL)) {
		free(line);
		return -ENOMEM;
	}
	return 0;
}

static int cmp_lines(const void *a, const void *b)
{
	const struct line *la = *(const struct line *const *)a;
	const struct line *lb = *(const struct line *const *)b;

	return strcmp(la->text, lb->text);
}

int folded__write(const struct folded *f, FILE *out)
{
	size_t n = hashmap__size(f->lines), k = 0;
	struct line **sorted;
	void *val;
	int err = 0;

	sorted = calloc(n ? n : 1, sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; hashmap__next(f->lines, &i, NULL, &val);)
		sorted[k++] = val;
	qsort(sorted, n, sizeof(*sorted), cmp_lines);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %" PRIu64 "\n", sorted[i]->text, sorted[i]->count);
	if (fflush(out) || ferror(out))
		err = errno ? -errno : -EIO;
	free(sorted);
	return err;
}

void folded__put_frames(FILE *out, const char *const *frames, size_t nr)
{
	char buf[4096];
	size_t len = 0;

	for (size_t i = 0; i < nr; i++) {
		const char *fr = *frames[i] ? frames[i] : "[empty]";

		if (i)
			buf[len++] = ';';
		for (; *fr; fr++) {
			if (len == sizeof(buf)) {
				fwrite(buf, 1, len, out);
				len = 0;
			}
			buf[len++] = sanitized(*fr);
		}
		if (len >= sizeof(buf) - 1) {
			fwrite(buf, 1, len, out);
			len = 0;
		}
	}
	fwrite(buf, 1, len, out);
}

size_t folded__nr_lines(const struct folded *f)
{
	return hashmap__size(f->lines);
}

struct folded_frames *folded_frames__new(void)
{
	return calloc(1, sizeof(struct folded_frames));
}

static void release_long_names(struct folded_frames *fr)
{
	for (size_t i = 0; i < fr->nr_long; i++) {
		free(fr->long_name[i]);
		fr->long_name[i] = NULL;
	}
	fr->nr_long = 0;
}

void folded_frames__free(struct folded_frames *fr)
{
	if (!fr)
		return;
	release_long_names(fr);
	free(fr);
}

/* Frame n's name from fmt, whole: in buf[n] when it fits, else in a
 * long_name of its own. NULL when out of memory. */
__attribute__((format(printf, 3, 4)))
static const char *frame_text(struct folded_frames *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(out->buf[n], sizeof(out->buf[n]), fmt, ap);
	va_end(ap);
	if (len < 0)
		return NULL;
	if ((size_t)len < sizeof(out->buf[n]))
		return out->buf[n];
	out->long_name[n] = malloc(len + 1);
	if (!out->long_name[n])
		return NULL;
	if (n >= out->nr_long)
		out->nr_long = n + 1;
	va_start(ap, fmt);
	vsnprintf(out->long_name[n], len + 1, fmt, ap);
	va_end(ap);
	return out->long_name[n];
}

/* The functions inlined at location l after it, outermost first. Returns
 * the new number of frames, or 0 when out of memory. */
static size_t add_inlines(const struct profile *p, const struct pf_location *l,
			  struct folded_frames *out, size_t n)
{
	size_t nr;
	const struct pf_line *inl = profile__inlines(p, l->inlines, &nr);

	for (size_t k = nr; k-- > 0 && n < FOLDED_MAX_FRAMES; n++) {
		out->v[n] = frame_text(out, n, "%s" PF_INLINE_SUFFIX,
				       profile__inline_function(p, &inl[k]));
		if (!out->v[n])
			return 0;
		out->kind[n] = l->kind;
	}
	return n;
}

int folded__sample_frames(const struct profile *p, const struct pf_sample *s, bool annotate,
			  bool inlines, struct folded_frames *out)
{
	size_t nr, n = 0;
	const uint32_t *locs = profile__stack(p, s->stack, &nr);

	release_long_names(out);
	out->nr = 0;
	if (s->lost_reason) {
		snprintf(out->buf[0], sizeof(out->buf[0]), "[%s]", profile__str(p, s->lost_reason));
		out->kind[n] = PF_KIND_LOST;
		out->v[n++] = "[lost]";
		out->kind[n] = PF_KIND_LOST;
		out->v[n++] = out->buf[0];
		out->nr = n;
		return 0;
	}
	out->kind[n] = -1;
	out->v[n++] = s->comm && *profile__str(p, s->comm) ? profile__str(p, s->comm)
							     : "[no comm]";
	for (size_t i = nr; i-- > 0 && n < FOLDED_MAX_FRAMES;) {
		const struct pf_location *l = profile__location(p, locs[i]);
		char tmp[PF_FRAME_NAME_BYTES];
		const char *name = profile__frame_name(p, locs[i], tmp, sizeof(tmp));

		if (annotate && l->kind == PF_KIND_KERNEL)
			name = frame_text(out, n, "%s_[k]", name);
		else if (name == tmp)
			name = frame_text(out, n, "%s", name);
		if (!name)
			return -ENOMEM;
		out->kind[n] = l->kind;
		out->v[n++] = name;
		if (inlines && l->inlines && !(n = add_inlines(p, l, out, n)))
			return -ENOMEM;
	}
	out->nr = n;
	return 0;
}

int folded__add_profile(struct folded *f, const struct profile *p, bool annotate, bool inlines)
{
	struct folded_frames *fr = folded_frames__new();
	int err = 0;

	if (!fr)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nr_samples(p) && !err; i++) {
		const struct pf_sample *s = profile__sample(p, i);

		err = folded__sample_frames(p, s, annotate, inlines, fr);
		if (!err)
			err = folded__add(f, fr->v, fr->nr, profile__value(p, s));
	}
	folded_frames__free(fr);
	return err;
}

int folded__write_profile(const struct profile *p, const struct writer_opts *o, FILE *out)
{
	struct folded *f = NULL;
	int err = folded__new(&f);

	if (!err)
		err = folded__add_profile(f, p, o->annotate, o->inlines);
	if (!err)
		err = folded__write(f, out);
	folded__free(f);
	return err;
}
