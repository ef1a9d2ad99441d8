#!/usr/bin/env bash
# Every run ends (issue #14): -d and SIGTERM are honoured at any rate, a
# second SIGINT ends the process at once without leaving BPF objects, and
# impossible requests (rates, map and ring sizes) are refused before
# sampling starts. Bounds here are generous (5 s) so a loaded CI machine
# does not make them flaky; docs/design.md gives the measured figures.
source "$(dirname "$0")/lib.sh"
require_root runends

BOUND=5 # seconds past the signal, for the phases after sampling and the agent

# The promise (docs/design.md, "Every run ends"): the duration, SIGINT and
# SIGTERM are honoured within 1 s at any rate: the events are off at once,
# the last records drained within 0.3 s, and the profile named and written
# (for the runs here, seconds at 100 kHz, 0.1-0.5 s of it; a profile of
# hours takes what its writing takes). Measured here from the moment
# sampling starts (-v's "sampling" line, stamped as it arrives) or the
# signal is sent, to the exit, profile written. On this 2-CPU VM with a
# make -j2 running, a signal ends the run in 0.1-0.6 s. (Not the
# summary's seconds: those are the events' enabled time, which starts
# before the "sampling" line, while the first unwind tables are built.)
# The bound is the promise itself, 1 s. One second chance, for one
# documented reason: the measuring shell, at normal priority, shares the
# two CPUs with the compilers and the sampling, and can be late to see the
# exit. A run that misses the bound twice fails; so does any that fails
# otherwise (exit status, profile, summary).
PROMISE_MS=1000

ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
# ms_to VAR: the time (ms) into VAR, without the fork of $(ms). Around a
# kill or a wait, a subshell's fork, exit and the wake-up after it were
# the shell's own delay, not the run's: a run counted 2.4 s late had
# reached exit_group 132 ms after its signal (bpftrace).
ms_to() { printf -v "$1" '%d' $((${EPOCHREALTIME/./} / 1000)); }
# stamp FILE: each line of stdin into FILE, after the time it arrived (ms);
# "EOF" last. EPOCHREALTIME: no fork per line, the stamp is not late.
stamp() {
	local l
	while IFS= read -r l; do
		printf '%s %s\n' $((${EPOCHREALTIME/./} / 1000)) "$l"
	done >"$1"
	echo "$(ms) EOF" >>"$1"
}
# stamped_wait FILE: wait (up to 5 s) for stamp to finish FILE.
stamped_wait() {
	for _ in $(seq 100); do
		grep -q ' EOF$' "$1" 2>/dev/null && return
		sleep 0.05
	done
}
# started_at FILE: when the stamped stderr said sampling started.
started_at() { awk '$2 == "bpfsampler:" && $3 ~ /^sampling/ { print $1; exit }' "$1"; }
# A watchdog's sleep keeps running after the watchdog is killed: its
# output goes to /dev/null so it does not hold tests/run's pipe open.

progs_before=$(our_progs)

# ends_within NAME DUR ARGS...: bpfsampler -v -d DUR ARGS exits 0 within
# DUR s + PROMISE_MS of the start of sampling, the profile written, the
# summary printed. A watchdog kills it after 60 s: a hang is a failure,
# not a stuck suite.
# late=1 when only the time bound was missed: the second chance.
# t0, rc and past are left for ends_report.
ends_within() {
	twice_late ends_try past "$@" && ends_report "$1" "$2" "$first_ms"
}

