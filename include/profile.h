/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The neutral profile model every writer reads (folded, samples, pprof,
 * svg, top): interned strings, mappings, functions, locations, stacks of
 * locations, and samples that carry one value per sample type and their
 * labels (pid, tid, comm). It follows pprof's profile.proto closely, so the
 * pprof writer is a plain encoding, but it is not tied to it.
 *
 * Ids are 1-based indexes (0: none) and stay valid as long as the profile;
 * string id 0 is "". Everything is deduplicated: the same mapping, function,
 * location or stack added twice gets the same id, and aggregated samples
 * (time_ns 0) with the same stack and labels are summed.
 *
 * Lost samples are samples of their own: their stack is one location of
 * kind PF_KIND_LOST (function "[lost]") and lost_reason names why
 * ("counts map full").
 */
#ifndef BPFSAMPLER_PROFILE_H
#define BPFSAMPLER_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PF_MAX_TYPES 4

enum pf_kind {
	PF_KIND_USER = 0, /* user code: a file mapping, anonymous memory or none */
	PF_KIND_KERNEL,	  /* kernel text, modules and BPF programs */
	PF_KIND_JIT,	  /* named from a perf map (/tmp/perf-PID.map) */
	PF_KIND_MARKER,	  /* what the profiler says of a stack: [truncated]... */
	PF_KIND_LOST,	  /* the one frame of a lost sample */
};

/* The file name of the kernel's own mapping; a module's is its name. */
#define PF_KERNEL_FILE "[kernel.kallsyms]"
/* The file name of an anonymous executable mapping (JIT code). */
#define PF_ANON_FILE "[anon]"

struct pf_mapping {
	uint64_t start; /* [start, limit) in the process's address space */
	uint64_t limit;
	uint64_t offset;   /* file offset of start */
	uint32_t file;	   /* string: the path as mapped, PF_KERNEL_FILE, ... */
	uint32_t build_id; /* string: lowercase hex GNU build-ID, 0: none */
	enum pf_kind kind; /* PF_KIND_USER or PF_KIND_KERNEL */
	bool has_functions; /* symbols were found for it */
};

struct pf_function {
	uint32_t name;	      /* string: as people read it (demangled) */
	uint32_t system_name; /* string: as in the symbol table */
	uint32_t filename;    /* string: source file, 0: unknown */
	uint32_t start_line;  /* where it is declared in filename, 0: unknown */
};

/* A function inlined at a location, and the line in it (pprof's Line). */
struct pf_line {
	uint32_t function;
	uint32_t line; /* 0: unknown */
};

struct pf_location {
	uint64_t address;  /* as sampled: a return address but for the leaf */
	uint64_t elf_addr; /* the same in the mapped file's ELF address space */
	uint32_t mapping;  /* 0: in no known mapping */
	uint32_t function; /* 0: no symbol */
	uint32_t line;	   /* source line in function, 0: unknown */
	uint32_t inlines;  /* the functions inlined into function at address
			    * (profile__inlines), innermost first; 0: none */
	enum pf_kind kind;
};

struct pf_sample {
	uint32_t stack;	      /* 0: no frames */
	uint32_t comm;	      /* string: the thread's comm, 0: unknown */
	uint32_t lost_reason; /* string: why it was lost, 0: a kept sample */
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;	  /* only where time_ns is set */
	uint64_t time_ns; /* CLOCK_MONOTONIC; 0: aggregated over the profile */
	int64_t values[PF_MAX_TYPES]; /* one per sample type */
};

struct pf_value_type {
	uint32_t type; /* string: "samples", "cpu", an event name */
	uint32_t unit; /* string: "count", "nanoseconds" */
};

/* What the profile as a whole says. */
struct pf_meta {
	struct pf_value_type types[PF_MAX_TYPES];
	size_t nr_types;
	size_t default_type;	  /* index of the value folded, top and svg show */
	struct pf_value_type period_type;
	int64_t period;		  /* events (or ns) per sample; 0: unknown */
	uint64_t time_ns;	  /* start, ns since the Unix epoch */
	uint64_t duration_ns;
	uint32_t event;		  /* string: the perf event sampled on */
};

struct profile_opts {
	bool demangle; /* names of functions are demangled (C++, Rust) */
};

struct profile;

int profile__new(const struct profile_opts *o, struct profile **out);
void profile__free(struct profile *p);
/* -ENOMEM once any add failed (the adds then return 0), else 0. */
int profile__err(const struct profile *p);

