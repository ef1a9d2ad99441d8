// SPDX-License-Identifier: GPL-2.0
/*
 * --format svg: a self-contained interactive flame graph (docs/formats.md).
 *
 * The samples become a tree with the hierarchy of the folded output ("all",
 * then comm, then frames outermost first; lost samples "[lost]" then
 * "[REASON]"), merged by name under each parent as flamegraph.pl merges
 * folded lines. Frames are drawn in pre-order, children sorted by name,
 * each as <g class="f" data-v="VALUE"> with a <title>, a <rect> whose width
 * is VALUE times the scale and a label when one fits; the script
 * (svg.js, embedded) needs nothing more for zoom and search.
 *
 * Size: a frame narrower than MIN_WIDTH_PX is not drawn (its value stays in
 * its parent's width), so a row holds at most width / MIN_WIDTH_PX frames;
 * and when more than MAX_FRAMES frames would still be drawn, only the
 * MAX_FRAMES widest are. A frame is some 150 bytes plus its name in the
 * title (under 256 bytes, as in folded output, more where escaped); labels
 * fit their frame, so they add at most a row's width of text per row. At
 * the cap with 70-character C++ names that is 7.4 MB.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "hashmap.h"
#include "profile.h"
#include "svg_js.h"
#include "vec.h"
#include "writer.h"

#define WIDTH 1200	  /* px, the whole image */
#define PAD 10		  /* px left and right of the frames */
#define ROW_H 16	  /* px per stack level */
#define HEAD_H 40	  /* px above the frames: title, buttons */
#define FOOT_H 24	  /* px below: the status line */
#define FONT_SIZE 12
#define FONT_W (FONT_SIZE * 0.59) /* px, an average glyph of Verdana */
#define MIN_WIDTH_PX 0.1
#define MAX_FRAMES 30000
/* Characters of a name written at most, longer ones end in "..": the
 * title, and a frame's tooltip (its label fits its width), so that one
 * 3000-character C++ name does not weigh 3 KB in each frame it is in. The
 * model and the other formats keep names whole. */
#define NAME_BYTES 400

/* What a frame is, for its colour: the location kinds and two more. */
enum frame_kind {
	FK_ROOT = PF_KIND_LOST + 1,
	FK_COMM,
};

struct node {
	uint32_t name;	 /* index in svg.names */
	uint32_t child;	 /* first child, 0: none (node 0, the root, is no child) */
	uint32_t next;	 /* next sibling, 0: none */
	uint32_t depth;
	int64_t value;	 /* samples in it and under it */
	int kind;	 /* enum pf_kind or enum frame_kind */
	bool drawn;
};

struct svg {
	struct vec nodes;     /* struct node; 0 is the root "all" */
	struct vec names;     /* char *, owned */
	struct hashmap *name_ids; /* name -> index + 1 */
	struct hashmap *edges;	  /* (parent << 32 | name + 1) -> child + 1 */
	/* writing */
	const struct profile *p;
	const struct writer_opts *o;
	FILE *f;
	int64_t total;
	double scale;	    /* px per unit of value */
	uint32_t max_depth; /* of drawn frames */
	double y_root;
	const char *unit;   /* what values count: "samples", "ns", "events" */
};

static const char *name_of(const struct svg *s, const struct node *n)
{
	return *(char **)vec__at(&s->names, n->name);
}

static struct node *node_at(const struct svg *s, uint32_t i)
{
	return vec__at(&s->nodes, i);
}

/* The index of name, interned on first use; -1 when out of memory. */
static int64_t intern(struct svg *s, const char *name)
{
	char **slot, *copy;
	void *v;

	if (!*name)
		name = "[empty]";
	v = hashmap__find(s->name_ids, name);
	if (v)
		return (int64_t)(uintptr_t)v - 1;
	copy = strdup(name);
	slot = copy ? vec__push(&s->names) : NULL;
	if (!slot) {
		free(copy);
		return -1;
	}
	*slot = copy;
	if (hashmap__set(s->name_ids, copy, (void *)(uintptr_t)s->names.nr, NULL)) {
		s->names.nr--;
		free(copy);
		return -1;
	}
	return s->names.nr - 1;
}

