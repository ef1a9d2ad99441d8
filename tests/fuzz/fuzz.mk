# libFuzzer targets (tests/fuzz/fuzz_*.c): every parser of outside input.
# Included by the top-level Makefile.
#   make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGETS="elf perfmap"]
#       builds with clang, -fsanitize=fuzzer,address,undefined, into
#       $(OUTPUT)/fuzz/ and runs each target N seconds (default 60) from the
#       committed corpus (tests/fuzz/corpus/NAME/) plus ELF seeds made from
#       the unit tests' fixtures; then the regression inputs.
#   make fuzz-build   only builds (make check does, for tests/integration/fuzz.sh)
# The loader library is built again for it (its own objects, in
# $(OUTPUT)/fuzz/lib/) with coverage instrumentation and the sanitizers.
FUZZ_OUT := $(OUTPUT)/fuzz
FUZZ_LIB_OUT := $(FUZZ_OUT)/lib
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(addprefix $(FUZZ_OUT)/fuzz_,$(FUZZ_NAMES))
FUZZ_SAN := address,undefined
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,$(FUZZ_SAN) \
	-fno-sanitize-recover=all
# ELF seeds from the fixtures: PIE, non-PIE, shared, stripped, with debug
# sections compressed (objcopy), and binary + debug file pairs for the
# debuginfo target, joined by its separator; for ehframe, files built
# without frame pointers, with .debug_frame (own, and a stripped binary +
# its compressed debug file); for dwarf_lines, inline frames and DWARF 5.
FUZZ_SEEDS := $(FUZZ_OUT)/seeds/stamp

# The library's objects are the plain build's rules run with other flags:
# a sub-make knows when they are stale; this make only asks it each time.
$(FUZZ_LIB_OUT)/libbpfsampler.a: FORCE
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(FUZZ_LIB_OUT) CC=$(CLANG) \
		SANITIZE=fuzzer-no-link,$(FUZZ_SAN) $@

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_LIB_OUT)/libbpfsampler.a
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(CPPFLAGS) -iquote tests/fuzz $(FUZZ_CFLAGS) $< \
		$(FUZZ_LIB_OUT)/libbpfsampler.a $(LDLIBS) -o $@

$(FUZZ_SEEDS): $(FIXTURES)
	$(call msg,SEEDS,$(@D))
	$(Q)rm -rf $(@D) && mkdir -p $(@D)/elf $(@D)/debuginfo
	$(Q)cp $(FX_OUT)/fx_nopie $(FX_OUT)/fx_pie $(FX_OUT)/fx_stripped $(FX_OUT)/libfx.so \
		$(FX_OUT)/fx_edges_stripped $(FX_DBG)/link $(FX_OUT)/fx_plt_ibt $(FX_OUT)/fx_plt_now \
		$(@D)/elf/
	$(Q)objcopy --compress-debug-sections=zlib $(FX_OUT)/fx_nopie $(@D)/elf/fx_nopie.zdebug
	$(Q){ cat $(FX_DBG)/byid; printf 'BPFSDBG!'; \
	  cat $(FX_DBG)/root/.build-id/fe/edface00112233445566778899aabbccddeeff.debug; } \
		> $(@D)/debuginfo/byid
	$(Q){ cat $(FX_DBG)/link; printf 'BPFSDBG!'; cat $(FX_DBG)/link.debug; } \
		> $(@D)/debuginfo/link
	$(Q)mkdir -p $(@D)/ehframe $(@D)/dwarf_lines
	$(Q)cp $(FX_OUT)/fx_nofp $(FX_OUT)/fx_nofp_df $(FX_OUT)/fx_nofp_both $(FX_OUT)/fx_pie \
		$(FX_OUT)/libfx.so $(@D)/elf/fx_nopie.zdebug $(@D)/ehframe/
	$(Q){ cat $(FX_OUT)/fx_nofp_df_stripped; printf 'BPFSDBG!'; \
	  cat $(FX_OUT)/dfzroot/.build-id/df/00df00df00df00df00df00df00df00df00df00.debug; } \
		> $(@D)/ehframe/df_zdebug
	$(Q)cp $(FX_OUT)/fx_inline $(FX_OUT)/fx_inline.debug $(FX_OUT)/fx_nopie $(FX_OUT)/libfx.so \
		$(@D)/elf/fx_nopie.zdebug $(@D)/dwarf_lines/
	$(Q)touch $@

fuzz-build: $(FUZZ_BINS) $(FUZZ_SEEDS)

# Each target: the working corpus first (libFuzzer adds what it finds there),
# then the committed and generated seeds; nice'd, as the machine is shared.
# -close_fd_mask=3: the parsers' messages and --help are not wanted; crash
# reports still come through libFuzzer's own copy of stderr.
fuzz: fuzz-build
	$(Q)for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_OUT)/corpus/$$t $(FUZZ_OUT)/artifacts/$$t; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  seeds="tests/fuzz/corpus/$$t"; \
	  [ -d $(FUZZ_OUT)/seeds/$$t ] && seeds="$$seeds $(FUZZ_OUT)/seeds/$$t"; \
	  nice -n 10 $(FUZZ_OUT)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	    -print_final_stats=1 -close_fd_mask=3 -max_len=65536 -timeout=10 -rss_limit_mb=1024 \
	    -artifact_prefix=$(FUZZ_OUT)/artifacts/$$t/ \
	    $(FUZZ_OUT)/corpus/$$t $$seeds 2>$(FUZZ_OUT)/fuzz_$$t.log || \
	    { tail -60 $(FUZZ_OUT)/fuzz_$$t.log; echo "fuzz_$$t: crash, input in $(FUZZ_OUT)/artifacts/$$t/"; exit 1; }; \
	  grep -E 'stat::number_of_executed_units|stat::new_units_added' $(FUZZ_OUT)/fuzz_$$t.log | sed 's/^/  /'; \
	done
	$(Q)tests/fuzz/regress.sh $(FUZZ_OUT)

# FORCE: the Makefile's
.PHONY: fuzz fuzz-build
