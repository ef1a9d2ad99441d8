#!/usr/bin/env bash
# The stream: complete deep stacks, per-sample records with sane
# timestamps, samples per thread that match each thread's CPU time.
source "$(dirname "$0")/lib.sh"
require_root stream


# A 1000-deep recursion: the whole chain down from main, in both modes.
for mode in stream aggregate; do
	profile "$TMP/deep-$mode.folded" -F 4000 --mode $mode -- "$W/recurse" 1000 2 ||
		fail "$mode: 1000-deep run" "$(cat "$TMP/deep-$mode.folded.err")"
	leaf=$(samples_with "$TMP/deep-$mode.folded" recurse_leaf)
	whole=$(samples_matching "$TMP/deep-$mode.folded" ';main;run_recurse;(recurse;){1000}recurse_leaf(;|$)')
	if [ "$leaf" -lt 3000 ]; then
		fail "$mode: 1000-deep recursion, enough samples" "$leaf"
	else
		r=$(ratio "$whole" "$leaf")
		if awk -v r="$r" 'BEGIN { exit !(r >= 0.99) }'; then
			pass "$mode: 1000-deep recursion whole from main in $r of samples"
		else
			fail "$mode: 1000-deep recursion whole from main" "only $r ($whole of $leaf)"
		fi
	fi
done

# Stack records are sized by their segment's depth: a 300-deep chain (three
# segments, the leaf one partly filled) and a shallow one come out whole.
for depth in 300 3; do
	profile "$TMP/d$depth.folded" -F 4000 --mode stream -- "$W/recurse" $depth 1 ||
		fail "stream: $depth-deep run" "$(cat "$TMP/d$depth.folded.err")"
	leaf=$(samples_with "$TMP/d$depth.folded" recurse_leaf)
	whole=$(samples_matching "$TMP/d$depth.folded" ";main;run_recurse;(recurse;){$depth}recurse_leaf(;|\$)")
	if [ "$leaf" -lt 1000 ]; then
		fail "stream: $depth-deep recursion, enough samples" "$leaf"
	elif grep -q 'malformed' "$TMP/d$depth.folded.err"; then
		fail "stream: $depth-deep recursion, no malformed record" "$(grep malformed "$TMP/d$depth.folded.err")"
	else
		r=$(ratio "$whole" "$leaf")
		awk -v r="$r" 'BEGIN { exit !(r >= 0.99) }' &&
			pass "stream: $depth-deep recursion whole from main in $r of samples" ||
			fail "stream: $depth-deep recursion whole from main" "only $r ($whole of $leaf)"
	fi
done

# Deeper than --max-stack-depth: cut, and said so.
profile "$TMP/cut.folded" -F 999 --max-stack-depth 300 -- "$W/recurse" 1000 1 || fail "cut run"
cut=$(samples_matching "$TMP/cut.folded" '^recurse;[[]truncated: max depth[]];(recurse;){2}')
all=$(samples_with "$TMP/cut.folded" recurse_leaf)
within "stacks over --max-stack-depth start with [truncated: max depth]" "$(ratio "$cut" "$all")" 1 0.02
# The same cut, found by the walk at return to user space (the interrupt
# walks 16 frames, the completion the rest): counted in the summary as the
# interrupt's walk counts it, once per stack walked.
# Needs task_work completions (Linux 6.18), as the completion test below.
if ! "$BPFS" --version -v | grep -q "task_work completion (6.18): *yes"; then
	skip "cut at return to user space" "this kernel has no task_work completions (Linux 6.18+ whose verifier takes them from a perf_event program: bpfsampler --version -v)"