/* The child of parent called name, made on first use; -1: out of memory. */
static int64_t child(struct svg *s, uint32_t parent, const char *name, int kind)
{
	int64_t id = intern(s, name);
	uint64_t key;
	struct node *n;
	void *v;

	if (id < 0)
		return -1;
	key = (uint64_t)parent << 32 | (uint64_t)(id + 1);
	v = hashmap__find(s->edges, (void *)(uintptr_t)key);
	if (v)
		return (int64_t)(uintptr_t)v - 1;
	n = vec__push(&s->nodes);
	if (!n || hashmap__set(s->edges, (void *)(uintptr_t)key,
			       (void *)(uintptr_t)s->nodes.nr, NULL)) {
		if (n)
			s->nodes.nr--;
		return -1;
	}
	n->name = id;
	n->kind = kind;
	n->depth = node_at(s, parent)->depth + 1;
	n->next = node_at(s, parent)->child;
	node_at(s, parent)->child = s->nodes.nr - 1;
	return s->nodes.nr - 1;
}

static int add_sample(struct svg *s, const struct pf_sample *smp, struct folded_frames *fr)
{
	int64_t v = profile__value(s->p, smp), at = 0;

	if (v <= 0)
		return 0;
	if (folded__sample_frames(s->p, smp, false, s->o->inlines, fr))
		return -ENOMEM;
	node_at(s, 0)->value += v;
	for (size_t i = 0; i < fr->nr; i++) {
		/* fr->v[0] is the comm (kind -1), but in a lost sample */
		int kind = fr->kind[i] < 0 ? FK_COMM : fr->kind[i];

		at = child(s, at, fr->v[i], kind);
		if (at < 0)
			return -ENOMEM;
		node_at(s, at)->value += v;
	}
	return 0;
}

static int build(struct svg *s)
{
	struct folded_frames *fr = folded_frames__new();
	struct node *root = vec__push(&s->nodes);
	int err = 0;

	if (!fr || !root || intern(s, "all") != 0) {
		folded_frames__free(fr);
		return -ENOMEM;
	}
	root->kind = FK_ROOT;
	for (size_t i = 0; i < profile__nr_samples(s->p) && !err; i++)
		err = add_sample(s, profile__sample(s->p, i), fr);
	folded_frames__free(fr);
	return err;
}

static int cmp_draw_first(const void *a, const void *b, void *ctx)
{
	const struct node *x = node_at(ctx, *(const uint32_t *)a);
	const struct node *y = node_at(ctx, *(const uint32_t *)b);

	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Marks the frames drawn: those MIN_WIDTH_PX wide or more, and when they
 * are more than MAX_FRAMES, the MAX_FRAMES widest, shallower first among
 * equals. A parent is as wide as its child or wider and shallower, so it is
 * drawn whenever the child is. */
static int choose_drawn(struct svg *s)
{
	uint32_t *order, n = 0;

	for (size_t i = 0; i < s->nodes.nr; i++) {
		struct node *nd = node_at(s, i);

		nd->drawn = nd->value * s->scale >= MIN_WIDTH_PX;
		n += nd->drawn;
	}
	if (n <= MAX_FRAMES)
		return 0;
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < s->nodes.nr; i++)
		if (node_at(s, i)->drawn)
			order[n++] = i;
	qsort_r(order, n, sizeof(*order), cmp_draw_first, s);
	for (uint32_t i = MAX_FRAMES; i < n; i++)
		node_at(s, order[i])->drawn = false;
	free(order);
	return 0;
}

/* Writes s as XML text: escaped, control characters and bytes that are not
 * UTF-8 as '?' (either would make the file unreadable), at most max
 * characters. */
static void put_text(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t n = 0; *p && n < max; n++) {
		size_t len = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3
					 : (*p & 0xf8) == 0xf0 ? 4 : 0;
		size_t k = 1;

		while (k < len && (p[k] & 0xc0) == 0x80)
			k++;
		if (!len || k < len || (len == 1 && (*p < 0x20 || *p == 0x7f))) {
			fputc('?', f);
			p += k;
			continue;
		}
		switch (*p) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fwrite(p, 1, len, f);
		}
		p += len;
	}
}

/* Characters (not bytes) of a UTF-8 string. */
static size_t nr_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The label of a frame width px wide, as svg.js's fit(): the name, or its
 * start and "..", or nothing under 3 characters. */
