#!/usr/bin/env bash
# tests/kernels/run.sh [SERIES...]: boots Debian's own kernels under qemu
# (default: 6.1, Debian 12's kernel) with this machine's / shared read-only,
# and runs tests/kernels/guest.sh there with the checkout's own binary.
# Prints the guest's PASS/FAIL/SKIP lines prefixed with the kernel release.
# A kernel that does not boot, hangs or cannot run the script is one FAIL
# line with the tail of its console; a machine that cannot reach the
# package registry (and has no cached kernel) gets a SKIP line.
#   BPFS_KERNEL_CACHE    where kernels are kept (/var/cache/bpfsampler-kernels)
#   BPFS_KERNEL_TIMEOUT  seconds a guest may take before it is killed (600)
#   BPFS_KERNEL_KEEP=1   keep each guest's results folder (console log, outputs)
#   BPFS_GUEST_CHECKS    some of guest.sh's checks, by name (all of them)
source "$(dirname "$0")/../integration/lib.sh"
require_root kernels
HERE=$ROOT/tests/kernels
TIMEOUT=${BPFS_KERNEL_TIMEOUT:-600}
[ $# -gt 0 ] || set -- 6.1

if ! command -v qemu-system-x86_64 >/dev/null || ! busybox --list 2>/dev/null | grep -qx cpio; then
	skip kernels "no qemu-system-x86_64 or busybox-static (run tools/install-deps.sh)"
	exit 0
fi
if [ ! -x "$BPFS" ] || [ ! -x "$W/threads" ]; then
	fail "kernels: the checkout's binary and workloads" "build them first: make all workloads"
	exit 0
fi

# initrd DIR KERNEL_DIR OUT: a busybox initramfs with the kernel's 9p modules
initrd() {
	local d=$1
	mkdir -p "$d/bin" "$d/proc" "$d/sys" "$d/dev" "$d/newroot" "$d/modules"
	cp "$(command -v busybox)" "$d/bin/busybox"
	cp "$HERE/init.sh" "$d/init"
	chmod 755 "$d/init"
	cp "$2"/modules/* "$d/modules/"
	(cd "$d" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$3"
}

# boot SERIES: one guest, its lines printed with the release in front
boot() {
	local series=$1 K rel R rc t0 reason
	if ! K=$("$HERE/fetch.sh" "$series" 2>"$TMP/fetch.err"); then
		rc=$?
		reason=$(tail -n1 "$TMP/fetch.err")
		if [ $rc = 2 ]; then
			skip "kernel $series" "no kernel to boot: $reason"
		else
			fail "kernel $series: fetch" "$(cat "$TMP/fetch.err")"
		fi
		return
	fi
	rel=$(cat "$K/release")
	R=$TMP/$series
	mkdir -p "$R/results" "$R/initrd"
	initrd "$R/initrd" "$K" "$R/initrd.gz"
	# physical paths: a symlink on the way would lead out of the guest's
	# root, where the init binds the checkout (init.sh)
	cat >"$R/results/guest.env" <<ENV
ROOT='$(cd "$ROOT" && pwd -P)'
OUTPUT='$(cd "$OUTPUT" && pwd -P)'
GUEST_SCRIPT='$(cd "$HERE" && pwd -P)/guest.sh'
BPFS_KERNEL_KEEP=${BPFS_KERNEL_KEEP:-0}
BPFS_GUEST_CHECKS="${BPFS_GUEST_CHECKS:-}"
BPFS_GUEST_EXTRA="${BPFS_GUEST_EXTRA:-}"
BPFS_GUEST_CHECK_TIMEOUT="${BPFS_GUEST_CHECK_TIMEOUT:-}"
export ROOT OUTPUT BPFS_KERNEL_KEEP BPFS_GUEST_CHECKS BPFS_GUEST_EXTRA BPFS_GUEST_CHECK_TIMEOUT
ENV
	t0=$SECONDS
	# KVM does not work on these VMs: software emulation, two threads
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 2G -smp 2 \
		-nographic -no-reboot -kernel "$K/vmlinuz" -initrd "$R/initrd.gz" \
		-append 'console=ttyS0 panic=-1 quiet loglevel=4' \
		-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$R/results,mount_tag=results,security_model=none" \
		</dev/null >"$R/results/console.log" 2>&1
	rc=$?
	local took=$((SECONDS - t0)) lines
	lines=$(grep -E '^(PASS|FAIL|SKIP) ' "$R/results/guest.out" 2>/dev/null)
	# every line, the why under a FAIL included
	[ -s "$R/results/guest.out" ] && sed -E "s/^(PASS|FAIL|SKIP) /\1 $rel: /" "$R/results/guest.out"
	if [ ! -e "$R/results/guest.done" ]; then
		if [ $rc = 124 ] || [ $rc = 137 ]; then
			reason="killed after ${TIMEOUT} s (BPFS_KERNEL_TIMEOUT)"
		else
			reason="qemu exited $rc before the guest script ended"
		fi
		fail "$rel: the guest ran its script to the end" "$reason; console:"
		tail -n 25 "$R/results/console.log" | sed 's/^/      /'
		tail -n 5 "$R/results/guest.err" 2>/dev/null | sed 's/^/      guest: /'
	elif [ -z "$lines" ] || grep -q '^FAIL' <<<"$lines"; then
		[ -n "$lines" ] || fail "$rel: the guest script reported" "$(cat "$R/results/guest.done")"
		echo "    $rel console (tail):"
		tail -n 8 "$R/results/console.log" | sed 's/^/      /'
		tail -n 12 "$R/results/guest.err" | sed 's/^/      guest: /'
	fi
	# a check the guest's watchdog stopped: where bpfsampler was stuck
	for f in "$R"/results/stuck-*.txt; do
		[ -e "$f" ] || continue
		fail "$rel: $(basename "$f" .txt | sed 's/^stuck-//') ended in time" "$(head -n 1 "$f")"
		tail -n +2 "$f" | head -n 80 | sed 's/^/      /'
	done
	echo "    ($rel: guest ran $took s; $(grep -m1 -E '^sampling program' "$R/results/version.txt" 2>/dev/null | tr -s ' '))"
	if [ "${BPFS_KERNEL_KEEP:-0}" = 1 ]; then
		mkdir -p "/var/tmp/bpfsampler-kernels"
		rm -rf "/var/tmp/bpfsampler-kernels/$series"
		cp -r "$R/results" "/var/tmp/bpfsampler-kernels/$series"
		echo "    (results kept in /var/tmp/bpfsampler-kernels/$series)"
	fi
}

for s in "$@"; do boot "$s"; done