# twice_late TRY VAR ARGS...: TRY ARGS, and once more when it only missed
# the time bound (late=1); true when it missed it twice, with the first
# try's figure (its variable VAR, ms) in first_ms. The tries see
# retry_note, for their pass line.
twice_late() {
	local try=$1 var=$2 retry_note=
	shift 2
	"$try" "$@"
	[ "$late" = 1 ] || return 1
	first_ms=${!var}
	# where its time went, as the run's -v says when the exit was slow
	retry_note=" (second try: the first took $first_ms ms$(grep -o 'the exit took.*' "$late_err" | tail -1 | sed 's/^/; /'))"
	"$try" "$@"
	[ "$late" = 1 ]
}
ends_try() {
	local name=$1 dur=$2 t1
	shift 2
	late=0
	rm -f "$TMP/end.out"
	"$BPFS" -v -d "$dur" -o "$TMP/end.out" "$@" 2> >(stamp "$TMP/end.err") &
	local pid=$!
	(sleep 60 && kill -KILL $pid) >/dev/null 2>&1 &
	local dog=$!
	wait $pid
	rc=$?
	ms_to t1
	kill $dog 2>/dev/null
	wait $dog 2>/dev/null
	stamped_wait "$TMP/end.err"
	t0=$(started_at "$TMP/end.err")
	past=$((t1 - ${t0:-0} - $(awk -v d="$dur" 'BEGIN { printf "%d", d * 1000 }')))
	if [ $rc -eq 0 ] && [ -n "$t0" ] && grep -q 'samples taken' "$TMP/end.err" &&
		[ -s "$TMP/end.out" ]; then
		if [ "$past" -le $PROMISE_MS ]; then
			pass "$name: -d $dur exited $past ms past its duration, exit 0, profile written${retry_note:-}"
		else
			late=1 late_err=$TMP/end.err
		fi
	else
		ends_report "$name" "$dur" ""
	fi
}
ends_report() {
	fail "$1: -d $2 exits within $PROMISE_MS ms past its duration${3:+ (twice: $3 ms the first time)}" \
		"exit $rc, $past ms past (sampling from ${t0:-never}): $(grep -v ' EOF$' "$TMP/end.err" | tail -3)"
}

ends_within "aggregate -F 100000" 1 -F 100000
ends_within "aggregate -F 100000 with idle" 1 -F 100000 -I
ends_within "stream -F 100000" 1 --mode stream -F 100000
ends_within "--format samples -F 100000" 1 --format samples -F 100000
ends_within "stream, cpu-clock at its shortest period" 1 --mode stream -I -e cpu-clock/period=10000/
ends_within "stream, -c 10000 with idle" 0.3 --mode stream -I -c 10000

# signal_within NAME SIG WAIT WANT CMD...: SIG after WAIT s of sampling
# (from CMD's "sampling" line, when it says one) ends CMD within
# PROMISE_MS (BOUND s for the agent), exit 0, and its stderr says WANT.
# A run that only misses the time bound has its second chance (above).
signal_within() {
	twice_late signal_try took "$@" &&
		fail "$1: SIG$2 honoured within $bound ms" \
			"twice late: $first_ms ms, then $took ms: $(tail -3 "$TMP/term.err")"
}
signal_try() {
	local name=$1 sig=$2 wait=$3 want=$4 t0 t1 rc
	bound=$PROMISE_MS late=0
	shift 4
	[ "$1" = agent ] || [ "$2" = agent ] && bound=$((BOUND * 1000))
	"$@" 2>"$TMP/term.err" &
	local pid=$!
	(sleep 60 && kill -KILL $pid) >/dev/null 2>&1 &
	local dog=$!
	# WAIT s of sampling, not of setup (slower under load)
	wait_line "$TMP/term.err" "sampling" 30
	sleep "$wait"
	ms_to t0
	kill -"$sig" $pid
	wait $pid
	rc=$?
	ms_to t1
	kill $dog 2>/dev/null
	wait $dog 2>/dev/null
	took=$((t1 - t0))
	if [ $rc -eq 0 ] && grep -q "$want" "$TMP/term.err"; then
		if [ $took -le $bound ]; then
			pass "$name: SIG$sig honoured in $took ms, exit 0${retry_note:-}"
		else
			late=1 late_err=$TMP/term.err
		fi
	else
		fail "$name: SIG$sig honoured within $bound ms" "exit $rc after $took ms: $(tail -3 "$TMP/term.err")"
	fi
}
sigterm_within() {
	local name=$1
	shift
	signal_within "$name" TERM "$@"
}

