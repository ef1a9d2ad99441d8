#!/usr/bin/env bash
# The benchmark's code path, briefly (bpfsampler only): it must run and fill
# its table. Times are printed, never asserted on.
source "$(dirname "$0")/lib.sh"
require_root bench_smoke

"$ROOT/tools/bench/bench" --smoke >"$TMP/table" 2>"$TMP/err"
rc=$?
row=$(grep '^| bpfsampler | 4000 Hz' "$TMP/table")
cells=$(awk -F'|' '{ print NF - 2 }' <<<"$row")
if [ $rc -eq 0 ] && [ "$cells" = 15 ] && ! grep -q 'n/a' <<<"$row"; then
	pass "bench --smoke fills every column for bpfsampler"
else
	fail "bench --smoke fills every column for bpfsampler" "exit $rc: $row $(tail -3 "$TMP/err")"
fi

# tools/bench/paired: two bpfsamplers at once, one round; each must be told
# apart and given a time per sample (not asserted on).
"$ROOT/tools/bench/paired" --rounds 1 --seconds 1 --settle 1 "$BPFS" "$BPFS:--unwind,fp" >"$TMP/paired" 2>"$TMP/perr"
rc=$?
rows=$(grep -cE '^\| .*bpfsampler.* \| [0-9]+ \([0-9]+-[0-9]+\) \| [0-9.]+ \|$' "$TMP/paired")
if [ $rc -eq 0 ] && [ "$rows" = 2 ]; then
	pass "bench/paired gives both profilers a time per sample"
else
	fail "bench/paired gives both profilers a time per sample" "exit $rc, $rows rows: $(cat "$TMP/paired") $(tail -3 "$TMP/perr")"
fi
# --work: another workload in place of cpuburn (here the 200-deep
# recursion), started and stopped with its round; --rate: at 99 Hz, not
# the default 4000 (the round's samples a second, all CPUs)
"$ROOT/tools/bench/paired" --work recurse200 --rate 99 --rounds 1 --seconds 2 --settle 1 "$BPFS" >"$TMP/pw" 2>"$TMP/pwerr"
rc=$?
rows=$(grep -cE '^\| .*bpfsampler.* \| [0-9]+ \([0-9]+-[0-9]+\) \| [0-9.]+ \|$' "$TMP/pw")
if [ $rc -eq 0 ] && [ "$rows" = 1 ] && grep -q '^recurse200 round 1:' "$TMP/pw" && ! pgrep -f "recurse 200 100000" >/dev/null; then
	pass "bench/paired --work recurse200: a time per sample, the workload gone after"
else
	fail "bench/paired --work recurse200" "exit $rc, $rows rows: $(cat "$TMP/pw") $(tail -3 "$TMP/pwerr")"
fi
# samples a second, from the kernel's run count: 99 on each CPU (idle ones
# too: the timer fires there); ignoring --rate would give ~4000 each
rate=$(sed -n 's/^recurse200 round 1: .*(samples\/s: \([0-9]*\))$/\1/p' "$TMP/pw")
cpus=$(nproc)
at_least "bench/paired --rate 99: samples a second on $cpus CPUs, at least 40% of 99 each" \
	"${rate:-0}" $((99 * cpus * 2 / 5))
at_most "bench/paired --rate 99: samples a second on $cpus CPUs, at most 150% of 99 each" \
	"${rate:-999999}" $((99 * cpus * 3 / 2))