static void put_label(FILE *f, const char *name, double width)
{
	long fit = (long)((width - 6) / FONT_W);

	if (fit < 3)
		return;
	if (nr_chars(name) <= (size_t)fit) {
		put_text(f, name, fit);
	} else {
		put_text(f, name, fit - 2);
		fputs("..", f);
	}
}

/* 1234567 as "1,234,567", as people read counts. */
static void put_count(FILE *f, int64_t v)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%" PRId64, v);

	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0 && digits[i - 1] != '-')
			fputc(',', f);
		fputc(digits[i], f);
	}
}

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The colour of a frame: by kind (warm user code, orange kernel, green JIT,
 * grey markers, dark red lost, blue-grey comm and root, as flamegraph.pl's
 * palettes go), varied by its name so that neighbours differ and a function
 * keeps its colour from one graph to the next. */
static void put_colour(FILE *f, int kind, const char *name)
{
	uint32_t h = hash_name(name);
	double a = (h & 0xffff) / 65535.0, b = (h >> 16) / 65535.0;
	int r, g, bl;

	switch (kind) {
	case PF_KIND_KERNEL:
		r = 200 + 55 * a, g = 110 + 70 * b, bl = 0;
		break;
	case PF_KIND_JIT:
		r = 50 + 60 * a, g = 190 + 65 * b, bl = 50 + 60 * a;
		break;
	case PF_KIND_MARKER:
		r = g = bl = 170 + 40 * a;
		break;
	case PF_KIND_LOST:
		r = 160 + 30 * a, g = bl = 20 + 20 * b;
		break;
	case FK_COMM:
	case FK_ROOT:
		r = g = 170 + 30 * a, bl = 220 + 35 * a;
		break;
	default: /* user: red, so that kernel orange stands out above it */
		r = 200 + 55 * a, g = bl = 50 + 80 * b;
		break;
	}
	fprintf(f, "rgb(%d,%d,%d)", r, g, bl);
}

static double row_y(const struct svg *s, uint32_t depth)
{
	return s->o->inverted ? s->y_root + depth * ROW_H : s->y_root - depth * ROW_H;
}

