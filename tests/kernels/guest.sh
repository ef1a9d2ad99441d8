#!/usr/bin/env bash
# Runs inside a qemu guest booted on another kernel (tests/kernels/run.sh):
# the README's commands and the agent, with the checkout's own binary.
# Checks behaviour, never rates: under software emulation only a third to a
# half of the timer periods give a sample, and every run's start-up and
# exit are 10-25x slower (more on a busy machine), so each run here checks
# several things at once. Prints PASS/FAIL/SKIP lines like any integration
# test; the host prefixes them with the kernel.
source "$ROOT/tests/integration/lib.sh"
export HOME=$TMP/home
mkdir -p "$HOME"

# python3.11 busy in its interpreter loop and in C (sorted, str)
PYPROG='import time
t = time.time() + 120
d = {}
print("ready", flush=True)
while time.time() < t:
    for i in range(2000):
        d[i % 97] = str(i) * 3
    sorted(d.values())'
named() { [ "$(samples_with "$1" "$2")" -gt 0 ]; }
why() { echo "exit ${1}: $(tail -3 "$2")"; }
# foreign FOLDED COMM...: lines of any other process
foreign() {
	local f=$1
	shift
	awk -F';' -v keep="$* [lost]" 'BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) ok[k[i]] = 1 }
		!($1 in ok)' "$f" | wc -l
}

# --- -- command, folded and pprof from one run --------------------------------
check_command() {
	"$BPFS" -F 999 --format folded,pprof -o "$TMP/cmd.%f" -- "$W/shares" 1 2>"$TMP/cmd.err"
	local rc=$? others named_all
	others=$(foreign "$TMP/cmd.folded" shares)
	if [ $rc -eq 0 ] && [ "$others" -eq 0 ] && named "$TMP/cmd.folded" run_shares; then
		pass "-- command: only the command, its functions named ($(total "$TMP/cmd.folded") samples)"
	else
		fail "-- command: only the command, its functions named" "$(why $rc "$TMP/cmd.err"); $others foreign lines"
	fi
	# pprof read back: every sample with a frame in shares names it
	named_all=$(python3 "$ROOT/tests/tools/pprof_named.py" '/shares$' "$TMP/cmd.pb.gz" 2>"$TMP/pn.err")
	if [ $rc -eq 0 ] && [ -n "$named_all" ] && [ "${named_all% *}" = "${named_all#* }" ] &&
		[ "${named_all#* }" -gt 0 ]; then
		pass "pprof: every sample in shares named (${named_all% *} of ${named_all#* })"
	else
		fail "pprof: every sample in shares named" "${named_all:-unreadable}: $(head -2 "$TMP/pn.err")"
	fi
}

