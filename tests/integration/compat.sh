#!/usr/bin/env bash
# The compat sampling program (kernels before 5.19, docs/design.md,
# "Kernels"), forced on this kernel with BPFSAMPLER_COMPAT=1: the guests of
# tests/kernels/ run it for real on 5.10; here every change is checked
# against it on the host too. Promise: the same outputs as the full program
# for frame-pointer code, every sample accounted, nothing left loaded.
source "$(dirname "$0")/lib.sh"
require_root compat
export BPFSAMPLER_COMPAT=1


# --- chosen, and said
"$BPFS" --version -v >"$TMP/v.txt" 2>&1
grep -q '^sampling program: *compat' "$TMP/v.txt" &&
	pass "--version -v: BPFSAMPLER_COMPAT=1 selects the compat program" ||
	fail "--version -v: BPFSAMPLER_COMPAT=1 selects the compat program" "$(cat "$TMP/v.txt")"
# every feature row says yes, or says what is lost without it
rows=$(grep -cE '^  .* [0-9]+\.[0-9]+ +(yes$|no: .+)' "$TMP/v.txt")
[ "$rows" -ge 12 ] && pass "--version -v: a row per kernel feature, each with its first kernel ($rows)" ||
	fail "--version -v: a row per kernel feature" "$rows rows: $(cat "$TMP/v.txt")"
env -u BPFSAMPLER_COMPAT "$BPFS" --version -v >"$TMP/vf.txt" 2>&1
if grep -qE '^  .* (5\.1[1-9]|5\.[0-9]) +no:' "$TMP/vf.txt"; then
	grep -q '^sampling program: *compat' "$TMP/vf.txt" &&
		pass "--version -v: a kernel lacking a helper of the full program runs compat" ||
		fail "--version -v: a kernel lacking a helper of the full program runs compat" "$(cat "$TMP/vf.txt")"
else
	grep -q '^sampling program: *full' "$TMP/vf.txt" &&
		pass "--version -v: a kernel with every helper runs the full program" ||
		fail "--version -v: a kernel with every helper runs the full program" "$(cat "$TMP/vf.txt")"
fi

# --- stacks: a 100-deep frame-pointer recursion, whole, through the
# kernel's walker (under perf_event_max_stack)
profile "$TMP/rec.folded" -F 4000 -- "$W/recurse" 100 2 || fail "compat: recursion run" "$(cat "$TMP/rec.folded.err")"
leaf=$(samples_with "$TMP/rec.folded" recurse_leaf)
whole=$(samples_matching "$TMP/rec.folded" ';main;run_recurse;(recurse;){100}recurse_leaf(;|$)')
if [ "$leaf" -lt 1000 ]; then
	fail "compat: recursion: enough samples" "$leaf: $(cat "$TMP/rec.folded.err")"
else
	within "compat: recursion: whole 100-deep chain from main" "$(ratio "$whole" "$leaf")" 1 0.02
fi
identity "compat: recursion" "$TMP/rec.folded"
grep -q 'unwind tables:' "$TMP/rec.folded.err" &&
	fail "compat: no unwind tables are built" "$(grep 'unwind tables' "$TMP/rec.folded.err")" ||
	pass "compat: no unwind tables are built (they need bpf_loop)"

# --- where a frame-pointer chain ends: the compat program walks it itself
# and knows why. A chain cut by code without frame pointers (Debian's
# python3.11) is marked; a whole one (the recursion, through glibc's
# start, which has none) is not. Promise: all python3.11 samples marked
# but start-up's and exit's (97% at least); at most 1% of the recursion's.
marks=$(samples_matching "$TMP/rec.folded" '[[]truncated')
[ "$marks" -le $((leaf / 100)) ] &&
	pass "compat: whole frame-pointer chains carry no mark ($marks of $leaf)" ||
	fail "compat: whole frame-pointer chains carry no mark" "$marks of $leaf: $(grep -m3 truncated "$TMP/rec.folded")"
if [ -x /usr/bin/python3.11 ]; then
	profile "$TMP/py.folded" -F 999 --unwind auto -- /usr/bin/python3.11 -c '
import time
t = time.time() + 1.5
d = {}
while time.time() < t:
    for i in range(2000):
        d[i % 97] = str(i) * 3
    sorted(d.values())' || fail "compat: python3.11 run" "$(cat "$TMP/py.folded.err")"
	# all but start-up's and exit's few: 1516 of 1517 here
	n=$(total "$TMP/py.folded")
	m=$(samples_matching "$TMP/py.folded" '^python3[.]11;[[]truncated: no unwind info[]];')
	[ "$n" -gt 100 ] && [ $((m * 100)) -ge $((n * 97)) ] &&
		pass "compat: chains cut by code without frame pointers are marked ($m of $n)" ||
		fail "compat: chains cut by code without frame pointers are marked" "$m of $n: $(grep -v truncated "$TMP/py.folded" | head -3)"
else
	skip "compat: chains cut by code without frame pointers are marked" "no /usr/bin/python3.11"
