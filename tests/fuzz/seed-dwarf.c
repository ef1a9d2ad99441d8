// SPDX-License-Identifier: GPL-2.0
/* Source of the committed ehframe/ and dwarf_lines/ seeds tiny-*: see README.md. */
static inline __attribute__((always_inline)) int sq(int x) { return x * x; }
__attribute__((noinline)) int leaf(int a) { volatile char b[64]; b[a & 63] = a; return sq(a) + b[1]; }
void _start(void) { volatile int r = leaf(3); for (;;) __asm__ volatile("hlt"); (void)r; }
