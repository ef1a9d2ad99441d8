#!/usr/bin/env bash
# bpfsampler agent: windows aligned to the clock, each a pprof that go tool
# pprof reads with the window's time and duration; nothing half-written
# under a final name; a kill -9 leaves earlier windows intact and no
# temporary after a restart; pushed to a loopback stand-in for Pyroscope
# through an outage and 503s, every window once and in order per series,
# the token never on argv or in the log.
. "$(dirname "$0")/lib.sh"
require_root

export HOME=$TMP/home GOCACHE=$TMP/gocache GOFLAGS=-mod=mod
mkdir -p "$HOME"
pprof_raw() { go tool pprof -symbolize=none -raw "$1" 2>/dev/null; }

# --- windows ---------------------------------------------------------------
D=$TMP/spool
"$W/shares" 14 >/dev/null &
work=$!
# A watcher that checks every final name it ever sees: whole gzip files only.
(
	while [ ! -e "$TMP/stop-watch" ]; do
		for f in "$D"/*.pb.gz; do
			[ -e "$f" ] || continue
			gzip -t "$f" 2>/dev/null || echo "$f" >>"$TMP/half-written"
		done
		sleep 0.02
	done
) &
watcher=$!
"$BPFS" agent --interval 2 -d 12.5 -F 199 --output-dir "$D" \
	--metrics-file "$TMP/agent.prom" 2>"$TMP/agent.log"
rc=$?
touch "$TMP/stop-watch"
wait $watcher
kill $work 2>/dev/null
wait $work 2>/dev/null
[ $rc = 0 ] && pass "agent -d ends with status 0" || fail "agent -d ends with status 0" "$rc: $(tail -3 "$TMP/agent.log")"

# windows of shares: full ones are the 2 s between two boundaries
full=0 bad=""
for f in "$D"/*.shares.*.pb.gz; do
	raw=$(pprof_raw "$f") || { bad="$bad $f (pprof refuses it)"; continue; }
	stamp=${f##*.shares.}
	stamp=${stamp%.pb.gz}
	want=$(date -u -d "$(echo "$stamp" | sed -E 's/(....)(..)(..)T(..)(..)(..)Z/\1-\2-\3 \4:\5:\6/')" +%s)
	# -raw prints "Time: <RFC3339 with ns>" and "Duration: <go duration>"
	t=$(sed -n 's/^Time: //p' <<<"$raw")
	dur=$(sed -n 's/^Duration: //p' <<<"$raw")
	got=$(date -u -d "${t% UTC}" +%s 2>/dev/null)
	[ "$got" = "$want" ] || bad="$bad $f (time $t, name $stamp)"
	case $dur in 2s | 2.0*s | 1.99*s) full=$((full + 1)) ;; esac
done
if [ $full -ge 5 ] && [ -z "$bad" ]; then
	pass "--interval 2 for 12 s: $full complete windows, each read by go tool pprof with its time"
else
	fail "--interval 2: complete windows" "$full full; problems:$bad; $(ls "$D")"
fi
if [ ! -e "$TMP/half-written" ]; then
	pass "nothing half-written ever seen under a final name"
else
	fail "nothing half-written under a final name" "$(sort -u "$TMP/half-written")"
fi
n=$(grep -c 'bpfsampler: window ' "$TMP/agent.log")
[ "$n" -ge 6 ] && pass "one status line per window ($n)" || fail "one status line per window" "$n"
# The agent keeps the kernel's symbol names compressed (namepack.h): each
# kernel location of its windows is named as /proc/kallsyms names its
# address (a return address's call: the symbol at or below address - 1).
# BPF programs are named while they are loaded (bpfprogs), not from the
# names kept: left out.
for f in "$D"/*.pb.gz; do pprof_raw "$f"; done | awk '/^Locations/ { l = 1; next } /^Mappings/ { l = 0 }
	l && $2 ~ /^0xffff/ && $3 ~ /^M=/ { print $2, $4 }' | sort -u >"$TMP/klocs"
awk '$2 ~ /^[tTwW]$/ { print $1, $3 }' /proc/kallsyms >"$TMP/ksyms"
read -r good total < <(python3 - "$TMP/ksyms" "$TMP/klocs" 2>"$TMP/kbad" <<'PYEOF'
import bisect, sys
syms = sorted((int(a, 16), n) for a, n in (l.split()[:2] for l in open(sys.argv[1])))
addrs = [a for a, _ in syms]
good = total = 0
for line in open(sys.argv[2]):
    addr, name = line.split()[:2]
    addr = int(addr, 16)
    if name.startswith("bpf_prog_"):
        continue  # BPF programs: named while loaded, not from kallsyms
    ok = False
    for look in (addr, addr - 1):
        i = bisect.bisect_right(addrs, look) - 1
        # aliases at one address: any of them is the kernel's name
        j = i
        while j >= 0 and addrs[j] == addrs[i]:
            ok |= syms[j][1] == name
            j -= 1
    good += ok
    total += 1
    if not ok:
        print(hex(addr), name, file=sys.stderr)
print(good, total)
PYEOF
)
if [ "${total:-0}" -ge 20 ] && [ "$good" -eq "$total" ]; then
	pass "kernel frames named as /proc/kallsyms names them, from compressed names ($good of $total locations)"
else
	fail "kernel frames named as /proc/kallsyms names them" "$good of $total; named otherwise: $(head -5 "$TMP/kbad")"
fi
grep -q '^bpfsampler_windows_written_total [1-9]' "$TMP/agent.prom" &&
	grep -q '^bpfsampler_samples_total{event="cpu-clock"} [1-9]' "$TMP/agent.prom" &&
	grep -q '^bpfsampler_unwind_table_rows [1-9]' "$TMP/agent.prom" &&
	grep -q '^bpfsampler_unwind_tables_built_total [1-9]' "$TMP/agent.prom" &&
	grep -q '^bpfsampler_mappings_lost_total 0$' "$TMP/agent.prom" &&
	grep -q '^bpfsampler_records_unsent_total [0-9]' "$TMP/agent.prom" &&
	grep -q '^bpfsampler_records_out_of_order_total 0$' "$TMP/agent.prom" &&
	pass "metrics file written" || fail "metrics file written" "$(head -20 "$TMP/agent.prom")"

# --- a process that exits mid-window --------------------------------------
# Folded into the open window as it goes (BPFS_DEBUG_FOLD_MIN=0: from the
# first process known; 256 by default), its mappings released 2-4 s after
# its exit rather than two windows later: its samples are still named, in
# its own code, under its own service.
D=$TMP/spool-fold
BPFS_DEBUG_FOLD_MIN=0 "$BPFS" agent -vv --interval 60 -d 9 -F 199 --output-dir "$D" \
	2>"$TMP/fold.log" &
agent=$!
wait_line "$TMP/fold.log" "sampling at"
"$W/shares" 1.5 >/dev/null
wait $agent
rc=$?
named=0 all=0
for f in "$D"/*.shares.*.pb.gz; do
	[ -e "$f" ] || continue
	# -raw samples: "COUNT NS: LOC LOC ..."; locations "ID: 0xADDR M=1 share_fn_3 ..."
	read -r n a < <(pprof_raw "$f" | awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0; l = 1; next }
		s && /^ *[0-9]+ +[0-9]+: / { k++; c[k] = $1; all += $1; st[k] = $0 }
		l && / share_fn_[0-9]+ / { sub(":", "", $1); loc[$1] = 1 }
		END { for (i = 1; i <= k; i++) { m = split(st[i], f, /[: ]+/)
			for (j = 4; j <= m; j++) if (f[j] in loc) { n += c[i]; break } }
			print n + 0, all + 0 }')
	named=$((named + n)) all=$((all + a))
done
released=$(grep -o 'fold: [0-9]* processes known, [0-9]* released' "$TMP/fold.log" | awk '{ r = $5 } END { print r + 0 }')
if [ $rc = 0 ] && [ "$all" -ge 150 ] && [ "$named" -ge $((all * 9 / 10)) ] && [ "$released" -ge 1 ]; then
	pass "an exited process folded mid-window: $named of $all samples in share_fn_k under shares; $released processes released by folds"
else
	fail "an exited process folded mid-window" "rc $rc, $named of $all samples named, $released released by folds; $(ls "$D"); $(grep -E 'fold|window' "$TMP/fold.log" | tail -4)"
fi

# --- kill -9 and restart ---------------------------------------------------
D=$TMP/crash
"$BPFS" agent --interval 1 -F 99 --output-dir "$D" 2>"$TMP/crash.log" &
agent=$!
for _ in $(seq 100); do
	[ "$(ls "$D"/*.pb.gz 2>/dev/null | wc -l)" -ge 3 ] && break
	sleep 0.1
done
# half way into a window
sleep "0.$(( (1000000000 - 10#$(date +%N)) / 100000000 + 5 ))" 2>/dev/null || sleep 0.5
kill -9 $agent
wait $agent 2>/dev/null
before=$(cd "$D" && sha256sum *.pb.gz | sort)
# what a crash in the middle of a write leaves
echo partial >"$D/.tmp.vm.cpu-clock.x.pb.gz.999.1"
"$BPFS" agent --interval 1 -F 99 -d 2 --output-dir "$D" 2>"$TMP/restart.log"
after=$(cd "$D" && sha256sum $(awk '{ print $2 }' <<<"$before") | sort)
temps=$(find "$D" -name '.tmp.*' | wc -l)
if [ -n "$before" ] && [ "$before" = "$after" ] && [ "$temps" = 0 ]; then
	pass "kill -9, restart: no temporary left, $(wc -l <<<"$before") earlier files intact"
else
	fail "kill -9, restart" "$temps temporaries; changed: $(diff <(echo "$before") <(echo "$after") | head -5)"
fi

# --- push through an outage ------------------------------------------------
D=$TMP/push
token=tok-$RANDOM$RANDOM$RANDOM
printf '%s\n' "$token" >"$TMP/token"
chmod 600 "$TMP/token"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# a busy CPU throughout: on an idle machine some 1 s windows have no
# samples but idle ones, and an empty window is not written
"$W/shares" 15 &
load=$!
"$BPFS" agent --interval 1 -F 99 -d 14 --output-dir "$D" --app-name bpfstest \
	--push "http://127.0.0.1:$port" --push-token-file "$TMP/token" -v 2>"$TMP/push.log" &
agent=$!
sleep 0.5
argv=$(tr '\0' ' ' <"/proc/$agent/cmdline")
sleep 3 # backend down: connection refused
python3 "$ROOT/tests/tools/fake_pyroscope.py" --port "$port" --record "$TMP/rec.json" \
	--token "$token" --fail 4 --fail-status 503 2>"$TMP/fake.log" &
server=$!
wait $agent
rc=$?
kill $server $load 2>/dev/null
wait $server $load 2>/dev/null
pending=$(ls "$D"/*.pb.gz 2>/dev/null | wc -l)
sent=$(ls "$D"/sent/*.pb.gz 2>/dev/null | wc -l)
verdict=$(python3 - "$TMP/rec.json" "$D/sent" <<'PY'
import json, os, sys
rec = json.load(open(sys.argv[1]))
ok = [r for r in rec if r["status"] == 200]
keys = [(r["name"], r["from"], r["until"]) for r in ok]
dups = len(keys) - len(set(keys))
order = 0
last = {}
for name, f, u in keys:
    if name in last and int(f) < last[name]:
        order += 1
    last[name] = int(f)
metas = [m for m in os.listdir(sys.argv[2]) if m.endswith(".meta")]
fails = sum(1 for r in rec if r["status"] == 503)
print(f"{len(ok)} {dups} {order} {len(metas)} {fails}")
PY
)
read -r accepted dups disorder metas fails <<<"$verdict"
if [ $rc = 0 ] && [ "$pending" = 0 ] && [ "$accepted" -ge 10 ] && [ "$accepted" = "$sent" ] &&
	[ "$dups" = 0 ] && [ "$disorder" = 0 ] && [ "$fails" -ge 1 ]; then
	pass "push through 3 s down and 503s: $accepted windows, each once, in order per series"
else
	fail "push through an outage" "rc $rc, $pending pending, $sent sent, $accepted accepted, $dups duplicates, $disorder out of order, $fails 503s; $(tail -3 "$TMP/push.log")"
fi
if ! grep -q "$token" <<<"$argv" && ! grep -q "$token" "$TMP/push.log"; then
	pass "the token is neither on argv nor in the log"
else
	fail "the token stays secret" "argv: $argv"
fi

# --- SIGHUP: the config file read again, the log reopened ------------------
D=$TMP/hup
cat >"$TMP/agent.conf" <<CONF
# as --name=value on the command line
interval = 1
freq = 99
output-dir = $D
metrics-file = $TMP/hup-a.prom
log-file = $TMP/hup.log
CONF
chmod 600 "$TMP/agent.conf"
"$BPFS" agent --config "$TMP/agent.conf" -d 8 &
agent=$!
wait_line "$TMP/hup.log" 'window ' # a window written to the first files
mv "$TMP/hup.log" "$TMP/hup.log.1" # what logrotate does
sed -i "s|hup-a.prom|hup-b.prom|" "$TMP/agent.conf"
kill -HUP $agent
wait $agent
rc=$?
if [ $rc = 0 ] && [ -s "$TMP/hup-a.prom" ] && [ -s "$TMP/hup-b.prom" ] &&
	grep -q 'window ' "$TMP/hup.log.1" && grep -q 'reloaded' "$TMP/hup.log" &&
	grep -q 'window ' "$TMP/hup.log"; then
	pass "SIGHUP: config read again (new metrics file), log reopened after rotation"
else
	fail "SIGHUP: config read again, log reopened" "rc $rc; $(ls "$TMP" | grep hup | tr '\n' ' '); $(tail -3 "$TMP/hup.log" 2>/dev/null)"
fi