# sig_within NAME SIG ARGS...: SIG after 1 s of sampling ends the run
# within PROMISE_MS, exit 0, the profile written.
sig_within() {
	local name=$1 sig=$2
	shift 2
	signal_within "$name" "$sig" 1 'samples taken' "$BPFS" -v -o "$TMP/term.out" "$@"
}

sig_within "aggregate -F 100000" TERM -F 100000 -I
sig_within "aggregate -F 100000" INT -F 100000 -I
sig_within "stream -F 100000" TERM --mode stream -F 100000
sig_within "stream -F 100000" INT --mode stream -F 100000 -I
sig_within "--format samples -F 100000" TERM --format samples -F 100000
sig_within "--format samples -F 100000" INT --format samples -F 100000 -I
sig_within "stream, cpu-clock at its shortest period" TERM --mode stream -I -e cpu-clock/period=10000/
# The stopper kept off its CPU (3 s here; up to 240 ms was seen): the main
# thread leaving its loop disables the events itself, and neither the
# final drain nor the exit waits for the stopper.
signal_within "stopper 3 s late" INT 1 'samples taken' \
	env BPFS_DEBUG_STOPPER_LATE=3000 "$BPFS" -v -o "$TMP/term.out" -F 999 -I

# While compilers start: each new cc1 is a process whose maps are read and
# a 30 MB file whose unwind table is built, seconds of work at 100 kHz
# (SIGTERM took 37 s before the stopper thread disabled the events).
compile_loop() {
	local n
	for n in $(seq 200); do cc -O2 -c "$ROOT/src/capture/sampler.c" -iquote "$ROOT/include" \
		-iquote "$OUTPUT" -o "$TMP/compile_loop.o" 2>/dev/null; done
}
compile_loop >/dev/null 2>&1 &
cl=$!
sleep 0.3
sig_within "compilers starting, --format samples -F 100000" TERM --format samples -F 100000
ends_within "compilers starting, stream -F 100000" 1 --mode stream -F 100000
kill $cl 2>/dev/null
wait $cl 2>/dev/null

# Any phase: a signal during setup (loading, the first unwind tables) ends
# the process at once, nothing written; if setup was already over, the
# run ends as above.
"$BPFS" -F 100000 --mode stream -o "$TMP/setup.folded" 2>"$TMP/setup.err" &
pid=$!
sleep 0.05
ms_to t0
kill -INT $pid
wait $pid
rc=$?
ms_to t1
if { { [ $rc -eq 130 ] && grep -q "before sampling started" "$TMP/setup.err" &&
	[ ! -e "$TMP/setup.folded" ]; } || { [ $rc -eq 0 ] && grep -q "samples taken" "$TMP/setup.err"; }; } &&
	[ $((t1 - t0)) -le $PROMISE_MS ]; then
	pass "SIGINT 50 ms after the start: exit $rc in $((t1 - t0)) ms"
else
	fail "SIGINT during setup ends the run within $PROMISE_MS ms" "exit $rc after $((t1 - t0)) ms: $(tail -3 "$TMP/setup.err")"
fi