# --- -p PID with --unwind auto on Debian's python3.11 (no frame pointers) ------
# Through -p a process's tables are loaded before sampling starts. A new
# process's first samples (-- command) wait for the loader to read its maps
# and build its tables: 11-21 ms on the host, seconds under software
# emulation on a busy machine, so a short command is mostly cut there.
check_pid() {
	local py=/usr/bin/python3.11 pid rc n w others
	if [ ! -x $py ]; then
		skip "-p and --unwind auto on python3.11" "no $py on this root"
		return
	fi
	$py -c "$PYPROG" >"$TMP/py.ready" &
	pid=$!
	for _ in $(seq 600); do # in its loop, its libraries mapped
		[ -s "$TMP/py.ready" ] && break
		sleep 0.1
	done
	profile "$TMP/py.folded" -F 999 --unwind auto -d 2 -p $pid
	rc=$?
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	others=$(foreign "$TMP/py.folded" python3.11)
	n=$(total "$TMP/py.folded")
	w=$(samples_matching "$TMP/py.folded" ';(__libc_start_call_main|__libc_start_main)(;|$)')
	if [ $rc -eq 0 ] && [ "$others" -eq 0 ] && [ "$n" -gt 0 ]; then
		pass "-p PID: only that process ($n samples)"
	else
		fail "-p PID: only that process" "$(why $rc "$TMP/py.folded.err"); $others foreign lines of $n"
	fi
	# Without bpf_loop (5.17) there are no unwind tables: the promise is
	# then that every stack cut in libpython says so (docs/design.md,
	# "Kernels"), whole or marked.
	if grep -qE '^ *bpf_loop .* no' /run/results/version.txt; then
		local marked
		marked=$(samples_matching "$TMP/py.folded" '^python3[.]11;[[]truncated: ')
		if [ $rc -eq 0 ] && [ "$n" -gt 0 ] && [ $((w + marked)) = "$n" ]; then
			pass "--unwind auto without bpf_loop: python3.11 stacks whole or marked cut ($w whole, $marked marked, of $n)"
		else
			fail "--unwind auto without bpf_loop: python3.11 stacks whole or marked cut" "$w whole, $marked marked, of $n"
		fi
		return
	fi
	# the host's test holds 0.90 of them whole (unwind.sh); 0.8 here
	if [ $rc -eq 0 ] && [ "$n" -gt 0 ] && [ $((w * 10)) -ge $((n * 8)) ]; then
		pass "--unwind auto: python3.11 stacks reach __libc_start_call_main ($w of $n)"
	else
		fail "--unwind auto: python3.11 stacks reach __libc_start_call_main" "$w of $n"
	fi
	# CPython's frames (bpf_loop): the loop runs at module level, so its
	# samples carry <module> where the interpreter runs it. 0.8 as above:
	# the python.sh checks on the host hold 0.9 under their functions.
	local py_named
	py_named=$(samples_matching "$TMP/py.folded" ';<module>(;|$)')
	if [ $rc -eq 0 ] && [ "$n" -gt 0 ] && [ $((py_named * 10)) -ge $((n * 8)) ]; then
		pass "CPython frames: python3.11's samples under <module> ($py_named of $n)"
	else
		fail "CPython frames: python3.11's samples under <module>" "$py_named of $n"
	fi
}

# --- system-wide at 4000 Hz, ended by SIGINT ------------------------------------
# The threads process ($other) runs from before the run: its mappings come
# from /proc, not from the run's own mmap records. SIGINT ends the run:
# exit 0, the summary written, none of our BPF programs left.
check_system() {
	local bpfs rc left unmapped
	"$BPFS" -F 4000 -o "$TMP/sys.folded" 2>"$TMP/sys.err" &
	bpfs=$!
	for _ in $(seq 600); do # armed: our program is loaded (start-up is slow here)
		[ "$(our_progs)" -gt "$progs_before" ] && break
		sleep 0.1
	done
	sleep 1
	kill -INT $bpfs
	wait $bpfs
	rc=$?
	for _ in $(seq 50); do # the kernel frees a dead process's programs a moment later
		[ "$(our_progs)" = "$progs_before" ] && break
		sleep 0.1
	done
	left=$(our_progs)
	unmapped=$(comm_lines "$TMP/sys.folded" worker-0 | samples_matching /dev/stdin '[[]unmapped[]]')
	if [ $rc -eq 0 ] && named "$TMP/sys.folded" thread_work && [ "$unmapped" = 0 ]; then
		pass "system-wide: a process started before the run is named, none [unmapped] ($(total "$TMP/sys.folded") samples)"
	else
		fail "system-wide: a process started before the run is named" "$(why $rc "$TMP/sys.err"); $unmapped [unmapped]: $(comm_lines "$TMP/sys.folded" worker-0 | head -2)"
	fi
	if [ $rc -eq 0 ] && grep -q "samples taken" "$TMP/sys.err" && [ "$left" = "$progs_before" ]; then
		pass "SIGINT: exit 0, the summary written, no BPF program left"
	else
		fail "SIGINT: exit 0, no BPF program left" "exit $rc, programs $progs_before -> $left: $(tail -3 "$TMP/sys.err")"
	fi
}

