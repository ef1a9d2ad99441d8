#!/usr/bin/env python3
"""distinct_copies.py EXE DIR N: writes N copies of EXE into DIR, each with
its own GNU build-ID (the note's bytes rewritten in place), so each is a
distinct file with distinct symbols as far as a profiler can tell: the
churn test's "many distinct executables"."""
import os
import subprocess
import sys

exe, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True,
                       check=True).stdout
bid = next(l.split()[-1] for l in notes.splitlines() if "Build ID" in l)
raw = open(exe, "rb").read()
old = bytes.fromhex(bid)
if raw.count(old) != 1:
    sys.exit(f"build-ID of {exe} found {raw.count(old)} times, expected once")
at = raw.index(old)
os.makedirs(out, exist_ok=True)
for i in range(n):
    new = i.to_bytes(4, "big") + old[4:]
    path = os.path.join(out, f"churn_{i:04d}")
    with open(path, "wb") as f:
        f.write(raw[:at] + new + raw[at + len(old):])
    os.chmod(path, 0o755)
