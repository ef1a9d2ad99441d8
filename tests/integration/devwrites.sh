#!/usr/bin/env bash
# No test or tool writes through a path in /dev it did not make (issue
# #24: the suite's own `-o /dev/null` once replaced /dev/null with a file
# on every machine that ran it). A grep of tests/ and tools/ for the ways
# a write reaches /dev: a /dev path given to bpfsampler's file options or
# to a compiler's -o, an output redirection to anything in /dev but
# /dev/null, a typescript of script(1), a C open or fopen for writing.
# Allowed: shell redirections to /dev/null (the shell opens the node and
# writes in place, it never renames over it), reads (/dev/urandom,
# /dev/zero, /dev/stdin, < /dev/null), and /dev/fd/N of a pipe the test
# made. A node a test needs (a full device, a null device) is made with
# mknod in its own folder. tests/kernels/init.sh is left out: it is the
# init of a qemu guest, and the /dev it writes to (its console) is the
# guest's own devtmpfs, not this machine's. No root needed.
source "$(dirname "$0")/lib.sh"

self=tests/integration/${0##*/}
# name:regex (extended, grep -E)
rules=(
	"-o or a file option of bpfsampler:(-o|--output|--output-dir|--metrics-file|--log-file)[ =]+[\"']?/dev/"
	"a -o in an argument list:[\"']-o[\"'], *[\"']/dev/"
	"an output redirection to a device:[0-9&]?>>? *[\"']?/dev/([^n]|n[^u]|nu[^l]|nul[^l])"
	"script(1)'s typescript:script .*[ \"']/dev/"
	"a C write open:(fopen|log_open)\\(\"/dev/[^\"]*\", *\"[wa]|open\\(\"/dev/[^\"]*\", *O_(WRONLY|RDWR)"
)
cd "$ROOT" || exit 1
for r in "${rules[@]}"; do
	name=${r%%:*} re=${r#*:}
	hits=$(grep -rnE --exclude-dir=.output -- "$re" tests tools |
		grep -v -e "^$self:" -e "^tests/kernels/init.sh:")
	if [ -z "$hits" ]; then
		pass "no write through /dev in tests/ and tools/: $name"
	else
		fail "no write through /dev in tests/ and tools/: $name" "$(head -5 <<<"$hits")"
	fi
done
