# Workloads with a known answer, for the integration tests and tools/bench.
# Included by the top-level Makefile (`make workloads`); every output goes to
# $(OUTPUT)/workloads/. Built with frame pointers (leaf functions too),
# without sibling calls and without inlining of functions called once, so
# the stacks are whole and the names in a profile are the ones in the
# source. Each program's ground truth is in the comment at its top.
WL_SRC := tests/workloads
WL_OUT := $(OUTPUT)/workloads
WL_MK := $(WL_SRC)/workloads.mk
WL_CFLAGS := -O2 -g -Wall -Wextra -Wno-unused-parameter -std=gnu11 -pthread \
	-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -fno-inline-functions-called-once
WL_DEPFLAGS = -MMD -MP -MF $@.d
# Go (gosym.sh): Debian's go, offline, caches in the build output
# (GO_ENV, tests/fixtures/fixtures.mk); gowork as Go services ship it
# (-ldflags='-s -w': no .symtab, no DWARF), gowork-full with both. Without
# go, gosym.sh says it cannot run.
WL_GO_BINS := $(if $(GO_FOUND),gowork gowork-full)

WL_BINS := $(addprefix $(WL_OUT)/,shares shares-pie shares-stripped threads recurse \
	libwork.so uselib syscalls cache branch fork_short cpuburn jit \
	libdlswap_a.so libdlswap_b.so dlswap execer memfd_run vdso_clock bpf_spin \
	churn churn_child cxxwork longname rustwork rustwork-v0 forkstorm stackfan badfp inlined swevents \
	getppid_loop mapstorm nofp nofp-stripped dllate libnofp_late.so tailswap dfchain dfchain-stripped \
	libbenchhold.so ehframe_build offwait $(WL_GO_BINS))
# C++ and Rust names for the demangling tests. g++ at -O1 with frame
# pointers; Debian's rustc (tools/install-deps.sh), not a rustup one earlier
# on PATH: its default mangling (legacy, in 1.63) is what the test expects.
CXX ?= g++
RUSTC ?= $(firstword $(wildcard /usr/bin/rustc) rustc)
WL_CXXFLAGS := -O1 -g -Wall -Wextra -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls
WL_RUSTFLAGS := -C force-frame-pointers=yes -C opt-level=1 -g

workloads: $(WL_BINS)

$(WL_OUT)/gowork: $(WL_SRC)/gowork.go $(WL_MK) | $(WL_OUT)
	$(call msg,GO,$@)
	$(Q)$(GO_ENV) $(GO) build -ldflags='-s -w' -o $@ $<

$(WL_OUT)/gowork-full: $(WL_SRC)/gowork.go $(WL_MK) | $(WL_OUT)
	$(call msg,GO,$@)
	$(Q)$(GO_ENV) $(GO) build -o $@ $<

$(WL_OUT):
	$(Q)mkdir -p $@

$(WL_OUT)/shares: $(WL_SRC)/shares.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) -fno-pie -no-pie $< -o $@

$(WL_OUT)/bpf_spin: $(WL_SRC)/bpf_spin.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) $< $(LIBBPF_CFLAGS) $(LIBBPF_LIBS) -o $@

$(WL_OUT)/execer: $(WL_SRC)/execer.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) -fno-pie -no-pie $< -o $@

$(WL_OUT)/shares-pie: $(WL_SRC)/shares.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) -fPIE -pie $< -o $@

$(WL_OUT)/libwork.so: $(WL_SRC)/libwork.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) -shared -fPIC $< -o $@

$(WL_OUT)/uselib: $(WL_SRC)/uselib.c $(WL_OUT)/libwork.so $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) $< -L$(WL_OUT) -lwork -Wl,-rpath,'$$ORIGIN' -o $@

# One source, two libraries of the same layout (see dlswap_lib.c).
$(WL_OUT)/libdlswap_%.so: $(WL_SRC)/dlswap_lib.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) -shared -fPIC -DDLSWAP_FN=swap_$*_spin $< -o $@

$(WL_OUT)/dlswap: $(WL_SRC)/dlswap.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) $< -ldl -o $@

$(WL_OUT)/mapstorm: $(WL_SRC)/mapstorm.c $(WL_OUT)/libwork.so $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) $< -ldl -o $@

