#!/usr/bin/env bash
# One profile written in every format at once (--format a,b,... -o P.%f)
# says the same thing in each: the same total, and for the ten functions
# with the most samples the same flat and cumulative counts, as folded
# lines, go tool pprof (reading the names bpfsampler wrote, nothing
# symbolized again), --format top and the counts inside the SVG.
# --inline: pprof always carries the functions inlined at a frame (now_s of
# burn.h in every share_fn_k, from the workload's DWARF) and counts their
# samples as theirs; --inline gives the other formats the same frames.
. "$(dirname "$0")/lib.sh"
require_root

export HOME=$TMP/home GOCACHE=$TMP/gocache GOPROXY=off
mkdir -p "$HOME"
P=$TMP/p
"$BPFS" -F 999 --inline --format folded,pprof,svg,top --top 50 -o "$P.%f" -- "$W/shares" 2 \
	2>"$TMP/err" || fail "one run, four formats" "$(tail -3 "$TMP/err")"
for ext in folded pb.gz svg top; do
	[ -s "$P.$ext" ] || fail "one run, four formats: $P.$ext written"
done

go tool pprof -symbolize=none -top -nodefraction=0 -nodecount=100000 "$P.pb.gz" \
	2>/dev/null >"$TMP/pprof.top"
python3 - "$P" "$TMP/pprof.top" >"$TMP/verdict" <<'PY'
import re, sys, xml.etree.ElementTree as ET
p, ptop = sys.argv[1], sys.argv[2]
bad = []

# folded: flat = leaf frame, cum = lines with the frame (once per line)
ftot, fflat, fcum = 0, {}, {}
for line in open(p + ".folded"):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    n = int(n)
    frames = stack.split(";")
    ftot += n
    fflat[frames[-1]] = fflat.get(frames[-1], 0) + n
    for f in set(frames[1:]):
        fcum[f] = fcum.get(f, 0) + n

# go tool pprof -top
text = open(ptop).read()
ptot = int(re.search(r"Total samples = (\d+)", text).group(1))
prows = {}
for m in re.finditer(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$", text, re.M):
    prows[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))

# --format top
ttext = open(p + ".top").read()
ttot = int(re.search(r"Total: (\d+)", ttext).group(1))
trows = {}
for m in re.finditer(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$", ttext, re.M):
    trows[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))

# svg: every frame is a <g data-v=N> with a <title> "NAME (N samples, P%)"
scum, stot = {}, None
for g in ET.parse(p + ".svg").iter("{http://www.w3.org/2000/svg}g"):
    v = g.get("data-v")
    t = g.find("{http://www.w3.org/2000/svg}title")
    if v is None or t is None:
        continue
    name = re.sub(r" \([\d,]+ samples?, [\d.]+%\)$", "", t.text)
    if name == "all" and stot is None:
        stot = int(v)
    scum[name] = scum.get(name, 0) + int(v)

tots = {"folded": ftot, "pprof": ptot, "top": ttot, "svg": stot}
if len(set(tots.values())) != 1:
    bad.append("totals %s" % tots)
top10 = sorted(prows, key=lambda k: (-prows[k][0], k))[:10]
for f in top10:
    flat, cum = prows[f]
    views = {"folded": (fflat.get(f, 0), fcum.get(f, 0)), "top": trows.get(f, (None, None))}
    for k, (fl, cu) in views.items():
        if (fl, cu) != (flat, cum):
            bad.append("%s: pprof %d/%d, %s %s/%s" % (f, flat, cum, k, fl, cu))
    # the SVG sums every frame of that name: the cum of a function that
    # does not recurse (all ten here)
    if scum.get(f) != cum:
        bad.append("%s: pprof cum %d, svg %s" % (f, cum, scum.get(f)))
print("ok" if not bad else "; ".join(bad))
print(ftot, " ".join(top10[:3]))
PY
read -r verdict <"$TMP/verdict"
if [ "$verdict" = ok ]; then
	pass "folded, pprof, top and svg agree: total $(sed -n 2p "$TMP/verdict" | cut -d' ' -f1), top 10 flat and cum"
else
	fail "folded, pprof, top and svg agree" "$verdict"
fi