# --- stream mode, folded and samples from one run -----------------------------------
check_stream() {
	"$BPFS" -F 999 --mode stream --format folded,samples -o "$TMP/st.%f" -- "$W/recurse" 100 1 \
		2>"$TMP/st.err"
	local rc=$? whole lines kept
	whole=$(samples_matching "$TMP/st.folded" ';main;run_recurse;(recurse;){100}recurse_leaf(;|$)')
	if [ $rc -eq 0 ] && [ "$whole" -gt 0 ] && ! grep -q malformed "$TMP/st.err"; then
		pass "--mode stream: 100-deep stacks whole from main ($whole of $(total "$TMP/st.folded"))"
	else
		fail "--mode stream: 100-deep stacks whole from main" "$(why $rc "$TMP/st.err"); $whole whole"
	fi
	lines=$(wc -l <"$TMP/st.samples")
	kept=$(summary_field "$TMP/st.err" kept)
	if [ $rc -eq 0 ] && [ "$lines" -gt 0 ] && [ "$lines" = "$kept" ]; then
		pass "--format samples: one line per kept sample ($lines)"
	else
		fail "--format samples: one line per kept sample" "$lines lines, kept $kept"
	fi
}

# --- a software counter -----------------------------------------------------
check_faults() {
	profile "$TMP/pf.folded" -e page-faults -c 10 -- "$W/cache" 0.5
	local rc=$?
	if [ $rc -eq 0 ] && [ "$(comm_lines "$TMP/pf.folded" cache | total /dev/stdin)" -gt 0 ] &&
		grep -q 'page-faults' "$TMP/pf.folded.err"; then
		pass "-e page-faults -c 10: the command's faults sampled ($(total "$TMP/pf.folded"))"
	else
		fail "-e page-faults -c 10: the command's faults sampled" "$(why $rc "$TMP/pf.folded.err")"
	fi
}

