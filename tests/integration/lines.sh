#!/usr/bin/env bash
# Source lines and inline frames from DWARF: the inlined workload
# (tests/workloads/inlined.c, built with -g -O2 and frame pointers) spends
# its time in inl_mix, always inlined into run_inlined. pprof must show
# inl_mix with its file and a line of its loop, inlined into run_inlined at
# the call's line; folded output stays as it was unless --inline asks.
source "$(dirname "$0")/lib.sh"
require_root lines

SRC=$ROOT/tests/workloads/inlined.c
# the markers' lines in the source: the loop, and the call
marker() { grep -n "/\* $1 \*/" "$SRC" | cut -d: -f1; }
FIRST=$(marker INL_MIX_FIRST)
LAST=$(marker INL_MIX_LAST)
CALL=$(marker INL_CALL)
DECL=$(grep -n '^static inline .* inl_mix(' "$SRC" | cut -d: -f1)

gopprof() {
	HOME=$TMP/home GOCACHE=$TMP/gocache GOPROXY=off PPROF_TMPDIR=$TMP \
		timeout 60 go tool pprof -symbolize=none "$@" 2>"$TMP/gopprof.err"
}

# Samples whose leaf is inl_mix at a line of its loop, from -top -lines:
# "flat flat% sum% cum cum% inl_mix FILE:LINE (inline)".
loop_samples() {
	awk -v file="$SRC" -v lo="$FIRST" -v hi="$LAST" '
		$6 == "inl_mix" && $8 == "(inline)" {
			n = split($7, a, ":")
			if (a[1] == file && a[2] + 0 >= lo && a[2] + 0 <= hi) s += $1
		}
		END { print s + 0 }'
}

pprof_tests() {
	local f=$TMP/inl total top raw in_loop
	mkdir -p "$TMP/home"
	profile "$f.%f" -F 499 --format pprof,folded -- "$W/inlined" 1.5 ||
		{ fail "lines: inlined run" "$(cat "$f.%f.err")"; return; }
	total=$(total "$f.folded")
	top=$(gopprof -top -lines "$f.pb.gz") ||
		{ fail "lines: go tool pprof -top -lines" "$(cat "$TMP/gopprof.err")"; return; }
	in_loop=$(loop_samples <<<"$top")
	# the loop is nearly all the process does (the clock's system call ~2%)
	if [ "$total" -gt 200 ] && [ $((in_loop * 100)) -ge $((total * 80)) ]; then
		pass "lines: inl_mix (inline) at $SRC:$FIRST-$LAST has $in_loop of $total samples"
	else
		fail "lines: inl_mix (inline) at $SRC:$FIRST-$LAST" \
			"$in_loop of $total samples; $(head -14 <<<"$top")"
	fi

	# Location lines: inl_mix first (innermost) with its start line, then
	# the function it is inlined into, at the call's line.
	raw=$(gopprof -raw "$f.pb.gz") ||
		{ fail "lines: go tool pprof -raw" "$(cat "$TMP/gopprof.err")"; return; }
	if awk -v file="$SRC" -v call="$CALL" -v decl="$DECL" '
		/^Locations/ { on = 1; next }
		/^Mappings/ { on = 0 }
		on && prev && $1 == "run_inlined" && $2 == file ":" call { ok = 1 }
		on { prev = ($4 == "inl_mix" && index($5, file ":") == 1 && $6 == "s=" decl) }
		END { exit !ok }' <<<"$raw"; then
		pass "lines: inl_mix (from line $DECL) inlined into run_inlined at $SRC:$CALL"
	else
		fail "lines: inl_mix inlined into run_inlined at $SRC:$CALL" \
			"$(sed -n '/^Locations/,/^Mappings/p' <<<"$raw" | head -30)"
	fi

	# --no-lines: no DWARF read, so no file, no line, no inline frame.
	profile "$f-nl.pb.gz" -F 499 --format pprof --no-lines -- "$W/inlined" 0.5 ||
		{ fail "lines: --no-lines run" "$(cat "$f-nl.pb.gz.err")"; return; }
	raw=$(gopprof -raw "$f-nl.pb.gz") ||
		{ fail "lines: --no-lines -raw" "$(cat "$TMP/gopprof.err")"; return; }
	if grep -q ' run_inlined :0 s=0$' <<<"$raw" && ! grep -qE 'inl_mix|inlined\.c' <<<"$raw"; then
		pass "lines: --no-lines: run_inlined without file, line or inline frames"
	else
		fail "lines: --no-lines" "$(sed -n '/^Locations/,/^Mappings/p' <<<"$raw" | head -20)"
	fi

	# Folded output is what it was: inlined code is its function's.
	if ! grep -q '(inline)' "$f.folded" &&
		[ "$(samples_matching "$f.folded" ';main;run_inlined$')" -ge $((total * 80 / 100)) ]; then
		pass "lines: folded output unchanged without --inline"
	else
		fail "lines: folded output unchanged without --inline" "$(sort -k2 -n -t' ' "$f.folded" | tail -3)"
	fi
}

if ! command -v go >/dev/null; then
	skip "lines: pprof" "go tool pprof not installed (tools/install-deps.sh installs golang-go)"
else
	pprof_tests
fi

# --inline: the inlined function is a frame of its own, under its caller.
f=$TMP/inline.folded
if profile "$f" -F 499 --inline -- "$W/inlined" 1; then
	total=$(total "$f")
	got=$(samples_matching "$f" ';run_inlined;inl_mix [(]inline[)]$')
	[ "$total" -gt 100 ] && [ $((got * 100)) -ge $((total * 80)) ] &&
		pass "lines: --inline folded: run_inlined;inl_mix (inline) has $got of $total" ||
		fail "lines: --inline folded: run_inlined;inl_mix (inline)" \
			"$got of $total; $(sort -k2 -n -t' ' "$f" | tail -3)"
else
	fail "lines: --inline run" "$(cat "$f.err")"
fi

# No debug info (strip --strip-debug keeps the symbols): no lines, no
# inline frames of its own, no complaint; the functions are still named.
# (libc's and ld.so's frames may have inline frames: Debian's debug files
# for them may be installed, and a sample in ld.so's start-up finds them.)
cp "$W/inlined" "$TMP/inlined-nodebug" && strip --strip-debug "$TMP/inlined-nodebug"
f=$TMP/nodebug.folded
if profile "$f" -F 499 --inline -v -- "$TMP/inlined-nodebug" 1; then
	total=$(total "$f")
	got=$(samples_matching "$f" ';main;run_inlined$')
	own_inline=$(grep -c 'inl_mix (inline)' "$f")
	msgs=$(grep -iE 'warn|error|cannot' "$f.err")
	if [ "$total" -gt 100 ] && [ $((got * 100)) -ge $((total * 80)) ] &&
		[ "$own_inline" = 0 ] && [ -z "$msgs" ]; then
		pass "lines: a file without debug info: named, no inline frames, no message"
	else
		fail "lines: a file without debug info" \
			"$got of $total in run_inlined; $own_inline lines with inl_mix (inline); messages: ${msgs:-none}"
	fi
else
	fail "lines: run without debug info" "$(cat "$f.err")"
fi
