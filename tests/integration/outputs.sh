#!/usr/bin/env bash
# Outputs never harm the machine (issue #24; docs/bpfsampler.8, FILES):
# -o onto a device, a FIFO, a pipe or a symlink writes through it and
# leaves it what it was; a directory or block device is refused; a link,
# FIFO or file another user put in a sticky world-writable folder is
# refused (the kernel's fs.protected_* rules, which read 0 here, applied
# by bpfsampler itself); a run killed at any phase leaves the old profile
# and nothing else; the agent's metrics file, log and spool follow the
# same rules. Every node here is made in the test's own folder.
source "$(dirname "$0")/lib.sh"
require_root outputs

# uid 65534 owns what is "planted": the folder must be searchable to it
# for the kernel's own checks to be the only thing in the way.
chmod 755 "$TMP"
NOBODY=65534

# run OUT [ARGS...]: a short profile of a busy shell into OUT (stderr in
# $TMP/run.err); returns bpfsampler's status. A command, so that there is
# a profile to write on an idle machine too.
run() {
	local out=$1
	shift
	"$BPFS" -F 499 -o "$out" "$@" -- sh -c 'i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done' \
		2>"$TMP/run.err"
}
# folded FILE: FILE holds folded lines (stack, a space, a count).
folded() { [ -s "$1" ] && awk 'NF < 2 || $NF !~ /^[0-9]+$/ { bad = 1 } END { exit bad }' "$1"; }
errtail() { grep -v '^ ' "$TMP/run.err" | tail -2; }

# --- what -o names ---

# A character device (our own node with /dev/null's numbers): written in
# place; still a character device with the same numbers, not a file.
mknod "$TMP/null" c 1 3
run "$TMP/null"
rc=$?
what=$(stat -c '%F %t:%T' "$TMP/null")
[ $rc = 0 ] && [ "$what" = "character special file 1:3" ] &&
	pass "-o a character device: written in place, still $what" ||
	fail "-o a character device: still a device with its numbers" "exit $rc, now: $what; $(errtail)"

# A symlink to a file: the target gets the profile, the link stays a link.
echo "old;profile 1" >"$TMP/target"
ln -s target "$TMP/link"
run "$TMP/link"
rc=$?
[ $rc = 0 ] && [ -L "$TMP/link" ] && [ "$(readlink "$TMP/link")" = target ] &&
	folded "$TMP/target" &&
	pass "-o a symlink: the target written, the link still a link" ||
	fail "-o a symlink: the target written, the link kept" \
		"exit $rc; $(ls -l "$TMP/link" "$TMP/target"); $(errtail)"

# A FIFO with a reader: the reader gets the profile, the FIFO stays one.
mkfifo "$TMP/fifo"
timeout 60 cat "$TMP/fifo" >"$TMP/fifo.got" &
reader=$!
run "$TMP/fifo"
rc=$?
wait $reader
[ $rc = 0 ] && [ -p "$TMP/fifo" ] && folded "$TMP/fifo.got" &&
	pass "-o a FIFO: the reader got the profile ($(wc -l <"$TMP/fifo.got") lines), still a FIFO" ||
	fail "-o a FIFO: the reader got the profile" \
		"exit $rc; $(stat -c %F "$TMP/fifo"), $(wc -c <"$TMP/fifo.got") bytes read; $(errtail)"

# A process substitution (/dev/fd/63, a pipe): the profile arrives.
run >(cat >"$TMP/subst.got")
rc=$?
for _ in $(seq 50); do folded "$TMP/subst.got" && break; sleep 0.1; done
[ $rc = 0 ] && folded "$TMP/subst.got" &&
	pass "-o >(cat > FILE): the profile arrives ($(wc -l <"$TMP/subst.got") lines)" ||
	fail "-o >(cat > FILE): the profile arrives" "exit $rc; $(errtail)"

# A listening unix socket: connected to, the listener gets the profile.
python3 - "$TMP/sock" "$TMP/sock.got" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(1)
s.settimeout(60)
c, _ = s.accept()
with open(sys.argv[2], "wb") as f:
    while (d := c.recv(65536)):
        f.write(d)
