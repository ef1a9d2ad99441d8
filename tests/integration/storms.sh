#!/usr/bin/env bash
# Storms and hostile input (issue #14): a fork storm keeps the accounting
# exact; 10,000 threads; a stacks map filled by distinct deep stacks;
# frame-pointer chains that loop or point into the kernel, a guard page or
# nowhere; perf maps that are huge, garbage, a symlink or a FIFO, read for a
# live JIT; a shared library truncated or with corrupt section headers,
# or with corrupt .eh_frame_hdr / .eh_frame under the default walk.
# (A binary visible only in another mount namespace: symbols.sh.)
source "$(dirname "$0")/lib.sh"
require_root storms

# no_ring_trouble NAME FILE: no sequence mismatch and nothing out of order.
no_ring_trouble() {
	if ! grep -qE 'mismatch|[1-9][0-9]* records out of order' "$2.err"; then
		pass "$1: every record accounted for by sequence number"
	else
		fail "$1: every record accounted for by sequence number" "$(cat "$2.err")"
	fi
}

# peak_rss_kb PID: VmHWM of a live process.
peak_rss_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# --- A fork storm, system-wide, in both modes: every fork and exec runs our
# programs in task context, where a sample can interrupt them, and the
# completions run preemptible. Default map sizes: a stacks map that fills
# loses samples, counted, but no record goes unaccounted (issue #14).
for mode in aggregate stream; do
	"$BPFS" -F 4000 --mode "$mode" -d 4 -o "$TMP/fork-$mode.folded" 2>"$TMP/fork-$mode.folded.err" &
	b=$!
	sleep 0.5
	n=$("$W/forkstorm" 3 | grep -oE '^[0-9]+')
	wait "$b" || fail "fork storm ($mode): bpfsampler failed" "$(cat "$TMP/fork-$mode.folded.err")"
	procs=$(summary_field "$TMP/fork-$mode.folded.err" "in")
	# a storm, not a count: ~5000 forks in 3 s alone, a fifth of that
	# when the host's CPUs are shared with other work
	[ "${n:-0}" -gt 1000 ] && [ "${procs:-0}" -gt 300 ] &&
		pass "fork storm ($mode): $n processes in 3 s, samples in $procs processes" ||
		fail "fork storm ($mode): thousands of processes a second" "$n forked, $procs seen"
	identity "fork storm ($mode)" "$TMP/fork-$mode.folded"
	no_ring_trouble "fork storm ($mode)" "$TMP/fork-$mode.folded"
done

# --- 10,000 threads of one process, each named. The process's time is
# thread_work, and what 10,000 threads cost to make and end: clone3 and
# pthread_create in the main thread, the workers' start (their names set)
# and exit, the join freeing their stacks. How much of it thread_work is
# depends on how fast the host makes threads (60-84% measured: less when
# other work shares the CPUs, as creating 10,000 threads takes most of
# the 3 s), so the check is that every sample is one of these, named so:
# at most 2% anything else (the dynamic loader's start-up, a stack cut),
# and a worker's own samples mostly in thread_work (its start and exit
# are ~0.3 CPU-s for all 10,000, its work at least 1 CPU-s).
profile "$TMP/threads.folded" -F 999 -- "$W/threads" 10000 3 ||
	fail "10,000 threads: bpfsampler failed" "$(cat "$TMP/threads.folded.err")"
identity "10,000 threads" "$TMP/threads.folded"
named=$(awk -F';' '$1 ~ /^worker-[0-9]+$/ { print $1 }' "$TMP/threads.folded" | sort -u | wc -l)
grep -v '^\[lost\]' "$TMP/threads.folded" | awk -F';' '$1 ~ /^(worker-[0-9]+|threads)$/' >"$TMP/threads.ours"
all=$(total "$TMP/threads.ours")
work=$(samples_with "$TMP/threads.ours" thread_work)
grep -E '^worker-[0-9]+;' "$TMP/threads.ours" >"$TMP/threads.workers"
wall=$(total "$TMP/threads.workers")
wwork=$(samples_with "$TMP/threads.workers" thread_work)
life=';(clone3|pthread_create[^;]*|start_thread|__x64_sys_exit|do_exit|__pthread_clockjoin_ex|__nptl_free_stacks|__madvise|pthread_setname_np[^;]*)(;|$)'
other=$(awk -v re="$life" '{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
	if (line !~ /;thread_work(;|$)/ && line !~ re) s += n } END { print s + 0 }' "$TMP/threads.ours")
