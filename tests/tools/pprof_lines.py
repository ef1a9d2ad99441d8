#!/usr/bin/env python3
"""pprof_lines.py FILE.pb.gz NAME: for each location whose line names
function NAME, prints "NAME FILENAME START_LINE LINE" as the profile says
(profile.proto: Location.line -> Line{function_id, line}, Function{name,
filename, start_line})."""
import gzip
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_wire import fields  # noqa: E402

b = gzip.open(sys.argv[1]).read()
strs = [v.decode() for f, t, v in fields(b) if f == 6]
funcs, lines = {}, []
for f, t, v in fields(b):
    if f == 5:
        d = {ff: vv for ff, tt, vv in fields(v)}
        funcs[d.get(1, 0)] = (strs[d.get(2, 0)], strs[d.get(4, 0)], d.get(5, 0))
    elif f == 4:
        for ff, tt, vv in fields(v):
            if ff == 4:
                ln = {lf: lv for lf, lt, lv in fields(vv)}
                lines.append((ln.get(1, 0), ln.get(2, 0)))
out = set()
for fid, line in lines:
    name, filename, start = funcs.get(fid, ("", "", 0))
    if name == sys.argv[2]:
        out.add("%s %s %d %d" % (name, filename, start, line))
for s in sorted(out):
    print(s)
