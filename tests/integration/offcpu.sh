#!/usr/bin/env bash
# --off-cpu (issue 26): the time threads spend off the CPU, by the stack
# they left it with, against a workload that measures its own waits
# (tests/workloads/offwait.c). The machine is shared and busy: the checks
# compare the profile with what the workload measured, never with an idle
# machine's numbers, and their margins say what they allow.
source "$(dirname "$0")/lib.sh"
require_root

OW=$W/offwait
[ -x "$OW" ] || { fail "offwait workload built" "run make workloads"; exit 0; }

# ns_matching FILE REGEX: nanoseconds of the lines matching, in seconds.
secs_matching() { samples_matching "$1" "$2" | awk '{ printf "%.6f", $1 / 1e9 }'; }
truth() { awk -v k="$2" '$1 == "truth" { for (i = 2; i < NF; i++) if ($i == k) print $(i + 1) }' "$1"; }
balanced() {
	if grep -q 'off-CPU accounting: .*; balanced$' "$2"; then
		pass "$1: every switch-out and every block accounted for"
	else
		fail "$1: accounting" "$(grep 'off-CPU' "$2")"
	fi
}
# rel_within NAME GOT EXPECTED FRACTION: |got - expected| <= fraction * expected.
rel_within() {
	within "$1" "$2" "$3" "$(awk -v e="$3" -v f="$4" 'BEGIN { printf "%.6f", e * f }')"
}

# 1. -- command: napper sleeps 30 ms after each 10 ms burn, reader blocks
# in read() for its whole life. Every block of the command starts and
# ends inside the run, so the profile must hold what the workload measured
# (10%: the workload's own clock reads sit just outside the system call).
"$BPFS" --off-cpu -v -d 30 -o "$TMP/s-%e.folded" -- "$OW" sleep 4 >"$TMP/s.out" 2>"$TMP/s.err"
rc=$?
off=$TMP/s-offcpu-time.folded
cpu=$TMP/s-cpu-clock.folded
if [ $rc -ne 0 ] || [ ! -s "$off" ] || [ ! -s "$cpu" ]; then
	fail "--off-cpu -- command writes p-cpu-clock and p-offcpu-time" "exit $rc: $(tail -3 "$TMP/s.err")"
else
	pass "--off-cpu -- command writes p-cpu-clock and p-offcpu-time"
	life=$(truth "$TMP/s.out" napper_life_s)
	slept=$(truth "$TMP/s.out" napper_sleep_s)
	blocked=$(truth "$TMP/s.out" reader_blocked_s)
	# kernel part through the scheduler, user part through the caller
	sleep_re='^napper;[[]off-cpu: waiting[]];.*;napper;nap_sleep;.*do_nanosleep;schedule;__schedule$'
	read_re='^reader;[[]off-cpu: waiting[]];.*;reader;blocked_read;.*vfs_read;.*schedule;__schedule$'
	got=$(secs_matching "$off" "$sleep_re")
	rel_within "sleeping stack holds the workload's sleep ($slept s of $life s)" "$got" "$slept" 0.10
	# the issue's 75% +- 7.5: of the workload's own share, which a busy
	# machine lowers by stretching the burns
	share=$(awk -v g="$got" -v l="$life" 'BEGIN { printf "%.4f", g / l }')
	truth_share=$(awk -v s="$slept" -v l="$life" 'BEGIN { printf "%.4f", s / l }')
	within "sleeping stack's share of the napper's life ($truth_share measured)" "$share" \
		"$truth_share" 0.075
	got=$(secs_matching "$off" "$read_re")
	rel_within "blocked read() stack holds the reader's life ($blocked s)" "$got" "$blocked" 0.10
	# the CPU profile: the napper's samples are its burn
	burn=$(samples_matching "$cpu" '^napper;.*;nap_burn(;|$)')
	all=$(samples_matching "$cpu" '^napper;')
	if [ "$all" -gt 20 ] && [ $((burn * 100)) -ge $((all * 80)) ]; then
		pass "CPU profile puts the napper in nap_burn ($burn of $all samples)"
	else
		fail "CPU profile puts the napper in nap_burn" "$burn of $all"
	fi
	# the burns are preempted on a busy machine (and the odd return from
	# the sleep), never the sleep itself; the burn never waits
	if ! grep -q '^napper;\[off-cpu: preempted\];.*do_nanosleep' "$off" &&
		! grep -q '^napper;\[off-cpu: waiting\];.*nap_burn;' "$off"; then
		pass "waits and preemption told apart"
	else
		fail "waits and preemption told apart" "$(grep -E 'preempted.*do_nanosleep|waiting.*nap_burn' "$off" | head -2)"
	fi
	balanced "-- command" "$TMP/s.err"
	# the summary's wall clock: the napper's on-CPU and off-CPU time add up
	# to its life (10%: cpu-clock samples are 0.25 ms apart, and missed
	# ones under load count nowhere)
	wall=$(awk '$3 == "napper" && $4 == "on-CPU" { print $12 }' "$TMP/s.err")
	rel_within "wall clock by thread: napper's on + off-CPU is its life ($life s)" \
		"${wall:-0}" "$life" 0.10
