#!/usr/bin/env bash
# C++ and Rust names demangled (libiberty), kept raw with --no-demangle,
# and the same names in --format top. The workloads' ground truth is at the
# top of tests/workloads/cxxwork.cpp and rustwork.rs.
source "$(dirname "$0")/lib.sh"
require_root demangle

# share FILE COMM FRAME: FRAME's samples over COMM's, 4 decimals.
share() {
	local n t
	comm_lines "$1" "$2" >"$1.only"
	t=$(total "$1.only")
	n=$(samples_with "$1.only" "$3")
	awk -v n="$n" -v t="$t" 'BEGIN { printf "%.4f", t ? n / t : 0 }'
}

# enough N FILE COMM MIN: N samples are at least MIN of COMM's in FILE, and
# COMM has 50 or more: a share, not a count, so that a busy machine (at a
# load of 60 on the 2-CPU VM, under 100 samples in the workload's 1 s of
# wall time) keeps the promise. Says the share when it does not.
enough() {
	local t
	t=$(comm_lines "$2" "$3" | total /dev/stdin)
	awk -v n="$1" -v t="$t" -v m="$4" -v c="$3" 'BEGIN { ok = t >= 50 && n >= m * t
		if (!ok) printf "    %d of %d samples of %s, want >= %.2f of >= 50\n", n, t, c, m
		exit !ok }'
}


RELAX='geo::Grid<double>::relax(int)'
CHURN='work::churn(int)'
LAMBDA='work::churn(int)::{lambda(int)#1}::operator()(int) const'
# the longname workload's function, as nm -C (libiberty too) demangles it,
# less the return type nm -C prints first and we do not ("double spin_long<")
LONG=$(nm -C "$W/longname" | awk '/ spin_long</ { sub(/^[0-9a-f]+ [A-Za-z] /, ""); sub(/^double /, ""); print }')

profile "$TMP/cxx.folded" -F 999 -- "$W/cxxwork" 1.5 || fail "cxxwork run" "$(cat "$TMP/cxx.folded.err")"
at_least "C++: class template method demangled" "$(share "$TMP/cxx.folded" cxxwork "$RELAX")" 0.35
at_least "C++: lambda demangled" "$(share "$TMP/cxx.folded" cxxwork "$LAMBDA")" 0.35
n=$(samples_matching "$TMP/cxx.folded" '^cxxwork;.*;main;work::churn[(]int[)];work::churn[(]int[)]::[{]lambda')
enough "$n" "$TMP/cxx.folded" cxxwork 0.35 && pass "C++: lambda under its function ($n)" ||
	fail "C++: lambda under its function" "$n samples: $(grep -m3 lambda "$TMP/cxx.folded")"
n=$(samples_matching "$TMP/cxx.folded" '(^|;)_Z')
[ "$n" -eq 0 ] && pass "C++: no mangled name left" ||
	fail "C++: no mangled name left" "$(grep -m3 -E '(^|;)_Z' "$TMP/cxx.folded")"

profile "$TMP/cxxraw.folded" -F 999 --no-demangle -- "$W/cxxwork" 1.5 ||
	fail "cxxwork --no-demangle run" "$(cat "$TMP/cxxraw.folded.err")"
at_least "C++ --no-demangle: _ZN3geo4GridIdE5relaxEi" \
	"$(share "$TMP/cxxraw.folded" cxxwork _ZN3geo4GridIdE5relaxEi)" 0.35
at_least "C++ --no-demangle: _ZZN4work5churnEiENKUliE_clEi" \
	"$(share "$TMP/cxxraw.folded" cxxwork _ZZN4work5churnEiENKUliE_clEi)" 0.35
n=$(samples_matching "$TMP/cxxraw.folded" 'geo::|work::')
[ "$n" -eq 0 ] && pass "C++ --no-demangle: no demangled name" ||
	fail "C++ --no-demangle: no demangled name" "$(grep -m3 -E 'geo::|work::' "$TMP/cxxraw.folded")"

profile "$TMP/rs.folded" -F 999 -- "$W/rustwork" 1.5 || fail "rustwork run" "$(cat "$TMP/rs.folded.err")"
at_least "Rust legacy: rustwork::geo::relax" "$(share "$TMP/rs.folded" rustwork rustwork::geo::relax)" 0.35
at_least "Rust legacy: rustwork::geo::deep::smooth" \
	"$(share "$TMP/rs.folded" rustwork rustwork::geo::deep::smooth)" 0.35
n=$(samples_matching "$TMP/rs.folded" '^rustwork;.*;rustwork::main;rustwork::geo::relax$')
enough "$n" "$TMP/rs.folded" rustwork 0.35 && pass "Rust legacy: relax under rustwork::main, no hash ($n)" ||
	fail "Rust legacy: relax under rustwork::main, no hash" "$n: $(grep -m3 relax "$TMP/rs.folded")"