static void put_frame(struct svg *s, const struct node *n, int64_t offset)
{
	const char *name = name_of(s, n);
	double x = PAD + offset * s->scale, w = n->value * s->scale, y = row_y(s, n->depth);

	fprintf(s->f, "<g class=\"f\" data-v=\"%" PRId64 "\"><title>", n->value);
	put_text(s->f, name, NAME_BYTES);
	if (nr_chars(name) > NAME_BYTES)
		fputs("..", s->f);
	fputs(" (", s->f);
	put_count(s->f, n->value);
	fprintf(s->f, " %.*s, %.2f%%)</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
		"height=\"%d\" fill=\"",
		/* "1 sample", "1 ns" */
		(int)strlen(s->unit) - (n->value == 1 && !strcmp(s->unit, "samples")), s->unit,
		100.0 * n->value / s->total, x, y, w, ROW_H - 1);
	put_colour(s->f, n->kind, name);
	fputs("\"/>", s->f);
	if ((w - 6) / FONT_W >= 3) {
		fprintf(s->f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
		put_label(s->f, name, w);
		fputs("</text>", s->f);
	}
	fputs("</g>\n", s->f);
}

static int cmp_names(const void *a, const void *b, void *ctx)
{
	const struct svg *s = ctx;

	return strcmp(name_of(s, node_at(s, *(const uint32_t *)a)),
		      name_of(s, node_at(s, *(const uint32_t *)b)));
}

/* Node i and what is under it in pre-order, children sorted by name and
 * laid out from the parent's left edge; each child advances the offset,
 * drawn or not, so every frame sits where its samples are. */
static int put_tree(struct svg *s, uint32_t i, int64_t offset)
{
	const struct node *n = node_at(s, i);
	uint32_t *kids, nr = 0;
	int err = 0;

	put_frame(s, n, offset);
	for (uint32_t c = n->child; c; c = node_at(s, c)->next)
		nr++;
	if (!nr)
		return 0;
	kids = malloc(nr * sizeof(*kids));
	if (!kids)
		return -ENOMEM;
	nr = 0;
	for (uint32_t c = n->child; c; c = node_at(s, c)->next)
		kids[nr++] = c;
	qsort_r(kids, nr, sizeof(*kids), cmp_names, s);
	for (uint32_t k = 0; k < nr && !err; k++) {
		const struct node *c = node_at(s, kids[k]);

		if (c->drawn)
			err = put_tree(s, kids[k], offset);
		offset += c->value;
	}
	free(kids);
	return err;
}

static void put_head(struct svg *s, double height)
{
	const struct pf_meta *m = profile__meta_c(s->p);
	const char *event = profile__str(s->p, m->event);

	fprintf(s->f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg id=\"bpfs\" version=\"1.1\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		WIDTH, height, WIDTH, height);
	fprintf(s->f,
		"<style>text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; }\n"
		"g.f text { pointer-events: none; } g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
		"g.f { cursor: pointer; } .btn { cursor: pointer; fill: #246; }\n"
		"#title { font-size: 17px; }</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">",
		FONT_SIZE, WIDTH / 2);
	if (s->o->title) {
		put_text(s->f, s->o->title, NAME_BYTES);
	} else {
		fputs("bpfsampler: ", s->f);
		put_text(s->f, *event ? event : "profile", NAME_BYTES);
		fputs(", ", s->f);
		put_count(s->f, s->total);
		fprintf(s->f, " %s", s->unit);
	}
	fprintf(s->f,
		"</text>\n"
		"<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"24\" style=\"opacity:0\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n"
		"<text id=\"status\" x=\"%d\" y=\"%.0f\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%.0f\" text-anchor=\"end\"> </text>\n"
		"<g id=\"frames\">\n",
		PAD, WIDTH - PAD, PAD, height - 8, WIDTH - PAD, height - 8);
}

static void put_script(struct svg *s)
{
	fprintf(s->f,
		"</g>\n<script type=\"text/ecmascript\"><![CDATA[\n(function () {\n"
		"var W = %d, PAD = %d, ROWH = %d, FONTW = %g, Y0 = %.0f, INV = %d, UNIT = \"%s\";\n",
		WIDTH, PAD, ROW_H, FONT_W, s->y_root, s->o->inverted, s->unit);
	fputs(svg_js, s->f);
	fputs("})();\n]]></script>\n</svg>\n", s->f);
}

static int write_svg(struct svg *s)
{
	const struct pf_meta *m = profile__meta_c(s->p);
	const struct pf_value_type *t = &m->types[m->default_type];
	double height;
	int err;

	/* What values count (--weight): samples, ns of a clock, or events of
	 * another event. It goes into the script as a string: plain words. */
	if (!strcmp(profile__str(s->p, t->type), "samples"))
		s->unit = "samples";
	else if (!strcmp(profile__str(s->p, t->unit), "nanoseconds"))
		s->unit = "ns";
	else
		s->unit = "events";
	s->total = node_at(s, 0)->value;
	s->scale = s->total ? (double)(WIDTH - 2 * PAD) / s->total : 0;
	err = s->total ? choose_drawn(s) : 0;
	if (err)
		return err;
	for (size_t i = 0; i < s->nodes.nr; i++) {
		const struct node *n = node_at(s, i);

		if (n->drawn && n->depth > s->max_depth)
			s->max_depth = n->depth;
	}
	height = HEAD_H + (s->max_depth + 1) * ROW_H + FOOT_H;
	s->y_root = s->o->inverted ? HEAD_H : HEAD_H + s->max_depth * ROW_H;
	put_head(s, height);
	if (s->total)
		err = put_tree(s, 0, 0);
	put_script(s);
	return err;
}

static void svg_free(struct svg *s)
{
	for (size_t i = 0; i < s->names.nr; i++)
		free(*(char **)vec__at(&s->names, i));
	vec__free(&s->names);
	vec__free(&s->nodes);
	hashmap__free(s->name_ids);
	hashmap__free(s->edges);
}

int svg__write_profile(const struct profile *p, const struct writer_opts *o, FILE *f)
{
	struct svg s = {
		.nodes = VEC_INIT(struct node),
		.names = VEC_INIT(char *),
		.name_ids = hashmap__new(hashmap__hash_str, hashmap__equal_str),
		.edges = hashmap__new(hashmap__hash_int, hashmap__equal_int),
		.p = p, .o = o, .f = f,
	};
	int err = s.name_ids && s.edges ? 0 : -ENOMEM;

	if (!err)
		err = build(&s);
	if (!err)
		err = write_svg(&s);
	if (!err && (fflush(f) || ferror(f)))
		err = errno ? -errno : -EIO;
	svg_free(&s);
	return err;
}