else
	profile "$TMP/cutc.folded" -F 999 --max-stack-depth 300 --interrupt-depth 16 -- "$W/recurse" 1000 1 ||
		fail "cut run at return to user space"
	cut=$(samples_matching "$TMP/cutc.folded" '^recurse;[[]truncated: max depth[]];(recurse;){2}')
	completed=$(sed -n 's/.*finished \([0-9]*\) samples.*/\1/p' "$TMP/cutc.folded.err")
	counted=$(sed -n 's/.* \([0-9]*\) user stack cut at --max-stack-depth.*/\1/p' "$TMP/cutc.folded.err")
	if [ "$cut" -gt 500 ] && [ "${completed:-0}" -gt $((cut * 9 / 10)) ] &&
		[ "${counted:-0}" -ge $((cut * 9 / 10)) ] && [ "${counted:-0}" -le $((cut * 11 / 10)) ]; then
		pass "cut at return to user space: counted (${counted} cut, ${cut} samples marked, ${completed} completed)"
	else
		fail "cut at return to user space: counted" "${counted:-none} counted, $cut samples marked, ${completed:-none} completed: $(grep -E 'incomplete|completions' "$TMP/cutc.folded.err")"
	fi
fi

# --format samples: one line per sample; per-CPU monotonic time inside the
# run's window; samples per thread match the thread's CPU time.
t0=$(awk '{ print $1 }' /proc/uptime)
THREADS_REPORT=1 "$BPFS" -F 4000 --format samples -o "$TMP/s.txt" -- "$W/threads" 2 3 \
	>"$TMP/truth" 2>"$TMP/s.err"
rc=$?
t1=$(awk '{ print $1 }' /proc/uptime)
[ $rc -eq 0 ] || fail "samples run" "$(cat "$TMP/s.err")"
lines=$(wc -l <"$TMP/s.txt")
kept=$(summary_field "$TMP/s.err" "kept")
[ "$lines" -gt 1000 ] && [ "$lines" -eq "$kept" ] && pass "--format samples: one line per kept sample ($lines)" ||
	fail "--format samples: one line per kept sample" "$lines lines, kept $kept"
bad=$(awk -v t0="$t0" -v t1="$t1" '
	{ if ($1 + 0 < t0 - 0.05 || $1 + 0 > t1 + 0.05) out++
	  if (($2 in last) && $1 + 0 < last[$2]) back++
	  last[$2] = $1 + 0 }
	END { print out + 0, back + 0 }' "$TMP/s.txt")
[ "$bad" = "0 0" ] && pass "--format samples: times rise per CPU, inside the run" ||
	fail "--format samples: times rise per CPU, inside the run" "outside/backwards: $bad (window $t0..$t1)"
while read -r tid cpu; do
	n=$(awk -v t="$tid" '$4 == t' "$TMP/s.txt" | wc -l)
	exp=$(awk -v c="$cpu" 'BEGIN { printf "%d", c * 4000 }')
	tol=$(awk -v e="$exp" 'BEGIN { printf "%d", 0.05 * e + 4 * sqrt(e) }')
	within "thread $tid: samples match its CPU time ($cpu s)" "$n" "$exp" "$tol"
done <"$TMP/truth"
[ -s "$TMP/truth" ] || fail "threads reported their CPU time"

# Completion at return to user space (Linux 6.18 task_work): with only 50
# frames walked in the interrupt, the rest comes from the thread's own
# context, and the 1000-deep chain is still whole.
if ! "$BPFS" --version -v | grep -q "task_work completion (6.18): *yes"; then
	skip "completion at return to user space" "this kernel has no task_work completions (Linux 6.18+ whose verifier takes them from a perf_event program: bpfsampler --version -v)"
else
	profile "$TMP/late.folded" -F 4000 --interrupt-depth 50 -- "$W/recurse" 1000 2 ||
		fail "completion run" "$(cat "$TMP/late.folded.err")"
	leaf=$(samples_with "$TMP/late.folded" recurse_leaf)
	whole=$(samples_matching "$TMP/late.folded" ';main;run_recurse;(recurse;){1000}recurse_leaf(;|$)')
	done_n=$(grep -oE 'finished [0-9]+ samples' "$TMP/late.folded.err" | grep -oE '[0-9]+')
	r=$(ratio "$whole" "$leaf")
	if [ "$leaf" -gt 3000 ] && awk -v r="$r" 'BEGIN { exit !(r >= 0.99) }' && [ "${done_n:-0}" -gt 3000 ]; then
		pass "completion: 50 frames in the interrupt, whole 1000-deep chain in $r ($done_n completed)"
	else
		fail "completion: whole 1000-deep chain" "ratio $r of $leaf, completed ${done_n:-0}: $(tail -3 "$TMP/late.folded.err")"
	fi
fi
