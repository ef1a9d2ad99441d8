#!/bin/sh
# Regenerates vmlinux/vmlinux.h from the running kernel's BTF.
#
# The header is committed (see docs/design.md, "Build"): CO-RE programs are
# relocated against the target kernel's BTF at load time, so one header serves
# every kernel with BTF as long as each read survives a change of layout
# (docs/design.md, "Kernels"), and a build machine needs neither BTF nor
# bpftool access to /sys. Regenerate it only to use types or kfuncs of a newer
# kernel, then run make check-kernels.
set -eu
btf=${1:-/sys/kernel/btf/vmlinux}
out=${2:-$(dirname "$0")/../vmlinux/vmlinux.h}
bpftool=${BPFTOOL:-bpftool}

if [ ! -r "$btf" ]; then
	echo "gen-vmlinux: $btf is not readable: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF=y)" >&2
	exit 1
fi
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
"$bpftool" btf dump file "$btf" format c >"$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "gen-vmlinux: wrote $out from $btf ($(uname -r))"
