#!/usr/bin/env bash
# The fuzz targets (tests/fuzz/, built by make check or make fuzz-build):
# first every regression input (each a crash once found and fixed), then
# each target fuzzed for FUZZ_SUITE_SECONDS (default 8) from the committed
# and generated seeds, in a scratch corpus, FUZZ_SUITE_JOBS (default: the
# CPU count) targets at a time. A crash is a failure naming the
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

# the targets' scratch folders in ours: a crash leaves its folder behind
# (libFuzzer exits without atexit), and ours goes at exit
export TMPDIR=$TMP
"$ROOT/tests/fuzz/regress.sh" "$F"

# One target run: its verdict in $TMP/$t.verdict, read after the wait.
fuzz_one() {
	local bin=$1 t=$2 work=$TMP/corpus-$2
	local seeds=("$ROOT/tests/fuzz/corpus/$t")

	mkdir -p "$work" "$TMP/art-$t"
	[ -d "$F/seeds/$t" ] && seeds+=("$F/seeds/$t")
	if nice -n 10 "$bin" -max_total_time="$secs" -print_final_stats=1 -close_fd_mask=3 \
		-max_len=65536 -timeout=10 -rss_limit_mb=1024 -artifact_prefix="$TMP/art-$t/" \
		"$work" "${seeds[@]}" >"$TMP/$t.log" 2>&1; then
		echo ok >"$TMP/$t.verdict"
	else
		echo crash >"$TMP/$t.verdict"
	fi
}

# Each crash input of up to 4 KiB as base64 (base64 -d rebuilds it).
print_small_inputs() {
	local f

	for f in "$1"/*; do
		[ -f "$f" ] && [ "$(stat -c %s "$f")" -le 4096 ] || continue
		echo "    ${f##*/}, base64:"
		base64 -w 76 "$f" | sed 's/^/      /'
	done
}

# Two targets at a time, one per CPU of the CI machine: the same fuzzing
# in half the suite's time (each libFuzzer process uses one CPU).
jobs_max=${FUZZ_SUITE_JOBS:-$(nproc)}
targets=()
for bin in "$F"/fuzz_*; do
	[ -x "$bin" ] || continue
	t=${bin##*/fuzz_}
	targets+=("$t")
	fuzz_one "$bin" "$t" &
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n
	done
done
wait

for t in "${targets[@]}"; do
	bin=$F/fuzz_$t
	if [ "$(cat "$TMP/$t.verdict" 2>/dev/null)" = ok ]; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/$t.log")
		pass "fuzz_$t ($runs runs in $secs s)"
	else
		grep -E 'ERROR|SUMMARY|#[0-9]+ ' "$TMP/$t.log" | tail -15 | sed 's/^/    /'
		# $TMP goes at exit: the input is kept in the build tree (never
		# in /tmp, where the suite leaves nothing), and printed when
		# small, as a CI machine's tree is gone when its log is read
		keep=$(mktemp -d "$F/crash-$t.XXXXXX") && cp -r "$TMP/art-$t/." "$keep/"
		print_small_inputs "$keep"
		fail "fuzz_$t" "crashed; the input is in $keep/: reproduce with $bin $keep/crash-*, fix the parser, commit the input under tests/fuzz/regress/$t/"
	fi
done
