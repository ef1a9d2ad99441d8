#!/usr/bin/env bash
# dist/bpfsampler-agent.service: systemd accepts it, and it says what
# docs/agent.md says about capabilities. Needs systemd-analyze only (no
# root, no BPF, no running systemd).
source "$(dirname "$0")/lib.sh"

UNIT=$ROOT/dist/bpfsampler-agent.service
DOC=$ROOT/docs/agent.md

if ! command -v systemd-analyze >/dev/null; then
	skip systemd_unit "systemd-analyze not installed (Debian: apt-get install systemd)"
	exit 0
fi

# The unit names the installed path; verify a copy that names the built
# binary, so verification does not depend on `make install` having run.
mkdir -p "$TMP/units"
cp "$UNIT" "$TMP/units/bpfsampler-agent.service"
if [ ! -x /usr/local/sbin/bpfsampler ]; then
	sed -i "s|^ExecStart=/usr/local/sbin/bpfsampler|ExecStart=$BPFS|" \
		"$TMP/units/bpfsampler-agent.service"
fi
# --man=no: the Documentation= man page is not installed on a build machine.
out=$(cd "$TMP/units" && SYSTEMD_LOG_LEVEL=warning \
	systemd-analyze verify --man=no ./bpfsampler-agent.service 2>&1)
rc=$?
# Lines about other units (the host's own) are not ours to judge.
ours=$(grep -F 'bpfsampler-agent.service' <<<"$out")
if [ $rc -eq 0 ] && [ -z "$ours" ]; then
	pass "systemd-analyze verify"
else
	fail "systemd-analyze verify" "exit $rc: ${ours:-$out}"
fi

# Directives the agent depends on, as the brief for the unit fixed them.
need() { # name regex
	if grep -qE "^$2" "$UNIT"; then pass "unit: $1"; else fail "unit: $1" "no line matching ^$2"; fi
}
need "ExecStart with --config" 'ExecStart=/usr/local/sbin/bpfsampler agent --config /etc/bpfsampler/agent.conf$'
need "ExecReload sends SIGHUP" 'ExecReload=/bin/kill -HUP \$MAINPID$'
need "Restart=on-failure" 'Restart=on-failure$'
need "NoNewPrivileges" 'NoNewPrivileges=yes$'
need "ProtectSystem=strict" 'ProtectSystem=strict$'
need "state directory" 'StateDirectory=bpfsampler$'
need "address families" 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6$'
need "memory cap" 'MemoryMax=[0-9]+[MG]$'

# The capability set: the same in the bounding set, the ambient set and the
# documentation's table; never CAP_SYS_ADMIN.
caps_of() { grep -E "^$1=" "$UNIT" | cut -d= -f2 | tr ' ' '\n' | sort | tr '\n' ' '; }
bounding=$(caps_of CapabilityBoundingSet)
ambient=$(caps_of AmbientCapabilities)
documented=$(grep -oE '^\| `CAP_[A-Z_]+`' "$DOC" 2>/dev/null | grep -oE 'CAP_[A-Z_]+' | sort | tr '\n' ' ')
if [ -n "$bounding" ] && [ "$bounding" = "$ambient" ] && [ "$bounding" = "$documented" ]; then
	pass "capabilities: unit and docs agree ($bounding)"
else
	fail "capabilities: unit and docs agree" \
		"bounding: $bounding; ambient: $ambient; docs/agent.md: $documented"
fi
case " $bounding " in
*" CAP_SYS_ADMIN "*) fail "no CAP_SYS_ADMIN" "the bounding set grants it" ;;
*) pass "no CAP_SYS_ADMIN" ;;
esac