fi

# 2. -p on a process started before the run: the reader has been blocked
# since before it, the stacks it sleeps in are found at the start (the user
# stack read from its memory by a sleepable task iterator), and it is
# counted from the start to the end: the whole window (10%). The kernel
# gives a sleeping task's stack from its caller of schedule() on.
"$OW" sleep 60 >"$TMP/p.out" &
pid=$!
sleep 1
reader=$(awk '$1 == "reader" { print $2 }' "$TMP/p.out")
"$BPFS" --off-cpu -v -d 2 -p "$pid" -o "$TMP/p-%e.folded" 2>"$TMP/p.err"
rc=$?
off=$TMP/p-offcpu-time.folded
window=$(grep -oE 'off-CPU \([a-z_]+, [0-9.]+ s window' "$TMP/p.err" | grep -oE '[0-9.]+ s' | grep -oE '[0-9.]+')
before_re='^reader;[[]off-cpu: waiting[]];.*;reader;blocked_read;.*ksys_read;vfs_read(;.*)?$'
got=$(secs_matching "$off" "$before_re")
if [ $rc -eq 0 ] && [ -n "$window" ]; then
	rel_within "-p: a thread blocked since before the run counts from the start ($window s window)" \
		"$got" "$window" 0.10
else
	fail "-p run" "exit $rc: $(tail -3 "$TMP/p.err")"
fi
# where the user stack cannot be read (before 5.18; forced here), the block
# is still counted from the start, and says what it lacks
BPFS_DEBUG_OFFCPU_NO_USER_BEFORE=1 "$BPFS" --off-cpu -d 1 -t "$reader" \
	-o "$TMP/nu-%e.folded" 2>"$TMP/nu.err"
rc=$?
nouser_re='^reader;[[]off-cpu: waiting[]];[[]off-cpu: since before the run: user stack not taken[]];.*ksys_read;vfs_read(;.*)?$'
if [ $rc -eq 0 ] && [ "$(samples_matching "$TMP/nu-offcpu-time.folded" "$nouser_re")" -gt 0 ] &&
	! grep -q ';blocked_read;' "$TMP/nu-offcpu-time.folded"; then
	pass "blocked before the run, no bpf_copy_from_user_task: marked, kernel stack kept"
else
	fail "blocked before the run, no bpf_copy_from_user_task: marked" \
		"exit $rc: $(head -2 "$TMP/nu-offcpu-time.folded" 2>/dev/null | cut -c1-200)"
fi
foreign=$(awk -F';' '$1 != "napper" && $1 != "reader" && $1 != "offwait"' "$off" | wc -l)
[ "$foreign" -eq 0 ] && pass "-p: only the process's threads" ||
	fail "-p: only the process's threads" "$(awk -F';' '$1 != "napper" && $1 != "reader"' "$off" | head -2)"
balanced "-p" "$TMP/p.err"

