#!/usr/bin/env bash
# The counter path (-e EVENT -c N, --weight period, several events at once)
# tested with software events, which every machine has, PMU or not: the
# swevents workload makes a known number of page faults, context switches
# or CPU migrations in a known function and says how many it made.
source "$(dirname "$0")/lib.sh"
require_root swevents

SW=$W/swevents
N=20000 # pages faulted in fault_pages

# pct TOLERANCE_PERCENT SLACK VALUE: the tolerance of `within`
pct() { awk -v p="$1" -v s="$2" -v v="$3" 'BEGIN { printf "%d", v * p / 100 + s }'; }
# field OUT WORD: the number after WORD in the workload's "total ..." line
field() { awk -v w="$2" '$1 == "total" { for (i = 2; i < NF; i++) if ($i == w) print $(i + 1) }' "$1"; }
# made OUT: the events the workload's loop made (faults: its minflt delta)
loop_faults() { awk '$1 == "loop" { print $3 }' "$1"; }

# page-faults, every one: nearly all in fault_pages, one sample per fault.
for ev in page-faults minor-faults; do
	profile "$TMP/$ev.folded" -e $ev -c 1 -- "$SW" faults $N >"$TMP/$ev.out" ||
		fail "$ev -c 1 run" "$(cat "$TMP/$ev.folded.err")"
	in=$(samples_with "$TMP/$ev.folded" fault_pages) all=$(total "$TMP/$ev.folded")
	made=$(loop_faults "$TMP/$ev.out") proc=$(field "$TMP/$ev.out" minflt)
	at_least "$ev -c 1: share of samples in fault_pages" "$(ratio "$in" "$all")" 0.95
	within "$ev -c 1: samples in fault_pages = the faults it made ($made)" "$in" "$made" \
		"$(pct 3 5 "$made")"
	# the process's other faults: ld.so, libc, exit (a few after its count)
	within "$ev -c 1: all samples = the process's faults ($proc)" "$all" "$proc" \
		"$(pct 3 30 "$proc")"
done

# -c 100: one sample per 100 faults.
profile "$TMP/c100.folded" -e page-faults -c 100 -- "$SW" faults $N >"$TMP/c100.out" ||
	fail "page-faults -c 100 run" "$(cat "$TMP/c100.folded.err")"
made=$(loop_faults "$TMP/c100.out")
in=$(samples_with "$TMP/c100.folded" fault_pages)
within "page-faults -c 100: samples in fault_pages = faults / 100" "$in" \
	"$((made / 100))" "$(pct 5 2 "$((made / 100))")"

# --weight period: each sample weighs its period, so the profile counts faults.
profile "$TMP/w.folded" -e page-faults -c 100 --weight period -- "$SW" faults $N >"$TMP/w.out" ||
	fail "page-faults --weight period run" "$(cat "$TMP/w.folded.err")"
made=$(loop_faults "$TMP/w.out")
in=$(samples_with "$TMP/w.folded" fault_pages)
within "--weight period -c 100: fault_pages weighs the faults it made ($made)" "$in" "$made" \
	"$(pct 5 200 "$made")"
odd=$(awk '$NF % 100 { n++ } END { print n + 0 }' "$TMP/w.folded")
[ "$odd" = 0 ] && [ -s "$TMP/w.folded" ] && pass "--weight period -c 100: every value is samples x 100" ||
	fail "--weight period -c 100: every value is samples x 100" "$odd lines are not: $(head -3 "$TMP/w.folded")"

# context-switches: one per sleep, in switch_loop.
profile "$TMP/cs.folded" -e context-switches -c 1 -- "$SW" switches 2000 >"$TMP/cs.out" ||
	fail "context-switches run" "$(cat "$TMP/cs.folded.err")"
