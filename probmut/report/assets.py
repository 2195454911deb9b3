"""The page's inline style sheet and script, and the look of each outcome that the page
and the report's figures (:func:`probmut.plots.plot_campaign`) share."""

from __future__ import annotations

from probmut.report.text import slug

#: The colours of the outcomes (:data:`probmut.campaign.OUTCOMES`) in the report's
#: figures and on its page (here, not among the figures' looks in
#: :data:`probmut.plots.STYLE`: the page's style sheet needs no matplotlib, which the
#: report command's own process never imports).
OUTCOME_COLORS = {"killed": "#2e7d32", "not killed": "#1565c0", "not settled": "#b34d00",
                  "flagged": "#6a1b9a", "not analysed": "#757575"}
#: Their markers in the report's figures (matplotlib's), so that an outcome is told by its
#: shape too, not by its colour alone; a mutant not analysed has a label, not a marker.
OUTCOME_MARKERS = {"killed": "o", "not killed": "s", "not settled": "D", "flagged": "X"}


def style_sheet() -> str:
    tags = "".join(f".tag.{slug(o)}{{border-color:{colour};color:{colour}}}"
                   for o, colour in OUTCOME_COLORS.items())
    return STYLE_SHEET + tags


STYLE_SHEET = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;
max-width:1280px;padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:14px 0 4px;overflow-wrap:anywhere}h2{font-size:18px;margin:16px 0 4px;
border-bottom:1px solid #ddd}h3{font-size:15px;margin:0 0 6px;overflow-wrap:anywhere}
code,pre{overflow-wrap:anywhere;word-break:break-word}
pre{white-space:pre-wrap;background:#f5f5f5;padding:8px;border-radius:4px}
.produced{color:#555;margin:0 0 4px}nav a{margin-right:12px;display:inline-block}
.status{padding:6px 12px;border-radius:4px;margin:6px 0}
.status.complete{background:#e8f5e9}.status.unknown{background:#fff8e1}
.status.unfinished{background:#fdecea;border:1px solid #e53935}
.status ul{margin:4px 0 0}.status details{margin:2px 0 0}
.top{display:flex;gap:32px;align-items:flex-start;flex-wrap:wrap}
.score{flex:0 1 440px;min-width:0}.top>div:last-child{flex:1 1 300px;min-width:0}
.score .label{color:#555}.score .big{font-size:40px;font-weight:600;line-height:1.1}
.score p{color:#555;font-size:12px;margin:4px 0 0}
.counts{list-style:none;padding:0;display:flex;gap:18px;flex-wrap:wrap;margin:8px 0}
.counts b{font-size:20px}.note{color:#555;font-size:12px}
details.heading>summary{cursor:pointer}details.heading>summary h2{display:inline;border:0}
table{border-collapse:collapse}.facts{max-width:100%}.facts th{text-align:left;width:11em;
vertical-align:top;padding:3px 12px 3px 0;color:#555;font-weight:normal}
.facts td{padding:3px 0;overflow-wrap:anywhere}.facts ul{margin:0;padding-left:18px}
table.data th,table.data td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;
vertical-align:top}table.data th{background:#f5f5f5;position:sticky;top:0;z-index:1}
table.data td.wrap{min-width:14em}
#operator-table{font-size:13px}#operator-table td,#operator-table th{padding:2px 6px}
#operators p.note{margin:4px 0}
.scroll-x{overflow-x:auto;max-width:100%}
#mutant-table{font-size:13px}#mutant-table td{white-space:nowrap;background:#fff}
#mutant-table td:first-child{white-space:normal;min-width:11em}
#mutant-table td:first-child,#mutant-table th:first-child{position:sticky;left:0;z-index:2;
box-shadow:1px 0 0 #e4e4e4}#mutant-table th:first-child{z-index:3}
#mutant-table td:nth-child(12),#mutant-table td:nth-child(13){white-space:normal;
min-width:9em;font-size:12px;overflow-wrap:anywhere}
#mutant-table th{white-space:nowrap}
#mutant-table th button{font:inherit;font-weight:600;color:inherit;background:none;border:0;
padding:0;margin:0;cursor:pointer;text-align:left;white-space:nowrap;width:100%}
#mutant-table th button:focus-visible{outline:2px solid #1565c0;outline-offset:2px}
#mutant-table th[aria-sort=ascending] button::after{content:" \\25B2"}
#mutant-table th[aria-sort=descending] button::after{content:" \\25BC"}
.scroll{overflow:auto;max-height:80vh;max-width:100%}
@media (min-width:1200px){.scroll{overflow:visible;max-height:none}}
.needs-js{display:none}.js .needs-js{display:block}.js span.needs-js{display:inline}
.controls{margin:6px 0}.js .controls{display:flex;flex-wrap:wrap;gap:4px 18px;
align-items:center}.controls input[type=search]{width:100%;max-width:340px;padding:4px}
#outcomes{border:0;padding:0;margin:0;display:flex;flex-wrap:wrap;gap:4px 14px}
#outcomes legend{float:left;margin-right:8px;color:#555}
img{max-width:100%;height:auto}
.cards{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.card{margin:0;max-width:360px}figure.wide{margin:0}
.mutant{border-top:1px solid #ddd;padding:12px 0}.pair{display:flex;gap:20px;
flex-wrap:wrap;align-items:flex-start}.pair .posterior{flex:0 0 auto}
.posterior{max-width:100%;color:#555;font-size:12px}.posterior svg{display:block}
.pair .facts{flex:1 1 320px;min-width:0}
.remarks{margin:0;padding-left:18px;color:#8a4b00}
.tag{font-size:12px;font-weight:normal;padding:0 6px;border-radius:8px;border:1px solid #999;
white-space:nowrap;background:#fff}
.key{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 12px}
details{margin:6px 0}.back{font-size:12px}dt{font-weight:600}dd{margin:0 0 8px 16px}
"""

#: The page's script: plain JavaScript, no library.
#:
#: - Sorting (the headers are buttons) and filtering of the mutant table; the view
#:   (outcomes shown, words, order) is kept in the URL's hash
#:   (``#show=killed,not-settled&q=label&sort=-mean``): a shared link opens at the table
#:   with that view, and each mutant's "back to the table" link returns to it.
#: - Each analysed mutant's figure (its bagged posterior, as
#:   :func:`probmut.plots.plot_posterior` draws it), drawn as SVG from the page's data
#:   when it comes into view: ``window.probmutFigures`` gives its curves and draws it on
#:   demand (the browser tests read them).
SCRIPT = """
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var table = document.getElementById("mutant-table");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var filter = document.getElementById("filter");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("#outcomes input"));
  var shown = document.getElementById("shown");
  var backs = Array.prototype.slice.call(document.querySelectorAll("a.back-to-table"));
  var order = null;  // {key, ascending}

  function value(row, column, numeric) {
    var text = row.cells[column].getAttribute("data-value");
    if (!numeric) { return text.toLowerCase(); }
    return text === "" ? NaN : Number(text);
  }

  function column(key) {
    for (var i = 0; i < headers.length; i++) {
      if (headers[i].getAttribute("data-key") === key) { return i; }
    }
    return -1;
  }

  function sortBy(key, ascending) {
    var at = column(key);
    if (at < 0) { return; }
    var numeric = headers[at].getAttribute("data-type") === "number";
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    headers[at].setAttribute("aria-sort", ascending ? "ascending" : "descending");
    order = {key: key, ascending: ascending};
    var sign = ascending ? 1 : -1;
    var sorted = rows.slice().sort(function (a, b) {
      var x = value(a, at, numeric), y = value(b, at, numeric);
      if (numeric && (isNaN(x) || isNaN(y))) { return isNaN(x) - isNaN(y); }
      return sign * (x < y ? -1 : x > y ? 1 : 0);
    });
    sorted.forEach(function (row) { body.appendChild(row); });
  }

  function view() {
    var chosen = boxes.filter(function (b) { return b.checked; })
      .map(function (b) { return b.value; });
    var parts = [];
    if (chosen.length) { parts.push("show=" + chosen.join(",")); }
    if (filter.value.trim()) { parts.push("q=" + encodeURIComponent(filter.value.trim())); }
    if (order) { parts.push("sort=" + (order.ascending ? "" : "-") + order.key); }
    return parts.join("&");
  }

  function writeView() {
    var here = location.pathname + location.search, now = view();
    history.replaceState(null, "", now ? here + "#" + now : here);
    backs.forEach(function (a) { a.setAttribute("href", "#" + (now || "mutants")); });
  }

  function readView() {
    var hash = location.hash.slice(1);
    if (!/^(show|q|sort)=/.test(hash)) { return false; }  // a section, not a view
    var found = {};
    hash.split("&").forEach(function (part) {
      var at = part.indexOf("=");
      if (at > 0) { found[part.slice(0, at)] = decodeURIComponent(part.slice(at + 1)); }
    });
    var chosen = (found.show || "").split(",");
    boxes.forEach(function (b) { b.checked = chosen.indexOf(b.value) >= 0; });
    filter.value = found.q || "";
    if (found.sort) {
      var descending = found.sort.charAt(0) === "-";
      sortBy(descending ? found.sort.slice(1) : found.sort, !descending);
    }
    return true;
  }

  function apply() {
    var words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var chosen = boxes.filter(function (b) { return b.checked; })
      .map(function (b) { return b.value; });
    var count = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search");
      var keep = words.every(function (w) { return text.indexOf(w) >= 0; }) &&
        (!chosen.length || chosen.indexOf(row.getAttribute("data-outcome")) >= 0);
      row.hidden = !keep;
      count += keep ? 1 : 0;
    });
    shown.textContent = count + " of " + rows.length + " mutants shown";
  }

  function openAtTable() {
    if (readView()) {
      apply();
      writeView();
      document.getElementById("mutants").scrollIntoView();
    }
  }

  headers.forEach(function (header) {
    var button = document.createElement("button");
    button.type = "button";
    button.textContent = header.textContent;
    button.title = "sort by " + header.textContent;
    header.textContent = "";
    header.appendChild(button);
    button.addEventListener("click", function () {
      var key = header.getAttribute("data-key");
      sortBy(key, !(order && order.key === key && order.ascending));
      writeView();
    });
  });
  filter.addEventListener("input", function () { apply(); writeView(); });
  boxes.forEach(function (b) {
    b.addEventListener("change", function () { apply(); writeView(); });
  });
  function reveal() {  // a link to a collapsed section (next steps, changes) opens it
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    var folded = target && (target.closest("details") ||
                              target.querySelector(":scope > details.heading"));
    if (folded && !folded.open) { folded.open = true; target.scrollIntoView(); }
  }

  window.addEventListener("hashchange", function () { openAtTable(); reveal(); });
  openAtTable();
  reveal();
  apply();
  performance.mark("probmut-interactive");

  // --- each mutant's figure ---------------------------------------------------------
  var data = JSON.parse(document.getElementById("probmut-data").textContent).figures;
  var SVG = "http://www.w3.org/2000/svg";
  var BLUE = "#1f77b4";
  var LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028,
    771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012,
    9.9843695780195716e-6, 1.5056327351493116e-7];
  // the grid of plot_posterior: denser near 0 and 1, where clear cases are narrow spikes
  var GRID = [];
  for (var g = 0; g < 400; g++) {
    GRID.push(0.5 - 0.5 * Math.cos(0.002 + g * (Math.PI - 0.004) / 399));
  }

  function lgamma(x) {  // Lanczos (g = 7, 9 terms), reflected below 1/2
    if (x < 0.5) { return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x); }
    x -= 1;
    var sum = LANCZOS[0], t = x + 7.5;
    for (var i = 1; i < 9; i++) { sum += LANCZOS[i] / (x + i); }
    return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(sum);
  }

  function density(a, b) {  // Beta(a, b) on the grid, in log space
    var lb = lgamma(a) + lgamma(b) - lgamma(a + b);
    return GRID.map(function (x) {
      return Math.exp((a - 1) * Math.log(x) + (b - 1) * Math.log1p(-x) - lb);
    });
  }

  function curves(index) {
    var f = data[index], total = 0, resamples = [];
    var mixture = GRID.map(function () { return 0; });
    f.counts.forEach(function (c) {
      var ys = density(c[0] + 1, f.trials - c[0] + 1);
      ys.forEach(function (y, i) { mixture[i] += c[1] * y; });
      total += c[1];
      resamples.push(ys);
    });
    mixture = mixture.map(function (y) { return y / total; });
    var fitted = density(f.alpha, f.beta), high = 1;
    mixture.forEach(function (y) { high = Math.max(high, y); });
    fitted.forEach(function (y, i) {
      if (GRID[i] > 0.005 && GRID[i] < 0.995 && !isNaN(y)) { high = Math.max(high, y); }
    });
    var top = 1.12 * high, ends = [];
    if (!(fitted[0] <= top)) { ends.push("0"); }
    if (!(fitted[GRID.length - 1] <= top)) { ends.push("1"); }
    return {x: GRID, resamples: resamples, mixture: mixture, fitted: fitted, top: top,
            ends: ends};
  }

  function element(name, attributes, parent) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attributes).forEach(function (k) { e.setAttribute(k, attributes[k]); });
    if (parent) { parent.appendChild(e); }
    return e;
  }

  function ticks(top) {  // about four round steps up the density axis
    var raw = top / 4, power = Math.pow(10, Math.floor(Math.log10(raw))), step = power;
    [1, 2, 2.5, 5, 10].some(function (m) { step = m * power; return step >= raw; });
    var places = Math.max(0, -Math.floor(Math.log10(step) + 1e-9) +
                              (Math.abs(step / power - 2.5) < 1e-9 ? 1 : 0));
    var found = [];
    for (var v = 0; v <= top + 1e-12; v += step) { found.push([v, v.toFixed(places)]); }
    return found;
  }

  function draw(index) {
    var place = document.querySelector('.posterior[data-figure="' + index + '"]');
    if (!place || place.getAttribute("data-drawn")) { return place; }
    var f = data[index], c = curves(index);
    var width = 346, height = 210, left = 46, right = 8, above = 8, below = 40;
    var w = width - left - right, h = height - above - below, top = c.top;
    function X(x) { return left + (x + 0.02) / 1.04 * w; }
    function Y(y) { return above + (1 - y / top) * h; }
    function path(xs, ys) {
      var d = [], last = "";
      for (var i = 0; i < xs.length; i++) {
        var point = X(xs[i]).toFixed(1) + " " + Y(ys[i]).toFixed(1);
        if (point !== last) { d.push((d.length ? "L" : "M") + point); last = point; }
      }
      return d.join("");
    }
    var svg = element("svg", {width: width, height: height, viewBox: "0 0 " + width + " " +
      height, "font-family": "system-ui, sans-serif", "font-size": "11"});
    var clip = "probmut-clip-" + index;
    element("rect", {x: left, y: above, width: w, height: h},
            element("clipPath", {id: clip}, svg));
    var plot = element("g", {"clip-path": "url(#" + clip + ")"}, svg);
    var cap = 2 * top;
    element("path", {"data-part": "resamples", fill: "none", stroke: "#999",
      "stroke-opacity": 0.25, "stroke-width": 0.5, d: c.resamples.map(function (ys) {
        return path(c.x, ys.map(function (y) { return Math.min(y, cap); }));
      }).join("")}, plot);
    element("path", {"data-part": "bagged-mixture", fill: "none", stroke: "#000",
      "stroke-width": 1, "stroke-dasharray": "4 2", d: path(c.x, c.mixture)}, plot);
    var shown = c.fitted.map(function (y) { return isNaN(y) ? 0 : Math.min(y, cap); });
    var inside = [], under = [];
    c.x.forEach(function (x, i) {
      if (x >= f.low && x <= f.high) { inside.push(x); under.push(shown[i]); }
    });
    if (inside.length) {
      element("path", {"data-part": "interval-area", fill: BLUE, "fill-opacity": 0.25,
        d: path(inside, under) + "L" + X(inside[inside.length - 1]).toFixed(1) + " " +
           Y(0).toFixed(1) + "L" + X(inside[0]).toFixed(1) + " " + Y(0).toFixed(1) + "Z"},
        plot);
    }
    element("path", {"data-part": "beta-fit", fill: "none", stroke: BLUE,
      "stroke-width": 1.5, d: path(c.x, shown)}, plot);
    var labelled = c.ends.length > 0;
    element("line", {"data-part": "mean", x1: X(f.mean), x2: X(f.mean), y1: Y(0),
      y2: labelled ? above + 17 : above, stroke: BLUE, "stroke-width": 1,
      "stroke-dasharray": "1 2"}, svg);
    element("rect", {"data-part": "plot-area", x: left, y: above, width: w, height: h,
      fill: "none", stroke: "#000", "stroke-width": 0.8}, svg);
    element("line", {"data-part": "interval", x1: X(f.low), x2: X(f.high), y1: Y(0),
      y2: Y(0), stroke: BLUE, "stroke-width": 5}, svg);
    [0, 0.2, 0.4, 0.6, 0.8, 1].forEach(function (v) {
      element("line", {x1: X(v), x2: X(v), y1: Y(0), y2: Y(0) + 3, stroke: "#000"}, svg);
      element("text", {x: X(v), y: Y(0) + 14, "text-anchor": "middle"}, svg).textContent =
        v.toFixed(1);
    });
    ticks(top).forEach(function (t) {
      element("line", {x1: left - 3, x2: left, y1: Y(t[0]), y2: Y(t[0]), stroke: "#000"},
              svg);
      element("text", {x: left - 5, y: Y(t[0]) + 4, "text-anchor": "end"}, svg)
        .textContent = t[1];
    });
    element("text", {x: left + w / 2, y: height - 6, "text-anchor": "middle"}, svg)
      .textContent = "kill probability";
    element("text", {x: 11, y: above + h / 2, "text-anchor": "middle",
      transform: "rotate(-90 11 " + (above + h / 2) + ")"}, svg).textContent = "density";
    if (labelled) {
      element("text", {"data-part": "capped", x: left + w / 2, y: above + 12,
        "text-anchor": "middle", fill: BLUE, "font-size": "10.5"}, svg).textContent =
        "Beta density \\u2192 \\u221e at " + c.ends.join(" and ") + ": axis capped";
    }
    place.textContent = "";
    place.appendChild(svg);
    place.setAttribute("data-drawn", "1");
    return place;
  }

  var places = Array.prototype.slice.call(document.querySelectorAll(".posterior[data-figure]"));
  window.probmutFigures = {
    curves: curves, draw: draw,
    drawAll: function () { places.forEach(function (p) { draw(p.getAttribute("data-figure")); }); }
  };
  if (!("IntersectionObserver" in window)) { window.probmutFigures.drawAll(); return; }
  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) {
        draw(entry.target.getAttribute("data-figure"));
        observer.unobserve(entry.target);
      }
    });
  }, {rootMargin: "800px 0px"});
  places.forEach(function (p) { observer.observe(p); });
})();
"""
