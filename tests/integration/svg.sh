#!/usr/bin/env bash
# --format svg on a workload with known shares: the file is well-formed XML,
# widths follow the counts, the counts add up to what the summary kept, a
# browser draws it, and its search, zoom and hover run in that browser.
source "$(dirname "$0")/lib.sh"
require_root svg

F=$TMP/shares.svg
if ! profile "$F" --format svg -- "$W/shares" 2; then
	fail "svg: profile shares" "$(cat "$F.err")"
	exit 0
fi
kept=$(summary_field "$F.err" "kept")
lost=$(summary_field "$F.err" "lost:")

# frames.py SVG: one line per frame, in file order:
# "depth value x width y name" (depth from the row, 0: the root).
cat >"$TMP/frames.py" <<'EOF'
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
rows = []
for g in root.iter(NS + "g"):
    if g.get("class") != "f":
        continue
    r, t = g.find(NS + "rect"), g.find(NS + "title").text
    rows.append([int(g.get("data-v")), float(r.get("x")), float(r.get("width")),
                 float(r.get("y")), t[:t.rindex(" (")]])
y0 = rows[0][3] if rows else 0
for v, x, w, y, name in rows:
    print(round(abs(y - y0) / 16), v, x, w, y, name)
EOF
if ! python3 "$TMP/frames.py" "$F" >"$TMP/frames" 2>"$TMP/frames.err"; then
	fail "svg: well-formed XML" "$(cat "$TMP/frames.err")"
	exit 0
fi
pass "svg: well-formed XML"

# Every width is its count times the scale of the root (1180 px), to the
# 0.01 px the file rounds to; every frame holds at least its children.
awk 'NR == 1 { scale = $4 / $2 }
	{ d = $4 - $2 * scale; if (d < 0) d = -d; if (d > 0.011) bad++ }
	END { exit bad > 0 }' "$TMP/frames" &&
	pass "svg: widths proportional to counts" ||
	fail "svg: widths proportional to counts" "$(head -3 "$TMP/frames")"
awk '{ depth = $1; v[depth] = $2; kids[depth] = 0
	if (depth > 0) { kids[depth - 1] += $2; if (kids[depth - 1] > v[depth - 1]) bad++ } }
	END { exit bad > 0 }' "$TMP/frames" &&
	pass "svg: children within their parent" ||
	fail "svg: children within their parent"

# The root holds every sample kept and lost; the comms under it all of them
# but those too narrow to draw (under 0.1 px each).
root=$(awk 'NR == 1 { print $2 }' "$TMP/frames")
[ "$root" -eq $((kept + lost)) ] && pass "svg: root counts every sample" ||
	fail "svg: root counts every sample" "root $root, kept $kept, lost $lost"
comms=$(awk '$1 == 1 { s += $2 } END { print s + 0 }' "$TMP/frames")
left=$((root - comms))
[ "$left" -ge 0 ] && [ "$left" -lt $((root / 100 + 1)) ] &&
	pass "svg: root = comms + left out ($comms + $left)" ||
	fail "svg: root = comms + left out" "root $root, comms $comms"
grep -q "share_fn_10" "$TMP/frames" && pass "svg: share_fn_10 drawn" ||
	fail "svg: share_fn_10 drawn"

# Share of share_fn_* in percent, each sample once: the outermost
# share_fn frames only.
expect_pct=$(awk '{ if (in_fn && $1 <= fn_depth) in_fn = 0
	if (!in_fn && $6 ~ /share_fn/) { s += $2; in_fn = 1; fn_depth = $1 }
	if (NR == 1) total = $2 } END { printf "%.2f", 100 * s / total }' "$TMP/frames")
# the widest of each (see the page's script)
rs_v=$(awk '$6 == "run_shares" && $2 > m { m = $2 } END { print m }' "$TMP/frames")
fn10_v=$(awk '$6 == "share_fn_10" && $2 > m { m = $2 } END { print m }' "$TMP/frames")

if ! command -v chromium >/dev/null; then
	skip "svg: drawn by a browser" "chromium is not installed (tools/install-deps.sh)"
	exit 0
fi
# Our own profile directory: other tests and users may run chromium too.
chrome() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu \
		--user-data-dir="$TMP/chrome" "$@" 2>>"$TMP/chrome.err"
}

