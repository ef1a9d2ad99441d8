#!/usr/bin/env bash
# Go binaries named from their .gopclntab (src/symbols/gopclntab.c): the
# gowork workload (tests/workloads/gowork.go, ground truth at its top) built
# as Go services ship it (-ldflags='-s -w': no .symtab, no DWARF), and with
# both (gowork-full). Promises, on a busy machine:
#  - >= 90% of the process's samples in main.leafA or main.leafB (measured
#    96-99%: the rest is the Go runtime's own threads);
#  - leafA's share of the two within 5 points of the truth, 1/3 (the same
#    body, 1:2 the work; measured 0.32-0.34 over 1500 samples: gowork runs
#    for 1.5 s of its own CPU time, however busy the machine);
#  - the inlined main.mix an inline frame under each exactly where Go's own
#    line table (go tool addr2line) puts the sample's address in mix's
#    body: in pprof, every address of leafA/leafB, and in folded --inline
#    the same count of samples (how many land in mix's four instructions
#    rather than the loop's own depends on the CPU: 80% on one machine,
#    42-45% on another; a fixed share failed the second), and in pprof with
#    the file and line of its body, inlined at the line of the call
#    (LEAFA_MIX);
#  - the unstripped build (its .symtab and DWARF) gives the same frames
#    under runtime.main, and the same stacks: each of >= 5% of one run's
#    samples has >= 1% of the other's (leafA, leafB, each with and without
#    mix, 13-55% each, as the CPU spreads the loop's samples; nothing else
#    reaches 1%). A fixed cut at 20% fell between two runs' leafA (18-21%
#    on one CPU);
#  - a copy with its section headers cut off too (the table found by its
#    header) is named as well (>= 90%).
source "$(dirname "$0")/lib.sh"
require_root gosym

SRC=$ROOT/tests/workloads/gowork.go
marker() { grep -n "// $1\$" "$SRC" | cut -d: -f1; }
MIX=$(marker MIX_BODY)
LEAFA=$(marker LEAFA_MIX)
LEAFB=$(marker LEAFB_MIX)

if ! command -v go >/dev/null; then
	skip gosym "go not installed (tools/install-deps.sh installs golang-go)"
	exit 0
fi
if [ ! -x "$W/gowork" ] || [ ! -x "$W/gowork-full" ]; then
	fail "gosym: gowork built" "$W/gowork or gowork-full missing: make workloads"
	exit 0
fi

# The stripped build has nothing but its Go table to be named from.
secs=$(readelf -SW "$W/gowork")
if ! grep -qE ' \.(symtab|debug_info) ' <<<"$secs" && grep -q ' \.gopclntab ' <<<"$secs"; then
	pass "gowork: no .symtab, no DWARF, a .gopclntab"
else
	fail "gowork: no .symtab, no DWARF, a .gopclntab" "$(grep -E 'symtab|debug|gopclntab' <<<"$secs")"
fi

gopprof() {
	HOME=$TMP/home GOCACHE=$TMP/gocache GOPROXY=off PPROF_TMPDIR=$TMP \
		timeout 60 go tool pprof -symbolize=none "$@" 2>"$TMP/gopprof.err"
}

# pprof_raw PB: go tool pprof -raw of PB, run once per file (PB.raw).
pprof_raw() {
	[ -s "$1.raw" ] || gopprof -raw "$1" >"$1.raw" || { rm -f "$1.raw"; return 1; }
	cat "$1.raw"
}

# check_run LABEL PREFIX COMM BINARY: the shares and the inline frames of one run.
check_run() {
	local label=$1 f=$2 comm=$3 t a b named inl share
	comm_lines "$f.folded" "$comm" >"$f.only"
	t=$(total "$f.only")
	a=$(samples_matching "$f.only" ';main[.]leafA(;|$)')
	b=$(samples_matching "$f.only" ';main[.]leafB(;|$)')
	named=$(ratio $((a + b)) "$t")
	if awk -v s="$named" 'BEGIN { exit !(s >= 0.90) }' && [ "$t" -ge 500 ]; then
		pass "$label: $named of $t samples in main.leafA or main.leafB"
	else
		fail "$label: >= 90% of samples in main.leafA or main.leafB" \
			"$named of $t: $(sort -t' ' -k2 -nr "$f.only" | head -3)"
	fi
	share=$(ratio "$a" $((a + b)))
	within "$label: main.leafA's share of the two $share (truth 1/3, +- 5 points)" \
		"$share" 0.3333 0.05
	inl=$(samples_matching "$f.only" ';main[.]leaf[AB];main[.]mix [(]inline[)](;|$)')
	check_inline "$label" "$f.pb.gz" "$4" "$inl" $((a + b))
}

