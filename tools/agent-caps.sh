#!/usr/bin/env bash
# Which capabilities the agent needs (docs/agent.md, "Privileges"):
# profiles, as uid 65534 with only a given capability set, three processes
# of other users whose frames each need one kind of access: a binary in a
# 0700 root directory, a JIT with a /tmp/perf-PID.map, a memfd executable.
# Runs the full set, then the set minus each capability, and prints how
# many samples of each were named. As root, after `make all workloads`:
#   flock /tmp/bpfs-integ.lock tools/agent-caps.sh
set -u
cd "$(dirname "$0")/.."
W=.output/workloads
SET=bpf,perfmon,sys_ptrace,dac_read_search,checkpoint_restore,syslog
[ "$(id -u)" = 0 ] || { echo "agent-caps: run as root" >&2; exit 1; }

PUB=$(mktemp -d /tmp/bpfs-caps.XXXXXX)     # readable by everyone
PRIV=$(mktemp -d /root/bpfs-caps.XXXXXX)   # 0700: needs DAC_READ_SEARCH
trap 'rm -rf "$PUB" "$PRIV"' EXIT
chmod 755 "$PUB"
cp bpfsampler "$W/jit" "$W/memfd_run" "$PUB/"
cp "$W/cpuburn" "$PUB/cpuburn_pub"
cp "$W/cpuburn" "$PRIV/cpuburn_priv"
mkdir "$PUB/out" && chown 65534:65534 "$PUB/out"

named() { # FILE COMM FRAME -> "named/all" samples of COMM with FRAME
	[ -s "$1" ] || { echo -; return; }
	awk -v c="$2" -v f="$3" 'index($0, c) == 1 { t += $NF; if (index($0, ";" f)) n += $NF }
		END { printf "%d/%d", n, t }' "$1"
}

kernel_unnamed() { # FILE -> "unnamed/all" samples with kernel frames
	[ -s "$1" ] || { echo -; return; }
	awk 'index($0, "_[k]") { t += $NF; if (index($0, "[kernel]+0x")) n += $NF }
		END { printf "%d/%d", n, t }' "$1"
}

run() { # label caps
	local out=$PUB/out/$1 c
	c=$(echo "$2" | sed 's/^/+/; s/,/,+/g')
	"$PRIV/cpuburn_priv" 3000000000 1 >/dev/null &
	local p1=$!
	setpriv --reuid=1234 --regid=1234 --clear-groups "$PUB/jit" 4 >/dev/null &
	local p2=$!
	setpriv --reuid=1234 --regid=1234 --clear-groups "$PUB/memfd_run" "$PUB/cpuburn_pub" \
		3000000000 1 >/dev/null &
	local p3=$!
	sleep 0.3
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,"$c" \
		--ambient-caps=-all,"$c" --bounding-set=-all,"$c" \
		"$PUB/bpfsampler" -d 2 -F 199 --annotate -o "$out" 2>"$out.err"
	local rc=$?
	kill $p1 $p2 $p3 2>/dev/null
	wait $p1 $p2 $p3 2>/dev/null
	printf '%-28s exit %d  0700-dir binary %-9s JIT perf map %-9s memfd %-9s kernel frames unnamed %s\n' \
		"$1" $rc "$(named "$out" "cpuburn_priv;" burn_loop)" "$(named "$out" "jit;" jit_hot_loop)" \
		"$(named "$out" "memfd:" burn_loop)" "$(kernel_unnamed "$out")"
}

run "all of $SET" "$SET"
for drop in ${SET//,/ }; do
	run "without $drop" "$(echo ",$SET," | sed "s/,$drop,/,/; s/^,//; s/,$//")"
done
