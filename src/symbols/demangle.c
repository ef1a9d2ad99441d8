// SPDX-License-Identifier: GPL-2.0
/*
 * libiberty (Debian's libiberty-dev, static) rather than the C++ runtime's
 * __cxa_demangle: the same C++ demangler as c++filt and gdb, plus Rust's
 * legacy and v0 schemes, which __cxa_demangle does not know, and no C++
 * runtime to link. DMGL_AUTO tries Rust first (legacy Rust names are also
 * valid C++ names), then C++. Rust's legacy hash suffix (::h0123...) is left
 * out, as rustfilt does, unless DMGL_VERBOSE.
 *
 * DMGL_RET_DROP: no return type. A template function's mangled name
 * encodes it, and libiberty prints it first by default ("void
 * std::__introsort_loop<...>(...)"), as c++filt does; perf, pprof and
 * every flame graph tool show the name without it, and the same function
 * should not read differently here (nor sort under "void" in --format top).
 */
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "demangle.h"

static char *demangle_name(const char *raw);

/* A PLT stub's name (elf_plt.h) is its function's with "@plt" after it:
 * demangled as that, as perf shows it ("std::terminate()@plt"). */
static char *demangle_plt(const char *raw, size_t len)
{
	char *base = strndup(raw, len - 4), *pretty = base ? demangle_name(base) : NULL;
	char *out = pretty ? malloc(strlen(pretty) + 5) : NULL;

	if (out)
		strcat(strcpy(out, pretty), "@plt");
	free(pretty);
	free(base);
	return out;
}

char *demangle(const char *raw)
{
	size_t len = raw ? strlen(raw) : 0;

	if (len > 4 && !strcmp(raw + len - 4, "@plt"))
		return demangle_plt(raw, len);
	return demangle_name(raw);
}

static char *demangle_name(const char *raw)
{
	char *pretty;

	/* Itanium C++ and legacy Rust start with _Z, Rust v0 with _R; anything
	 * else is not mangled and is not worth a parse. */
	if (!raw || raw[0] != '_' || (raw[1] != 'Z' && raw[1] != 'R'))
		return NULL;
	pretty = cplus_demangle(raw, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO | DMGL_RET_DROP);
	/* libiberty turns some Rust v0 names (_RC0) into "": the raw name
	 * says more than no name at all */
	if (pretty && !*pretty) {
		free(pretty);
		return NULL;
	}
	return pretty;
}