chrome --screenshot="$TMP/shot.png" --window-size=1200,800 "file://$F" >/dev/null
# Not blank: the PNG decoded (zlib and the row filters, no imaging
# library) has many distinct colours, a good share of pixels off the
# background (#f8f8f0, and the page's white below the image), and many in the user palette (red: r >= 200, g = b
# in 50..130) that the shares frames are drawn with.
read -r npix distinct offbg user < <(python3 - "$TMP/shot.png" <<'EOF' 2>"$TMP/png.err"
import sys, zlib, struct
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, hdr = 8, b"", None
while pos < len(d):
    n, kind = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = hdr
assert depth == 8 and ctype in (2, 6) and interlace == 0, "unexpected PNG %r" % (hdr,)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, seen, offbg, user = bytearray(stride), set(), 0, 0
for y in range(h):
    ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if ft == 1: line[i] = (line[i] + a) & 255
        elif ft == 2: line[i] = (line[i] + b) & 255
        elif ft == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif ft == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = (line[x], line[x + 1], line[x + 2])
        seen.add(px)
        if px != (248, 248, 240) and px != (255, 255, 255):
            offbg += 1
        if px[0] >= 200 and px[1] == px[2] and 50 <= px[1] <= 130:
            user += 1
    prev = line
print(w * h, len(seen), offbg, user)
EOF
)
[ "${npix:-0}" -gt 0 ] && [ "$distinct" -ge 20 ] && [ $((offbg * 100)) -ge $((npix * 5)) ] &&
	[ "$user" -ge 10000 ] &&
	pass "svg: rendered by chromium: $distinct colours, $offbg of $npix pixels drawn, $user user-red" ||
	fail "svg: rendered by chromium, not blank" \
		"$npix pixels, $distinct colours, $offbg drawn, $user user-red; $(cat "$TMP/png.err") $(tail -2 "$TMP/chrome.err")"

