#!/usr/bin/env bash
# The sanitized build's smoke run (make check runs it with the build of
# make SANITIZE=address,undefined, tests/run catches every report): what a
# user runs, each step ending normally so LeakSanitizer checks it at exit.
# A system-wide profile in every format, a JIT process's perf map read, a
# command in stream mode, an attached pid, the agent through a few windows
# and a reload, and the usage-error and --version paths. The whole suite
# runs the same way with make check SANITIZE=address,undefined.
. "$(dirname "$0")/lib.sh"
require_root

if [ -z "${SANITIZE:-}" ]; then
	skip sanitized "the plain build is under test: make check runs this with the sanitized one"
	exit 0
fi

# step NAME COMMAND...: PASS when the command exits 0 and no sanitizer wrote a
# report (tests/run would count one too; here the step is named).
step() {
	local name=$1 rc r
	shift
	"$@" >"$TMP/step.out" 2>"$TMP/step.err"
	rc=$?
	r=$(ls "$SAN_LOGS" 2>/dev/null)
	if [ $rc = 0 ] && [ -z "$r" ]; then
		pass "sanitized: $name"
	else
		fail "sanitized: $name" "status $rc, reports: ${r:-none}; $(tail -3 "$TMP/step.err")"
	fi
}

P=$TMP/p
step "system-wide profile, every format (symbolizes every process)" \
	"$BPFS" -F 999 -d 3 --format folded,pprof,svg,top -o "$P.%f"
for ext in folded pb.gz svg top; do
	[ -s "$P.$ext" ] || fail "sanitized: $P.$ext written"
done

"$W/jit" 6 >/dev/null 2>&1 &
jit=$!
sleep 0.5
step "a JIT's perf map, stream mode, samples format" \
	"$BPFS" -F 999 -d 2 --mode stream --format samples -o "$TMP/jit.samples" -p $jit
kill $jit 2>/dev/null
wait $jit 2>/dev/null
rm -f "/tmp/perf-$jit.map"

step "a command profiled to its end" "$BPFS" -F 999 -o "$TMP/cmd.folded" -- "$W/shares" 1

# A busy process through every window: an idle machine's windows hold only
# idle samples, and the agent writes no profile of those.
D=$TMP/agent
mkdir -p "$D"
"$W/shares" 6 >/dev/null 2>&1 &
busy=$!
"$BPFS" agent --interval 1 -F 99 -d 4.5 --output-dir "$D" --metrics-file "$TMP/agent.prom" \
	2>"$TMP/agent.err" &
agent=$!
sleep 2.2
kill -HUP $agent
wait $agent
rc=$?
kill $busy 2>/dev/null
wait $busy 2>/dev/null
r=$(ls "$SAN_LOGS" 2>/dev/null)
[ $rc = 0 ] && [ -z "$r" ] && pass "sanitized: the agent through windows and a reload (SIGHUP)" ||
	fail "sanitized: the agent" "status $rc, reports: ${r:-none}; $(tail -3 "$TMP/agent.err")"
n=$(ls "$D"/*.pb.gz 2>/dev/null | wc -l)
[ "$n" -ge 3 ] && pass "sanitized: the agent wrote $n windows" ||
	fail "sanitized: the agent's windows" "$n in $D: $(ls "$D"); $(tail -4 "$TMP/agent.err")"

step "--version -v (the feature probes)" "$BPFS" --version -v
"$BPFS" -C 0-99999 -d 1 >/dev/null 2>"$TMP/usage.err"
rc=$?
r=$(ls "$SAN_LOGS" 2>/dev/null)
[ $rc = 2 ] && [ -z "$r" ] && pass "sanitized: a usage error exits 2 cleanly" ||
	fail "sanitized: a usage error" "status $rc, reports: ${r:-none}"
