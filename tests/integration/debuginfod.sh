#!/usr/bin/env bash
# Symbols from debuginfod: a stripped binary whose debug file is nowhere on
# this machine is named from a real debuginfod server when DEBUGINFOD_URLS
# names it; without DEBUGINFOD_URLS, or with a server that is down or never
# answers, the run still succeeds and the frames stay module+offset.
source "$(dirname "$0")/lib.sh"
require_root debuginfod

for t in debuginfod debuginfod-find ip nsenter unshare python3 readelf; do
	if ! command -v "$t" >/dev/null; then
		fail "debuginfod: $t is missing" "run tools/install-deps.sh"
		exit 0
	fi
done

BIN=$W/shares-stripped
ID=$(readelf -n "$BIN" | awk '/Build ID/ { print $3 }')
DEBUG_FILE=$W/debugroot/.build-id/${ID:0:2}/${ID:2}.debug
# The fixture must have nothing to find locally: no debuglink, no debug
# file in the standard root (and no --debug-dir below).
if [ -z "$ID" ] || [ ! -f "$DEBUG_FILE" ] ||
	readelf -S "$BIN" | grep -q gnu_debuglink ||
	[ -e "/usr/lib/debug/.build-id/${ID:0:2}/${ID:2}.debug" ]; then
	fail "debuginfod: fixture" "$BIN must be stripped, with a build-ID, no debuglink and no local debug file (make workloads)"
	exit 0
fi
mkdir "$TMP/served"
cp "$DEBUG_FILE" "$TMP/served/shares.debug"

# debuginfod 0.188 binds every address and cannot be told otherwise: it runs
# in a network namespace of its own that has only loopback, and so does
# bpfsampler (perf events and BPF do not care which network namespace).
# Ports there are ours alone, so fixed ones are free.
NETNS=$TMP/netns
PORT=8002 DEAD_PORT=8003 SILENT_PORT=8004
server='' silent=''
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	[ -n "$silent" ] && kill "$silent" 2>/dev/null && wait "$silent" 2>/dev/null
	umount "$NETNS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
touch "$NETNS"
if ! unshare --net="$NETNS" true || ! nsenter --net="$NETNS" ip link set lo up; then
	fail "debuginfod: a private network namespace"
	exit 0
fi
# an array, not a function: env and & must run it as a command
IN_NS=(nsenter --net="$NETNS")

# nsenter execs debuginfod: $! is the server
"${IN_NS[@]}" debuginfod -F -p "$PORT" -d "$TMP/db.sqlite" -t 0 -g 0 -c 1 "$TMP/served" \
	>"$TMP/server.log" 2>&1 &
server=$!
# Ready when it serves our file: it has bound the port and indexed the
# directory. Each probe starts with an empty cache, as libdebuginfod
# remembers a miss for 10 minutes.
ready=0 deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
	kill -0 "$server" 2>/dev/null || break
	rm -rf "$TMP/probe"
	if DEBUGINFOD_URLS=http://127.0.0.1:$PORT DEBUGINFOD_CACHE_PATH=$TMP/probe \
		"${IN_NS[@]}" debuginfod-find debuginfo "$ID" >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.1
done
if [ $ready = 0 ]; then
	fail "debuginfod: server ready within 30 s" "$(tail -5 "$TMP/server.log")"
	exit 0
fi
served() { grep -c "GET /buildid/$ID/debuginfo 200" "$TMP/server.log"; }
before=$(served)

# named from the server
DEBUGINFOD_URLS=http://127.0.0.1:$PORT DEBUGINFOD_CACHE_PATH=$TMP/cache \
	"${IN_NS[@]}" "$BPFS" -o "$TMP/dfd.folded" -F 999 -- "$BIN" 1 2>"$TMP/dfd.folded.err" ||
	fail "run with DEBUGINFOD_URLS" "$(cat "$TMP/dfd.folded.err")"
[ "$(served)" -gt "$before" ] && [ -s "$TMP/cache/$ID/debuginfo" ] &&
	pass "debug file fetched from the server into DEBUGINFOD_CACHE_PATH" ||
	fail "debug file fetched from the server" "$(tail -3 "$TMP/server.log")"
