#!/usr/bin/env bash
# Losses are counted, shown, and never turned into wrong stacks:
# taken = kept + idle + not selected + lost, with full maps and with stack id
# collisions forced.
source "$(dirname "$0")/lib.sh"
require_root accounting

# A counts map of 4 entries: the samples that find it full spill to the
# rings and are kept, not lost.
profile "$TMP/full.folded" -F 4000 --map-entries 4 -- "$W/shares" 1 || fail "tiny map run"
identity "counts map full" "$TMP/full.folded"
spilled=$(grep -oE '[0-9]+ samples spilled' "$TMP/full.folded.err" | grep -oE '^[0-9]+')
[ "${spilled:-0}" -gt 100 ] && ! grep -q '^\[lost\]' "$TMP/full.folded" &&
	pass "counts map full: samples spill to the rings ($spilled), none lost" ||
	fail "counts map full: samples spill to the rings, none lost" "$(cat "$TMP/full.folded.err")"
grep -q -- "--map-entries" "$TMP/full.folded.err" && pass "counts map full: summary says what to raise" ||
	fail "counts map full: summary says what to raise" "$(cat "$TMP/full.folded.err")"

# Forced overflow: stream mode, 4 KiB rings, a reader that sleeps 300 ms.
profile "$TMP/ring.folded" -F 4000 --mode stream --ring-size 4K --debug-reader-delay 300 \
	-- "$W/shares" 1 || fail "overflow run"
identity "ring overflow" "$TMP/ring.folded"
n=$(grep '^\[lost\];\[ring full\] ' "$TMP/ring.folded" | awk '{ print $NF }')
[ "${n:-0}" -gt 100 ] && pass "ring overflow: shown as a [lost] line ($n)" ||
	fail "ring overflow: shown as a [lost] line" "$(grep lost "$TMP/ring.folded")"
gaps_match "ring overflow" "$TMP/ring.folded"

# Both: a full counts map whose spills find the rings full are lost as such.
profile "$TMP/both.folded" -F 4000 --map-entries 4 --ring-size 4K --debug-reader-delay 300 \
	-- "$W/shares" 1 || fail "full map and ring run"
identity "counts map and ring full" "$TMP/both.folded"
grep -q '^\[lost\];\[counts map full\] [0-9]' "$TMP/both.folded" &&
	pass "counts map and ring full: shown as a [lost] line" ||
	fail "counts map and ring full: shown as a [lost] line" "$(head -3 "$TMP/both.folded")"
gaps_match "counts map and ring full" "$TMP/both.folded"

# Stack ids narrowed to 3 bits: 8 ids for many distinct stacks. Colliding
# stacks must be compared and counted as lost, never merged.
profile "$TMP/coll.folded" -F 4000 --debug-stack-id-bits 3 -- "$W/shares" 2 || fail "collision run"
identity "stack id collisions" "$TMP/coll.folded"
coll=$(grep '^\[lost\];\[stack id collision\]' "$TMP/coll.folded" | awk '{ print $NF }')
[ "${coll:-0}" -gt 0 ] && pass "stack id collisions: counted ($coll)" ||
	fail "stack id collisions: counted" "no collision line: $(head -5 "$TMP/coll.folded")"
# Every kept user stack must be a real one: a leaf share_fn_k sits under
# main;run_shares, and the kept functions keep their true ratio to each other.
bad=$(grep -v '^\[lost\];' "$TMP/coll.folded" | grep 'share_fn_' | grep -vcE ';main;run_shares;share_fn_[0-9]+(;|[ ])')
[ "$bad" -eq 0 ] && pass "stack id collisions: no stack borrowed another's frames" ||
	fail "stack id collisions: no stack borrowed another's frames" "$bad bad lines"
# Compare with a profile whose ids are full width: same leaf functions exist.
profile "$TMP/ok.folded" -F 4000 -- "$W/shares" 1 || fail "reference run"
identity "default settings" "$TMP/ok.folded"
lost_default=$(grep -c '^\[lost\]' "$TMP/ok.folded")
[ "$lost_default" -eq 0 ] && pass "default settings: nothing lost" ||
	fail "default settings: nothing lost" "$(grep '^\[lost\]' "$TMP/ok.folded")"
