#!/usr/bin/env bash
# The command line for real: exit statuses, messages, -p/-- command
# selection, SIGINT, and that nothing of ours stays loaded afterwards.
source "$(dirname "$0")/lib.sh"
require_root cli

# expect_usage NAME ARGS...: exit status 2 and one line on stderr that
# names the problem.
expect_usage() {
	local name=$1 rc lines
	shift
	"$BPFS" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	lines=$(wc -l <"$TMP/err")
	if [ $rc -eq 2 ] && [ "$lines" -ge 1 ] && [ "$lines" -le 2 ] && [ ! -s "$TMP/out" ]; then
		pass "$name"
	else
		fail "$name" "exit $rc, stderr: $(cat "$TMP/err")"
	fi
}

progs_before=$(our_progs)
links_before=$(bpftool link show 2>/dev/null | grep -c '^[0-9]')

expect_usage "usage: unknown flag" --bogus
expect_usage "usage: -F 0" -F 0
expect_usage "usage: -F abc" -F abc
expect_usage "usage: -F above 100 kHz" -F 200000
expect_usage "usage: negative duration" -d -1
expect_usage "usage: pid that does not exist" -p 4000000 -d 1
expect_usage "usage: -U with -K" -U -K -d 1
expect_usage "usage: CPU not online" -C 4096 -d 1
expect_usage "usage: depth 0" --max-stack-depth 0

# A frequency above what the kernel allows right now: lower the limit.
rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
echo 5000 >/proc/sys/kernel/perf_event_max_sample_rate
expect_usage "usage: -F above perf_event_max_sample_rate" -F 6000 -d 1
grep -q "perf_event_max_sample_rate" "$TMP/err" || fail "rate message names the sysctl" "$(cat "$TMP/err")"
echo "$rate" >/proc/sys/kernel/perf_event_max_sample_rate

# --help and the man page list the same long options.
help_opts=$("$BPFS" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u)
man_opts=$(grep -oE -- '\\-\\-[a-z][a-z\\-]+' "$ROOT/docs/bpfsampler.8" | sed 's/\\//g' | sort -u)
if [ "$help_opts" = "$man_opts" ]; then
	pass "--help and the man page agree"
else
	fail "--help and the man page agree" "$(diff <(echo "$help_opts") <(echo "$man_opts") | tr '\n' ' ')"
fi

# -- command: its exit status is ours.
"$BPFS" -F 999 -o "$TMP/c.folded" -- sh -c 'exit 3' 2>"$TMP/c.err"
rc=$?
[ $rc -eq 3 ] && pass "command exit status passed on" || fail "command exit status passed on" "exit $rc"
"$BPFS" -F 999 -o "$TMP/c.folded" -- /no/such/program 2>"$TMP/c.err"
rc=$?
[ $rc -eq 127 ] && grep -q "cannot run" "$TMP/c.err" && pass "missing command exits 127" ||
	fail "missing command exits 127" "exit $rc: $(cat "$TMP/c.err")"

# -- command profiles only the command, while something else burns CPU
# (through both runs' set-up, however long: ended after them).
"$W/threads" 1 60 &
other=$!
profile "$TMP/cmd.folded" -F 999 -- "$W/shares" 1.5
rc=$?
others=$(awk -F';' '$1 != "shares" && $1 != "[lost]"' "$TMP/cmd.folded" | wc -l)
if [ $rc -eq 0 ] && [ "$others" -eq 0 ] && [ "$(samples_with "$TMP/cmd.folded" run_shares)" -gt 500 ]; then
	pass "-- command profiles only the command"
else
	fail "-- command profiles only the command" "exit $rc, $others foreign lines: $(head -3 "$TMP/cmd.folded")"
fi

# -p profiles exactly that process (all its threads), not the command above.
profile "$TMP/p.folded" -F 999 -d 1 -p "$other"
rc=$?
others=$(awk -F';' '$1 != "worker-0" && $1 != "threads" && $1 != "[lost]"' "$TMP/p.folded" | wc -l)
if [ $rc -eq 0 ] && [ "$others" -eq 0 ] && [ "$(samples_with "$TMP/p.folded" thread_work)" -gt 500 ]; then
	pass "-p profiles exactly that process"
else
	fail "-p profiles exactly that process" "exit $rc, $others foreign lines: $(head -3 "$TMP/p.folded")"
fi
kill "$other"
wait "$other" 2>/dev/null

