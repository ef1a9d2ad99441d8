// The flame graph's interactions, embedded in every SVG by svg.c (this file
// is turned into a C string at build time). Frames are <g class="f"> in
// pre-order (a frame, then its descendants, left to right), so a frame's
// descendants are the run of frames after it that are deeper: zoom and
// search need no other tree. svg.c wraps it in a function (nothing leaks
// into a page's globals: window.status is taken, for one) after setting W,
// PAD, ROWH, FONTW, Y0, INV and UNIT; search, zoom and reset are exported
// for pages that embed the graph.
var svg = document.getElementById("bpfs"), NS = "http://www.w3.org/2000/svg";
var fr = [], total = 0, zoomed = null, searching = null;
var status, matched, unzoomBtn, searchBtn;

function init() {
	var gs = svg.querySelectorAll("g.f"), stack = [];
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i], r = g.querySelector("rect"), t = g.querySelector("title").textContent;
		var y = +r.getAttribute("y");
		var f = { g: g, r: r, i: i, x: +r.getAttribute("x"), w: +r.getAttribute("width"),
			v: +g.getAttribute("data-v"), fill: r.getAttribute("fill"),
			d: Math.round(INV ? (y - Y0) / ROWH : (Y0 - y) / ROWH),
			name: t.slice(0, t.lastIndexOf(" (")), info: t, end: gs.length };
		while (stack.length && fr[stack[stack.length - 1]].d >= f.d)
			fr[stack.pop()].end = i;
		stack.push(i);
		g._i = i;
		fr.push(f);
	}
	total = fr.length ? fr[0].v : 0;
	status = document.getElementById("status");
	matched = document.getElementById("matched");
	unzoomBtn = document.getElementById("unzoom");
	searchBtn = document.getElementById("search");
	var frames = document.getElementById("frames");
	frames.addEventListener("mouseover", function (e) {
		var g = e.target.closest("g.f");
		if (g) status.textContent = fr[g._i].info;
	});
	frames.addEventListener("mouseout", function () { status.textContent = " "; });
	frames.addEventListener("click", function (e) {
		var g = e.target.closest("g.f");
		if (g) zoom(g);
	});
	unzoomBtn.addEventListener("click", unzoom);
	searchBtn.addEventListener("click", function () {
		if (searching !== null) resetSearch(); else searchPrompt();
	});
	window.addEventListener("keydown", function (e) {
		if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {
			e.preventDefault();
			searchPrompt();
		} else if (e.keyCode === 27) {
			reset();
		}
	});
	// A link may carry a search: file.svg#s=REGEX
	var h = window.location.hash;
	if (h.indexOf("#s=") === 0) search(decodeURIComponent(h.slice(3)));
}

// Shortens the label to what fits in width px, as svg.c does.
function fit(name, width) {
	var n = Math.floor((width - 6) / FONTW);
	if (n < 3) return "";
	return name.length <= n ? name : name.slice(0, n - 2) + "..";
}

function place(f, x, w) {
	f.g.style.display = "";
	f.r.setAttribute("x", x.toFixed(2));
	f.r.setAttribute("width", w.toFixed(2));
	var text = f.g.querySelector("text"), label = fit(f.name, w);
	if (!text && label) {
		text = document.createElementNS(NS, "text");
		text.setAttribute("y", +f.r.getAttribute("y") + 11.5);
		f.g.appendChild(text);
	}
	if (text) {
		text.setAttribute("x", (x + 3).toFixed(2));
		text.textContent = label;
	}
}

// The frame's descendants take the full width; its ancestors span it
// (faded); the rest is hidden. g: a <g class="f"> or its index.
function zoom(g) {
	var z = fr[typeof g === "number" ? g : g._i], k = (W - 2 * PAD) / z.w;
	for (var i = 0; i < fr.length; i++) {
		var f = fr[i];
		if (i >= z.i && i < z.end) {
			place(f, PAD + (f.x - z.x) * k, i === z.i ? W - 2 * PAD : f.w * k);
			f.g.style.opacity = "";
		} else if (i < z.i && z.i < f.end) {
			place(f, PAD, W - 2 * PAD);
			f.g.style.opacity = "0.6";
		} else {
			f.g.style.display = "none";
		}
	}
	zoomed = z;
	unzoomBtn.style.opacity = "1";
	return z.r.getAttribute("width");
}

function unzoom() {
	for (var i = 0; i < fr.length; i++) {
		place(fr[i], fr[i].x, fr[i].w);
		fr[i].g.style.opacity = "";
	}
	zoomed = null;
	unzoomBtn.style.opacity = "0";
}

function searchPrompt() {
	var term = window.prompt("Search frames (regular expression):", searching || "");
	if (term) search(term);
}

// Highlights the frames whose name matches term (a regular expression, or
// the plain text when it is not one) and returns the share of all samples
// in them, in percent. A sample counts once: a match inside a matched frame
// adds nothing.
function search(term) {
	var re, sum = 0, until = 0;
	try { re = new RegExp(term); } catch (e) {
		re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
	}
	for (var i = 0; i < fr.length; i++) {
		var f = fr[i], hit = re.test(f.name);
		f.r.setAttribute("fill", hit ? "rgb(230,0,230)" : f.fill);
		if (hit && i >= until) {
			sum += f.v;
			until = f.end;
		}
	}
	var pct = total ? 100 * sum / total : 0;
	searching = term;
	matched.textContent = "Matched: " + pct.toFixed(2) + "% (" + sum + " " + UNIT + ")";
	searchBtn.textContent = "Reset Search";
	return pct;
}

function resetSearch() {
	for (var i = 0; i < fr.length; i++)
		fr[i].r.setAttribute("fill", fr[i].fill);
	searching = null;
	matched.textContent = " ";
	searchBtn.textContent = "Search";
}

function reset() {
	unzoom();
	resetSearch();
}

window.search = search;
window.zoom = zoom;
window.reset = reset;
init();
