#!/usr/bin/env bash
# The sampling checks on a busy host: accuracy.sh (known shares by
# function and by thread, within the noise their sample counts allow) run
# again while cpuburn keeps one CPU busy. A fleet host is busy by
# definition; the answer must not depend on the CPU the workload gets. The
# burner is killed whatever happens (the trap), and was really busy.
source "$(dirname "$0")/lib.sh"
require_root busy

"$W/cpuburn" 100000000000000 1 >"$TMP/burn.out" &
burner=$!
trap 'kill "$burner" 2>/dev/null; wait "$burner" 2>/dev/null; rm -rf "$TMP"' EXIT
t0=$(awk '{ print $14 + $15 }' "/proc/$burner/stat")
s0=$SECONDS

# every line of accuracy.sh's, named as run beside the burner
bash "$ROOT/tests/integration/accuracy.sh" 2>&1 | sed -E 's/^(PASS|FAIL|SKIP) /\1 one CPU busy: /'

# The burner ran all along: alone it gets a whole CPU; on a host loaded
# many times over (load average 70 seen) its share of the 2 CPUs, a few
# percent, and that host is busy anyway. A dead burner gets none.
ticks=$(awk '{ print $14 + $15 }' "/proc/$burner/stat")
busy=$(awk -v t=$((ticks - t0)) -v hz="$(getconf CLK_TCK)" -v s=$((SECONDS - s0)) \
	'BEGIN { printf "%.2f", (s > 0 ? t / hz / s : 0) }')
awk -v b="$busy" 'BEGIN { exit !(b >= 0.02) }' &&
	pass "one CPU busy: the burner ran beside the checks ($busy of a CPU over $((SECONDS - s0)) s)" ||
	fail "one CPU busy: the burner ran beside the checks" "$busy of a CPU over $((SECONDS - s0)) s"
