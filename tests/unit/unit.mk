# Unit tests: no root needed. Included by the top-level Makefile.
# Each tests/unit/test_*.c becomes $(OUTPUT)/tests/unit/test_*, linked with
# the loader library; fixture ELF files are built first (test_elf_syms).
include tests/fixtures/fixtures.mk

UNIT_OUT := $(OUTPUT)/tests/unit
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(UNIT_OUT)/%,$(UNIT_SRCS))

# Symbol-table edge cases at addresses the test knows without reading any
# symbol table (tests/fixtures/fx_edges.S): non-PIE, PIE, and the PIE
# stripped to its .dynsym.
FX_EDGES_ADDR := 0x20000000
FX_EDGES_PIE_ADDR := 0x200000
FIXTURES += $(addprefix $(FX_OUT)/,fx_edges fx_edges_pie fx_edges_stripped)
FX_EDGES_SRCS := tests/fixtures/fx_prog.c tests/fixtures/fx_edges.S

$(FX_OUT)/fx_edges: $(FX_EDGES_SRCS) | $(FX_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(FX_CFLAGS) -no-pie -Wl,--section-start=.fxedges=$(FX_EDGES_ADDR) $^ -o $@

$(FX_OUT)/fx_edges_pie: $(FX_EDGES_SRCS) | $(FX_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(FX_CFLAGS) -fPIE -pie -rdynamic \
		-Wl,--section-start=.fxedges=$(FX_EDGES_PIE_ADDR) $^ -o $@

$(FX_OUT)/fx_edges_stripped: $(FX_OUT)/fx_edges_pie
	$(call msg,STRIP,$@)
	$(Q)strip --strip-all -o $@ $<

# .debug_frame instead of .eh_frame (test_ehframe, test_unwinder): fx_nofp
# built -fno-asynchronous-unwind-tables -fno-unwind-tables -g, so its own
# functions' CFI is only in .debug_frame (the C runtime's stays in
# .eh_frame); the same stripped of it (strip -g), with its debug file in a
# root by build-ID (and in another, its sections compressed, as Debian's
# are), another build's debug file filed under that build-ID,
# and a build whose CFI is in both sections (.eh_frame must win).
FX_DF_CFLAGS := -O2 -fomit-frame-pointer -fPIE -pie
FX_DF_ID := 0xdf00df00df00df00df00df00df00df00df00df00
FIXTURES += $(addprefix $(FX_OUT)/,fx_nofp_df fx_nofp_df_stripped fx_nofp_both \
	dfroot/.build-id/stamp dfzroot/.build-id/stamp dfwrong/.build-id/stamp)

$(FX_OUT)/fx_nofp_df: tests/fixtures/fx_nofp.c | $(FX_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(FX_DF_CFLAGS) -fno-asynchronous-unwind-tables -fno-unwind-tables -g \
		-Wl,--build-id=$(FX_DF_ID) $< -o $@

$(FX_OUT)/fx_nofp_df_stripped: $(FX_OUT)/fx_nofp_df
	$(call msg,STRIP,$@)
	$(Q)strip -g -o $@ $<

$(FX_OUT)/dfroot/.build-id/stamp: $(FX_OUT)/fx_nofp_df
	$(Q)mkdir -p $(FX_OUT)/dfroot/.build-id/df
	$(Q)objcopy --only-keep-debug $< $(FX_OUT)/dfroot/.build-id/df/00df00df00df00df00df00df00df00df00df00.debug
	$(Q)touch $@

$(FX_OUT)/dfzroot/.build-id/stamp: $(FX_OUT)/fx_nofp_df
	$(Q)mkdir -p $(FX_OUT)/dfzroot/.build-id/df
	$(Q)objcopy --only-keep-debug --compress-debug-sections=zlib $< \
		$(FX_OUT)/dfzroot/.build-id/df/00df00df00df00df00df00df00df00df00df00.debug
	$(Q)touch $@

# the same code, another build-ID: rows that would fit, refused all the same
$(FX_OUT)/dfwrong/.build-id/stamp: tests/fixtures/fx_nofp.c | $(FX_OUT)
	$(Q)mkdir -p $(FX_OUT)/dfwrong/.build-id/df
	$(Q)$(CC) $(FX_DF_CFLAGS) -fno-asynchronous-unwind-tables -fno-unwind-tables -g \
		-Wl,--build-id=0x0badc0de $< -o $(FX_OUT)/dfwrong/other
	$(Q)objcopy --only-keep-debug $(FX_OUT)/dfwrong/other $(FX_OUT)/dfwrong/.build-id/df/00df00df00df00df00df00df00df00df00df00.debug
	$(Q)touch $@

$(FX_OUT)/fx_nofp_both: tests/fixtures/fx_nofp.c tests/unit/fx_cfi_both.h | $(FX_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(FX_DF_CFLAGS) -g -include tests/unit/fx_cfi_both.h $< -o $@

UNIT_CPPFLAGS := $(CPPFLAGS) -iquote tests/unit -DFIXTURE_DIR='"$(abs_output)/fixtures"' \
	-DFX_EDGES_ADDR=$(FX_EDGES_ADDR)ULL -DFX_EDGES_PIE_ADDR=$(FX_EDGES_PIE_ADDR)ULL

unit: $(UNIT_BINS) $(FIXTURES)

$(UNIT_OUT):
	$(Q)mkdir -p $@

$(UNIT_OUT)/%: tests/unit/%.c $(LIB_A) | $(UNIT_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CPPFLAGS) $(CFLAGS) $(DEPFLAGS) $< $(LIB_A) $(LDLIBS) -lm -ldl -o $@

-include $(wildcard $(UNIT_OUT)/*.d)