profile "$TMP/rsraw.folded" -F 999 --no-demangle -- "$W/rustwork" 1.5 ||
	fail "rustwork --no-demangle run" "$(cat "$TMP/rsraw.folded.err")"
n=$(samples_matching "$TMP/rsraw.folded" ';_ZN8rustwork3geo5relax17h[0-9a-f]{16}E$')
enough "$n" "$TMP/rsraw.folded" rustwork 0.35 && pass "Rust --no-demangle: _ZN8rustwork3geo5relax17h...E ($n)" ||
	fail "Rust --no-demangle: _ZN8rustwork3geo5relax17h...E" "$n: $(grep -m3 relax "$TMP/rsraw.folded")"
n=$(samples_matching "$TMP/rsraw.folded" 'rustwork::')
[ "$n" -eq 0 ] && pass "Rust --no-demangle: no demangled name" ||
	fail "Rust --no-demangle: no demangled name" "$(grep -m3 rustwork:: "$TMP/rsraw.folded")"

# Rust v0 mangling (_RNvNtCs<hash>_8rustwork3geo5relax): demangled the same,
# without the crate hash.
if [ ! -x "$W/rustwork-v0" ]; then
	skip "Rust v0" "$W/rustwork-v0 not built: no rustc (tools/install-deps.sh installs rustc)"
else
	profile "$TMP/v0.folded" -F 999 -- "$W/rustwork-v0" 1.5 ||
		fail "rustwork-v0 run" "$(cat "$TMP/v0.folded.err")"
	at_least "Rust v0: rustwork::geo::relax" "$(share "$TMP/v0.folded" rustwork-v0 rustwork::geo::relax)" 0.35
	at_least "Rust v0: rustwork::geo::deep::smooth" \
		"$(share "$TMP/v0.folded" rustwork-v0 rustwork::geo::deep::smooth)" 0.35
	n=$(samples_matching "$TMP/v0.folded" '(^|;)_R')
	[ "$n" -eq 0 ] && pass "Rust v0: no mangled name left" ||
		fail "Rust v0: no mangled name left" "$(grep -m3 -E '(^|;)_R' "$TMP/v0.folded")"
	profile "$TMP/v0raw.folded" -F 999 --no-demangle -- "$W/rustwork-v0" 1.5 ||
		fail "rustwork-v0 --no-demangle run" "$(cat "$TMP/v0raw.folded.err")"
	n=$(samples_matching "$TMP/v0raw.folded" ';_RNvNtCs[0-9A-Za-z]+_8rustwork3geo5relax$')
	enough "$n" "$TMP/v0raw.folded" rustwork-v0 0.35 &&
		pass "Rust v0 --no-demangle: _RNvNtCs..._8rustwork3geo5relax ($n)" ||
		fail "Rust v0 --no-demangle: _RNvNtCs..._8rustwork3geo5relax" \
			"$n: $(grep -m3 relax "$TMP/v0raw.folded")"
fi

# pprof carries both names: go tool pprof -raw prints a function as
# "name file:line s=N(system_name)", the parenthesis only when system_name
# differs from name. With --no-demangle both are the mangled name.
pprof_names() {
	local raw rawnd
	profile "$TMP/cxx.pb.gz" -F 999 --format pprof -- "$W/cxxwork" 1 ||
		{ fail "cxxwork --format pprof run" "$(cat "$TMP/cxx.pb.gz.err")"; return; }
	profile "$TMP/cxxnd.pb.gz" -F 999 --format pprof --no-demangle -- "$W/cxxwork" 1 ||
		{ fail "cxxwork --format pprof --no-demangle run" "$(cat "$TMP/cxxnd.pb.gz.err")"; return; }
	mkdir -p "$TMP/home"
	raw=$(gopprof -raw "$TMP/cxx.pb.gz") && rawnd=$(gopprof -raw "$TMP/cxxnd.pb.gz") ||
		{ fail "pprof: go tool pprof -raw of cxxwork" "$(cat "$TMP/gopprof.err")"; return; }
	raw=$(sed -n '/^Locations/,/^Mappings/p' <<<"$raw")
	rawnd=$(sed -n '/^Locations/,/^Mappings/p' <<<"$rawnd")
	grep -qF "$RELAX " <<<"$raw" && grep -F "$RELAX " <<<"$raw" | grep -q '(_ZN3geo4GridIdE5relaxEi)$' &&
		grep -F "$LAMBDA " <<<"$raw" | grep -q '(_ZZN4work5churnEiENKUliE_clEi)$' &&
		pass "pprof: name demangled, system_name mangled" ||
		fail "pprof: name demangled, system_name mangled" "$(grep -E 'relax|churn' <<<"$raw" | head -4)"
	grep -qE ' _ZN3geo4GridIdE5relaxEi [^ ]*:[0-9]+ s=[0-9]+$' <<<"$rawnd" &&
		grep -qE ' _ZZN4work5churnEiENKUliE_clEi [^ ]*:[0-9]+ s=[0-9]+$' <<<"$rawnd" &&
		! grep -qE 'geo::|work::' <<<"$rawnd" &&
		pass "pprof --no-demangle: the mangled name is the name" ||
		fail "pprof --no-demangle: the mangled name is the name" "$(grep -E 'relax|churn' <<<"$rawnd" | head -4)"
	profile "$TMP/long.pb.gz" -F 999 --format pprof -- "$W/longname" 1 ||
		{ fail "longname --format pprof run" "$(cat "$TMP/long.pb.gz.err")"; return; }
	raw=$(gopprof -raw "$TMP/long.pb.gz") ||
		{ fail "pprof: go tool pprof -raw of longname" "$(cat "$TMP/gopprof.err")"; return; }
	[ "${#LONG}" -gt 3000 ] && grep -F -- " $LONG " <<<"$raw" | grep -qE '[(]_Z9spin_long[A-Za-z0-9_]+[)]$' &&
		pass "pprof: a ${#LONG}-character name whole, with its system_name" ||
		fail "pprof: a ${#LONG}-character name whole" "$(grep -o 'spin_long.\{0,80\}' <<<"$raw" | head -2)"
}
# Offline, a HOME and caches of its own, as formats.sh.
gopprof() {
	HOME=$TMP/home GOCACHE=$TMP/gocache GOPROXY=off PPROF_TMPDIR=$TMP \
		timeout 60 go tool pprof -symbolize=none "$@" 2>"$TMP/gopprof.err"
}
if command -v go >/dev/null; then
	pprof_names
