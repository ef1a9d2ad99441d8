#!/usr/bin/env bash
# The fuzz targets (tests/fuzz/, built by make check or make fuzz-build):
# first every regression input (each a crash once found and fixed), then
# each target fuzzed for FUZZ_SUITE_SECONDS (default 8) from the committed
# and generated seeds, in a scratch corpus. A crash is a failure naming the
# input to reproduce it with. No root or BPF needed; nice'd, as fuzzing
# takes a whole CPU. Longer runs: make fuzz FUZZ_SECONDS=N.
source "$(dirname "$0")/lib.sh"

if [ -n "${SANITIZE:-}" ]; then
	skip fuzz "the fuzz targets are built with their own sanitizers: plain make check runs them"
	exit 0
fi
F=$OUTPUT/fuzz
secs=${FUZZ_SUITE_SECONDS:-8}
if ! compgen -G "$F/fuzz_*" >/dev/null; then
	fail fuzz_built "no fuzz targets in $F: build them with make fuzz-build (needs clang and libclang-rt-14-dev)"
	exit 1
fi

"$ROOT/tests/fuzz/regress.sh" "$F"

for bin in "$F"/fuzz_*; do
	[ -x "$bin" ] || continue
	t=${bin##*/fuzz_}
	work=$TMP/corpus-$t
	mkdir -p "$work" "$TMP/art-$t"
	seeds=("$ROOT/tests/fuzz/corpus/$t")
	[ -d "$F/seeds/$t" ] && seeds+=("$F/seeds/$t")
	if nice -n 10 "$bin" -max_total_time="$secs" -print_final_stats=1 -close_fd_mask=3 \
		-max_len=65536 -timeout=10 -rss_limit_mb=1024 -artifact_prefix="$TMP/art-$t/" \
		"$work" "${seeds[@]}" >"$TMP/$t.log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/$t.log")
		pass "fuzz_$t ($runs runs in $secs s)"
	else
		grep -E 'ERROR|SUMMARY|#[0-9]+ ' "$TMP/$t.log" | tail -15 | sed 's/^/    /'
		keep=/tmp/bpfsampler-fuzz-crash-$t # $TMP goes at exit
		rm -rf "$keep" && cp -r "$TMP/art-$t" "$keep"
		fail "fuzz_$t" "crashed; the input is in $keep/: reproduce with $bin $keep/crash-*, fix the parser, commit the input under tests/fuzz/regress/$t/"
	fi
done
