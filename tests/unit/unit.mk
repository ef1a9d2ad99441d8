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

UNIT_CPPFLAGS := $(CPPFLAGS) -iquote tests/unit -DFIXTURE_DIR='"$(abs_output)/fixtures"' \
	-DFX_EDGES_ADDR=$(FX_EDGES_ADDR)ULL -DFX_EDGES_PIE_ADDR=$(FX_EDGES_PIE_ADDR)ULL

unit: $(UNIT_BINS) $(FIXTURES)

$(UNIT_OUT):
	$(Q)mkdir -p $@

$(UNIT_OUT)/%: tests/unit/%.c $(LIB_A) | $(UNIT_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CPPFLAGS) $(CFLAGS) $(DEPFLAGS) $< $(LIB_A) $(LDLIBS) -lm -ldl -o $@

-include $(wildcard $(UNIT_OUT)/*.d)
