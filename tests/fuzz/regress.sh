#!/usr/bin/env bash
# Runs every fuzz target once on each of its regression inputs
# (tests/fuzz/regress/NAME/*: inputs that once crashed a parser, kept so the
# fix stays). Prints "PASS fuzz_regress_NAME" or "FAIL ...: why" per target.
#   tests/fuzz/regress.sh FUZZ_OUT
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: tests/fuzz/regress.sh FUZZ_OUT (e.g. .output/fuzz)}
rc=0
for bin in "$out"/fuzz_*; do
	[ -x "$bin" ] || continue
	t=${bin##*/fuzz_}
	inputs=(tests/fuzz/regress/"$t"/*)
	if [ ! -e "${inputs[0]}" ]; then
		continue # no crash found in this parser yet
	fi
	# the inputs as arguments: each is run once, nothing is fuzzed
	if log=$("$bin" -close_fd_mask=3 -timeout=10 -rss_limit_mb=1024 "${inputs[@]}" 2>&1); then
		echo "PASS fuzz_regress_$t (${#inputs[@]} inputs)"
	else
		printf '%s\n' "$log" | grep -E 'ERROR|SUMMARY|Running:|#[0-9]+ ' | tail -20
		echo "FAIL fuzz_regress_$t: an input under tests/fuzz/regress/$t/ crashes it again"
		rc=1
	fi
done
exit $rc
