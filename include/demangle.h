/* SPDX-License-Identifier: GPL-2.0 */
/* Names as their authors wrote them: C++ (Itanium ABI) and Rust (legacy and
 * v0) symbols demangled by libiberty, the GNU toolchain's demangler. */
#ifndef BPFSAMPLER_DEMANGLE_H
#define BPFSAMPLER_DEMANGLE_H

/* The demangled form of raw (malloc'ed, the caller frees it), or NULL when
 * raw is not a mangled name (C functions, kernel symbols), demangles to
 * nothing, or out of memory. */
char *demangle(const char *raw);

#endif
