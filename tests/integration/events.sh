#!/usr/bin/env bash
# Events beyond the timer: several at once, weights, clear refusals, and
# on a machine with a PMU, hardware counters that find what they should.
source "$(dirname "$0")/lib.sh"
require_root events


# Two software events in one session: one profile each, never mixed.
"$BPFS" -e cpu-clock,task-clock -o "$TMP/two-%e.folded" -- "$W/shares" 1 2>"$TMP/two.err"
rc=$?
a=$(samples_with "$TMP/two-cpu-clock.folded" run_shares)
b=$(samples_with "$TMP/two-task-clock.folded" run_shares)
if [ $rc -eq 0 ] && [ "$a" -gt 1000 ] && [ "$b" -gt 1000 ] &&
	grep -q "event cpu-clock:" "$TMP/two.err" && grep -q "event task-clock:" "$TMP/two.err"; then
	pass "two events: one profile each ($a and $b samples), each in the summary"
else
	fail "two events: one profile each" "exit $rc, $a/$b: $(cat "$TMP/two.err")"
fi
within "two events: the same work seen by both" "$(ratio "$a" "$b")" 1 0.1

# Several events need a name pattern.
"$BPFS" -e cpu-clock,task-clock -d 1 >"$TMP/o" 2>"$TMP/e"
[ $? -eq 2 ] && grep -q '%e' "$TMP/e" && pass "several events without -o %e: exit 2, says how" ||
	fail "several events without -o %e: exit 2" "$(cat "$TMP/e")"

# --weight period: counts are nanoseconds of cpu-clock (250000 per sample).
profile "$TMP/w.folded" -F 4000 --weight period -- "$W/shares" 1 || fail "weight run"
profile "$TMP/s.folded" -F 4000 -- "$W/shares" 1 || fail "samples run"
per=$(awk -v w="$(total "$TMP/w.folded")" -v s="$(total "$TMP/s.folded")" 'BEGIN { printf "%d", s ? w / s : 0 }')
within "--weight period counts nanoseconds per sample" "$per" 250000 25000

# -c: every N ns of cpu-clock.
profile "$TMP/c.folded" -e cpu-clock -c 1000000 -- "$W/threads" 2 1 || fail "-c run"
n=$(samples_with "$TMP/c.folded" thread_work)
within "-c 1000000 on cpu-clock: 1000 samples per CPU second" "$n" 2000 300

if [ ! -d /sys/bus/event_source/devices/cpu ]; then
	# No PMU (a VM without a virtual PMU): every hardware event is refused,
	# with the event named and what to use instead, exit 2, no fallback.
	for ev in cycles instructions cache-misses branch-misses L1-dcache-load-misses r003c; do
		"$BPFS" -e $ev -d 1 -o "$TMP/hw.folded" 2>"$TMP/hw.err"
		rc=$?
		if [ $rc -eq 2 ] && grep -q "event '$ev'" "$TMP/hw.err" && grep -q "cpu-clock" "$TMP/hw.err" &&
			[ ! -s "$TMP/hw.folded" ]; then
			pass "no PMU: -e $ev exits 2 naming it"
		else
			fail "no PMU: -e $ev exits 2 naming it" "exit $rc: $(cat "$TMP/hw.err")"
		fi
	done
	skip "hardware counter profiles" "this machine has no PMU (/sys/bus/event_source/devices/cpu is missing)"
	exit 0
fi

# With a PMU: cycles match the known shares; misses land where they are made.
profile "$TMP/cy.folded" -e cycles -- "$W/shares" 3 || fail "cycles run" "$(cat "$TMP/cy.folded.err")"
t=$(samples_matching "$TMP/cy.folded" ';share_fn_[0-9]+(;|$)')
for k in 1 5 10; do
	within "cycles: share_fn_$k share" "$(ratio "$(samples_with "$TMP/cy.folded" share_fn_$k)" "$t")" \
		"$(awk -v k=$k 'BEGIN { printf "%.4f", k / 55 }')" "$(share_tolerance 0.1 "$t")"
done
profile "$TMP/cm.folded" -e cache-misses -- "$W/cache" 3 || fail "cache-misses run"
profile "$TMP/cc.folded" -e cpu-clock -- "$W/cache" 3 || fail "cpu-clock cache run"
h=$(samples_with "$TMP/cm.folded" cache_hostile) f=$(samples_with "$TMP/cm.folded" cache_friendly)
r=$(ratio "$h" $((h + f)))
awk -v r="$r" 'BEGIN { exit !(r >= 0.9) }' && pass "cache-misses: cache_hostile has $r" ||
	fail "cache-misses: cache_hostile has at least 90%" "$r"
h=$(samples_with "$TMP/cc.folded" cache_hostile) f=$(samples_with "$TMP/cc.folded" cache_friendly)
within "cpu-clock: cache_hostile and cache_friendly near equal" "$(ratio "$h" $((h + f)))" 0.5 0.1
profile "$TMP/bm.folded" -e branch-misses -- "$W/branch" 3 || fail "branch-misses run"
u=$(samples_with "$TMP/bm.folded" branch_unpredictable) p=$(samples_with "$TMP/bm.folded" branch_predictable)
r=$(ratio "$u" $((u + p)))
awk -v r="$r" 'BEGIN { exit !(r >= 0.9) }' && pass "branch-misses: branch_unpredictable has $r" ||
	fail "branch-misses: branch_unpredictable has at least 90%" "$r"