else
	skip "pprof names" "go tool pprof not installed (tools/install-deps.sh installs golang-go)"
fi

# Long names stay whole: a 4360-character demangled template name (the
# longname workload) in folded, samples, top and pprof; the SVG's tooltip
# (and title) keep its first 400 characters, then "..".
if profile "$TMP/long.%f" -F 999 --format folded,samples,top,svg -- "$W/longname" 1; then
	n=$(samples_matching "$TMP/long.folded" '(^|;)double spin_long<')
	[ "${LONG:0:10}" = "spin_long<" ] && [ "$n" -eq 0 ] &&
		pass "long name: no return type in folded" ||
		fail "long name: no return type in folded" "$n: $(grep -m1 -o '.\{0,20\}spin_long.\{0,40\}' "$TMP/long.folded")"
	[ "${#LONG}" -gt 3000 ] && enough "$(samples_with "$TMP/long.folded" "$LONG")" "$TMP/long.folded" longname 0.8 &&
		pass "long name: whole in folded (${#LONG} characters)" ||
		fail "long name: whole in folded (${#LONG} characters)" "$(grep -m1 -o 'spin_long.\{0,80\}' "$TMP/long.folded")"
	n=$(grep -cF -- ";$LONG" "$TMP/long.samples")
	enough "$n" "$TMP/long.folded" longname 0.8 && pass "long name: whole in samples ($n lines)" ||
		fail "long name: whole in samples" "$n lines: $(grep -m1 -o 'spin_long.\{0,80\}' "$TMP/long.samples")"
	grep -qF -- "  $LONG" "$TMP/long.top" && pass "long name: whole in top" ||
		fail "long name: whole in top" "$(grep -o 'spin_long.\{0,80\}' "$TMP/long.top")"
	python3 - "$TMP/long.svg" "$LONG" <<'EOF' && pass "long name: svg tooltip is its first 400 characters and .." ||
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
want = sys.argv[2][:400] + ".. ("
titles = [t.text for t in ET.parse(sys.argv[1]).getroot().iter(NS + "title")]
sys.exit(not any(t.startswith(want) for t in titles))
EOF
		fail "long name: svg tooltip is its first 400 characters and .." "$(grep -m1 -o 'spin_long.\{0,80\}' "$TMP/long.svg")"
else
	fail "longname run" "$(cat "$TMP/long.%f.err")"
fi

# --format top shows the same names: the two burning functions lead.
profile "$TMP/cxx.top" -F 999 --format top --top 5 -- "$W/cxxwork" 1 ||
	fail "cxxwork --format top run" "$(cat "$TMP/cxx.top.err")"
rows=$(sed -n '3,4p' "$TMP/cxx.top" | sed -E 's/^ *([^ ]+ +){5}//' | sort | tr '\n' '|')
[ "$rows" = "$RELAX|$LAMBDA|" ] && head -n1 "$TMP/cxx.top" | grep -q '; showing 5 of ' &&
	pass "--format top: the two C++ functions lead" ||
	fail "--format top: the two C++ functions lead" "$(head -5 "$TMP/cxx.top")"
