#!/usr/bin/env bash
# Known-share workloads: each function's share of the samples must match
# the CPU time it burned, within the sampling noise the sample count allows.
source "$(dirname "$0")/lib.sh"
require_root accuracy
# The workloads run SECONDS of their own CPU time, not of wall time: the
# known shares need their ~12,000 samples whatever CPU a shared host gives
# them (one run got 218 with the host loaded 70 times over); a busy host
# makes the run longer, not the answer noisier.
export WORKLOAD_CPU=1

# check_shares NAME FOLDED: share_fn_k must get k/55 of the share_fn samples
# and sit right under run_shares.
check_shares() {
	local name=$1 f=$2 total k got exp tol under
	total=$(samples_matching "$f" ';share_fn_[0-9]+(;|$)')
	if [ "$total" -lt 3000 ]; then
		fail "$name: enough samples" "only $total samples in share_fn_*"
		return
	fi
	for k in 1 2 3 4 5 6 7 8 9 10; do
		got=$(awk -v a="$(samples_with "$f" "share_fn_$k")" -v t="$total" 'BEGIN { printf "%.4f", a / t }')
		exp=$(awk -v k=$k 'BEGIN { printf "%.4f", k / 55 }')
		tol=$(share_tolerance "$exp" "$total")
		within "$name: share_fn_$k share" "$got" "$exp" "$tol"
	done
	under=$(samples_matching "$f" ';main;run_shares;share_fn_[0-9]+(;|$)')
	within "$name: share_fn_* called from main;run_shares" \
		"$(awk -v a="$under" -v t="$total" 'BEGIN { printf "%.4f", a / t }')" 1 0.01
}

profile "$TMP/shares.folded" -F 4000 -- "$W/shares" 3 || fail "shares run" "$(cat "$TMP/shares.folded.err")"
check_shares "non-PIE" "$TMP/shares.folded"

profile "$TMP/pie.folded" -F 4000 -- "$W/shares-pie" 3 || fail "PIE run" "$(cat "$TMP/pie.folded.err")"
check_shares "PIE" "$TMP/pie.folded"

# Two threads of equal work: equal shares, by thread name.
profile "$TMP/threads.folded" -F 4000 -- "$W/threads" 2 3 || fail "threads run"
w0=$(comm_lines "$TMP/threads.folded" worker-0 >"$TMP/w0"; samples_with "$TMP/w0" thread_work)
w1=$(comm_lines "$TMP/threads.folded" worker-1 >"$TMP/w1"; samples_with "$TMP/w1" thread_work)
if [ $((w0 + w1)) -lt 3000 ]; then
	fail "threads: enough samples" "worker-0 $w0, worker-1 $w1"
else
	got=$(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.4f", a / (a + b) }')
	within "threads: equal work gets equal shares" "$got" 0.5 "$(share_tolerance 0.5 $((w0 + w1)))"
fi
