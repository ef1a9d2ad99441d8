# shellcheck shell=bash
# Helpers for the integration tests: real sampling, as root. Sourced.
# Every check prints "PASS name" or "FAIL name" (with why), as tests/run
# counts them.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUTPUT=${OUTPUT:-.output}
case $OUTPUT in /*) ;; *) OUTPUT=$ROOT/$OUTPUT ;; esac
# the binary of the build under test: $OUTPUT/bpfsampler is ./bpfsampler for
# the plain build, and the sanitized one for make check SANITIZE=...
BPFS=$OUTPUT/bpfsampler
W=$OUTPUT/workloads
TMP=$(mktemp -d /tmp/bpfsampler-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# The user's debuginfod servers are never asked: debuginfod.sh runs its own.
unset DEBUGINFOD_URLS

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1"
	shift
	[ $# -gt 0 ] && echo "    $*"
	return 0
}
skip() { echo "SKIP $1: $2"; }

# ratio A B: A / B to four places (0 when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b ? a / b : 0 }'; }
# at_least NAME GOT MIN, at_most NAME GOT MAX: a number (share, rate)
# against its bound, PASS with the number in the name.
at_least() {
	if awk -v g="$2" -v m="$3" 'BEGIN { exit !(g >= m) }'; then pass "$1 ($2)"; else fail "$1" "got $2, want >= $3"; fi
}
# share_at_least NAME PART ALL MIN_ALL SHARE ERRFILE: PART of ALL samples is
# at least SHARE, once there are MIN_ALL of them (else a failure showing
# ERRFILE, the profiler's messages).
share_at_least() {
	if [ "$3" -lt "$4" ]; then
		fail "$1: enough samples" "$3, want $4: $(cat "$6")"
	else
		at_least "$1, of $3" "$(ratio "$2" "$3")" "$5"
	fi
}
at_most() {
	if awk -v g="$2" -v m="$3" 'BEGIN { exit !(g <= m) }'; then pass "$1 ($2)"; else fail "$1" "got $2, want <= $3"; fi
}

# check NAME COMMAND...: PASS when the command succeeds. The command prints
# its own diagnostics.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}

# Only a machine without root may skip: CI and developer machines run as root.
require_root() {
	if [ "$(id -u)" != 0 ]; then
		skip "${1:-$(basename "$0")}" "needs root to load BPF programs (run: sudo make check)"
		exit 0
	fi
}

# profile OUT_FILE ARGS...: runs bpfsampler -o OUT_FILE ARGS, keeping stderr
# in OUT_FILE.err; returns bpfsampler's status.
profile() {
	local out=$1
	shift
	"$BPFS" -o "$out" "$@" 2>"$out.err"
}

# wait_line FILE REGEX [SECONDS]: until FILE holds a line matching REGEX
# (default 60 s); after that, a FAIL that says what never came. A run's set-up, the BPF programs' load most
# of all, takes from a fraction of a second to seconds with the machine's
# state and kernel: a check that acts on a running bpfsampler waits for
# what it prints (-v's "sampling", the agent's "window ") rather than
# sleeping a guess.
wait_line() {
	local i n=$((${3:-60} * 10))
	for ((i = 0; i < n; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "waited ${3:-60} s for '$2' in $(basename "$1")" "$(tail -3 "$1" 2>/dev/null)"
	return 1
}

# Sum of the counts of all lines.
total() { awk '{ s += $NF } END { print s + 0 }' "$1"; }

# Lines whose first frame (comm) is $2.
comm_lines() { awk -v c="$2" 'index($0, c ";") == 1' "$1"; }

# samples_with FILE FRAME: samples whose stack has FRAME as one whole frame.
samples_with() {
	awk -v f="$2" '{
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
		k = split(line, a, ";")
		for (i = 1; i <= k; i++) if (a[i] == f) { s += n; break }
	} END { print s + 0 }' "$1"
}

# samples_matching FILE REGEX: samples whose line (without count) matches.
# The perf maps tests/workloads/jit.c left in /tmp (a JIT leaves its map
# for the profiler to read after the exit; the test that ran it removes it).
remove_jit_maps() {
	grep -l jit_hot_loop /tmp/perf-*.map 2>/dev/null | xargs -r rm -f
}

samples_matching() {
	awk -v re="$2" '{
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
		if (line ~ re) s += n
	} END { print s + 0 }' "$1"
}

# within NAME GOT EXPECTED TOLERANCE: |got-expected| <= tolerance (floats).
within() {
	local name=$1 got=$2 exp=$3 tol=$4
	if awk -v g="$got" -v e="$exp" -v t="$tol" 'BEGIN { d = g - e; if (d < 0) d = -d; exit !(d <= t) }'; then
		pass "$name"
	else
		fail "$name" "got $got, expected $exp +- $tol"
	fi
}

# Tolerance for a share p measured from n samples: 4 standard deviations of
# the binomial plus 1.5 points for what sampling cannot see (timer skew).
share_tolerance() {
	awk -v p="$1" -v n="$2" 'BEGIN { if (n < 1) n = 1; printf "%.4f", 4 * sqrt(p * (1 - p) / n) + 0.015 }'
}

# Stat from the stderr summary: "samples taken of N expected" etc.
summary_field() { # FILE.err REGEX -> first number after the regex
	grep -oE "$2 *[0-9]+" "$1" | head -n1 | grep -oE '[0-9]+$'
}

# Our BPF programs currently loaded (bpftool names them by function).
our_progs() { bpftool prog show 2>/dev/null | grep -cE ' name (on_sample[a-z0-9_]*|on_fork) '; }
our_links() { bpftool link show 2>/dev/null | grep -c 'prog .*' ; }

# identity NAME FOLDED: the summary's buckets add up, and the folded lines
# hold exactly the kept samples plus the [lost] lines.
identity() {
	local name=$1 f=$2 taken kept idle other lost lines_kept
	taken=$(grep -oE '[0-9]+ samples taken' "$f.err" | grep -oE '^[0-9]+')
	kept=$(summary_field "$f.err" "kept")
	idle=$(summary_field "$f.err" "idle")
	other=$(summary_field "$f.err" "not selected")
	lost=$(grep '^\[lost\];' "$f" | awk '{ s += $NF } END { print s + 0 }')
	lines_kept=$(grep -v '^\[lost\];' "$f" | awk '{ s += $NF } END { print s + 0 }')
	if [ -n "$taken" ] && [ "$taken" -gt 0 ] && [ $((kept + idle + other + lost)) -eq "$taken" ] &&
		[ "$lines_kept" -eq "$kept" ]; then
		pass "$name: taken $taken = kept $kept + idle $idle + not selected $other + lost $lost"
	else
		fail "$name: accounting identity" "taken $taken, kept $kept, idle $idle, other $other, lost $lost, in lines $lines_kept"
	fi
}

# gaps_match NAME FILE: the loader saw as many sequence gaps as the BPF side
# counted unsent records.
gaps_match() {
	local line
	line=$(grep 'records not sent' "$2.err")
	if [ -n "$line" ] && ! grep -q mismatch <<<"$line" &&
		[ "$(grep -oE '[0-9]+ records not sent' <<<"$line" | grep -oE '^[0-9]+')" -gt 0 ]; then
		pass "$1: every unsent record is a sequence gap ($line)"
	else
		fail "$1: every unsent record is a sequence gap" "$(cat "$2.err")"
	fi
}
