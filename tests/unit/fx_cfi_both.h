/* SPDX-License-Identifier: GPL-2.0 */
/* Included first by the fx_nofp_both fixture (unit.mk): gas writes each
 * function's CFI into .eh_frame and .debug_frame both. */
__asm__(".cfi_sections .eh_frame, .debug_frame");