[ "$named" -gt 200 ] && [ "$all" -gt 300 ] && [ $((other * 100)) -le $((all * 2)) ] &&
	[ $((wwork * 2)) -gt "$wall" ] &&
	pass "10,000 threads: $named threads seen by name; of $all samples $work in thread_work, $((all - work - other)) making and ending threads, $other else; workers' own $wwork of $wall in thread_work" ||
	fail "10,000 threads: threads named, samples in thread_work or the threads' lifecycle" \
		"$named named; $all samples: $work thread_work, $other else; workers $wwork of $wall: $(grep -v ';thread_work' "$TMP/threads.ours" | grep -vE "$life" | sort -k2 -rn | head -5)"

# --- Distinct deep stacks, far more than a stacks map of 512 holds: the
# loader empties the map whenever half of it has been filled, keeping the
# segments, so nothing is lost and every sample keeps its whole stack
# (the promise holds with the half left free as headroom: 256 segments,
# ~130 ms of this fan at 999 Hz on 2 CPUs; a map of 128 gave 22-30 lost on
# an idle host). 4 s: ~4000 distinct stacks idle, enough to fill it twice
# on a host that gives the fan a tenth of that;
# memory bounded (bpfsampler's own peak RSS, the workload apart). Both
# modes: aggregate samples name their stacks by id in the kernel's counts,
# stream samples by records (or, where the record was lost, the map).
# At 24 levels the fan's segments are over 31 frames (the large stacks
# map); at 6 levels (4096 stacks of ~20 frames) they go to the small one,
# which must be emptied as well.
for run in aggregate:24 stream:24 aggregate:6; do
	mode=${run%:*} levels=${run#*:}
	# the fan runs until bpfsampler is done (killed then): a loaded host's
	# start-up can outlast a fixed few seconds of it (0 samples seen)
	"$W/stackfan" 60 "$levels" &
	wl=$!
	"$BPFS" -F 999 --stack-entries 512 --mode $mode -d 4 -p "$wl" -v \
		-o "$TMP/fan-$mode-$levels.folded" 2>"$TMP/fan-$mode-$levels.folded.err" &
	b=$!
	hwm=0
	while kill -0 "$b" 2>/dev/null; do
		h=$(peak_rss_kb "$b")
		[ -n "$h" ] && hwm=$h
		sleep 0.2
	done
	f=$TMP/fan-$mode-$levels.folded
	wait "$b" || fail "stacks map of 512 ($run): bpfsampler failed" "$(cat "$f.err")"
	kill "$wl"
	wait "$wl" 2>/dev/null
	identity "stacks map of 512 ($run)" "$f"
	emptied=$(sed -n 's/.*stacks map: emptied \([0-9]*\) time.*/\1/p' "$f.err")
	lost=$(awk '/^\[lost\]/ { s += $NF } END { print s + 0 }' "$f")
	fan=$(samples_with "$f" fan_leaf)
	# whole: main, then the levels of fan;fan_K, then the leaf
	whole=$(samples_matching "$f" ";main;(fan;fan_[0-3];){$levels}fan;fan_leaf\$")
	distinct=$(grep -c 'fan_leaf ' "$f")
	# more distinct stacks than the map holds (it was emptied), whatever
	# CPU the fan got on a shared host (1500-2500 stacks alone, 230-410
	# seen with the host loaded 20 times over)
	[ "${emptied:-0}" -ge 2 ] && [ "$lost" = 0 ] && [ "$distinct" -gt 512 ] &&
		[ "$fan" -gt 150 ] && [ "$whole" -ge $((fan * 95 / 100)) ] &&
		pass "stacks map of 512 ($run): emptied $emptied times, $distinct distinct stacks, none lost, $whole of $fan whole" ||
		fail "stacks map of 512 ($run): emptied, nothing lost, stacks whole" \
			"emptied ${emptied:-0}, lost $lost, distinct $distinct, whole $whole of $fan; $(grep -E 'lost|stacks map' "$f.err")"
	if [ -n "${SANITIZE:-}" ]; then
		skip "stacks map of 512 ($run): bpfsampler's memory bounded" "not measurable under -fsanitize=$SANITIZE (the plain suite checks it)"
	elif [ "$hwm" -gt 0 ] && [ "$hwm" -lt $((96 * 1024)) ]; then
		pass "stacks map of 512 ($run): bpfsampler peaked at $((hwm / 1024)) MB (bound 96)"
	else
		fail "stacks map of 512 ($run): bpfsampler's memory bounded" "VmHWM $hwm kB"
	fi
done

# --- Keeping the emptied segments fails (as when memory runs out; forced
# after the first 100 with a test knob): the rest of each emptying's
# segments are dropped, the map still emptied, the run goes on, and the
# drops are counted in the summary and the agent's metric.
"$W/stackfan" 60 &
wl=$!
BPFS_DEBUG_KEEP_FAIL=100 "$BPFS" -F 999 --stack-entries 128 -d 2 -p "$wl" \
	-o "$TMP/keepfail.folded" 2>"$TMP/keepfail.err"
rc=$?
kill "$wl"
wait "$wl" 2>/dev/null
emptied=$(sed -n 's/.*stacks map: emptied \([0-9]*\) time.*/\1/p' "$TMP/keepfail.err")
dropped=$(sed -n 's/.*stacks map: \([0-9]*\) segments emptied out but not kept.*/\1/p' "$TMP/keepfail.err")
warned=$(grep -c 'segments not kept (Cannot allocate memory)' "$TMP/keepfail.err")
[ $rc -eq 0 ] && [ "${emptied:-0}" -ge 2 ] && [ "${dropped:-0}" -gt 0 ] && [ "$warned" -ge 1 ] &&
	[ "$(samples_with "$TMP/keepfail.folded" fan_leaf)" -gt 0 ] &&
	pass "keeping segments fails: $dropped dropped and counted, map emptied $emptied times, exit 0" ||
	fail "keeping segments fails: drops counted, the run goes on" \
		"exit $rc, emptied ${emptied:-0}, dropped ${dropped:-0}: $(grep -E 'stacks map|not kept' "$TMP/keepfail.err")"
"$W/stackfan" 4 &
wl=$!
BPFS_DEBUG_KEEP_FAIL=100 "$BPFS" agent -F 999 --stack-entries 128 -d 3.5 --interval 1 \
	--output-dir "$TMP/keepspool" --metrics-file "$TMP/keep.prom" 2>"$TMP/keepagent.err"
rc=$?
wait "$wl"
m=$(awk '$1 == "bpfsampler_stack_segments_dropped_total" { print $2 }' "$TMP/keep.prom" 2>/dev/null)
[ $rc -eq 0 ] && [ "${m:-0}" -gt 0 ] &&
	pass "keeping segments fails in the agent: it goes on, metric stack_segments_dropped_total $m" ||
	fail "keeping segments fails in the agent: the metric counts the drops" \
		"exit $rc, metric '${m:-}': $(tail -3 "$TMP/keepagent.err")"

# --- The same map filled faster than the loader empties it (it sleeps a
# second after each drain): the samples that found it full are lost,
# counted as such, and the summary says what to raise.
profile "$TMP/fanfull.folded" -F 999 --stack-entries 128 --debug-reader-delay 1000 -d 2.5 -- "$W/stackfan" 3 ||
	fail "stacks map full: bpfsampler failed" "$(cat "$TMP/fanfull.folded.err")"
identity "stacks map full" "$TMP/fanfull.folded"
full=$(awk '/^\[lost\];\[stacks map full\] / { print $NF }' "$TMP/fanfull.folded")
[ "${full:-0}" -gt 50 ] && grep -q -- '--stack-entries' "$TMP/fanfull.folded.err" &&
	pass "stacks map full: $full samples lost as such, the summary says what to raise" ||
	fail "stacks map full: losses counted and explained" "$(cat "$TMP/fanfull.folded.err")"

# --- Frame pointers that are not: the walk stops within a frame or two,
# never loops, never reads the kernel, never invents frames. (The frame
# pointer walk: unwind tables would not read rbp there at all.)
profile "$TMP/badfp.folded" -F 999 --unwind fp -- "$W/badfp" 1.5 ||
	fail "bad frame pointers: bpfsampler failed" "$(cat "$TMP/badfp.folded.err")"
for fn in spin_loop spin_kernel spin_guard spin_odd spin_junk; do
	n=$(samples_with "$TMP/badfp.folded" "$fn")
	# the user part of the stack: frames between the comm and the leaf
	deep=$(awk -v f="$fn" '{
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, a, ";")
		for (i = 2; i <= k; i++) if (a[i] == f) { if (i - 2 > 2) s += n; break }
	} END { print s + 0 }' "$TMP/badfp.folded")
	junk=$(grep ";$fn" "$TMP/badfp.folded" | grep -cE '\[(kernel|unmapped)\]\+0x')
	# all or nothing: a walk that loops or invents frames does so in
	# every sample, so 10 samples show it (a fifth of badfp's CPU each:
	# ~280 alone, 13-20 measured with the host loaded 20 times over)
	[ "$n" -ge 10 ] && [ "$deep" -eq 0 ] && [ "$junk" -eq 0 ] &&
		pass "bad frame pointers: $fn ($n samples): the walk stops at once, no invented frames" ||
		fail "bad frame pointers: $fn: the walk stops at once" "$n samples, $deep deeper than 2, $junk junk"