fi

# --- --unwind dwarf is said to act as fp
profile "$TMP/dw.folded" -F 999 --unwind dwarf -- "$W/shares" 0.3 ||
	fail "compat: --unwind dwarf run" "$(cat "$TMP/dw.folded.err")"
grep -q 'unwind dwarf: this kernel has no bpf_loop' "$TMP/dw.folded.err" &&
	pass "compat: --unwind dwarf says it walks frame pointers" ||
	fail "compat: --unwind dwarf says it walks frame pointers" "$(cat "$TMP/dw.folded.err")"

# --- two events: one program per event index, each sample under its own
"$BPFS" -e cpu-clock,page-faults -o "$TMP/ev-%e.folded" -- "$W/swevents" faults 20000 \
	>/dev/null 2>"$TMP/ev.err" || fail "compat: two events run" "$(cat "$TMP/ev.err")"
clk=$(total "$TMP/ev-cpu-clock.folded")
# a software event's sample carries the registers of the faulting user code
# (no kernel stack, as in the full program): fault_pages itself
pf=$(samples_matching "$TMP/ev-page-faults.folded" ';main;fault_pages( |;|$)')
pft=$(total "$TMP/ev-page-faults.folded")
[ "$clk" -gt 0 ] && pass "compat: cpu-clock profile of its own ($clk samples)" ||
	fail "compat: cpu-clock profile of its own" "$(cat "$TMP/ev.err")"
[ "$pft" -gt 0 ] && [ "$pf" -ge $((pft * 9 / 10)) ] &&
	pass "compat: page-faults profile of its own, in fault_pages ($pf of $pft)" ||
	fail "compat: page-faults profile of its own, in fault_pages" "$pf of $pft: $(head -3 "$TMP/ev-page-faults.folded")"

# --- stream mode: stack records built whole and copied to the ring
profile "$TMP/st.folded" -F 4000 --mode stream -- "$W/shares" 1 ||
	fail "compat: stream run" "$(cat "$TMP/st.folded.err")"
identity "compat: stream mode" "$TMP/st.folded"
n=$(samples_matching "$TMP/st.folded" ';main;run_shares;share_fn_[0-9]+(;|$)')
all=$(comm_lines "$TMP/st.folded" shares >"$TMP/st.only"; total "$TMP/st.only")
within "compat: stream mode: the workload's stacks whole" "$(ratio "$n" "$all")" 1 0.05

# --- colliding stack ids: compared frame by frame, never merged
profile "$TMP/coll.folded" -F 4000 --debug-stack-id-bits 3 -- "$W/shares" 1 || fail "compat: collision run"
identity "compat: stack id collisions" "$TMP/coll.folded"
bad=$(grep -v '^\[lost\];' "$TMP/coll.folded" | grep 'share_fn_' | grep -vcE ';main;run_shares;share_fn_[0-9]+(;|[ ])')
[ "$bad" -eq 0 ] && pass "compat: stack id collisions: no stack borrowed another's frames" ||
	fail "compat: stack id collisions: no stack borrowed another's frames" "$bad bad lines"

# --- -p, SIGINT: exit 0, and the programs it loaded are gone. They are
# told by the prog ids in its own fds (other runs may load ours meanwhile).
prog_ids() { cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u; }
"$W/shares" 30 &
burner=$!
"$BPFS" -v -F 999 -p $burner -o "$TMP/p.folded" 2>"$TMP/p.folded.err" &
bp=$!
ids=
for _ in $(seq 100); do # armed: its sampling programs are attached
	sleep 0.1
	ids=$(prog_ids $bp)
	[ -n "$ids" ] && grep -q 'sampling' "$TMP/p.folded.err" 2>/dev/null && break
done
sleep 1.5
kill -INT $bp
wait $bp
rc=$?
kill $burner 2>/dev/null
wait $burner 2>/dev/null
[ $rc -eq 0 ] && pass "compat: -p, SIGINT: exit status 0" || fail "compat: -p, SIGINT: exit status 0" "$rc: $(tail -3 "$TMP/p.folded.err")"
mine=$(samples_matching "$TMP/p.folded" ';main;run_shares;share_fn_[0-9]+(;|$)')
all=$(comm_lines "$TMP/p.folded" shares >"$TMP/p.only"; total "$TMP/p.only")
if [ "$all" -lt 20 ]; then
	fail "compat: -p: enough samples" "$all: $(cat "$TMP/p.folded.err")"
else
	within "compat: -p: the process's stacks whole" "$(ratio "$mine" "$all")" 1 0.05
fi
left=0
for id in $ids; do bpftool prog show id "$id" >/dev/null 2>&1 && left=$((left + 1)); done
[ -n "$ids" ] && [ $left -eq 0 ] && pass "compat: the $(wc -w <<<"$ids") BPF programs it loaded are gone after the run" ||
	fail "compat: the BPF programs it loaded are gone after the run" "ids: ${ids:-none seen}; $left left"