# --- the agent: two windows, pushed to a loopback receiver ---------------------
check_agent() {
	local port token server load rc accepted sent D=$TMP/spool
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	token=tok-$RANDOM$RANDOM
	printf '%s\n' "$token" >"$TMP/token"
	chmod 600 "$TMP/token"
	python3 "$ROOT/tests/tools/fake_pyroscope.py" --port "$port" --record "$TMP/rec.json" \
		--token "$token" 2>"$TMP/fake.log" &
	server=$!
	"$W/shares" 12 >/dev/null &
	load=$!
	"$BPFS" agent --interval 2 -F 99 -d 5 --output-dir "$D" --app-name bpfsguest \
		--push "http://127.0.0.1:$port" --push-token-file "$TMP/token" 2>"$TMP/agent.log"
	rc=$?
	kill $server $load 2>/dev/null
	wait $server $load 2>/dev/null
	accepted=$(python3 -c 'import json, sys; print(sum(1 for r in json.load(open(sys.argv[1])) if r["status"] == 200))' "$TMP/rec.json" 2>/dev/null)
	sent=$(ls "$D"/sent/*.pb.gz 2>/dev/null | wc -l)
	if [ $rc -eq 0 ] && [ "${accepted:-0}" -ge 2 ] && [ "$accepted" = "$sent" ]; then
		pass "agent: $accepted windows pushed to the loopback receiver, each once"
	else
		fail "agent: two windows pushed" "exit $rc, accepted ${accepted:-none}, sent $sent: $(tail -3 "$TMP/agent.log")"
	fi
}

# --- --off-cpu -p on a process whose reader blocked before the run ----------------
# The reader's block is found at the start by a task iterator: its kernel
# stack always, its user stack where the kernel has bpf_copy_from_user_task
# (5.18; 6.1 and later), else marked. Kernels that run the compat sampling
# program refuse --off-cpu, naming what they lack.
check_offcpu() {
	local pid rc want
	"$W/offwait" sleep 600 >"$TMP/ow.out" &
	pid=$!
	for _ in $(seq 600); do
		grep -q '^reader ' "$TMP/ow.out" 2>/dev/null && break
		sleep 0.1
	done
	"$BPFS" --off-cpu -d 1 -p $pid -o "$TMP/off-%e.folded" 2>"$TMP/off.err"
	rc=$?
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	if grep -qE '^ *bpf_loop .* no' /run/results/version.txt; then
		if [ $rc -ne 0 ] && grep -qE -- '--off-cpu needs .* [(]Linux [0-9.]+[)]' "$TMP/off.err"; then
			pass "--off-cpu refused on the compat program, naming what it lacks"
		else
			fail "--off-cpu refused on the compat program" "$(why $rc "$TMP/off.err")"
		fi
		return
	fi
	want=';reader;blocked_read;'
	grep -qE '^ *bpf_copy_from_user_task .* no' /run/results/version.txt &&
		want='since before the run: user stack not taken'
	if [ $rc -eq 0 ] && grep '^reader;' "$TMP/off-offcpu-time.folded" | grep -F -- "$want" |
		grep -q ';vfs_read'; then
		pass "--off-cpu -p: the reader blocked before the run, by its stacks ($want)"
	else
		fail "--off-cpu -p: the reader blocked before the run" \
			"$(why $rc "$TMP/off.err"); $(head -3 "$TMP/off-offcpu-time.folded" 2>/dev/null | cut -c1-160)"
	fi
}

# BPFS_GUEST_EXTRA: a file of more check_ functions (chasing one kernel's problem)
# (not under /tmp: the guest's /tmp is its own)
[ -n "${BPFS_GUEST_EXTRA:-}" ] && . "$BPFS_GUEST_EXTRA"
"$BPFS" --version -v >/run/results/version.txt 2>&1
progs_before=$(our_progs)
"$W/threads" 1 900 >/dev/null &
other=$!
# A check still running after CHECK_TIMEOUT seconds (one was seen once to
# hang the guest until the host killed it at 600 s, saying nothing): the
# kernel's last lines and what each bpfsampler thread waits on go to
# /run/results/stuck-CHECK.txt, which the host prints, and bpfsampler is
# killed, so that the check fails and the checks after it still run.
CHECK_TIMEOUT=${BPFS_GUEST_CHECK_TIMEOUT:-240}
watchdog() {
	local c=$1 p t i
	# one second at a time: killed, it leaves no long sleep behind
	for ((i = 0; i < CHECK_TIMEOUT; i++)); do sleep 1; done
	{
		echo "check $c still running after $CHECK_TIMEOUT s: bpfsampler killed"
		dmesg | tail -n 15 | sed 's/^/  dmesg: /'
		for p in $(pgrep -f "^$BPFS"); do
			echo "  bpfsampler $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-160)"
			for t in /proc/"$p"/task/*; do
				echo "    thread ${t##*/}: state $(cut -d' ' -f3 "$t/stat"), in $(cat "$t/wchan")"
				sed 's/^/      /' "$t/stack" 2>/dev/null
			done
		done
	} >"/run/results/stuck-$c.txt" 2>&1
	pkill -KILL -f "^$BPFS"
}
# BPFS_GUEST_CHECKS (from guest.env): some of the checks, some repeated
for c in ${BPFS_GUEST_CHECKS:-command pid system stream faults offcpu agent}; do
	t0=$SECONDS
	if ! declare -F "check_$c" >/dev/null; then
		fail "check $c" "guest.sh has no check_$c (BPFS_GUEST_CHECKS)"
		continue
	fi
	watchdog "$c" &
	wd=$!
	"check_$c"
	kill $wd 2>/dev/null
	wait $wd 2>/dev/null
	echo "    ($c: $((SECONDS - t0)) s)" >&2
	# kept after each check: a guest killed later still leaves them
	[ "${BPFS_KERNEL_KEEP:-0}" = 1 ] && mkdir -p /run/results/outputs &&
		cp -r "$TMP" "/run/results/outputs/$c.$SECONDS"
done
kill "$other"
wait "$other" 2>/dev/null
exit 0