done
g=$(samples_matching "$TMP/badfp.folded" '[[]truncated: read fault[]];spin_guard($|;)')
n=$(samples_with "$TMP/badfp.folded" spin_guard)
[ "$g" -gt $((n * 9 / 10)) ] &&
	pass "bad frame pointers: a frame pointer into a guard page is shown as unreadable ($g of $n)" ||
	fail "bad frame pointers: guard page shown as unreadable" "$g of $n: $(grep spin_guard "$TMP/badfp.folded")"
# A "return address" that is a stack address ends the walk as a bad frame
# (checked when the profile is built: no table walked it).
g=$(samples_matching "$TMP/badfp.folded" '^badfp;[[]truncated: bad frame[]];spin_junk$')
n=$(samples_with "$TMP/badfp.folded" spin_junk)
[ "$g" -gt $((n * 9 / 10)) ] &&
	pass "bad frame pointers: a return address in no mapping ends the stack, marked ($g of $n)" ||
	fail "bad frame pointers: a return address in no mapping ends the stack" "$g of $n: $(grep spin_junk "$TMP/badfp.folded")"

# The default walk (unwind tables; rbp is a frame pointer there) marks the
# same chains as cut, with a reason, and counts them in the summary.
profile "$TMP/badfp-auto.folded" -F 999 -- "$W/badfp" 1.5 ||
	fail "bad frame pointers, default walk: bpfsampler failed" "$(cat "$TMP/badfp-auto.folded.err")"