/* Strings. */
uint32_t profile__intern(struct profile *p, const char *s);
const char *profile__str(const struct profile *p, uint32_t id);
size_t profile__nr_strings(const struct profile *p);

/* Metadata: sample types first (returns the type's index, or -E2BIG past
 * PF_MAX_TYPES), then the rest. */
int profile__add_type(struct profile *p, const char *type, const char *unit);
struct pf_meta *profile__meta(struct profile *p);
const struct pf_meta *profile__meta_c(const struct profile *p);

/* Adding: each returns the id of the equal entry if there is one. m's and
 * l's fields are copied; unused fields must be 0. */
uint32_t profile__add_mapping(struct profile *p, const struct pf_mapping *m);
/* raw: the name as in the symbol table; it is demangled here (once per
 * distinct name) unless the profile was made without demangling. */
uint32_t profile__add_function(struct profile *p, const char *raw, const char *filename);
/* The same with the line the function starts at in filename. */
uint32_t profile__add_function_at(struct profile *p, const char *raw, const char *filename,
				  uint32_t start_line);
/* A chain of inlined functions (pf_location.inlines), innermost first;
 * 0 for nr 0. */
uint32_t profile__add_inlines(struct profile *p, const struct pf_line *lines, size_t nr);
uint32_t profile__add_location(struct profile *p, const struct pf_location *l);
/* locs: leaf first. */
uint32_t profile__add_stack(struct profile *p, const uint32_t *locs, size_t nr);
/* Aggregated (time_ns 0) samples with the same stack, comm, lost_reason,
 * pid and tid are summed; timed samples are kept one by one, in order. */
int profile__add_sample(struct profile *p, const struct pf_sample *s);

/* Copying between profiles (a window split per service): s of src, with
 * its stack, into dst; metadata and sample types of src into dst. */
#define PF_COPY_MAX_FRAMES 2048
#define PF_COPY_MAX_INLINES 64
int profile__copy_sample(struct profile *dst, const struct profile *src,
			 const struct pf_sample *s);
int profile__copy_meta(struct profile *dst, const struct profile *src);

/* Reading: ids run from 1 to nr. */
size_t profile__nr_mappings(const struct profile *p);
const struct pf_mapping *profile__mapping(const struct profile *p, uint32_t id);
size_t profile__nr_functions(const struct profile *p);
const struct pf_function *profile__function(const struct profile *p, uint32_t id);
size_t profile__nr_locations(const struct profile *p);
const struct pf_location *profile__location(const struct profile *p, uint32_t id);
size_t profile__nr_stacks(const struct profile *p);
/* The locations of stack id, leaf first; NULL and *nr 0 for id 0. */
const uint32_t *profile__stack(const struct profile *p, uint32_t id, size_t *nr);
/* The chain of inlined functions id, innermost first; NULL and *nr 0 for
 * id 0. */
const struct pf_line *profile__inlines(const struct profile *p, uint32_t id, size_t *nr);
/* Samples are indexed from 0, in the order they were first added. */
size_t profile__nr_samples(const struct profile *p);
const struct pf_sample *profile__sample(const struct profile *p, size_t i);

/*
 * The frame as people read it, the same in every writer: the function's
 * name ("name [module]" for a kernel module or BPF program), else where it
 * is: "file+0xELFADDR" (basename, addr2line-ready), "[anon]+0xADDR",
 * "[unmapped]+0xADDR", "[kernel]+0xADDR". Returns buf or a string of the
 * profile.
 */
const char *profile__frame_name(const struct profile *p, uint32_t loc, char *buf, size_t size);
/* A buf of this size holds whatever profile__frame_name formats: a kernel
 * symbol (KSYM_NAME_LEN 512) and " [module]" (MODULE_NAME_LEN 56), or a
 * file's basename (NAME_MAX 255) and "+0x" and 16 digits. Function names it
 * returns from the profile's strings, whole however long. */
#define PF_FRAME_NAME_BYTES 640
/* A function inlined at a location, as --inline shows it: the function's
 * name, whole, then PF_INLINE_SUFFIX. */
#define PF_INLINE_SUFFIX " (inline)"
const char *profile__inline_function(const struct profile *p, const struct pf_line *l);
/* The value writers show for sample s: values[meta.default_type]. */
int64_t profile__value(const struct profile *p, const struct pf_sample *s);
/* Sum of the default value over all samples, lost ones included. */
int64_t profile__total(const struct profile *p);

#endif