PY
listener=$!
for _ in $(seq 100); do [ -S "$TMP/sock" ] && break; sleep 0.05; done
run "$TMP/sock"
rc=$?
wait $listener
[ $rc = 0 ] && [ -S "$TMP/sock" ] && folded "$TMP/sock.got" &&
	pass "-o a unix socket: the listener got the profile ($(wc -l <"$TMP/sock.got") lines)" ||
	fail "-o a unix socket: the listener got the profile" "exit $rc; $(errtail)"

# A block device: refused. Its numbers are a major no driver has here
# (240-254 are for local use; one not in /proc/devices), so even a
# mistaken open could not reach a disk.
major=$(awk '/^Block/ { b = 1 } b && $1 ~ /^[0-9]+$/ { used[$1] = 1 }
	END { for (m = 240; m < 255; m++) if (!used[m]) { print m; exit } }' /proc/devices)
mknod "$TMP/blk" b "$major" 0
run "$TMP/blk"
rc=$?
[ $rc != 0 ] && grep -q "output file $TMP/blk: is a block device" "$TMP/run.err" &&
	[ "$(stat -c %F "$TMP/blk")" = "block special file" ] &&
	pass "-o a block device: refused with its name (exit $rc), left as it was" ||
	fail "-o a block device: refused with a clear error" \
		"exit $rc, now $(stat -c %F "$TMP/blk"); $(errtail)"

# A directory: refused, left empty.
mkdir "$TMP/dir"
run "$TMP/dir"
rc=$?
[ $rc != 0 ] && grep -q "output file $TMP/dir: is a directory; give a file name" "$TMP/run.err" &&
	[ -d "$TMP/dir" ] && [ -z "$(ls -A "$TMP/dir")" ] &&
	pass "-o a directory: refused with its name (exit $rc), left empty" ||
	fail "-o a directory: refused with a clear error" "exit $rc; $(errtail)"

# --- a sticky world-writable folder, with another user's entries ---

S=$TMP/sticky
mkdir "$S"
chmod 1777 "$S"
echo "root's own" >"$TMP/rootfile"
cp "$TMP/rootfile" "$TMP/rootfile.orig"
mkdir "$TMP/victim"
# planted by uid 65534 (chown -h: the owner of the link itself)
ln -s "$TMP/rootfile" "$S/link"
ln -s "$TMP/victim" "$S/dirlink"
mkfifo "$S/fifo"
echo "theirs" >"$S/reg"
chown -h $NOBODY:$NOBODY "$S/link" "$S/dirlink" "$S/fifo" "$S/reg"

# refused NAME PATH RULE: -o PATH fails, naming PATH and the kernel rule.
refused() {
	run "$2"
	rc=$?
	[ $rc != 0 ] && grep -q "output file $2: .*owned by uid $NOBODY in a sticky directory.*fs.$3" \
		"$TMP/run.err"
}
refused link "$S/link" protected_symlinks && cmp -s "$TMP/rootfile" "$TMP/rootfile.orig" &&
	[ -L "$S/link" ] &&
	pass "sticky folder: another user's symlink to a root file refused (exit $rc), the file untouched" ||
	fail "sticky folder: another user's symlink refused, its target untouched" \
		"exit $rc; target now: $(head -c 80 "$TMP/rootfile"); $(errtail)"
refused dirlink "$S/dirlink/p.folded" protected_symlinks && [ -z "$(ls -A "$TMP/victim")" ] &&
	pass "sticky folder: another user's link to a directory refused on the way (exit $rc)" ||
	fail "sticky folder: a link on the way refused" "exit $rc; $(ls -A "$TMP/victim"); $(errtail)"
timeout 15 cat "$S/fifo" >"$TMP/planted.got" &
reader=$!
refused fifo "$S/fifo" protected_fifos
ok=$?
kill $reader 2>/dev/null
wait $reader 2>/dev/null
[ $ok = 0 ] && [ ! -s "$TMP/planted.got" ] && [ -p "$S/fifo" ] &&
	pass "sticky folder: another user's FIFO refused (exit $rc), nothing written to it" ||
	fail "sticky folder: another user's FIFO refused, nothing written" \
		"exit $rc; $(wc -c <"$TMP/planted.got") bytes read; $(errtail)"
refused reg "$S/reg" protected_regular && [ "$(cat "$S/reg")" = theirs ] &&
	pass "sticky folder: another user's file refused (exit $rc), left as it was" ||
	fail "sticky folder: another user's file refused" "exit $rc; $(errtail)"
# the contrast: the same kind of link, root's own, is followed
ln -s "$TMP/rootfile" "$S/mylink"
run "$S/mylink"
rc=$?
[ $rc = 0 ] && folded "$TMP/rootfile" && [ -L "$S/mylink" ] &&
	pass "sticky folder: the caller's own symlink is followed, its target written" ||
	fail "sticky folder: the caller's own symlink followed" "exit $rc; $(errtail)"

# --- SIGKILL at every phase: the old profile intact, nothing beside it ---

K=$TMP/kill
mkdir "$K"
# has_output PID: the run holds a file in $K open (its new file, made
# before arming: with or without a name).
has_output() { ls -l /proc/"$1"/fd 2>/dev/null | grep -q -- "-> $K/"; }
# try_kill WAIT_FOR [ENV...] -- ARGS...: a run of bpfsampler ARGS (with
# ENV) into $K/p.folded, killed with SIGKILL once WAIT_FOR PID says its
# phase is reached; reached=1 if it was.
try_kill() {
	local until=$1 pid env=()
	shift
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	echo "old;profile 1" >"$K/p.folded"
	env "${env[@]}" "$BPFS" -v -F 99 -o "$K/p.folded" "$@" 2>"$TMP/kill.err" &
	pid=$!
	reached=0
	for _ in $(seq 1500); do
		"$until" $pid && reached=1 && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.01
	done
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
}
# killed_at PHASE WAIT_FOR [ENV...] -- ARGS...: then $K holds the old
# profile, unchanged, and nothing else. A phase missed (a busy machine may
# run through arming before the poll sees it) is tried again, 3 times.
killed_at() {
	local phase=$1 try
	shift
	for try in 1 2 3; do
		try_kill "$@"
		[ $reached = 1 ] && break
		rm -f "$K"/.tmp.*
	done
	if [ $reached = 0 ]; then
		fail "SIGKILL while $phase: the phase was reached" "$(grep -v '^ ' "$TMP/kill.err" | tail -2)"
	elif [ "$(cat "$K/p.folded")" = "old;profile 1" ] && [ "$(ls -A "$K")" = p.folded ]; then
		pass "SIGKILL while $phase: the old profile intact, nothing else in its folder"
	else
		fail "SIGKILL while $phase: the old profile intact, nothing else" \
			"$(ls -A "$K" | tr '\n' ' '); $(head -c 80 "$K/p.folded")"
	fi
	rm -f "$K"/.tmp.* # a failure's leftovers do not fail the next phase
}
# arming: the output is open, sampling has not started (BPF loading, the
# first unwind tables: a fraction of a second)
arming() { has_output "$1" && ! grep -q '^bpfsampler: sampling' "$TMP/kill.err"; }
sampling() { grep -q '^bpfsampler: sampling' "$TMP/kill.err" && sleep 0.3; }
# writing: the profile written to its new file, not yet in place (a debug
# knob holds it there for 20 s); a busy command, whose end ends sampling,
# so that there is a profile to write
writing() { grep -q 'BPFS_DEBUG_WRITE_PAUSE=.*not yet in place' "$TMP/kill.err"; }
killed_at arming arming -- -d 20
killed_at sampling sampling -- -d 20
killed_at writing writing BPFS_DEBUG_WRITE_PAUSE=20000 -- \
	-- sh -c 'i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done'

# --- the agent's files under the same rules ---

# agent ARGS...: a 2.5 s agent run, log in $TMP/agent.err; its status.
agent() {
	"$BPFS" agent --interval 1 -d 2.5 -F 99 "$@" 2>"$TMP/agent.err"
}
echo "keep" >"$TMP/rootmetrics"
ln -s "$TMP/rootmetrics" "$S/m.prom"
chown -h $NOBODY:$NOBODY "$S/m.prom"
agent --output-dir "$TMP/spool1" --metrics-file "$S/m.prom"
[ "$(cat "$TMP/rootmetrics")" = keep ] && [ -L "$S/m.prom" ] &&
	grep -q "metrics file $S/m.prom: .*owned by uid $NOBODY in a sticky directory" "$TMP/agent.err" &&
	pass "agent: a metrics file planted as a symlink in a sticky folder refused, its target untouched" ||
	fail "agent: a planted metrics symlink refused" \
		"target: $(head -c 80 "$TMP/rootmetrics"); $(grep -v '^ ' "$TMP/agent.err" | tail -2)"

ln -s metrics.prom "$TMP/m.link"
agent --output-dir "$TMP/spool2" --metrics-file "$TMP/m.link"
[ -L "$TMP/m.link" ] && grep -q '^bpfsampler_' "$TMP/metrics.prom" &&
	pass "agent: a metrics file given as a symlink elsewhere: the target written, the link kept" ||
	fail "agent: metrics through a symlink" "$(ls -l "$TMP"/m*; grep -v '^ ' "$TMP/agent.err" | tail -2)"

# a FIFO nobody reads: the agent does not wait for a reader (it would
# stop sampling), it says so and goes on
mkfifo "$TMP/m.fifo"
timeout 30 "$BPFS" agent --interval 1 -d 2.5 -F 99 --output-dir "$TMP/spool4" \
	--metrics-file "$TMP/m.fifo" 2>"$TMP/agent.err"
rc=$?
n=$(grep -c "window .* samples" "$TMP/agent.err")
[ $rc = 0 ] && [ "$n" -ge 1 ] && [ -p "$TMP/m.fifo" ] &&
	grep -q "metrics file $TMP/m.fifo: .*No such device or address" "$TMP/agent.err" &&
	pass "agent: a metrics FIFO with no reader: not waited for, $n windows, the error said" ||
	fail "agent: a metrics FIFO with no reader is not waited for" \
		"exit $rc, $n windows; $(grep -v '^ ' "$TMP/agent.err" | tail -2)"

ln -s "$TMP/victim" "$S/spool"
chown -h $NOBODY:$NOBODY "$S/spool"
agent --output-dir "$S/spool"
rc=$?
[ $rc != 0 ] && [ -z "$(ls -A "$TMP/victim")" ] &&
	grep -q "spool $S/spool: .*symlink owned by uid $NOBODY" "$TMP/agent.err" &&
	pass "agent: a spool directory planted as a symlink refused (exit $rc), its target untouched" ||
	fail "agent: a planted spool symlink refused" \
		"exit $rc; $(ls -A "$TMP/victim"); $(grep -v '^ ' "$TMP/agent.err" | tail -2)"
mkdir "$S/theirspool"
chown $NOBODY:$NOBODY "$S/theirspool"
agent --output-dir "$S/theirspool"
rc=$?
[ $rc != 0 ] && [ -z "$(ls -A "$S/theirspool")" ] &&
	pass "agent: a spool directory another user made in a sticky folder refused (exit $rc)" ||
	fail "agent: another user's spool directory refused" \
		"exit $rc; $(ls -A "$S/theirspool"); $(grep -v '^ ' "$TMP/agent.err" | tail -2)"
ln -s "$TMP/rootfile.orig" "$S/log"
chown -h $NOBODY:$NOBODY "$S/log"
cp "$TMP/rootfile.orig" "$TMP/rootfile.copy"
agent --output-dir "$TMP/spool3" --log-file "$S/log"
rc=$?
[ $rc != 0 ] && cmp -s "$TMP/rootfile.orig" "$TMP/rootfile.copy" &&
	grep -q "log file $S/log: .*fs.protected_symlinks" "$TMP/agent.err" &&
	pass "agent: a log file planted as a symlink refused (exit $rc), its target untouched" ||
	fail "agent: a planted log symlink refused" "exit $rc; $(grep -v '^ ' "$TMP/agent.err" | tail -2)"
