#!/usr/bin/env bash
# Mappings that change while sampling: each sample is named after the
# mappings live when it was taken, not after those at the end. dlswap runs
# in libdlswap_a.so, unloads it and runs in libdlswap_b.so mapped at the
# same address; execer runs, then execs shares, both at 0x400000.
source "$(dirname "$0")/lib.sh"
require_root mappings

# Following needs perf's side-band records (a dummy event with mmap2) and
# kernel BTF (the exec hook): Linux 5.5 has both, so a "no" is a failure.
"$BPFS" --version -v >"$TMP/features" 2>&1
if ! grep -q '^mapping changes.*yes' "$TMP/features"; then
	fail "mapping changes are followed on this kernel" "$(grep '^mapping' "$TMP/features")"
fi

# share FILE FN: FN's share of the samples under main;...;run_lib
lib_share() {
	local all n
	all=$(samples_matching "$1" ';main;phase;run_lib;swap_[ab]_spin(;|$)')
	n=$(samples_matching "$1" ";main;phase;run_lib;$2(;|\$)")
	awk -v n="$n" -v t="$all" 'BEGIN { printf "%.4f", t ? n / t : 0 }'
}

# 1. dlclose + dlopen at the same address, in both modes.
for mode in aggregate stream; do
	"$BPFS" -F 999 --mode "$mode" -o "$TMP/dl-$mode.folded" -- "$W/dlswap" 1 \
		2>"$TMP/dl-$mode.err"
	rc=$?
	if [ $rc -eq 3 ]; then
		fail "dlswap ($mode): libdlswap_b.so mapped where libdlswap_a.so was" "$(grep 'dlswap:' "$TMP/dl-$mode.err")"
		continue
	fi
	[ $rc -eq 0 ] || fail "dlswap ($mode) run" "exit $rc: $(tail -3 "$TMP/dl-$mode.err")"
	n=$(samples_matching "$TMP/dl-$mode.folded" ';main;phase;run_lib;swap_[ab]_spin(;|$)')
	tol=$(share_tolerance 0.5 "$n")
	within "dlswap ($mode): swap_a_spin named in library a ($n samples)" \
		"$(lib_share "$TMP/dl-$mode.folded" swap_a_spin)" 0.5 "$tol"
	within "dlswap ($mode): swap_b_spin named in library b" \
		"$(lib_share "$TMP/dl-$mode.folded" swap_b_spin)" 0.5 "$tol"
done