in=$(samples_with "$TMP/cs.folded" switch_loop) all=$(total "$TMP/cs.folded")
sw=$(($(field "$TMP/cs.out" nvcsw) + $(field "$TMP/cs.out" nivcsw)))
at_least "context-switches -c 1: share in switch_loop" "$(ratio "$in" "$all")" 0.95
within "context-switches -c 1: samples = the process's switches ($sw)" "$all" "$sw" "$(pct 3 5 "$sw")"

# cpu-migrations: one per move between two CPUs, in migrate_loop.
if [ "$(nproc)" -ge 2 ]; then
	profile "$TMP/mig.folded" -e cpu-migrations -c 1 -- "$SW" migrate 400 >"$TMP/mig.out" ||
		fail "cpu-migrations run" "$(cat "$TMP/mig.folded.err")"
	in=$(samples_with "$TMP/mig.folded" migrate_loop) all=$(total "$TMP/mig.folded")
	mig=$(field "$TMP/mig.out" migrations)
	at_least "cpu-migrations -c 1: share in migrate_loop" "$(ratio "$in" "$all")" 0.95
	if [ "${mig:--1}" -ge 0 ]; then
		within "cpu-migrations -c 1: samples = the process's migrations ($mig)" "$all" "$mig" \
			"$(pct 5 5 "$mig")"
	else
		within "cpu-migrations -c 1: about one sample per move" "$in" 400 40
	fi
else
	skip "cpu-migrations" "needs two CPUs"
fi

# Several events in one session, one profile each (-o with %e): a command
# that faults, then sleeps.
profile "$TMP/p-%e.folded" -e page-faults,context-switches -c 1 -- \
	sh -c "'$SW' faults $N && '$SW' switches 1000" >"$TMP/multi.out" ||
	fail "page-faults,context-switches run" "$(cat "$TMP/p-%e.folded.err")"
pf=$TMP/p-page-faults.folded cs=$TMP/p-context-switches.folded
at_least "two events: page-faults profile, share in fault_pages" \
	"$(ratio "$(samples_with "$pf" fault_pages)" "$(total "$pf")")" 0.95
at_least "two events: context-switches profile, share in switch_loop" \
	"$(ratio "$(samples_with "$cs" switch_loop)" "$(total "$cs")")" 0.9
n=$(samples_with "$cs" fault_pages)
[ "$(samples_with "$pf" switch_loop)" -le 2 ] && [ "$n" -le 20 ] &&
	pass "two events: never mixed (switch_loop in page-faults: $(samples_with "$pf" switch_loop), fault_pages in context-switches: $n)" ||
	fail "two events: never mixed" "switch_loop in page-faults: $(samples_with "$pf" switch_loop), fault_pages in context-switches: $n"

# task-clock at a period: one sample per 1 ms of the task's CPU time,
# compared with the CPU time the threads got (bash's `times`: the children's
# user and system time), not with the wall clock: on a loaded machine they
# get less than their CPUs.
profile "$TMP/tc.folded" -e task-clock -c 1000000 -- bash -c "'$W/threads' 2 1; times" \
	>"$TMP/tc.out" || fail "task-clock -c run" "$(cat "$TMP/tc.folded.err")"
ms=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } }
	END { printf "%d", s * 1000 }' "$TMP/tc.out")
within "task-clock -c 1000000: one sample per ms of the threads' CPU time ($ms ms)" \
	"$(samples_with "$TMP/tc.folded" thread_work)" "$ms" "$(pct 10 20 "$ms")"

# Every software event perf names opens and samples here, -c and -F alike.
for ev in faults major-faults cs migrations alignment-faults emulation-faults; do
	"$BPFS" -e $ev -c 1000 -d 0.2 -o "$TMP/any.folded" 2>"$TMP/any.err"
	rc=$?
	[ $rc -eq 0 ] && grep -q "event $ev:" "$TMP/any.err" && pass "-e $ev opens (exit 0, in the summary)" ||
		fail "-e $ev opens" "exit $rc: $(cat "$TMP/any.err")"
done
