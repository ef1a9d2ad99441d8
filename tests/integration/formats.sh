#!/usr/bin/env bash
# Output formats, read back by the tools they are written for.
source "$(dirname "$0")/lib.sh"
require_root formats

# --- pprof: go tool pprof (Debian's golang-go) must accept the profile and
# read back what we put in: types, period, build-IDs, functions, losses.
# Offline only: -raw and -top, never -http; a HOME and caches of its own.
# -symbolize=none: only the names bpfsampler wrote count (pprof would
# otherwise name frames itself from the binaries on disk).
gopprof() {
	HOME=$TMP/home GOCACHE=$TMP/gocache GOPROXY=off PPROF_TMPDIR=$TMP \
		timeout 60 go tool pprof -symbolize=none "$@" 2>"$TMP/gopprof.err"
}

# values_scaled NAME RAW PERIOD: every sample of go tool pprof -raw output
# RAW has value2 = value1 x PERIOD.
values_scaled() {
	local n bad
	read -r n bad < <(awk -v p="$3" '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		s && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+:$/ { n++; if ($1 * p != $2 + 0) bad++ }
		END { print n + 0, bad + 0 }' <<<"$2")
	[ "${n:-0}" -gt 0 ] && [ "$bad" -eq 0 ] && pass "$1 ($n samples)" ||
		fail "$1" "$n samples, $bad not scaled: $(sed -n '/^Samples/,+4p' <<<"$2")"
}

pprof_tests() {
	local f=$TMP/shares.pb.gz freq=499 raw top bid want_period dur lraw ltop
	mkdir -p "$TMP/home"
	profile "$f" -F $freq --format pprof -- "$W/shares" 2 ||
		{ fail "pprof: shares run" "$(cat "$f.err")"; return; }
	if ! raw=$(gopprof -raw "$f"); then
		fail "pprof: go tool pprof accepts the profile" "$(cat "$TMP/gopprof.err")"
		return
	fi
	pass "pprof: go tool pprof accepts the profile"

	grep -qx 'samples/count\[dflt\] cpu/nanoseconds' <<<"$raw" &&
		pass "pprof: sample types samples/count and cpu/nanoseconds" ||
		fail "pprof: sample types samples/count and cpu/nanoseconds" "$(head -8 <<<"$raw")"
	# the clocks sample every 1e9/F ns, rounded
	want_period=$(awk -v f=$freq 'BEGIN { printf "%d", (1e9 + f / 2) / f }')
	grep -qx "Period: $want_period" <<<"$raw" && grep -qx 'PeriodType: cpu nanoseconds' <<<"$raw" &&
		pass "pprof: period $want_period cpu nanoseconds" ||
		fail "pprof: period $want_period cpu nanoseconds" "$(head -5 <<<"$raw")"
	dur=$(awk '/^Duration:/ { print $2 }' <<<"$raw")
	awk -v d="${dur:-0}" 'BEGIN { exit !(d >= 1.5 && d < 30) }' && grep -q '^Time: ' <<<"$raw" &&
		pass "pprof: time and duration ($dur s)" ||
		fail "pprof: time and duration" "duration '$dur'"
	grep -q '^                pid:\[[0-9]*\] tid:\[[0-9]*\]' <<<"$raw" &&
		grep -q 'comm:\[shares\]' <<<"$raw" &&
		pass "pprof: pid, tid and comm labels" ||
		fail "pprof: pid, tid and comm labels" "$(sed -n '/^Samples/,+6p' <<<"$raw")"

	# The shares binary's mapping carries its GNU build-ID, as readelf reads it.
	bid=$(readelf -n "$W/shares" | awk '/Build ID:/ { print $3 }')
	awk -v file="$W/shares" -v bid="$bid" '
		/^Mappings/ { m = 1; next }
		m && $3 == file && $4 == bid { found = 1 }
		END { exit !found }' <<<"$raw" &&
		pass "pprof: the shares mapping has its build-ID $bid" ||
		fail "pprof: the shares mapping has its build-ID $bid" "$(sed -n '/^Mappings/,$p' <<<"$raw")"

	# Every sample's second value is its count times the period (ns).
	values_scaled "pprof: cpu/nanoseconds = samples x period $want_period" "$raw" "$want_period"

	# The shares mapping is where the kernel mapped the executable PT_LOAD:
	# start, limit and offset as readelf -lW gives them, rounded to pages,
	# and as /proc/PID/maps shows them for another run of the same (non-PIE,
	# so not randomized) binary; has_functions ([FN]) as it has symbols.
	local want_map maps_map got_map sh
	want_map=$(readelf -lW "$W/shares" | gawk '$1 == "LOAD" && / E +0x[0-9a-f]+$/ {
		off = strtonum($2); va = strtonum($3); mem = strtonum($6)
		printf "0x%x/0x%x/0x%x", and(va, compl(4095)), and(va + mem + 4095, compl(4095)),
			and(off, compl(4095)) }')
	"$W/shares" 1 &
	sh=$!
	sleep 0.2
	maps_map=$(gawk -v file="$W/shares" '$6 == file && $2 ~ /x/ {
		split($1, r, "-")
		printf "0x%x/0x%x/0x%x", strtonum("0x" r[1]), strtonum("0x" r[2]), strtonum("0x" $3) }' "/proc/$sh/maps")
	wait $sh
	got_map=$(awk -v file="$W/shares" '/^Mappings/ { m = 1; next }
		m && $3 == file { print $2, $NF }' <<<"$raw")
	[ -n "$want_map" ] && [ "$want_map" = "$maps_map" ] && [ "$got_map" = "$want_map [FN]" ] &&
		pass "pprof: the shares mapping is its executable PT_LOAD ($want_map), [FN]" ||
		fail "pprof: the shares mapping is its executable PT_LOAD, [FN]" \
			"readelf $want_map, maps $maps_map, pprof '$got_map'"

	# Every location with a mapping has its address inside that mapping.
	# Addresses are compared as 16-digit hex strings (awk's numbers are
	# doubles: kernel addresses do not fit).
	local nloc badloc
	read -r nloc badloc < <(awk '
		function pad(h) { sub(/^0x/, "", h); while (length(h) < 16) h = "0" h; return h }
		/^Locations/ { sect = "l"; next }
		/^Mappings/ { sect = "m"; next }
		sect == "l" && $2 ~ /^0x/ && $3 ~ /^M=/ { n++; addr[n] = pad($2); mid[n] = substr($3, 3) }
		sect == "m" && $1 ~ /^[0-9]+:$/ { split($2, r, "/"); id = $1 + 0
			lo[id] = pad(r[1]); hi[id] = pad(r[2]) }
		END { for (i = 1; i <= n; i++) { id = mid[i]
				if (!(id in lo) || addr[i] < lo[id] || addr[i] >= hi[id]) bad++ }
			print n + 0, bad + 0 }' <<<"$raw")
	[ "${nloc:-0}" -gt 10 ] && [ "$badloc" -eq 0 ] &&
		pass "pprof: all $nloc locations lie in their mapping (M=id)" ||
		fail "pprof: locations lie in their mapping" "$nloc locations, $badloc outside"

	top=$(gopprof -top "$f") || { fail "pprof: -top" "$(cat "$TMP/gopprof.err")"; return; }
	[ "$(grep -oE ' share_fn_[0-9]+$' <<<"$top" | sort -u | wc -l)" -eq 10 ] &&
		pass "pprof: -top lists share_fn_1..10" ||
		fail "pprof: -top lists share_fn_1..10" "$top"
	grep -q "^File: shares$" <<<"$top" && pass "pprof: the main binary is shares" ||
		fail "pprof: the main binary is shares" "$(head -3 <<<"$top")"

	# A counter: its own name and unit, the -c period, values x 10.
	f=$TMP/faults.pb.gz
	profile "$f" -e page-faults -c 10 --format pprof -- "$W/cache" 1 ||
		{ fail "pprof: page-faults run" "$(cat "$f.err")"; return; }
	raw=$(gopprof -raw "$f") || { fail "pprof: page-faults profile read" "$(cat "$TMP/gopprof.err")"; return; }
	grep -qx 'samples/count\[dflt\] page-faults/count' <<<"$raw" &&
		grep -qx 'PeriodType: page-faults count' <<<"$raw" && grep -qx 'Period: 10' <<<"$raw" &&
		pass "pprof: counter types samples/count and page-faults/count, period 10" ||
		fail "pprof: counter types samples/count and page-faults/count, period 10" "$(head -8 <<<"$raw")"
	values_scaled "pprof: page-faults/count = samples x 10" "$raw" 10

	# Forced loss (as accounting.sh): a 4-entry counts map spills to 4 KiB
	# rings that a slow reader lets fill, so samples are lost as such.
	f=$TMP/lost.pb.gz
	profile "$f" -F 4000 --format pprof --map-entries 4 --ring-size 4K \
		--debug-reader-delay 300 -- "$W/shares" 1 ||
		{ fail "pprof: forced loss run" "$(cat "$f.err")"; return; }
	lraw=$(gopprof -raw "$f") && ltop=$(gopprof -top "$f") ||
		{ fail "pprof: lost profile read" "$(cat "$TMP/gopprof.err")"; return; }
	grep -qE ' \[lost\]$' <<<"$ltop" && grep -q 'lost_reason:\[counts map full\]' <<<"$lraw" &&
		pass "pprof: lost samples as [lost] with a lost_reason" ||
		fail "pprof: lost samples as [lost] with a lost_reason" "$ltop $(grep lost <<<"$lraw")"
}

if ! command -v go >/dev/null; then
	skip "pprof" "go tool pprof not installed (tools/install-deps.sh installs golang-go)"
else
	pprof_tests
fi

# Binary formats refuse a terminal without -o (script gives a tty).
if command -v script >/dev/null; then
	out=$(script -qec "$BPFS --format pprof -d 1" "$TMP/typescript" 2>&1)
	grep -q 'writes binary: give -o' <<<"$out" && pass "pprof: refused on a terminal without -o" ||
		fail "pprof: refused on a terminal without -o" "$out"
fi

# --format top: 20 rows unless --top says otherwise. A system-wide second
# (shares busy meanwhile) has more than 20 functions.
# top_rows NAME FILE WANT: the header says "showing WANT of N" (N > WANT)
# and WANT rows follow it.
top_rows() {
	local rows shown of
	rows=$(grep -cE '^ +[0-9]+ +[0-9.]+% +[0-9.]+% +[0-9]+ +[0-9.]+%  ' "$2")
	read -r shown of < <(sed -nE '1s/.*; showing ([0-9]+) of ([0-9]+) functions$/\1 \2/p' "$2")
	[ "$rows" -eq "$3" ] && [ "${shown:-0}" -eq "$3" ] && [ "${of:-0}" -gt "$3" ] &&
		pass "$1: $rows rows of $of functions" ||
		fail "$1" "$rows rows, header: $(head -1 "$2")"
}
"$W/shares" 3 &
sh=$!
if profile "$TMP/sys.top" --format top -d 1; then
	top_rows "top: 20 rows by default" "$TMP/sys.top" 20
else
	fail "top: system-wide run" "$(cat "$TMP/sys.top.err")"
fi
if profile "$TMP/sys5.top" --format top --top 5 -d 1; then
	top_rows "top: --top 5 gives 5 rows" "$TMP/sys5.top" 5
else
	fail "top: --top 5 run" "$(cat "$TMP/sys5.top.err")"
fi
wait $sh

# --- several formats from one run, samples among them: each counts every
# kept sample once (the summed formats once counted each sample twice, the
# per-sample profile added to theirs), and samples folded by stack are the
# folded lines.
"$BPFS" -F 999 -d 1 --format folded,samples,pprof -o "$TMP/multi.%f" -- "$W/threads" 2 1 \
	>/dev/null 2>"$TMP/multi.err" || fail "folded,samples,pprof run" "$(tail -3 "$TMP/multi.err")"
kept=$(summary_field "$TMP/multi.err" "kept")
f_sum=$(grep -v '^\[lost\]' "$TMP/multi.folded" | awk '{ s += $NF } END { print s + 0 }')
s_nr=$(wc -l <"$TMP/multi.samples")
p_sum=$(gopprof -raw "$TMP/multi.pb.gz" | awk '/^ *[0-9]+ +[0-9]+:/ { s += $1 } END { print s + 0 }')
[ "${kept:-0}" -gt 1000 ] && [ "$f_sum" = "$kept" ] && [ "$s_nr" = "$kept" ] && [ "$p_sum" = "$kept" ] &&
	pass "folded,samples,pprof: each has every kept sample once ($kept)" ||
	fail "folded,samples,pprof: each has every kept sample once" \
		"kept ${kept:-none}: folded $f_sum, samples $s_nr, pprof $p_sum"
cut -d' ' -f7- "$TMP/multi.samples" | sort | uniq -c |
	awk '{ c = $1; $1 = ""; sub(/^ /, ""); print $0 " " c }' | sort >"$TMP/multi.byst"
grep -v '^\[lost\]' "$TMP/multi.folded" | sort >"$TMP/multi.fsorted"
if cmp -s "$TMP/multi.byst" "$TMP/multi.fsorted"; then
	pass "samples folded by stack are the folded lines ($(wc -l <"$TMP/multi.fsorted") stacks)"
else
	fail "samples folded by stack are the folded lines" "$(diff "$TMP/multi.byst" "$TMP/multi.fsorted" | head -4)"
fi