# 3. -t: that thread only; and every format shows nanoseconds off the CPU.
"$BPFS" --off-cpu -d 1 -t "$reader" --format folded,pprof,svg,top -o "$TMP/t-%e.%f" 2>"$TMP/t.err"
rc=$?
others=$(grep -vc '^reader;' "$TMP/t-offcpu-time.folded")
if [ $rc -eq 0 ] && [ "$others" -eq 0 ] && grep -q '^reader;.*anon_pipe_read' "$TMP/t-offcpu-time.folded"; then
	pass "-t: only that thread"
else
	fail "-t: only that thread" "exit $rc, $others other lines"
fi
if timeout 60 go tool pprof -symbolize=none -raw "$TMP/t-offcpu-time.pb.gz" 2>/dev/null |
	grep -q '^samples/count offcpu/nanoseconds\[dflt\]'; then
	pass "pprof: sample type offcpu/nanoseconds, the default"
else
	fail "pprof: sample type offcpu/nanoseconds, the default"
fi
grep -q '^Total: [0-9]* offcpu (nanoseconds), event offcpu-time' "$TMP/t-offcpu-time.top" &&
	grep -q '<title>all ([0-9,]* ns, 100.00%)</title>' "$TMP/t-offcpu-time.svg" &&
	pass "top and svg show the nanoseconds" ||
	fail "top and svg show the nanoseconds" "$(head -1 "$TMP/t-offcpu-time.top")"

# 3b. -C: only the blocks that begin on those CPUs (perf's --off-cpu -C).
# The workload pinned to CPU 1: with -C 0 none of its blocks, not even the
# reader's found at the start (it last ran on CPU 1); with -C 1 they are.
taskset -c 1 "$OW" sleep 60 >"$TMP/pin.out" &
pin=$!
sleep 1
"$BPFS" --off-cpu -v -C 0 -d 1 -p "$pin" -o "$TMP/c0-%e.folded" 2>"$TMP/c0.err"
rc0=$?
"$BPFS" --off-cpu -v -C 1 -d 1 -p "$pin" -o "$TMP/c1-%e.folded" 2>"$TMP/c1.err"
rc1=$?
kill "$pin" 2>/dev/null
wait "$pin" 2>/dev/null
n0=$(wc -l <"$TMP/c0-offcpu-time.folded" 2>/dev/null || echo missing)
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ "$n0" = 0 ] &&
	grep -q '^reader;.*;blocked_read;' "$TMP/c1-offcpu-time.folded"; then
	pass "-C: a process pinned to CPU 1 blocks under -C 1, not under -C 0"
else
	fail "-C: a process pinned to CPU 1 blocks under -C 1, not under -C 0" \
		"exit $rc0/$rc1, $n0 lines under -C 0: $(head -2 "$TMP/c0-offcpu-time.folded" | cut -c1-120)"
fi
balanced "-C 0" "$TMP/c0.err"

# 4. System-wide: our reader among everything else, through the raw
# tracepoint fallback this time (BPFS_DEBUG_OFFCPU_RAW_TP), which must
# give the same blocks.
BPFS_DEBUG_OFFCPU_RAW_TP=1 "$BPFS" --off-cpu -v -d 1 -o "$TMP/a-%e.folded" 2>"$TMP/a.err"
rc=$?
off=$TMP/a-offcpu-time.folded
comms=$(cut -d';' -f1 "$off" | sort -u | wc -l)
if [ $rc -eq 0 ] && grep -q 'off-CPU (raw_tp' "$TMP/a.err" && grep -q '^reader;.*anon_pipe_read' "$off" &&
	[ "$comms" -gt 3 ]; then
	pass "system-wide through raw_tp: $comms threads' names, the reader among them"
else
	fail "system-wide through raw_tp" "exit $rc, $comms names: $(grep 'off-CPU' "$TMP/a.err")"
fi
balanced "system-wide" "$TMP/a.err"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

