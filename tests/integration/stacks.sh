#!/usr/bin/env bash
# Stack shapes with a known answer: a 100-deep recursion whole, a function in
# a shared library named exactly, kernel frames under a syscall loop.
source "$(dirname "$0")/lib.sh"
require_root stacks

profile "$TMP/rec.folded" -F 4000 -- "$W/recurse" 100 2 || fail "recursion run" "$(cat "$TMP/rec.folded.err")"
leaf=$(samples_with "$TMP/rec.folded" recurse_leaf)
whole=$(samples_matching "$TMP/rec.folded" ';main;run_recurse;(recurse;){100}recurse_leaf(;|$)')
if [ "$leaf" -lt 2000 ]; then
	fail "recursion: enough samples" "$leaf"
else
	within "recursion: whole 100-deep chain from main" "$(ratio "$whole" "$leaf")" 1 0.01
fi

profile "$TMP/lib.folded" -F 4000 -- "$W/uselib" 2 || fail "uselib run" "$(cat "$TMP/lib.folded.err")"
all=$(comm_lines "$TMP/lib.folded" uselib >"$TMP/lib.only"; total "$TMP/lib.only")
named=$(samples_matching "$TMP/lib.only" ';main;run_uselib;lib_spin(;|$)')
within "shared library: lib_spin named under main;run_uselib" "$(ratio "$named" "$all")" 1 0.05

profile "$TMP/sys.folded" -F 4000 --annotate -- "$W/syscalls" 2 || fail "syscalls run"
loop=$(samples_with "$TMP/sys.folded" syscall_loop)
kern=$(samples_matching "$TMP/sys.folded" ';syscall_loop;.*_[[]k[]]')
entry=$(samples_matching "$TMP/sys.folded" ';syscall_loop;entry_SYSCALL_64[a-z_]*_[[]k[]]')
if [ "$loop" -lt 2000 ]; then
	fail "syscalls: enough samples" "$loop"
else
	k=$(ratio "$kern" "$loop")
	if awk -v k="$k" 'BEGIN { exit !(k >= 0.5) }'; then
		pass "syscalls: kernel frames under syscall_loop ($k)"
	else
		fail "syscalls: kernel frames under syscall_loop" "only $k of $loop samples"
	fi
	within "syscalls: kernel part starts at entry_SYSCALL_64, right under syscall_loop" "$(ratio "$entry" "$kern")" 1 0.05
fi