# a_before_b NAME FILE: in --format samples FILE, every sample named
# swap_a_spin comes before every one named swap_b_spin, and both are there.
a_before_b() {
	local last_a first_b na nb
	read -r last_a first_b na nb < <(awk '
		/;swap_a_spin(;|$)/ { na++; if ($1 > la) la = $1 }
		/;swap_b_spin(;|$)/ { nb++; if (fb == "" || $1 < fb) fb = $1 }
		END { printf "%.9f %.9f %d %d\n", la, fb, na, nb }' "$2")
	if [ "$na" -gt 200 ] && [ "$nb" -gt 200 ] &&
		awk -v a="$last_a" -v b="$first_b" 'BEGIN { exit !(a < b) }'; then
		pass "$1: all $na swap_a_spin samples before all $nb swap_b_spin samples"
	else
		fail "$1: swap_a_spin samples before swap_b_spin samples" \
			"$na a samples, last at $last_a; $nb b samples, first at $first_b"
	fi
}

# 2. In time order.
"$BPFS" -F 999 --format samples -o "$TMP/dl.samples" -- "$W/dlswap" 1 2>"$TMP/dl.samples.err" ||
	fail "dlswap --format samples run" "$(tail -3 "$TMP/dl.samples.err")"
a_before_b "dlswap" "$TMP/dl.samples"

# 3. A process that was running before sampling started: its library a is
# known only from /proc/PID/maps, read at its first sample; b replaces it.
"$W/dlswap" 2.5 2>"$TMP/bg.err" &
pid=$!
sleep 0.3
"$BPFS" -F 999 -d 5 -p "$pid" --format samples -o "$TMP/p.samples" 2>"$TMP/p.err" ||
	fail "dlswap -p run" "$(tail -3 "$TMP/p.err")"
wait "$pid"
rc=$?
if [ $rc -eq 0 ]; then
	a_before_b "dlswap -p, library a mapped before sampling" "$TMP/p.samples"
else
	fail "dlswap -p: b mapped where a was" "exit $rc: $(cat "$TMP/bg.err")"
fi

# 4. exec into another image at the same addresses.
profile "$TMP/exec.folded" -F 999 -- "$W/execer" 1 "$W/shares" 1 || fail "execer run"
pre=$(samples_matching "$TMP/exec.folded" '^execer;.*;main;pre_exec_spin(;|$)')
all=$(total "$TMP/exec.folded")
mixed=$(samples_matching "$TMP/exec.folded" 'pre_exec_spin.*share_fn|share_fn.*pre_exec_spin|^execer;.*share_fn')
within "exec: the first image's samples are named after it ($pre of $all)" \
	"$(awk -v a="$pre" -v t="$all" 'BEGIN { printf "%.4f", t ? a / t : 0 }')" 0.5 0.1
[ "$mixed" -eq 0 ] && pass "exec: no sample of the first image named after the second" ||
	fail "exec: no sample of the first image named after the second" "$(grep -E 'pre_exec_spin.*share_fn|^execer;.*share_fn' "$TMP/exec.folded" | head -3)"

# --no-follow-mappings: neither the exec hook nor the side-band events; the
# profile is still written.
"$BPFS" -F 99 -d 1.5 --no-follow-mappings -v -o "$TMP/nofollow.folded" 2>"$TMP/nofollow.err" &
bpfs=$!
"$BPFS" -F 99 -d 1.5 -v -o "$TMP/follow.folded" 2>"$TMP/follow.err" &
bpfs2=$!
wait_line "$TMP/follow.err" "bpfsampler: sampling" # its hook loaded
progs=$(bpftool prog show 2>/dev/null | grep -c ' name on_exec ')
wait $bpfs
rc=$?
wait $bpfs2
if [ $rc -eq 0 ] && [ "$progs" -eq 1 ] && grep -q ' 0 executable mappings followed' "$TMP/nofollow.err"; then
	pass "--no-follow-mappings: no exec hook, profile written"
else
	fail "--no-follow-mappings" "exit $rc, $progs on_exec programs loaded (want 1: the other run's): $(tail -2 "$TMP/nofollow.err")"
fi

# 5. The side-band ring overflows (4 KiB per CPU, a slow reader, 20000
# mappings in ~60 ms): the loss is counted, and the library mapped after
# the storm is still named, from the maps read again after the loss (not
# after a storm mapping that lay at the same address).
for mode in aggregate stream; do
	f=$TMP/storm-$mode.folded
	"$BPFS" -F 999 --mode "$mode" --sideband-size 4K --debug-reader-delay 50 -o "$f" \
		-- "$W/mapstorm" 20000 1 2>"$f.err" ||
		fail "side-band overflow ($mode) run" "$(tail -3 "$f.err")"
	lost=$(grep -oE 'side-band: [0-9]+ mapping records lost' "$f.err" | grep -oE '[0-9]+')
	if [ -n "$lost" ] && [ "$lost" -gt 0 ] && grep -q 'raise --sideband-size' "$f.err"; then
		pass "side-band overflow ($mode): $lost lost records counted, the fix named"
	else
		fail "side-band overflow ($mode): lost records counted" "$(cat "$f.err")"
	fi
	all=$(samples_matching "$f" '^mapstorm;.*;main;run_lib;')
	n=$(samples_matching "$f" '^mapstorm;.*;main;run_lib;lib_spin(;|$)')
	[ "$all" -gt 500 ] || fail "side-band overflow ($mode): enough samples in run_lib" "$all"
	within "side-band overflow ($mode): lib_spin named after the loss ($n of $all)" \
		"$(awk -v a="$n" -v t="$all" 'BEGIN { printf "%.4f", t ? a / t : 0 }')" 1 0.02
done
