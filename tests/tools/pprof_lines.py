#!/usr/bin/env python3
"""pprof_lines.py FILE.pb.gz NAME: for each location whose line names
function NAME, prints "NAME FILENAME START_LINE LINE" as the profile says
(profile.proto: Location.line -> Line{function_id, line}, Function{name,
filename, start_line})."""
import gzip
import sys

def varint(b, i):
    s = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i

def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif t == 1:
            v, i = b[i:i + 8], i + 8
        elif t == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % t)
        yield f, t, v

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
