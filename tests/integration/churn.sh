#!/usr/bin/env bash
# The agent under process churn for a minute: 200 new processes a second,
# each a distinct executable (its own build-ID) that lives ~5 ms. After the
# warm-up (two windows) memory stays flat, no sample is lost to a full map
# or ring, and the short-lived processes are still named.
. "$(dirname "$0")/lib.sh"
require_root

export HOME=$TMP/home GOCACHE=$TMP/gocache
mkdir -p "$HOME"
python3 "$ROOT/tests/tools/distinct_copies.py" "$W/churn_child" "$TMP/exes" 500 ||
	fail "500 distinct executables"
D=$TMP/spool
"$W/churn" "$TMP/exes" 62 200 5 >"$TMP/churn.out" &
churn=$!
sleep 0.5
"$BPFS" agent --interval 5 -F 999 -d 60 --output-dir "$D" --metrics-file "$TMP/m.prom" \
	2>"$TMP/agent.log"
rc=$?
wait $churn
started=$(awk '{ print $1 }' "$TMP/churn.out")
[ $rc = 0 ] && [ "${started:-0}" -gt 10000 ] && pass "a minute of churn: $started processes" ||
	fail "a minute of churn" "agent rc $rc, $(cat "$TMP/churn.out"); $(tail -3 "$TMP/agent.log")"

# window lines: "... lost, ... RSS 44.5 MB ..."; the first two are warm-up
# (the first is partial, the second meets every executable for the first
# time while the maps and caches fill)
grep 'bpfsampler: window ' "$TMP/agent.log" | sed -E 's/.* ([0-9]+) lost.* RSS ([0-9.]+) MB.*/\1 \2/' >"$TMP/w"
n=$(wc -l <"$TMP/w")
read -r lost rss_min rss_max < <(awk 'NR > 2 && NR < '"$n"' { l += $1; if (!m || $2 < m) m = $2; if ($2 > x) x = $2 }
	END { print l + 0, m + 0, x + 0 }' "$TMP/w")
if [ "$n" -ge 10 ] && [ "$lost" = 0 ]; then
	pass "no sample lost after the warm-up ($((n - 3)) windows)"
else
	fail "no sample lost after the warm-up" "$n windows, $lost lost: $(grep 'lost_total{' "$TMP/m.prom" | grep -v ' 0$')"
fi
# Flat: after the warm-up RSS moves by less than 10% (a leak of one
# process's or file's state would add ~10 MB over 9000 processes).
if awk -v a="$rss_min" -v b="$rss_max" 'BEGIN { exit !(a > 0 && b <= a * 1.10 && b < 64) }'; then
	pass "RSS flat under churn: $rss_min to $rss_max MB after the warm-up"
else
	fail "RSS flat under churn" "$rss_min to $rss_max MB; $(cat "$TMP/w" | tr '\n' ' ')"
fi

# Named: of the children's samples in their own code (the churn_child
# copies), the share named (main;churn_work) in the last complete windows,
# read back from the pprof files with go tool pprof. Much of a 5 ms
# process's life is exec, ld.so and exit: those samples do not count here.
last=$(ls "$D"/*.pb.gz | sed -E 's/.*\.([0-9T]+Z)\.pb\.gz$/\1/' | sort -u | tail -3 | head -2)
files=$(for t in $last; do ls "$D"/*."$t".pb.gz; done | grep -E '\.(churn_[0-9]+|other)\.')
go tool pprof -traces $files 2>/dev/null >"$TMP/traces"
# a trace block: its count on the first frame line; named when it has
# churn_work, unnamed when a frame is in a churn_NNNN file or an unknown one
awk '/^-----------/ { if (n) { if (w) named += n; else if (u) unnamed += n }; n = 0; w = 0; u = 0; next }
	/^ +[0-9]+ / && !n { n = $1 }
	/churn_work/ { w = 1 }
	/^ +\[(churn_[0-9]+|\[unknown file\])\]$/ { u = 1 }
	END { if (n) { if (w) named += n; else if (u) unnamed += n }; printf "%d %d\n", named, unnamed }' \
	"$TMP/traces" >"$TMP/named"
read -r named unnamed <"$TMP/named"
if [ "${named:-0}" -gt 200 ] && [ $((named * 100)) -ge $(((named + unnamed) * 95)) ]; then
	pass "short-lived processes named: $named of $((named + unnamed)) samples in their own code"
else
	fail "short-lived processes named" "$named named, $unnamed unnamed in the children's code"
fi