for fn in spin_loop spin_kernel spin_odd; do
	n=$(samples_with "$TMP/badfp-auto.folded" "$fn")
	m=$(awk -v f="$fn" '{ line = $0; sub(/ [0-9]+$/, "", line); k = split(line, a, ";")
		if (a[2] ~ /^\[truncated: / && index(line, ";" f)) s += $NF } END { print s + 0 }' \
		"$TMP/badfp-auto.folded")
	junk=$(grep ";$fn" "$TMP/badfp-auto.folded" | grep -cE '\[(kernel|unmapped)\]\+0x')
	[ "$n" -ge 10 ] && [ "$m" -ge $((n * 9 / 10)) ] && [ "$junk" -eq 0 ] &&
		pass "bad frame pointers, default walk: $fn marked cut in $m of $n samples, no invented frames" ||
		fail "bad frame pointers, default walk: $fn marked cut" "$m of $n marked, $junk junk"
done
grep -qE 'user stacks cut: bad frame' "$TMP/badfp-auto.folded.err" &&
	pass "bad frame pointers, default walk: bad frames counted in the summary" ||
	fail "bad frame pointers, default walk: bad frames counted" "$(grep incomplete "$TMP/badfp-auto.folded.err")"

# --- Hostile perf maps for a live JIT (its anonymous executable mapping is
# what makes the map be read). hostile_map NAME WRITER: WRITER PATH START
# SIZE writes the map; the run must end and say why a map was refused.
hostile_map() {
	local name=$1 writer=$2 d="$TMP/jit-$1" pid start size
	mkdir -p "$d"
	# the JIT first, its map written before bpfsampler starts: what is
	# tested is how the map is read, not when the process is discovered.
	# It runs until bpfsampler is done (killed then): on a busy host the
	# start-up (reading 64 MiB of map) can take most of a fixed 3 s.
	JIT_WAIT=$d "$W/jit" 60 &
	local j=$!
	for _ in $(seq 600); do [ -s "$d/info" ] && break; sleep 0.05; done
	read -r pid start size <"$d/info"
	"$writer" "/tmp/perf-$pid.map" "$start" "$size"
	touch "$d/go"
	"$BPFS" -F 999 -d 1.5 -p "$j" -o "$d/out.folded" 2>"$d/out.folded.err" ||
		fail "perf map $name: bpfsampler failed" "$(cat "$d/out.folded.err")"
	kill "$j"
	wait "$j" 2>/dev/null
	rm -f "/tmp/perf-$pid.map"
	HOSTILE_DIR=$d
}
map_huge() { # 70 MB of entries after the real one, in place at once
	{ echo "$2 $3 jit_hot_loop"; awk 'BEGIN { for (i = 0; i < 1700000; i++)
		printf "%x 10 some_other_jit_function_%d\n", 4096 + i * 16, i }'; } >"$1.tmp"
	mv "$1.tmp" "$1"
}
map_garbage() { # 1 MB of random bytes, then the real entry
	{ head -c 1000000 /dev/urandom; printf '\n%s %s jit_hot_loop\n' "$2" "$3"; } >"$1"
}
map_symlink() { # a root-owned file with a valid entry, behind a symlink
	printf '%s %s planted_name\n' "$2" "$3" >"$TMP/planted"
	ln -s "$TMP/planted" "$1"
}
map_fifo() { mkfifo "$1"; }

# What is checked is how the map is read, not how much CPU the JIT got on
# a shared host: at least 30 of its samples in the JIT code (~1500 on an
# idle host, 74 seen with it loaded 20 times over), and of those at most
# 5% left unnamed when the map has the entry (a stack cut).
jit_named() { samples_matching "$HOSTILE_DIR/out.folded" ';jit_hot_loop$'; }
jit_anon() { samples_matching "$HOSTILE_DIR/out.folded" '^jit;.*[[]anon[]][+]0x'; }
hostile_map huge map_huge
n=$(jit_named) anon=$(jit_anon)
[ "$n" -ge 30 ] && [ $((anon * 20)) -le $((n + anon)) ] &&
	grep -q 'read its first 64 MiB only' "$HOSTILE_DIR/out.folded.err" &&
	pass "perf map of 70 MB: read up to its bound, said so, the JIT still named ($n, $anon not)" ||
	fail "perf map of 70 MB: bounded" "named $n, anon $anon: $(cat "$HOSTILE_DIR/out.folded.err")"
hostile_map garbage map_garbage
n=$(jit_named) anon=$(jit_anon)
[ "$n" -ge 30 ] && [ $((anon * 20)) -le $((n + anon)) ] &&
	pass "perf map of garbage: the valid line after it still names the JIT ($n, $anon not)" ||
	fail "perf map of garbage" "named $n, anon $anon: $(head -5 "$HOSTILE_DIR/out.folded")"
hostile_map symlink map_symlink
n=$(samples_matching "$HOSTILE_DIR/out.folded" 'planted_name')
anon=$(jit_anon)
[ "$n" -eq 0 ] && [ "$anon" -ge 30 ] && grep -q 'a symbolic link' "$HOSTILE_DIR/out.folded.err" &&
	pass "perf map behind a symlink: refused, and said so ($anon samples unnamed)" ||
	fail "perf map behind a symlink: refused" "planted $n, anon $anon: $(cat "$HOSTILE_DIR/out.folded.err")"
hostile_map fifo map_fifo
anon=$(jit_anon)
[ "$anon" -ge 30 ] && grep -q 'not a regular file' "$HOSTILE_DIR/out.folded.err" &&
	pass "perf map that is a FIFO: refused without blocking ($anon samples unnamed)" ||
	fail "perf map that is a FIFO: refused" "anon $anon: $(cat "$HOSTILE_DIR/out.folded.err")"

# --- A shared library whose file is truncated after its last segment
# (section headers and symbol tables gone) or whose section headers are
# garbage: the dynamic loader runs it (it reads program headers only); the
# profiler must not crash and names its frames by module and offset.
elf_case() { # NAME: copies uselib and libwork.so into $TMP/elf-NAME
	local d="$TMP/elf-$1"
	mkdir -p "$d"
	cp "$W/uselib" "$W/libwork.so" "$d/"
	echo "$d"
}
d=$(elf_case truncated)
end=$(readelf -lW "$d/libwork.so" | awk '$1 == "LOAD" { e = strtonum($2) + strtonum($5); if (e > m) m = e } END { print m }')
truncate -s "$end" "$d/libwork.so"
d2=$(elf_case corrupt)
shoff=$(readelf -hW "$d2/libwork.so" | awk -F: '/Start of section headers/ { print $2 + 0 }')
size=$(stat -c %s "$d2/libwork.so")
head -c $((size - shoff)) /dev/urandom | dd of="$d2/libwork.so" bs=1 seek="$shoff" conv=notrunc status=none
for c in truncated corrupt; do
	dd="$TMP/elf-$c"
	profile "$dd/out.folded" -F 999 -- "$dd/uselib" 1.5 ||
		fail "ELF $c: bpfsampler failed" "$(cat "$dd/out.folded.err")"
	all=$(comm_lines "$dd/out.folded" uselib >"$dd/only"; total "$dd/only")
	n=$(samples_matching "$dd/only" ';main;run_uselib;libwork[.]so[+]0x[0-9a-f]+(;|$)')
	within "ELF $c: its frames named libwork.so+offset under main;run_uselib" \
		"$(awk -v a="$n" -v t="$all" 'BEGIN { printf "%.4f", t ? a / t : 0 }')" 1 0.05
done

# --- The same library with its unwind information corrupt, under the
# default walk (unwind tables): .eh_frame_hdr zeroed, .eh_frame overwritten
# with 0xff, both with (seeded) random bytes, .eh_frame alone with them. The program never reads them
# (C, no exceptions); bpfsampler builds its table from them. No crash, the
# profile written, and every stack through lib_spin either right
# (main;run_uselib;lib_spin) or marked cut: never silently wrong.
# fill FILE SECTION PATTERN [SEED]: overwrites SECTION's bytes in place.
fill() {
	local off size
	read -r off size < <(readelf -SW "$1" | awk -v s="$2" '{ sub(/^ *\[ *[0-9]+\] */, "") }
		$1 == s { print strtonum("0x" $4), strtonum("0x" $5) }')
	[ -n "$size" ] || { echo "no $2 in $1" >&2; return 1; }
	case $3 in
	zero) head -c "$size" /dev/zero ;;
	ff) head -c "$size" /dev/zero | tr '\0' '\377' ;;
	random) LC_ALL=C awk -v n="$size" -v seed="$4" 'BEGIN { srand(seed)
		for (i = 0; i < n; i++) printf "%c", int(rand() * 255) + 1 }' ;;
	esac | dd of="$1" bs=1 seek="$off" conv=notrunc status=none
}
d=$(elf_case hdrzero) && fill "$d/libwork.so" .eh_frame_hdr zero
d=$(elf_case ehff) && fill "$d/libwork.so" .eh_frame ff
d=$(elf_case ehrandom) && fill "$d/libwork.so" .eh_frame_hdr random 14 &&
	fill "$d/libwork.so" .eh_frame random 15
