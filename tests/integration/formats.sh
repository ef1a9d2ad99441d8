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

	top=$(gopprof -top "$f") || { fail "pprof: -top" "$(cat "$TMP/gopprof.err")"; return; }
	[ "$(grep -oE ' share_fn_[0-9]+$' <<<"$top" | sort -u | wc -l)" -eq 10 ] &&
		pass "pprof: -top lists share_fn_1..10" ||
		fail "pprof: -top lists share_fn_1..10" "$top"
	grep -q "^File: shares$" <<<"$top" && pass "pprof: the main binary is shares" ||
		fail "pprof: the main binary is shares" "$(head -3 <<<"$top")"

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
	out=$(script -qec "$BPFS --format pprof -d 1" /dev/null 2>&1)
	grep -q 'writes binary: give -o' <<<"$out" && pass "pprof: refused on a terminal without -o" ||
		fail "pprof: refused on a terminal without -o" "$out"
fi
