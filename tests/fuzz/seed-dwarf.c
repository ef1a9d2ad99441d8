// SPDX-License-Identifier: GPL-2.0
/*
 * Source of the committed seeds tiny-* of corpus/ehframe/ and
 * corpus/dwarf_lines/ (see README.md): a static, freestanding program with
 * an inlined function, a leaf with a stack frame, no frame pointer.
 *   tiny:    gcc -O2 -g -fomit-frame-pointer -nostdlib -static -Wl,-n
 *            -Wl,--build-id=none -Wl,--eh-frame-hdr; objcopy -R .comment
 *   tiny_df: gcc -O2 -g -gdwarf-4 -fno-asynchronous-unwind-tables
 *            -fno-unwind-tables (the same link flags): .debug_frame only;
 *            tiny_dfz: objcopy --compress-debug-sections=zlib of it
 */
static inline __attribute__((always_inline)) int sq(int x)
{
	return x * x;
}

__attribute__((noinline)) int leaf(int a)
{
	volatile char b[64];

	b[a & 63] = a;
	return sq(a) + b[1];
}

void _start(void)
{
	volatile int r = leaf(3);

	(void)r;
	for (;;)
		__asm__ volatile("hlt");
}
