#!/bin/sh
# Installs the Debian packages bpfsampler needs to build and test, only those
# that are missing. Idempotent; needs root when something is missing.
#   tools/install-deps.sh          build and test dependencies
#   tools/install-deps.sh --bench  also the profilers the benchmark compares
set -eu

# libdebuginfod-dev: the header of elfutils' client for fetching debug files
# by build-ID; the library (libdebuginfod1, pulled in) is dlopen'ed at run
# time when DEBUGINFOD_URLS is set
# libiberty-dev: the GNU demangler (C++, Rust legacy and v0), linked static
pkgs="make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev libdebuginfod-dev"
pkgs="$pkgs libiberty-dev"
# libdw-dev: elfutils' DWARF library: source lines and inline frames, and
# .eh_frame read for the unwind tables
pkgs="$pkgs libdw-dev"
# libcurl4-openssl-dev: the agent pushes windows to Pyroscope over HTTP(S);
# libcurl does HTTP, TLS, proxies and timeouts right, we write no HTTP client
pkgs="$pkgs libcurl4-openssl-dev"
# libmicrohttpd-dev: the agent's opt-in HTTP /metrics endpoint; a library
# because parsing HTTP from untrusted peers is not something to hand-write
pkgs="$pkgs libmicrohttpd-dev"
# tests: binutils (strip, objcopy, readelf, nm for fixtures), gawk for the
# checks, util-linux (setpriv, unshare, nsenter), python3 for tools/bench
# (smoke test) and a silent server; debuginfod (the server and
# debuginfod-find) and iproute2 (loopback in the test's own network
# namespace) to fetch debug files from a real server
pkgs="$pkgs binutils gawk util-linux python3 debuginfod iproute2"
# systemd: systemd-analyze verifies the agent's unit (tests/integration/systemd_unit.sh)
pkgs="$pkgs systemd"
# golang-go: go tool pprof, the reader --format pprof is written for; the
# test reads the profile back with it (-raw, -top: offline). Its go also
# builds the Go binaries whose .gopclntab test_gopclntab and gosym.sh read
pkgs="$pkgs golang-go"
# chromium (headless): tests/integration/svg.sh has a real browser draw the
# flame graph and run its search and zoom scripts
pkgs="$pkgs chromium"
# tests: g++ and rustc (Debian's 1.63, legacy mangling by default) build the
# C++ and Rust workloads whose names tests/integration/demangle.sh checks
pkgs="$pkgs g++ rustc"
# libclang-rt-dev: clang's libFuzzer and sanitizer runtimes (make fuzz, the
# fuzz targets make check runs); clang only recommends it. gcc's own ASan
# and UBSan (make check SANITIZE=...) come with gcc.
pkgs="$pkgs libclang-rt-dev"
# qemu-system-x86 and busybox-static: tests/kernels/ boots Debian's own
# kernels (6.1, 6.12, 5.10) under software emulation, from an initramfs of
# the static busybox that mounts this machine's / over 9p
pkgs="$pkgs qemu-system-x86 busybox-static"
if [ "${1:-}" = "--bench" ]; then
	# strace: bench --startup times exec -> armed from the profilers' calls
	# rt-tests: hackbench, the context-switch storm of tools/bench/offcpu
	pkgs="$pkgs linux-perf bpfcc-tools bpftrace linux-headers-amd64 hyperfine strace rt-tests"
fi

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing Debian packages:$missing; run as root (sudo $0) or install them" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