# A signal after sampling, while the profile is written, ends the process
# at once. Made deterministic with a reader that never reads: the write to
# stdout blocks once the pipe holds 64 KiB (the samples of 2 s at 20 kHz
# with idle and a busy loop: megabytes).
# blocked_writer SIGNAL: -d 1 into such a pipe, the signal 2 s in
# (sampling is over, the write blocked); blocked_writer twice: no -d,
# SIGINT 1 s in (ends sampling), SIGINT again 1 s later (the write blocked).
blocked_writer() {
	local dur=(-d 1) first=
	[ "$1" = twice ] && dur=() first=INT
	rm -f "$TMP/fifo"
	mkfifo "$TMP/fifo"
	sleep 30 <"$TMP/fifo" >/dev/null 2>&1 &
	local reader=$!
	# far more than 64 KiB of samples: idle ones too, and a busy CPU
	timeout 4 sh -c 'while :; do :; done' &
	"$BPFS" -v -F 20000 -I "${dur[@]}" --format samples >"$TMP/fifo" 2>"$TMP/blocked.err" &
	pid=$!
	(sleep 60 && kill -KILL $pid) >/dev/null 2>&1 &
	local dog=$!
	wait_line "$TMP/blocked.err" "bpfsampler: sampling"
	sleep 1
	[ -n "$first" ] && kill -INT $pid
	sleep 1
	ms_to t0
	kill -"${first:-$1}" $pid
	wait $pid
	rc=$?
	ms_to t1
	kill $dog $reader 2>/dev/null
	wait $dog $reader 2>/dev/null
}
# blocked_ends NAME RC SAYS: the blocked writer exited RC within BOUND,
# its message matching SAYS.
blocked_ends() {
	if [ $rc -eq "$2" ] && [ $((t1 - t0)) -le $((BOUND * 1000)) ] &&
		grep -q "$3" "$TMP/blocked.err"; then
		pass "$1: out in $((t1 - t0)) ms, exit $2, says the output is incomplete"
	else
		fail "$1 ends at once" "exit $rc after $((t1 - t0)) ms: $(tail -2 "$TMP/blocked.err")"
	fi
}
blocked_writer TERM
blocked_ends "SIGTERM while writing" 143 "interrupted after sampling.*incomplete"

# A second SIGINT: the first ends sampling, the second (the write blocked)
# ends the process. With -o, the earlier file under that name is kept.
echo "old;profile 1" >"$TMP/twice.folded"
"$BPFS" -v --mode stream -F 20000 -o "$TMP/twice.folded" 2>"$TMP/twice.err" &
pid=$!
wait_line "$TMP/twice.err" "bpfsampler: sampling"
sleep 1
kill -INT $pid
sleep 0.02
kill -INT $pid
wait $pid
rc=$?
# the first SIGINT may have ended the run before the second came: then the
# profile was written whole; either way nothing half-written remains
if { [ $rc -eq 130 ] && grep -q "not written" "$TMP/twice.err" &&
	[ "$(cat "$TMP/twice.folded")" = "old;profile 1" ]; } ||
	{ [ $rc -eq 0 ] && grep -q "samples taken" "$TMP/twice.err"; } &&
	! ls "$TMP"/.tmp.twice.folded.* >/dev/null 2>&1; then
	pass "two SIGINTs with -o: exit $rc, no temporary left, the file old or whole"
else
	fail "two SIGINTs with -o" "exit $rc: $(tail -2 "$TMP/twice.err"); $(ls -a "$TMP")"
fi
blocked_writer twice
blocked_ends "a second SIGINT" 130 "interrupted again.*incomplete"

# The agent stops within its bound (the open window is written; no push
# here, so no 10 s push budget to wait for).
sigterm_within "agent at 20000 Hz" 2 "stopped by a signal" "$BPFS" agent -F 20000 --output-dir "$TMP/spool"

# Rates that cannot work are refused before anything is loaded: exit 2,
# the limit named, the output file untouched.
# refused NAME GREP ARGS...: exit 2, stderr names GREP, -o file kept.
refused() {
	local name=$1 want=$2 rc
	shift 2
	echo "old;profile 1" >"$TMP/ref.folded"
	"$BPFS" -d 0.3 -o "$TMP/ref.folded" "$@" >/dev/null 2>"$TMP/ref.err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q -- "$want" "$TMP/ref.err" &&
		[ "$(cat "$TMP/ref.folded")" = "old;profile 1" ] &&
		! ls "$TMP"/.tmp.ref.folded.* >/dev/null 2>&1; then
		pass "$name: refused (exit 2), names '$want', output untouched"
	else
		fail "$name: refused naming '$want'" "exit $rc: $(cat "$TMP/ref.err")"
	fi
}
refused "-c 1 on the clock" "10000 ns" -c 1
refused "cpu-clock/period=1/" "10000 ns" -e cpu-clock/period=1/
refused "cpu-clock/freq=9999999/" "freq=9999999" -e cpu-clock/freq=9999999/
refused "cycles/freq=200000/" "perf_event_max_sample_rate" -e cycles/freq=200000/

