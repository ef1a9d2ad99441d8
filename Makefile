# SPDX-License-Identifier: GPL-2.0
# bpfsampler build. Outputs go to $(OUTPUT) (default .output/); the binary is
# copied to ./bpfsampler. `make V=1` shows full commands.
#
#   make            build ./bpfsampler
#   make profile    install what is missing, build, profile this machine 30 s
#   make check      install what is missing, build, run every test (as root),
#                   Debian 12's 6.1 kernel booted under qemu among them
#   make check-kernels  Debian's 6.1, 6.12 and 5.10 kernels under qemu
#   make unit       build the unit tests (no root needed to run them)
#   make workloads  build the test/benchmark workloads
#   make fuzz       build the libFuzzer targets, run each $(FUZZ_SECONDS) s
#   make clean
#   make check SANITIZE=address,undefined
#                   everything built with those sanitizers into .output-san/
#                   and the suite run with it (docs/design.md, "Testing")

# SANITIZE=address,undefined (any -fsanitize= list): a separate build, so a
# sanitized and a plain build never mix objects. UBSan stops at its first
# report, as ASan does: a report is a failure, never a line in a log.
ifneq ($(SANITIZE),)
OUTPUT ?= .output-san
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif
OUTPUT ?= .output
abs_output := $(abspath $(OUTPUT))
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
PKG_CONFIG ?= pkg-config

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' \
	-e 's/ppc64le/powerpc/' -e 's/riscv64/riscv/' -e 's/s390x/s390/')

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

LIBBPF_CFLAGS := $(shell $(PKG_CONFIG) --cflags libbpf 2>/dev/null)
LIBBPF_LIBS := $(shell $(PKG_CONFIG) --libs libbpf 2>/dev/null || echo -lbpf)
LIBELF_LIBS := $(shell $(PKG_CONFIG) --libs libelf 2>/dev/null || echo -lelf)
# libdw (elfutils, Debian's libdw-dev): source lines and inline frames from
# DWARF (src/symbols/dwarf_lines.c), and .eh_frame's CFA programs run for the
# unwind tables (src/unwind/ehframe.c).
LIBDW_LIBS := $(shell $(PKG_CONFIG) --libs libdw 2>/dev/null || echo -ldw)
# libmicrohttpd: the agent's opt-in --metrics-addr endpoint (src/agent/
# metrics_server.c); HTTP from the network is parsed by a library, not by us.
MHD_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)

CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-std=gnu11 -fno-omit-frame-pointer $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
# -iquote: our features.h must not shadow glibc's <features.h>.
CPPFLAGS += -iquote include -iquote $(OUTPUT) $(LIBBPF_CFLAGS) $(MHD_CFLAGS) -D_GNU_SOURCE
DEPFLAGS = -MMD -MP
# libdebuginfod (elfutils' debuginfod client) is dlopen'ed when DEBUGINFOD_URLS
# is set (src/symbols/debuginfo.c): only its header is needed to build.
# libiberty (static, Debian's libiberty-dev): the GNU demangler for C++ and Rust.
# libcurl: the agent's push to Pyroscope (src/agent/push.c). HTTP, TLS,
# proxies and timeouts done right; we do not write an HTTP client.
LIBCURL_LIBS := $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null || echo -lcurl)
LDLIBS += $(LIBBPF_LIBS) $(LIBDW_LIBS) $(LIBELF_LIBS) $(MHD_LIBS) -lz -ldl -liberty $(LIBCURL_LIBS) -lpthread

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Iinclude \
	-Wall -Wno-unused-function

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.DEFAULT_GOAL := all

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