# 5. A lock convoy: 4 threads take one mutex and hold it 2 ms; the others
# wait in the kernel under take_lock. Of the convoy's waiting time, most
# is there (the rest: the odd sleep in the holder, start-up).
"$BPFS" --off-cpu -d 30 -o "$TMP/c-%e.folded" -- "$OW" convoy 3 4 >/dev/null 2>"$TMP/c.err"
rc=$?
off=$TMP/c-offcpu-time.folded
lock=$(samples_matching "$off" '^convoy;[[]off-cpu: waiting[]];.*;convoy;take_lock;.*futex')
waits=$(samples_matching "$off" '^convoy;[[]off-cpu: waiting[]];')
if [ $rc -eq 0 ] && [ "$waits" -gt 0 ] && [ $((lock * 100)) -ge $((waits * 80)) ]; then
	pass "lock convoy: the wait is under take_lock ($((lock / 1000000)) of $((waits / 1000000)) ms)"
else
	fail "lock convoy: the wait is under take_lock" "exit $rc, $lock of $waits ns"
fi

# 5b. Python: a thread that sleeps in time.sleep() under napping() under
# loop() has its block under those Python frames, interleaved with the
# native ones (CPython's frames are walked at the switch-out as in a
# sample). The script measures its own sleeps; 10% as in 1.
PY=/usr/bin/python3.11
if [ -x "$PY" ]; then
	cat >"$TMP/nap.py" <<'PYEOF'
import time
slept = 0.0
def napping():
    global slept
    t = time.monotonic()
    time.sleep(0.02)
    slept += time.monotonic() - t
def loop():
    end = time.monotonic() + 3
    while time.monotonic() < end:
        napping()
loop()
print("slept", slept)
PYEOF
	"$BPFS" --off-cpu -d 30 -o "$TMP/py-%e.folded" -- "$PY" "$TMP/nap.py" >"$TMP/py.out" 2>"$TMP/py.err"
	rc=$?
	slept=$(awk '$1 == "slept" { print $2 }' "$TMP/py.out")
	got=$(secs_matching "$TMP/py-offcpu-time.folded" '^python3[.]11;[[]off-cpu: waiting[]];.*;loop;napping;.*;schedule;__schedule$')
	if [ $rc -eq 0 ] && [ -n "$slept" ]; then
		rel_within "Python: time.sleep's blocks under loop;napping ($slept s slept)" "$got" "$slept" 0.10
	else
		fail "Python: time.sleep's blocks under loop;napping" "exit $rc: $(tail -2 "$TMP/py.err")"
	fi
else
	skip "Python: time.sleep's blocks under loop;napping" "no $PY"
fi

# 6. exec during a block: the reader blocks in the first image, which
# execs after 1 s; the exec ends the block (the kernel wakes and kills the
# other threads), named after the first image's stack; the second image's
# threads follow. Per thread (--format samples has the tids): the first
# reader's block lasts from its start to the exec (most of the 1 s), the
# second's what that image measured (10%).
"$BPFS" --off-cpu -v -d 30 --format samples,folded -o "$TMP/e-%e.%f" -- "$OW" execwait 2 \
	>"$TMP/e.out" 2>"$TMP/e.err"
rc=$?
smp=$TMP/e-offcpu-time.samples
r1=$(awk '$1 == "reader" { print $2; exit }' "$TMP/e.out")
r2=$(awk '$1 == "reader" { n++; if (n == 2) print $2 }' "$TMP/e.out")
tid_read() { awk -v t="$1" '$4 == t && /;blocked_read;/ { s += $5 } END { printf "%.6f", s / 1e9 }' "$smp"; }
first=$(tid_read "$r1")
if [ $rc -eq 0 ] && [ -n "$r2" ] && awk -v g="$first" 'BEGIN { exit !(g >= 0.7 && g <= 1.1) }' &&
	grep -q '^napper;' "$TMP/e-offcpu-time.folded"; then
	pass "exec during a block: the first image's reader blocked $first s, up to its exec"
else
	fail "exec during a block" "exit $rc, $first s: $(head -3 "$TMP/e.out")"