# SIGINT mid-run: a complete profile and exit 0.
"$W/threads" 2 60 &
burner=$!
"$BPFS" -v -F 999 -o "$TMP/int.folded" 2>"$TMP/int.err" &
bpfs=$!
wait_line "$TMP/int.err" "bpfsampler: sampling"
sleep 2
kill -INT $bpfs
wait $bpfs
rc=$?
kill $burner
wait $burner 2>/dev/null
if [ $rc -eq 0 ] && grep -q "samples taken" "$TMP/int.err" &&
	[ "$(samples_with "$TMP/int.folded" thread_work)" -gt 1000 ]; then
	pass "SIGINT ends sampling with a complete profile"
else
	fail "SIGINT ends sampling with a complete profile" "exit $rc: $(tail -3 "$TMP/int.err")"
fi

# Outputs are written as a file with no name (O_TMPFILE) and put in place
# when whole: an earlier profile survives a run that fails, is killed or
# fills the disk, and nothing else is left beside it (outputs.sh kills a
# run at every phase).
old_profile() { echo "old;profile 1" >"$1"; }
survives() { # NAME FILE: FILE still holds the old profile, no temporary left
	if [ "$(cat "$2")" = "old;profile 1" ] && ! ls "$(dirname "$2")"/.tmp."$(basename "$2")".* >/dev/null 2>&1; then
		pass "$1: the earlier profile survives, no temporary left"
	else
		fail "$1: the earlier profile survives" "$(head -c 200 "$2"; ls "$(dirname "$2")")"
	fi
}
old_profile "$TMP/keep.folded"
"$BPFS" -e cycles -d 0.3 -o "$TMP/keep.folded" 2>/dev/null
survives "a run that fails at start (-e cycles, no PMU here)" "$TMP/keep.folded"
"$BPFS" -F 99 -d 5 -o "$TMP/keep.folded" 2>/dev/null &
b=$!
sleep 1.5
kill -KILL $b
wait $b 2>/dev/null
survives "SIGKILL mid-run" "$TMP/keep.folded"
mkdir -p "$TMP/small"
if mount -t tmpfs -o size=64k none "$TMP/small"; then
	old_profile "$TMP/small/p.samples"
	dd if=/dev/zero of="$TMP/small/fill" bs=1k status=none 2>/dev/null # fills it
	"$BPFS" -F 999 -d 1 --format samples -o "$TMP/small/p.samples" 2>"$TMP/small.err"
	rc=$?
	[ $rc -ne 0 ] && grep -q "No space left on device" "$TMP/small.err" &&
		pass "a full disk: the error says 'No space left on device' (exit $rc)" ||
		fail "a full disk: the error keeps its cause" "exit $rc: $(grep -v '^ ' "$TMP/small.err" | tail -3)"
	survives "a full disk" "$TMP/small/p.samples"
	umount "$TMP/small"
else
	fail "a full disk: cannot mount a small tmpfs"
fi
# stdout that cannot take the profile (a full device: our own node of
# /dev/full's numbers, never /dev/full itself): the error keeps its
# cause, the exit is not 0, the summary still comes (issue #14). A
# command that keeps a CPU busy, so there is a profile to write (an idle
# machine gives 0 samples in half a second: nothing written, no error).
mknod "$TMP/full" c 1 7
for fmt in folded samples pprof; do
	"$BPFS" -F 999 --format $fmt -- "$W/shares" 0.3 >"$TMP/full" 2>"$TMP/devfull.err"
	rc=$?
	[ $rc -ne 0 ] && grep -q "cannot write the profile to stdout: No space left on device" "$TMP/devfull.err" &&
		grep -q "samples taken" "$TMP/devfull.err" &&
		pass "--format $fmt to a full device: 'No space left on device', exit $rc" ||
		fail "--format $fmt to a full device: the error with its cause, exit not 0" \
			"exit $rc: $(grep -v '^ ' "$TMP/devfull.err" | tail -3)"
done
# (a busy command: an idle machine may give no sample in half a second)
"$BPFS" -F 999 -o "$TMP/keep.folded" -- "$W/shares" 0.3 2>/dev/null
[ "$(cat "$TMP/keep.folded")" != "old;profile 1" ] && [ -s "$TMP/keep.folded" ] &&
	! ls "$TMP"/.tmp.keep.folded.* >/dev/null 2>&1 &&
	pass "a run that ends well replaces the profile, no temporary left" ||
	fail "a run that ends well replaces the profile" "$(ls "$TMP")"