# Every loader module but main.c goes into a library that tests link too.
# src/ is grouped by concern (cli, capture, symbols, profile, output, agent,
# lib); objects mirror that tree under $(OUTPUT)/src.
LIB_SRCS := $(filter-out src/cli/main.c,$(wildcard src/*/*.c src/*/*/*.c))
LIB_OBJS := $(patsubst src/%.c,$(OUTPUT)/src/%.o,$(LIB_SRCS))
LIB_A := $(OUTPUT)/libbpfsampler.a
MAIN_OBJ := $(OUTPUT)/src/cli/main.o

# A sanitized build (SANITIZE=) leaves ./bpfsampler, the plain one, alone.
ifneq ($(SANITIZE),)
all: $(OUTPUT)/bpfsampler
else
all: bpfsampler
endif

$(OUTPUT) $(OUTPUT)/bpf:
	$(Q)mkdir -p $@

# BPF objects: CO-RE, against the committed vmlinux/vmlinux.h.
$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/vmlinux.h | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -MT $@ -c $< -o $@.tmp
	$(Q)llvm-strip -g $@.tmp 2>/dev/null || true
	$(Q)mv $@.tmp $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/bpf/%.bpf.o | $(OUTPUT)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp
	$(Q)mv $@.tmp $@

# The version and commit, in a header rewritten only when they change: a
# -D on the command line left the files that print it (--version, pprof's
# comment, the agent's user agent and metrics) naming an older commit after
# an incremental build. The depfiles rebuild just those files.
$(OUTPUT)/version.h: FORCE | $(OUTPUT)
	$(Q)v='#define BPFSAMPLER_VERSION "$(VERSION) ($(GIT_REV))"'; \
	  [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
FORCE:

# Loader objects wait for the skeletons (some include them) and the version.
$(OUTPUT)/src/%.o: src/%.c $(SKELS) | $(OUTPUT)/version.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The flame graph's script is kept as plain JS (src/output/svg.js) and
# embedded into svg.c as one C string: each line quoted, \ and " escaped,
# comment lines left out (they would be in every SVG written).
$(OUTPUT)/svg_js.h: src/output/svg.js | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q){ echo 'static const char svg_js[] ='; \
	  sed -e '/^[[:space:]]*\/\//d' -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp
	$(Q)mv $@.tmp $@

$(OUTPUT)/src/output/svg.o: $(OUTPUT)/svg_js.h

$(LIB_A): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(OUTPUT)/bpfsampler: $(MAIN_OBJ) $(LIB_A)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

bpfsampler: $(OUTPUT)/bpfsampler
	$(Q)cp $< $@

# Test and benchmark builds live beside their sources.
-include tests/unit/unit.mk
-include tests/workloads/workloads.mk
-include tests/fuzz/fuzz.mk

# The README's two commands: each installs what is missing, then builds.
PROFILE_SECONDS ?= 30
PROFILE_OUT ?= bpfsampler.folded

profile:
	$(Q)tools/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)./bpfsampler -F 4000 -d $(PROFILE_SECONDS) -o $(PROFILE_OUT)
	@echo "profile written to $(abspath $(PROFILE_OUT)) (flamegraph.pl $(PROFILE_OUT) > cpu.svg)"

# make check: the whole suite on the plain build (the fuzz targets a few
# seconds each among it), then the sanitized build's unit tests and smoke
# run (tests/integration/sanitized.sh): the whole suite under ASan does not
# fit CI's time (docs/design.md, "Testing"). make check SANITIZE=...: the
# whole suite on the sanitized build.
SAN_CI := address,undefined
ifeq ($(SANITIZE),)
check:
	$(Q)tools/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all unit workloads fuzz-build
	$(Q)$(MAKE) --no-print-directory SANITIZE=$(SAN_CI) all unit workloads
	$(Q)tests/run --and-sanitized .output-san $(SAN_CI)
else
check:
	$(Q)tools/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all unit workloads
	$(Q)OUTPUT=$(OUTPUT) SANITIZE=$(SANITIZE) tests/run
endif

# make check-kernels: Debian's 6.1, 6.12 and 5.10 booted under qemu, the
# README's commands and the agent run in each (tests/kernels/; make check
# boots 6.1 only)
check-kernels:
	$(Q)tools/install-deps.sh
	$(Q)$(MAKE) --no-print-directory all workloads
	$(Q)BPFS_KERNELS="6.1 6.12 5.10" tests/run kernels

deps:
	$(Q)tools/install-deps.sh

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT) .output-san bpfsampler

.PHONY: all check check-kernels clean deps profile unit workloads FORCE

-include $(wildcard $(OUTPUT)/bpf/*.d $(OUTPUT)/src/*/*.d)