d=$(elf_case ehonly) && fill "$d/libwork.so" .eh_frame random 16
for c in hdrzero ehff ehrandom ehonly; do
	dd="$TMP/elf-$c"
	cmp -s "$dd/libwork.so" "$W/libwork.so" && fail "CFI $c: the library was not changed"
	profile "$dd/out.folded" -F 999 -- "$dd/uselib" 1.5 ||
		fail "CFI $c: bpfsampler failed" "$(cat "$dd/out.folded.err")"
	comm_lines "$dd/out.folded" uselib >"$dd/only"
	n=$(samples_with "$dd/only" lib_spin)
	# right: main;run_uselib;lib_spin (maybe cut above main); else marked
	right=$(samples_matching "$dd/only" ';main;run_uselib;lib_spin(;|$)')
	grep -E ';lib_spin(;|$| [0-9])' "$dd/only" | grep -vE ';main;run_uselib;lib_spin(;| |$)' >"$dd/other"
	cut=$(samples_matching "$dd/other" '^uselib;[[]truncated: [^]]*[]];lib_spin(;|$)')
	wrong=$(($(total "$dd/other") - cut))
	# none wrong is the promise: 50 samples show a wrong walk (~1400 alone)
	[ -s "$dd/out.folded" ] && [ "$n" -ge 50 ] && [ "$wrong" -eq 0 ] && [ $((right + cut)) -eq "$n" ] &&
		pass "CFI $c: no crash; of $n samples in lib_spin $right whole, $cut marked cut, none wrong" ||
		fail "CFI $c: stacks through lib_spin right or marked" \
			"$n in lib_spin, $right whole, $cut cut, $wrong wrong: $(grep -v truncated "$dd/other" | head -5)"
done
