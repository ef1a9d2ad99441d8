#!/usr/bin/env bash
# Debian's own kernels under qemu (tests/kernels/run.sh): the README's
# commands and the agent on each. BPFS_KERNELS names the series (6.1 by
# default, Debian 12's own kernel; make check-kernels: 6.1 6.12 5.10).
if [ -n "${SANITIZE:-}" ]; then
	# a sanitized binary under software emulation would not fit the time
	echo "SKIP kernels: the guests run the plain build (make check, make check-kernels)"
	exit 0
fi
# shellcheck disable=SC2086
exec "$(dirname "$0")/../kernels/run.sh" ${BPFS_KERNELS:-6.1}