total=$(comm_lines "$TMP/dfd.folded" shares-stripped >"$TMP/dfd.only"; total "$TMP/dfd.only")
under=$(samples_matching "$TMP/dfd.only" ';main;run_shares;share_fn_[0-9]+(;|$)')
within "stripped, debuginfod: share_fn_* named under main;run_shares ($under of $total)" \
	"$(awk -v a="$under" -v t="$total" 'BEGIN { printf "%.4f", t ? a / t : 0 }')" 1 0.05

# not asked without DEBUGINFOD_URLS, the same server up all the while
before=$(grep -c 'GET /buildid/' "$TMP/server.log")
env -u DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH="$TMP/cache" \
	"${IN_NS[@]}" "$BPFS" -o "$TMP/none.folded" -F 999 -- "$BIN" 1 2>"$TMP/none.folded.err" ||
	fail "run without DEBUGINFOD_URLS" "$(cat "$TMP/none.folded.err")"
named=$(samples_matching "$TMP/none.folded" ';share_fn_[0-9]+(;|$)')
unnamed=$(samples_matching "$TMP/none.folded" ';shares-stripped[+]0x[0-9a-f]+(;|$)')
asked=$(($(grep -c 'GET /buildid/' "$TMP/server.log") - before))
[ "$named" -eq 0 ] && [ "$unnamed" -gt 300 ] && [ "$asked" -eq 0 ] &&
	pass "no DEBUGINFOD_URLS: server not asked, frames show module+offset ($unnamed)" ||
	fail "no DEBUGINFOD_URLS: server not asked, frames show module+offset" \
		"named $named, unnamed $unnamed, requests $asked"

# samples whose leaf is shares-stripped+offset; samples with a share_fn_*
unnamed() { samples_matching "$1" ';shares-stripped[+]0x[0-9a-f]+$'; }
named() { samples_matching "$1" ';share_fn_[0-9]+(;|$)'; }

# nothing listens: refused at once
DEBUGINFOD_URLS=http://127.0.0.1:$DEAD_PORT DEBUGINFOD_CACHE_PATH=$TMP/cache-dead \
	"${IN_NS[@]}" "$BPFS" -o "$TMP/dead.folded" -F 999 -- "$BIN" 1 2>"$TMP/dead.folded.err"
rc=$?
n=$(named "$TMP/dead.folded") u=$(unnamed "$TMP/dead.folded")
[ $rc -eq 0 ] && [ "$n" -eq 0 ] && [ "$u" -gt 300 ] &&
	pass "server down: run succeeds, frames unnamed ($u)" ||
	fail "server down: run succeeds, frames unnamed" "exit $rc, named $n, unnamed $u: $(tail -3 "$TMP/dead.folded.err")"

# A server that accepts and never answers: left to libdebuginfod's defaults
# (90 s, 3 tries) the first lookup alone would take 4.5 minutes; the bound
# here only turns such a hang into a failure, it is not a measurement. The
# lookup runs on the thread that reads the rings, so while it waits a
# process may exit before its maps are read: its frames may be [unmapped]
# rather than module+offset; what matters is that none is named and the
# run ends well.
"${IN_NS[@]}" python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
open(sys.argv[2], "w").close()
time.sleep(600)' "$SILENT_PORT" "$TMP/silent.ready" >"$TMP/silent.log" 2>&1 &
silent=$!
for _ in $(seq 100); do [ -e "$TMP/silent.ready" ] && break; sleep 0.1; done
env -u DEBUGINFOD_TIMEOUT DEBUGINFOD_URLS=http://127.0.0.1:$SILENT_PORT \
	DEBUGINFOD_CACHE_PATH="$TMP/cache-silent" \
	timeout -k 10 120 "${IN_NS[@]}" "$BPFS" -o "$TMP/silent.folded" -F 999 -- "$BIN" 1 \
	2>"$TMP/silent.folded.err"
rc=$?
n=$(named "$TMP/silent.folded")
all=$(comm_lines "$TMP/silent.folded" shares-stripped >"$TMP/silent.only"; total "$TMP/silent.only")
[ $rc -eq 0 ] && [ "$n" -eq 0 ] && [ "$all" -gt 300 ] &&
	pass "server that never answers: run ends, succeeds, frames unnamed ($all samples)" ||
	fail "server that never answers: run ends, succeeds, frames unnamed" \
		"exit $rc (124: still waiting after 120 s), named $n of $all"