# Sizes the machine cannot give are refused before any map is made.
refused "--ring-size 2G" "--ring-size '2G': give a power of 2 from 4K to 1G" --ring-size 2G
refused "--ring-size not a power of 2" "power of 2" --ring-size 3M
refused "--sideband-size 2G" "--sideband-size '2G': give a power of 2 from 4K to 1G" --sideband-size 2G
refused "--map-entries and --stack-entries 67108864" "--stack-entries 67108864: [0-9.]* GB.*free" \
	--map-entries 67108864 --stack-entries 67108864
refused "--stack-entries alone" "more than half" --stack-entries 67108864
"$BPFS" agent --stack-entries 67108864 --output-dir "$TMP/spool2" -d 1 2>"$TMP/agent-mem.err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--stack-entries" "$TMP/agent-mem.err" && [ ! -e "$TMP/spool2" ] &&
	pass "the agent too refuses a stacks map the machine cannot give (exit 2)" ||
	fail "the agent refuses a stacks map the machine cannot give" "exit $rc: $(cat "$TMP/agent-mem.err")"

# A limit the kernel lowers during the run is reported (lowered here by
# hand, as the kernel does when interrupts run long).
rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
restore_rate() { echo "$rate" >/proc/sys/kernel/perf_event_max_sample_rate; }
trap 'restore_rate; rm -rf "$TMP"' EXIT
"$BPFS" -v -F 2000 -d 1.5 -o "$TMP/low.folded" 2>"$TMP/low.err" &
pid=$!
wait_line "$TMP/low.err" "bpfsampler: sampling"
sleep 0.5
echo 1000 >/proc/sys/kernel/perf_event_max_sample_rate
wait $pid
rc=$?
restore_rate
if [ $rc -eq 0 ] && grep -q "perf_event_max_sample_rate went from $rate to 1000.*throttled" "$TMP/low.err"; then
	pass "a limit lowered during the run is in the summary"
else
	fail "a limit lowered during the run is in the summary" "exit $rc: $(cat "$TMP/low.err")"
fi

# The agent says so too: a warning in its log, and the metric.
"$BPFS" agent -F 2000 -d 3.5 --interval 1 --output-dir "$TMP/lowspool" \
	--metrics-file "$TMP/low.prom" 2>"$TMP/lowagent.err" &
