# Unit tests: no root needed. Included by the top-level Makefile.
# Each tests/unit/test_*.c becomes $(OUTPUT)/tests/unit/test_*, linked with
# the loader library; fixture ELF files are built first (test_elf_syms).
include tests/fixtures/fixtures.mk

UNIT_OUT := $(OUTPUT)/tests/unit
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(UNIT_OUT)/%,$(UNIT_SRCS))
UNIT_CPPFLAGS := $(CPPFLAGS) -iquote tests/unit -DFIXTURE_DIR='"$(abs_output)/fixtures"'

unit: $(UNIT_BINS) $(FIXTURES)

$(UNIT_OUT):
	$(Q)mkdir -p $@

$(UNIT_OUT)/%: tests/unit/%.c $(LIB_A) | $(UNIT_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CPPFLAGS) $(CFLAGS) $(DEPFLAGS) $< $(LIB_A) $(LDLIBS) -lm -ldl -o $@

-include $(wildcard $(UNIT_OUT)/*.d)