# shares stripped of all symbols, its .symtab in a debug root by build-ID:
# named only when bpfsampler finds the debug file (--debug-dir).
$(WL_OUT)/shares-stripped: $(WL_OUT)/shares
	$(call msg,STRIP,$@)
	$(Q)id=$$(readelf -n $< | awk '/Build ID/ { print $$3 }') && \
		mkdir -p $(WL_OUT)/debugroot/.build-id/$${id%"$${id#??}"} && \
		objcopy --only-keep-debug $< $(WL_OUT)/debugroot/.build-id/$${id%"$${id#??}"}/$${id#??}.debug
	$(Q)strip --strip-all -o $@ $<

$(WL_OUT)/cxxwork: $(WL_SRC)/cxxwork.cpp $(WL_MK) | $(WL_OUT)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(WL_CXXFLAGS) $(WL_DEPFLAGS) $< -o $@

$(WL_OUT)/longname: $(WL_SRC)/longname.cpp $(WL_MK) | $(WL_OUT)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(WL_CXXFLAGS) $(WL_DEPFLAGS) $< -o $@

$(WL_OUT)/rustwork: $(WL_SRC)/rustwork.rs $(WL_MK) | $(WL_OUT)
	$(call msg,RUSTC,$@)
	$(Q)$(RUSTC) $(WL_RUSTFLAGS) --crate-name rustwork $< -o $@

# The same program with Rust's v0 mangling (_RNv...), which libiberty
# demangles too; rustc 1.63 takes the flag on stable.
$(WL_OUT)/rustwork-v0: $(WL_SRC)/rustwork.rs $(WL_MK) | $(WL_OUT)
	$(call msg,RUSTC,$@)
	$(Q)$(RUSTC) $(WL_RUSTFLAGS) -C symbol-mangling-version=v0 --crate-name rustwork $< -o $@

$(WL_OUT)/%: $(WL_SRC)/%.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) $< -o $@

-include $(wildcard $(WL_OUT)/*.d)

# Without frame pointers (the way Debian builds): only unwind tables walk it.
$(WL_OUT)/nofp: $(WL_SRC)/nofp.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -fno-inline-functions-called-once $(WL_DEPFLAGS) $< -o $@

# A library without frame pointers, dlopened late (dllate.c).
$(WL_OUT)/libnofp_late.so: $(WL_SRC)/nofp_late.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -shared -fPIC $(WL_DEPFLAGS) $< -o $@

$(WL_OUT)/dllate: $(WL_SRC)/dllate.c $(WL_OUT)/libnofp_late.so $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) $< -ldl -o $@

# Alike frames under two callers, walked by tables only (tailswap.c).
$(WL_OUT)/tailswap: $(WL_SRC)/tailswap.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -fno-ipa-icf $(WL_DEPFLAGS) $< -o $@

# Its functions have no names: grouped by the start of their FDE.
$(WL_OUT)/nofp-stripped: $(WL_OUT)/nofp
	$(call msg,STRIP,$@)
	$(Q)strip --strip-all -o $@ $<

# CFI in .debug_frame only (see dfchain.c): a table only .debug_frame gives.
$(WL_OUT)/dfchain: $(WL_SRC)/dfchain.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables \
		-fno-optimize-sibling-calls $(WL_DEPFLAGS) $< -o $@

# Without .debug_frame (strip -g keeps the symbols), its debug file under
# dfroot/.build-id for --debug-dir.
$(WL_OUT)/dfchain-stripped: $(WL_OUT)/dfchain
	$(call msg,STRIP,$@)
	$(Q)id=$$(readelf -n $< | awk '/Build ID/ { print $$3 }') && \
		rm -rf $(WL_OUT)/dfroot && \
		mkdir -p $(WL_OUT)/dfroot/.build-id/$${id%"$${id#??}"} && \
		objcopy --only-keep-debug $< $(WL_OUT)/dfroot/.build-id/$${id%"$${id#??}"}/$${id#??}.debug
	$(Q)strip -g -o $@ $<

# Preloaded into what tools/bench/unwind times: stops before main, holds at
# exit (see benchhold.c).
$(WL_OUT)/libbenchhold.so: $(WL_SRC)/benchhold.c $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) $(WL_DEPFLAGS) -shared -fPIC $< -o $@

# The unwind table builder on its own, timed (tools/bench/unwind --tables):
# linked with the loader library, as the unit tests are.
$(WL_OUT)/ehframe_build: $(WL_SRC)/ehframe_build.c $(LIB_A) $(WL_MK) | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(WL_DEPFLAGS) $< $(LIB_A) $(LDLIBS) -o $@