pid=$!
wait_line "$TMP/lowagent.err" "agent: sampling"
sleep 0.7
echo 1000 >/proc/sys/kernel/perf_event_max_sample_rate
wait $pid
rc=$?
restore_rate
m=$(awk '$1 == "bpfsampler_kernel_max_sample_rate" { print $2 }' "$TMP/low.prom" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$m" = 1000 ] &&
	grep -q "perf_event_max_sample_rate went from $rate to 1000.*throttled" "$TMP/lowagent.err"; then
	pass "the agent reports a limit lowered during the run (warning, metric $m)"
else
	fail "the agent reports a limit lowered during the run" "exit $rc, metric '$m': $(tail -5 "$TMP/lowagent.err")"
fi

# File modes: profiles 0600 whatever the umask; the agent's spool 0640,
# its metrics file 0644, its log 0640 (docs/design.md, "Privileges").
(umask 000 && "$BPFS" -F 99 -d 0.3 -o "$TMP/mode.folded" 2>/dev/null)
m=$(stat -c %a "$TMP/mode.folded" 2>/dev/null)
[ "$m" = 600 ] && pass "a profile is created 0600 (umask 000)" || fail "a profile is created 0600" "mode $m"
# (a CPU kept busy: an idle machine may give a window no sample, and a
# window without samples writes no profile)
"$W/shares" 3.5 >/dev/null &
busy=$!
(umask 000 && "$BPFS" agent -F 99 -d 3 --interval 1 --output-dir "$TMP/mspool" \
	--metrics-file "$TMP/m.prom" --log-file "$TMP/agent.log" 2>/dev/null)
wait $busy
spool_modes=$(find "$TMP/mspool" -type f -name '*.pb.gz' -printf '%m\n' | sort -u | tr '\n' ' ')
mm=$(stat -c %a "$TMP/m.prom" 2>/dev/null)
lm=$(stat -c %a "$TMP/agent.log" 2>/dev/null)
if [ "$spool_modes" = "640 " ] && [ "$mm" = 644 ] && [ "$lm" = 640 ]; then
	pass "agent files: spool 0640, metrics 0644, log 0640 (umask 000)"
else
	fail "agent file modes" "spool '$spool_modes', metrics $mm, log $lm; $(ls "$TMP/mspool" 2>&1 | head -5; tail -3 "$TMP/agent.log")"
fi

# The smallest set of capabilities that profiles another user's process
# whole, found by trying (docs/design.md, "Privileges"): CAP_BPF and
# CAP_PERFMON sample; CAP_SYSLOG names kernel frames (kptr_restrict);
# CAP_DAC_READ_SEARCH reads a binary its user cannot. Run as nobody with
# exactly those, on a root process whose binary is in a 0700 directory.
mkdir -m 700 "$TMP/priv"
cp "$W/shares" "$TMP/priv/shares"
chmod 700 "$TMP/priv/shares"
mkdir -m 1777 "$TMP/nobody"
cp "$BPFS" "$TMP/nobody/bpfs" && chmod 755 "$TMP" "$TMP/nobody/bpfs"
"$TMP/priv/shares" 4 &
sp=$!
caps=+bpf,+perfmon,+syslog,+dac_read_search
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,$caps --ambient-caps=-all,$caps \
	--bounding-set=-all,$caps "$TMP/nobody/bpfs" -F 999 -d 1 -p $sp -o "$TMP/nobody/p.folded" \
	2>"$TMP/caps.err"
rc=$?
kill $sp 2>/dev/null
wait $sp 2>/dev/null
named=$(samples_with "$TMP/nobody/p.folded" run_shares)
if [ $rc -eq 0 ] && [ "$named" -gt 100 ] && ! grep -q 'kernel\]+0x' "$TMP/nobody/p.folded" &&
	! grep -q "kptr_restrict" "$TMP/caps.err"; then
	pass "as nobody with exactly CAP_BPF, CAP_PERFMON, CAP_SYSLOG, CAP_DAC_READ_SEARCH: root's 0700 binary named ($named samples in run_shares), kernel frames named"
else
	fail "the documented capability set profiles another user's process" "exit $rc, $named in run_shares: $(cat "$TMP/caps.err")"
fi
caps=+bpf,+perfmon
# (a CPU kept busy meanwhile: an idle machine may give no sample)
"$W/shares" 1.5 >/dev/null &
busy=$!
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,$caps --ambient-caps=-all,$caps \
	--bounding-set=-all,$caps "$TMP/nobody/bpfs" -F 999 -d 0.5 -o "$TMP/nobody/q.folded" 2>"$TMP/caps2.err"
rc=$?
wait $busy
[ $rc -eq 0 ] && [ -s "$TMP/nobody/q.folded" ] &&
	pass "CAP_BPF and CAP_PERFMON alone sample the machine (exit 0)" ||
	fail "CAP_BPF and CAP_PERFMON alone sample the machine" "exit $rc: $(cat "$TMP/caps2.err")"

# After all of that (the kernel frees a dead process's programs a moment
# after its exit), none of our programs remain.
for _ in $(seq 30); do
	progs_after=$(our_progs)
	[ "$progs_after" = "$progs_before" ] && break
	sleep 0.1
done
if [ "$progs_after" = "$progs_before" ]; then
	pass "no BPF programs left behind ($progs_before before, $progs_after after)"
else
	fail "no BPF programs left behind" "programs $progs_before -> $progs_after"
fi