# leaf_addrs PB: "ADDR COUNT MIX" for each address of main.leafA/B that is
# a sample's innermost frame of them (its first location whose outermost
# function is one of them), MIX 1 when pprof has main.mix inlined there.
leaf_addrs() {
	pprof_raw "$1" | awk '
		/^Samples:/ { sec = "s"; next }
		/^Locations/ { sec = "l"; next }
		/^Mappings/ { sec = "" }
		sec == "s" && /^ *[0-9]+ +[0-9]+: / { n++; cnt[n] = $1; ids[n] = $0; sub(/^[^:]*: */, "", ids[n]) }
		sec == "l" && /^ *[0-9]+: 0x/ { id = $1 + 0; addr[id] = $2; inner[id] = $4; outer[id] = $4; next }
		sec == "l" && NF >= 2 && id { outer[id] = $1 }
		END {
			for (i = 1; i <= n; i++) {
				k = split(ids[i], l, " ")
				for (j = 1; j <= k; j++)
					if (outer[l[j]] ~ /^main\.leaf[AB]$/) {
						w[addr[l[j]]] += cnt[i]; m[addr[l[j]]] = inner[l[j]] == "main.mix"
						break
					}
			}
			for (a in w) print a, w[a], m[a]
		}'
}

# check_inline LABEL PB BINARY INL LEAVES: pprof has main.mix inlined at
# exactly the addresses whose line Go's table puts in mix's body, and the
# folded profile has as many samples under it (INL of LEAVES).
check_inline() {
	local label=$1 addrs lines truth wrong
	addrs=$(leaf_addrs "$2")
	lines=$(awk '{ print $1 }' <<<"$addrs" | HOME=$TMP/home GOCACHE=$TMP/gocache go tool addr2line "$3" |
		awk 'NR % 2 == 0 { sub(/.*:/, ""); print }')
	read -r truth wrong < <(paste -d' ' <(echo "$addrs") <(echo "$lines") |
		awk -v mix="$MIX" '{ in_mix = $4 == mix; t += in_mix * $2; if (in_mix != $3) { w += $2; bad = bad " " $1 } }
			END { print t + 0, w + 0 bad }')
	if [ -n "$addrs" ] && [ "${wrong%% *}" = 0 ] && [ "$truth" -ge 50 ] && [ "$4" = "$truth" ]; then
		pass "$label: main.mix (inline) under main.leafA/B in $4 of $5 samples, as Go's line table says ($truth)"
	else
		fail "$label: main.mix (inline) under main.leafA/B where Go's line table says" \
			"folded $4 of $5, line table $truth (>= 50), samples named against it: $wrong"
	fi
}

# check_pprof LABEL PB: main.mix at its body's line, inlined into main.leafA
# at the call's line (go tool pprof -raw: the inline frame first, then
# its caller on the next line); leafB's the same.
check_pprof() {
	local label=$1 raw
	raw=$(pprof_raw "$2") || { fail "$label: go tool pprof -raw" "$(cat "$TMP/gopprof.err")"; return; }
	raw=$(sed -n '/^Locations/,/^Mappings/p' <<<"$raw")
	for leaf in "main.leafA:$LEAFA" "main.leafB:$LEAFB"; do
		if awk -v file="$SRC" -v mix="$MIX" -v fn="${leaf%%:*}" -v call="${leaf##*:}" '
			on && $1 == fn && $2 == file ":" call { ok = 1 }
			{ on = NF >= 3 && $(NF - 2) == "main.mix" && $(NF - 1) == file ":" mix }
			END { exit !ok }' <<<"$raw"; then
			pass "$label: pprof main.mix at gowork.go:$MIX inlined into ${leaf%%:*} at gowork.go:${leaf##*:}"
		else
			fail "$label: pprof main.mix at gowork.go:$MIX inlined into ${leaf%%:*} at gowork.go:${leaf##*:}" \
				"$(grep -A1 'main\.mix' <<<"$raw" | head -6)"
		fi
	done
}

# The user stacks that hold the program's own work, to its innermost main.*
# frame (kernel frames under it cut), each with >= MIN of the samples.
main_stacks() {
	local t
	t=$(total "$1")
	sed -nE 's/^[^;]*;(.*;main\.[^;]*)(;.*)? ([0-9]+)$/\1 \3/p' "$1" |
		awk -v t="$t" -v min="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n }
			END { for (k in s) if (s[k] >= min * t) print k }' | sort
}

# The frames of those with >= 1% of the samples, once each.
main_frames() { main_stacks "$1" 0.01 | tr ';' '\n' | sort -u | tr '\n' '|'; }

if profile "$TMP/s.%f" -F 999 --inline --format folded,pprof -- "$W/gowork" 1.5; then
	check_run "stripped" "$TMP/s" gowork "$W/gowork"
	check_pprof "stripped" "$TMP/s.pb.gz"
else
	fail "gowork run" "$(cat "$TMP/s.%f.err")"
fi
if profile "$TMP/f.%f" -F 999 --inline --format folded,pprof -- "$W/gowork-full" 1.5; then
	check_run "unstripped" "$TMP/f" gowork-full "$W/gowork-full"
	check_pprof "unstripped" "$TMP/f.pb.gz"
	s=$(main_frames "$TMP/s.only")
	f=$(main_frames "$TMP/f.only")
	if [ -n "$s" ] && [ "$s" = "$f" ]; then
		pass "the same frames stripped and unstripped: $s"
	else
		fail "the same frames stripped and unstripped" "stripped: $s unstripped: $f"
	fi
	s=$(main_stacks "$TMP/s.only" 0.05)
	f=$(main_stacks "$TMP/f.only" 0.05)
	s1=$(main_stacks "$TMP/s.only" 0.01)
	f1=$(main_stacks "$TMP/f.only" 0.01)
	missing=$( (comm -23 <(echo "$s") <(echo "$f1"); comm -23 <(echo "$f") <(echo "$s1")) | tr '\n' '|')
	# at least leafA;mix and leafB;mix: the leaves' own lines have from
	# 0 (AMD EPYC: every sample on mix's, behind its multiply) to 21% of
	# the samples with the CPU, so they are compared, not counted on
	if [ "$(wc -l <<<"$s")" -ge 2 ] && [ -z "$missing" ]; then
		pass "the same stacks stripped and unstripped (>= 5% in one, >= 1% in the other): $(tr '\n' '|' <<<"$s")"
	else
		fail "the same stacks stripped and unstripped (>= 5% in one, >= 1% in the other)" \
			"in one only: $missing; stripped: $(tr '\n' '|' <<<"$s") unstripped: $(tr '\n' '|' <<<"$f")"
	fi
else
	fail "gowork-full run" "$(cat "$TMP/f.%f.err")"
fi

# No section headers (e_shoff, e_shnum zeroed): the table found by its header.
cp "$W/gowork" "$TMP/gowork-nosh"
printf '\0\0\0\0\0\0\0\0' | dd of="$TMP/gowork-nosh" bs=1 seek=40 conv=notrunc status=none
printf '\0\0\0\0' | dd of="$TMP/gowork-nosh" bs=1 seek=60 conv=notrunc status=none
if [ "$(readelf -h "$TMP/gowork-nosh" | awk '/Number of section headers/ { print $NF }')" = 0 ] &&
	profile "$TMP/n.folded" -F 999 -- "$TMP/gowork-nosh" 1; then
	comm_lines "$TMP/n.folded" gowork-nosh >"$TMP/n.only"
	t=$(total "$TMP/n.only")
	n=$(samples_matching "$TMP/n.only" ';main[.]leaf[AB](;|$)')
	share=$(ratio "$n" "$t")
	if awk -v s="$share" 'BEGIN { exit !(s >= 0.90) }' && [ "$t" -ge 50 ]; then
		pass "no section headers: $share of $t samples in main.leafA or main.leafB"
	else
		fail "no section headers: >= 90% of samples in main.leafA or main.leafB" \
			"$share of $t: $(sort -t' ' -k2 -nr "$TMP/n.only" | head -3)"
	fi
else
	fail "gowork without section headers run" "$(cat "$TMP/n.folded.err" 2>/dev/null)"
fi
