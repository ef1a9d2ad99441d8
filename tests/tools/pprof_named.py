#!/usr/bin/env python3
"""pprof_named.py REGEX FILE.pb.gz...: of the samples with a frame in a
mapping whose file matches REGEX, how many have every such frame named by
a function, as the profile itself says (nothing symbolized again, as
go tool pprof would from the files on disk). Prints "NAMED TOTAL", and the
unnamed addresses' file offsets on stderr."""
import gzip
import os
import re
import sys


sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_wire import fields, varint  # noqa: E402


def packed(v):
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


pat = re.compile(sys.argv[1])
named = total = 0
for path in sys.argv[2:]:
    b = gzip.open(path).read()
    strs = [v.decode() for f, t, v in fields(b) if f == 6]
    maps, locs, samples = {}, {}, []
    for f, t, v in fields(b):
        if f == 3:
            d = {ff: vv for ff, tt, vv in fields(v)}
            maps[d[1]] = (strs[d.get(5, 0)], d.get(2, 0), d.get(4, 0))
        elif f == 4:
            d = dict(mapping=0, fn=False, addr=0)
            for ff, tt, vv in fields(v):
                if ff == 1:
                    lid = vv
                elif ff == 2:
                    d["mapping"] = vv
                elif ff == 3:
                    d["addr"] = vv
                elif ff == 4:
                    d["fn"] = True
            locs[lid] = d
        elif f == 2:
            ids, vals = [], []
            for ff, tt, vv in fields(v):
                if ff == 1:
                    ids += packed(vv) if tt == 2 else [vv]
                elif ff == 2:
                    vals += packed(vv) if tt == 2 else [vv]
            samples.append((ids, vals[0] if vals else 0))
    for ids, n in samples:
        mine = [locs[i] for i in ids if pat.search(maps.get(locs[i]["mapping"], ("",))[0])]
        if not mine:
            continue
        total += n
        if all(l["fn"] for l in mine):
            named += n
        else:
            for l in mine:
                if not l["fn"]:
                    f, start, off = maps[l["mapping"]]
                    print("unnamed %s+%#x" % (f, l["addr"] - start + off), file=sys.stderr)
print(named, total)
