#!/usr/bin/env bash
# The agent under process churn: 200 new processes a second, each a
# distinct executable (its own build-ID) that lives ~5 ms, for 40 s, twice:
# on the host as it is, then with a CPU burner keeping one CPU busy (the
# bench's 10-minute version: tools/bench/bench --churn). After the warm-up
# (two windows) memory stays flat, no sample is lost to a full map or ring,
# and the short-lived processes are still named. And with its bound on the
# processes known set low, those beyond it are not followed, counted.
. "$(dirname "$0")/lib.sh"
require_root

export HOME=$TMP/home GOCACHE=$TMP/gocache
mkdir -p "$HOME"
python3 "$ROOT/tests/tools/distinct_copies.py" "$W/churn_child" "$TMP/exes" 500 ||
	fail "500 distinct executables"

burner=
stop_burner() { [ -n "$burner" ] && kill "$burner" 2>/dev/null && wait "$burner" 2>/dev/null; burner=; }
trap 'stop_burner; rm -rf "$TMP"' EXIT

# churn_run LABEL: one agent run of 40 s under the churn; its checks.
churn_run() {
	local label=$1 D=$TMP/spool-$1 log=$TMP/agent-$1.log rc started n lost first last rss_max
	"$W/churn" "$TMP/exes" 42 200 5 >"$TMP/churn-$label.out" &
	local churn=$!
	sleep 0.5
	# At most 8 series (every child is its own command name, so its own
	# service): this tests lifetimes, not the spool's fan-out, whose fsyncs
	# (4 per file) can take seconds a window on a loaded virtual disk.
	"$BPFS" agent --interval 5 -F 999 -d 40 --max-series 8 --output-dir "$D" \
		--metrics-file "$TMP/m-$label.prom" 2>"$log" &
	local agent=$! sched="0 0" t0=$SECONDS starved=0 waited
	# how long the agent waited, runnable, for a CPU (schedstat: ns run,
	# ns waiting on a run queue): on a host loaded many times over it
	# cannot keep up at 999 Hz whatever it does, and sheds samples,
	# counted (that is the promise then, not none lost)
	while kill -0 "$agent" 2>/dev/null; do
		read -r -a sched_now <"/proc/$agent/schedstat" 2>/dev/null && sched="${sched_now[*]}"
		sleep 1
	done
	wait "$agent"
	rc=$?
	waited=$(awk -v s="$sched" -v t=$((SECONDS - t0)) 'BEGIN { split(s, a, " "); printf "%.2f", t ? a[2] / 1e9 / t : 0 }')
	awk -v w="$waited" 'BEGIN { exit !(w > 0.5) }' && starved=1
	wait $churn
	started=$(awk '{ print $1 }' "$TMP/churn-$label.out")
	# 8000 asked for; a loaded host forks fewer, which is still churn
	[ $rc = 0 ] && [ "${started:-0}" -gt 2000 ] && pass "$label: 40 s of churn: $started processes" ||
		fail "$label: 40 s of churn" "agent rc $rc, $(cat "$TMP/churn-$label.out"); $(tail -3 "$log")"

	# window lines: "... N lost ... (symbols 4.9 MB) ... RSS 41.1 MB (heap
	# 20.3 MB) ..." as "lost RSS heap symbols"; the
	# first two are warm-up (the first is partial, the second meets every
	# executable for the first time while the maps and caches fill), the
	# last is partial
	grep 'bpfsampler: window ' "$log" |
		sed -E 's/.* ([0-9]+) lost.*\(symbols ([0-9.]+) MB\).* RSS ([0-9.]+) MB \(heap ([0-9.]+) MB\).*/\1 \3 \4 \2/' >"$TMP/w-$label"
	n=$(wc -l <"$TMP/w-$label")
	lost=$(awk -v n="$n" 'NR > 2 && NR < n { l += $1 } END { print l + 0 }' "$TMP/w-$label")
	if [ "$n" -ge 6 ] && [ "$lost" = 0 ]; then
		pass "$label: no sample lost after the warm-up ($((n - 3)) windows)"
	elif [ $starved = 1 ] && [ "$n" -ge 1 ] &&
		grep -qE 'bpfsampler_samples_lost_total\{.*reason="[a-z_]+"\} [1-9]' "$TMP/m-$label.prom"; then
		pass "$label: kept off the CPU ${waited} of the run, the agent shed samples, counted by reason ($n windows): $(grep -E 'lost_total\{' "$TMP/m-$label.prom" | grep -v ' 0$' | sed -E 's/.*reason="([a-z_]+)"\} /\1 /' | tr '\n' ' ')"
	else
		fail "$label: no sample lost after the warm-up" "$n windows, $lost lost: $(grep 'lost_total{' "$TMP/m-$label.prom" | grep -v ' 0$')"
	fi
	# Flat: what the agent holds follows the processes alive and the files
	# they map, not every process that came and went. A leak of one
	# process's state (~1 KB) would add ~1 MB a window here, ~4 MB from the
	# first third of the windows to the last. The heap in use moves with
	# each window's stack segments, so the floor is what counts: the lowest
	# of the last third at most 3 MB above the first third's mean (under
	# 1 MB alone). The symbol tables of the files mapped are left out: the
	# other programs of a shared host add theirs (a compiler run beside
	# this test added 4.4 MB: that is naming them, not a leak), and the
	# files held are released when no process maps them (test_symbolize).
	# RSS: a bound against a runaway only (~30 MB alone since exited
	# processes are folded as they go, 40-62 MB before; 112 MB seen while a
	# build shared the host, compilers' symbol tables held); its band is
	# the bench's, docs/benchmarks.md.
	read -r first last rss_max < <(awk -v n="$n" 'NR > 2 && NR < n { h[++k] = $3 - $4; if ($2 > x) x = $2 }
		END { t = int(k / 3); b = -1; for (i = 1; i <= t; i++) { a += h[i]; v = h[k - t + i]
		      if (b < 0 || v < b) b = v }
		      printf "%.1f %.1f %.1f\n", t ? a / t : 0, t ? b : 0, x }' "$TMP/w-$label")
	if [ -n "${SANITIZE:-}" ]; then
		# ASan's allocator: mallinfo2 says 0 and freed memory sits in quarantine
		skip "$label: memory flat under churn" "not measurable under -fsanitize=$SANITIZE (the plain suite checks it; LeakSanitizer checked the exit)"
	elif [ $starved = 1 ] && [ "$n" -lt 6 ]; then
		# thirds of fewer than 3 windows after the warm-up say nothing
		skip "$label: memory flat under churn" "the host kept the agent off the CPU ${waited} of the run: $n windows of 8 written, too few to judge"
	elif awk -v a="$first" -v b="$last" -v x="$rss_max" 'BEGIN { exit !(a > 0 && b <= a + 3 && x < 192) }'; then
		pass "$label: memory flat under churn: heap but symbols ${first} MB, then at least ${last} MB, RSS at most $rss_max MB"
	else
		fail "$label: memory flat under churn" "heap but symbols $first then $last MB, RSS max $rss_max; lost RSS heap symbols: $(tr '\n' ' ' <"$TMP/w-$label")"
	fi

	# Named: of the children's samples that have frames in their own binary
	# (the churn_child copies), the share whose frames there are all named,
	# in the pprof files as written (not symbolized again by a reader).
	python3 "$ROOT/tests/tools/pprof_named.py" '/churn_[0-9]+$' "$D"/*.pb.gz >"$TMP/named" 2>"$TMP/unnamed"
	local named all
	read -r named all <"$TMP/named"
	# 99% named (99.9% seen); at least 300 samples to judge by (~8000 at
	# 999 Hz alone: the children get what CPU a loaded host leaves them)
	if [ "${all:-0}" -gt 300 ] && [ $((named * 100)) -ge $((all * 99)) ]; then
		pass "$label: short-lived processes named: $named of $all samples in their own code"
	else
		fail "$label: short-lived processes named" "$named of $all named; $(sort "$TMP/unnamed" | uniq -c | sort -rn | head -5)"
	fi
}

# bounded_run: the agent's bound on the processes it knows (2048; 100
# here), met: the processes beyond it are not followed, and that is said
# and counted, their samples kept.
bounded_run() {
	local D=$TMP/spool-bounded log=$TMP/agent-bounded.log m=$TMP/m-bounded.prom rc un tracked samples
	"$W/churn" "$TMP/exes" 14 200 5 >"$TMP/churn-bounded.out" &
	local churn=$!
	sleep 0.5
	BPFS_DEBUG_MAX_PROCS=100 "$BPFS" agent --interval 5 -F 999 -d 12 --max-series 8 \
		--output-dir "$D" --metrics-file "$m" 2>"$log"
	rc=$?
	wait $churn
	un=$(awk '/^bpfsampler_processes_unfollowed_total / { print $2 }' "$m")
	tracked=$(awk '/^bpfsampler_processes_tracked / { print $2 }' "$m")
	samples=$(awk '/^bpfsampler_samples_total\{/ { s += $2 } END { print s + 0 }' "$m")
	if [ $rc = 0 ] && [ "${un:-0}" -gt 0 ] && [ "${tracked:-999}" -le 100 ] && [ "$samples" -gt 0 ] &&
		grep -q 'records of processes not followed this window: 100 processes were known' "$log"; then
		pass "at most 100 processes known: $un records not followed, said and counted, $samples samples kept"
	else
		fail "at most 100 processes known" "rc $rc, unfollowed ${un:-none}, tracked ${tracked:-none}, samples $samples; $(grep -E 'warning|window' "$log" | tail -3)"
	fi
}

churn_run "host as it is"
bounded_run
# One CPU kept busy: the agent and the churn share what is left.
"$W/cpuburn" 100000000000000 1 >"$TMP/burn.out" &
burner=$!
churn_run "one CPU burnt"
stop_burner