# A reader that goes away: the write fails with its cause, the summary is
# still on stderr, exit status 1. The command still gets SIGPIPE's default.
"$BPFS" -F 999 --format samples -- "$W/shares" 1 2>"$TMP/pipe.err" | head -c 100 >/dev/null
rc=${PIPESTATUS[0]}
[ "$rc" = 1 ] && grep -q 'Broken pipe' "$TMP/pipe.err" && grep -q 'samples taken' "$TMP/pipe.err" &&
	pass "piped into head: 'Broken pipe' reported, summary on stderr, exit 1" ||
	fail "piped into head: a clean end" "exit $rc: $(cat "$TMP/pipe.err")"
"$BPFS" -F 99 -o "$TMP/sp.folded" -- sh -c 'kill -PIPE $$; echo survived' >"$TMP/sp.out" 2>/dev/null
rc=$?
[ "$rc" != 0 ] && ! grep -q survived "$TMP/sp.out" &&
	pass "the command gets SIGPIPE's default action (exit $rc)" ||
	fail "the command gets SIGPIPE's default action" "exit $rc, $(cat "$TMP/sp.out")"

# After all of that, none of our programs, links or events remain.
# (the kernel frees a dead process's programs a moment after its exit)
for _ in $(seq 30); do
	progs_after=$(our_progs)
	links_after=$(bpftool link show 2>/dev/null | grep -c '^[0-9]')
	[ "$progs_after" = "$progs_before" ] && [ "$links_after" = "$links_before" ] && break
	sleep 0.1
done
if [ "$progs_after" = "$progs_before" ] && [ "$links_after" = "$links_before" ]; then
	pass "no BPF programs or links left behind"
else
	fail "no BPF programs or links left behind" "programs $progs_before -> $progs_after, links $links_before -> $links_after"
fi

# What the machine lacks is named, with what to do, and exits 1.
cp "$BPFS" "$TMP/bpfs" && chmod 755 "$TMP" "$TMP/bpfs"
setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/bpfs" -d 1 >/dev/null 2>"$TMP/np.err"
rc=$?
if [ $rc -eq 1 ] && grep -q "not enough privileges" "$TMP/np.err" && grep -q "CAP_BPF" "$TMP/np.err"; then
	pass "without privileges: says what is missing"
else
	fail "without privileges: says what is missing" "exit $rc: $(cat "$TMP/np.err")"
fi
unshare -m sh -c "mount -t tmpfs none /sys/kernel/btf && '$BPFS' -d 1" >/dev/null 2>"$TMP/nobtf.err"
rc=$?
if [ $rc -eq 1 ] && grep -q "no BTF" "$TMP/nobtf.err" && grep -q "CONFIG_DEBUG_INFO_BTF" "$TMP/nobtf.err"; then
	pass "without kernel BTF: says what is missing"
else
	fail "without kernel BTF: says what is missing" "exit $rc: $(cat "$TMP/nobtf.err")"
fi

# --version names the commit built, after an incremental build too: the
# version header is rewritten when the commit changes, and only then (its
# includers are rebuilt by their depfiles, nothing else).
vh=$TMP/vout/version.h
vmake() { make -s -C "$ROOT" OUTPUT="$TMP/vout" GIT_REV="$1" "$vh" >/dev/null 2>&1; }
vmake aaaaaaa && t1=$(stat -c %Y.%y "$vh") && sleep 1.1 && vmake aaaaaaa && t2=$(stat -c %Y.%y "$vh") &&
	vmake bbbbbbb
if grep -q '"[0-9.]* (bbbbbbb)"' "$vh" 2>/dev/null && [ "$t1" = "$t2" ] &&
	grep -q 'version\.h' "$OUTPUT/src/cli/opts.d" "$OUTPUT/src/output/pprof.d"; then
	pass "version header: rewritten for a new commit only, its includers tracked"
else
	fail "version header: rewritten for a new commit only, its includers tracked" \
		"$(cat "$vh" 2>&1), mtimes $t1 / $t2"
fi
if git -C "$ROOT" rev-parse --short HEAD >/dev/null 2>&1 &&
	[ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	rev=$(git -C "$ROOT" rev-parse --short HEAD)
	"$BPFS" --version | grep -q "($rev)" && pass "--version names the commit built ($rev)" ||
		fail "--version names the commit built" "HEAD $rev: $("$BPFS" --version)"
else
	skip "--version names the commit built" "not a clean git checkout (changes not committed)"
fi