fi
rel_within "exec: the second image's reader as it measured" "$(tid_read "$r2")" \
	"$(truth "$TMP/e.out" reader_blocked_s)" 0.10
balanced "exec" "$TMP/e.err"

# 7. --off-cpu-min: blocks shorter are left out of the profile, counted in
# the summary; --format samples shows each block with its start and length,
# so none may be shorter. The 30 ms sleeps all stay.
"$BPFS" --off-cpu --off-cpu-min 20ms -v -d 30 --format samples,folded -o "$TMP/m-%e.%f" \
	-- "$OW" sleep 2 >"$TMP/m.out" 2>"$TMP/m.err"
rc=$?
smp=$TMP/m-offcpu-time.samples
shortest=$(awk '$6 == "offcpu-time" { print $5 }' "$smp" | sort -n | head -1)
left=$(grep -oE '[0-9]+ shorter than --off-cpu-min left out' "$TMP/m.err" | grep -oE '^[0-9]+')
if [ $rc -eq 0 ] && [ -n "$shortest" ] && [ "$shortest" -ge 20000000 ] && [ "${left:-0}" -gt 0 ]; then
	pass "--off-cpu-min 20ms: no block under 20 ms in the samples, $left shorter ones counted apart"
else
	fail "--off-cpu-min 20ms" "exit $rc, shortest $shortest ns, $left left out"
fi
got=$(awk '$6 == "offcpu-time" && /;nap_sleep;/ { s += $5 } END { printf "%.6f", s / 1e9 }' "$smp")
rel_within "--format samples: the sleeps' blocks add up to the workload's" "$got" \
	"$(truth "$TMP/m.out" napper_sleep_s)" 0.10
if [ "$(total "$TMP/m-offcpu-time.folded")" = "$(awk '$6 == "offcpu-time" { s += $5 } END { print s + 0 }' "$smp")" ]; then
	pass "samples and folded hold the same nanoseconds"
else
	fail "samples and folded hold the same nanoseconds"
fi
balanced "--off-cpu-min" "$TMP/m.err"

# 8. A context-switch storm (two threads ping-ponging a byte, ~100k
# switches a second here) under a small walk budget: every block is still
# counted (the blocks equal the workload's switches, give or take the
# start and end), most take their thread's last stacks, the run ends on
# time and memory stays bounded. The 30 s storm is the bench's
# (tools/bench offcpu).
/usr/bin/time -f '%M %e' -o "$TMP/st.time" "$BPFS" --off-cpu --off-cpu-walks 100 -v -d 30 \
	-o "$TMP/st-%e.folded" -- "$OW" pingpong 5 >"$TMP/st.out" 2>"$TMP/st.err"
rc=$?
switches=$(awk '$1 == "switches" { print $2 }' "$TMP/st.out")
blocks=$(grep -oE '\): [0-9]+ blocks counted' "$TMP/st.err" | grep -oE '[0-9]+')
pp=$(samples_matching "$TMP/st-offcpu-time.folded" '^(ping|pong);')
read -r rss wall <"$TMP/st.time"
# The workload counts its reads; a read that finds its byte already written
# (the partner ran on the other CPU) does not block, so blocks may fall a
# little short of reads (0.3% seen under load). Every switch-out being
# accounted is the exact promise, checked by "balanced" below; this one
# checks that the blocks are the workload's, within that slack.
if [ $rc -eq 0 ] && [ -n "$switches" ] && [ "${blocks:-0}" -ge $((switches * 9 / 10)) ]; then
	pass "storm: $blocks blocks counted for the workload's $switches switches"
else
	fail "storm: every block counted" "exit $rc, $blocks blocks, $switches switches"
fi
reused=$(grep -oE '[0-9]+ blocks took their thread' "$TMP/st.err" | grep -oE '^[0-9]+')
nostack=$(samples_matching "$TMP/st-offcpu-time.folded" 'stack not taken')
if [ "${reused:-0}" -gt 0 ] && [ $((nostack * 4)) -le "$pp" ]; then
	pass "storm: past the budget blocks take their thread's last stacks ($reused; $((nostack * 100 / (pp + 1)))% of the time without one)"