# The SVG inline in a page whose script then searches, hovers and zooms as
# a user would, and writes what it saw into the page.
{
	echo '<!DOCTYPE html><html><body>'
	sed 1d "$F"
	cat <<'EOF'
<pre id="out">not run</pre>
<script>
var o = {}, gs = document.querySelectorAll("g.f"), rs = null, fn10 = null;
function named(g, n) { return g.querySelector("title").textContent.indexOf(n + " (") === 0; }
// the widest of each: a process's first samples, walked before its unwind
// tables are loaded, make a small second tree under [truncated: ...]
function w(g) { return parseFloat(g.querySelector("rect").getAttribute("width")); }
for (var i = 0; i < gs.length; i++) {
	if (named(gs[i], "run_shares") && (!rs || w(gs[i]) > w(rs))) rs = gs[i];
	if (named(gs[i], "share_fn_10") && (!fn10 || w(gs[i]) > w(fn10))) fn10 = gs[i];
}
function fill(g) { return g.querySelector("rect").getAttribute("fill"); }
// hit: frames whose name matches and are magenta; miss: frames that do not
// match and have kept the fill they were written with.
function painted(re) {
	var hit = 0, miss = 0, bad = 0;
	for (var i = 0; i < gs.length; i++) {
		var t = gs[i].querySelector("title").textContent, m = re.test(t.slice(0, t.lastIndexOf(" (")));
		var magenta = fill(gs[i]) === "rgb(230,0,230)";
		if (m && magenta) hit++;
		else if (!m && fill(gs[i]) === fills[i]) miss++;
		else bad++;
	}
	return hit + "/" + miss + "/" + bad;
}
var fills = [];
for (var i = 0; i < gs.length; i++) fills.push(fill(gs[i]));
o.pct = search("share_fn").toFixed(2);
o.matched = document.getElementById("matched").textContent;
o.painted = painted(/share_fn/);
o.fn10_fill = fill(fn10);
o.rs_fill = fill(rs) === fills[Array.prototype.indexOf.call(gs, rs)] ? "kept" : fill(rs);
rs.querySelector("rect").dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
o.status = document.getElementById("status").textContent;
rs.querySelector("rect").dispatchEvent(new MouseEvent("click", { bubbles: true }));
o.zoomed = rs.querySelector("rect").getAttribute("width");
o.fn10 = fn10.querySelector("rect").getAttribute("width");
o.root = gs[0].querySelector("rect").getAttribute("width");
reset();
o.fn10_after = fn10.querySelector("rect").getAttribute("width");
o.painted_after = painted(/^$/);
o.matched_after = document.getElementById("matched").textContent;
document.getElementById("out").textContent = JSON.stringify(o);
</script></body></html>
EOF
} >"$TMP/page.html"
chrome --virtual-time-budget=5000 --dump-dom "file://$TMP/page.html" >"$TMP/page.dom"
got=$(sed -n 's/.*<pre id="out">\(.*\)<\/pre>.*/\1/p' "$TMP/page.dom" | sed 's/&quot;/"/g')
# 1234567 as the titles write it: 1,234,567
commas() { echo "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }
# js FIELD: a field of what the page saw.
js() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$got" "$1" 2>/dev/null; }
if [ -z "$got" ] || [ "$got" = "not run" ]; then
	fail "svg: script runs in chromium" "page: $(grep -o '<pre id="out">.*' "$TMP/page.dom" | head -c 300)"
else
	pass "svg: script runs in chromium"
	# 0.011: both sides are rounded to 0.01
	within "svg: search matched % = share_fn samples from data-v" "$(js pct)" "$expect_pct" 0.011
	case $(js matched) in "Matched: $(js pct)%"*) pass "svg: matched % shown" ;;
	*) fail "svg: matched % shown" "$(js matched)" ;; esac
	rs_pct=$(awk -v a="$rs_v" -v t="$root" 'BEGIN { printf "%.2f", 100 * a / t }')
	[ "$(js status)" = "run_shares ($(commas "$rs_v") samples, $rs_pct%)" ] &&
		pass "svg: hover shows name, samples and %" ||
		fail "svg: hover shows name, samples and %" \
			"'$(js status)', want 'run_shares ($(commas "$rs_v") samples, $rs_pct%)'"
	# painted: matching frames magenta / others as written / neither
	IFS=/ read -r hit kept_fill badfill <<<"$(js painted)"
	[ "${hit:-0}" -ge 10 ] && [ "${kept_fill:-0}" -gt 0 ] && [ "$badfill" = 0 ] &&
		[ "$(js fn10_fill)" = "rgb(230,0,230)" ] && [ "$(js rs_fill)" = kept ] &&
		pass "svg: search paints the $hit matches magenta, the rest as they were" ||
		fail "svg: search paints matches magenta" "painted $(js painted), share_fn_10 $(js fn10_fill), run_shares $(js rs_fill)"
	IFS=/ read -r hit kept_fill badfill <<<"$(js painted_after)"
	[ "$hit" = 0 ] && [ "$badfill" = 0 ] && [ "$kept_fill" -eq "$(wc -l <"$TMP/frames")" ] &&
		[ "$(js matched_after)" = " " ] &&
		pass "svg: reset restores every frame's colour and clears Matched" ||
		fail "svg: reset restores every frame's colour" "$(js painted_after), matched '$(js matched_after)'"
	within "svg: zoomed frame takes the full width" "$(js zoomed)" 1180 0.01
	within "svg: ancestors span the full width" "$(js root)" 1180 0.01
	within "svg: zoomed child widens by the same factor" "$(js fn10)" \
		"$(awk -v a="$fn10_v" -v b="$rs_v" 'BEGIN { printf "%.2f", 1180 * a / b }')" 0.02
	within "svg: reset zoom" "$(js fn10_after)" \
		"$(awk -v a="$fn10_v" -v t="$root" 'BEGIN { printf "%.2f", 1180 * a / t }')" 0.02
fi

# The file alone, its search given in the link (#s=REGEX): the script runs
# in the SVG document too.
chrome --virtual-time-budget=5000 --dump-dom "file://$F#s=share_fn" >"$TMP/alone.dom"
alone=$(grep -oE 'Matched: [0-9.]+%' "$TMP/alone.dom" | grep -oE '[0-9.]+')
if [ -n "$alone" ]; then
	within "svg: standalone file runs its script (search from the link)" "$alone" "$expect_pct" 0.011
else
	fail "svg: standalone file runs its script" "$(grep -o '<text id="matched"[^<]*' "$TMP/alone.dom")"
fi

# --inverted: an icicle graph, the root above its children.
if profile "$TMP/icicle.svg" --format svg --inverted -- "$W/shares" 0.5 &&
	python3 "$TMP/frames.py" "$TMP/icicle.svg" >"$TMP/icicle"; then
	awk 'NR == 1 { y0 = $5 } NR > 1 && $5 <= y0 { bad++ } END { exit NR < 3 || bad > 0 }' \
		"$TMP/icicle" && pass "svg: --inverted puts the root at the top" ||
		fail "svg: --inverted puts the root at the top" "$(head -3 "$TMP/icicle")"
else
	fail "svg: --inverted run" "$(cat "$TMP/icicle.svg.err")"
fi