else
	fail "storm: stacks reused past the budget" "$reused reused, $nostack of $pp ns without a stack"
fi
balanced "storm" "$TMP/st.err"
# 5 s of command; start-up and exit under load take a few seconds here
awk -v w="$wall" 'BEGIN { exit !(w < 15) }' && pass "storm: the run ends on time (${wall} s)" ||
	fail "storm: the run ends on time" "${wall} s"
[ "$rss" -lt 200000 ] && pass "storm: memory bounded (${rss} KB resident)" ||
	fail "storm: memory bounded" "${rss} KB"

# 9. The agent: offcpu windows beside cpu, pushed once each to the loopback
# receiver, the open blocks cut at each window's end so each window holds
# its own span: in a whole 2 s window the reader, blocked throughout, has
# the window's length (10%: the cut runs a little after the window's end).
"$OW" sleep 30 >"$TMP/ag.out" &
pid=$!
D=$TMP/spool
mkdir -p "$D"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$ROOT/tests/tools/fake_pyroscope.py" --port "$port" --record "$TMP/ag.json" \
	2>"$TMP/fake.log" &
server=$!
sleep 0.5
"$BPFS" agent --off-cpu --interval 2 -d 7 -F 99 -p "$pid" --output-dir "$D" --app-name oc \
	--push "http://127.0.0.1:$port" --metrics-file "$TMP/ag.prom" 2>"$TMP/ag.log"
rc=$?
kill "$server" "$pid" 2>/dev/null
wait "$server" "$pid" 2>/dev/null
verdict=$(python3 - "$TMP/ag.json" <<'PY'
import json, sys
rec = [r for r in json.load(open(sys.argv[1])) if r["status"] == 200]
keys = [(r["name"], r["from"], r["until"]) for r in rec]
off = [r for r in rec if r["name"].startswith("oc.offcpu{")]
cpu = [r for r in rec if r["name"].startswith("oc.cpu{")]
print(len(off), len(cpu), len(keys) - len(set(keys)))
PY
)
read -r noff ncpu dups <<<"$verdict"
if [ $rc -eq 0 ] && [ "${noff:-0}" -ge 3 ] && [ "${ncpu:-0}" -ge 1 ] && [ "$dups" = 0 ]; then
	pass "agent: $noff offcpu windows beside $ncpu cpu ones reach the receiver, each once"
else
	fail "agent: offcpu windows pushed" "exit $rc, $noff offcpu, $ncpu cpu, $dups duplicates: $(tail -3 "$TMP/ag.log")"
fi
# a whole window (from..until 2 s apart, not the first nor the last)
whole=$(ls "$D"/sent/*.offcpu-time.*.pb.gz 2>/dev/null | sort | sed -n 2p)
if [ -n "$whole" ] && timeout 60 go tool pprof -symbolize=none -raw "$whole" >"$TMP/ag.raw" 2>/dev/null; then
	got=$(awk '/^Samples:/ { on = 1; next } on && /^ +[0-9]+ +[0-9]+:/ { v = $2 }
		on && /comm:\[reader\]/ { s += v } END { printf "%.6f", s / 1e9 }' "$TMP/ag.raw")
	rel_within "agent: a whole window holds the reader's 2 s blocked, cut at its ends" "$got" 2 0.10
else
	fail "agent: a whole offcpu window read by go tool pprof" "$(ls "$D" "$D/sent" | head)"
fi
grep -q 'bpfsampler_samples_total{event="offcpu-time"} [1-9]' "$TMP/ag.prom" &&
	pass "agent: the metrics count the off-CPU blocks" ||
	fail "agent: the metrics count the off-CPU blocks" "$(grep samples_total "$TMP/ag.prom")"

# Nothing left behind.
if bpftool prog show 2>/dev/null | grep -qE ' name (off_switch|off_switch_raw|off_before|off_before_user|off_end|off_cut) '; then
	fail "no off-CPU program left loaded"
else
	pass "no off-CPU program left loaded"
fi
