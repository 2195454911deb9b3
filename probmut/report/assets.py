"""The page's inline style sheet and script."""

from __future__ import annotations

from probmut.report.text import slug


def style_sheet() -> str:
    from probmut.campaign.summary import OUTCOME_COLORS

    tags = "".join(f".tag.{slug(o)}{{border-color:{colour};color:{colour}}}"
                   for o, colour in OUTCOME_COLORS.items())
    return STYLE_SHEET + tags


STYLE_SHEET = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;
max-width:1280px;padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px;overflow-wrap:anywhere}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid #ddd}h3{font-size:15px;margin:0 0 6px;overflow-wrap:anywhere}
code,pre{overflow-wrap:anywhere;word-break:break-word}
pre{white-space:pre-wrap;background:#f5f5f5;padding:8px;border-radius:4px}
.produced{color:#555;margin:0 0 6px}nav a{margin-right:12px;display:inline-block}
.status{padding:8px 12px;border-radius:4px;margin:8px 0}
.status.complete{background:#e8f5e9}.status.unknown{background:#fff8e1}
.status.unfinished{background:#fdecea;border:1px solid #e53935}
.status ul{margin:4px 0 0}.top{display:flex;gap:32px;align-items:flex-start;flex-wrap:wrap}
.score{flex:0 1 440px;min-width:0}.top>div:last-child{flex:1 1 300px;min-width:0}
.score .label{color:#555}.score .big{font-size:40px;font-weight:600;line-height:1.1}
.counts{list-style:none;padding:0;display:flex;gap:18px;flex-wrap:wrap;margin:8px 0}
.counts b{font-size:20px}.note{color:#555;font-size:12px}
table{border-collapse:collapse}.facts{max-width:100%}.facts th{text-align:left;width:11em;
vertical-align:top;padding:3px 12px 3px 0;color:#555;font-weight:normal}
.facts td{padding:3px 0;overflow-wrap:anywhere}.facts ul{margin:0;padding-left:18px}
table.data th,table.data td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;
vertical-align:top}table.data th{background:#f5f5f5;position:sticky;top:0;z-index:1}
table.data td.wrap{min-width:14em}
.scroll-x{overflow-x:auto;max-width:100%}
#mutant-table{font-size:13px}#mutant-table td{white-space:nowrap}
#mutant-table td:first-child{white-space:normal;min-width:11em}
#mutant-table td:nth-child(12),#mutant-table td:nth-child(13){white-space:normal;
min-width:9em;font-size:12px;overflow-wrap:anywhere}
#mutant-table th{white-space:nowrap}
.js #mutant-table th{cursor:pointer;user-select:none}
#mutant-table th[aria-sort=ascending]::after{content:" \\25B2"}
#mutant-table th[aria-sort=descending]::after{content:" \\25BC"}
.scroll{overflow:auto;max-height:80vh;max-width:100%}
@media (min-width:1200px){.scroll{overflow:visible;max-height:none}}
.needs-js{display:none}.js .needs-js{display:block}.js span.needs-js{display:inline}
.controls{margin:6px 0}.controls input[type=search]{width:100%;max-width:380px;padding:4px}
#outcomes{border:0;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 14px}
#outcomes legend{float:left;margin-right:8px;color:#555}
img{max-width:100%;height:auto}
.cards{display:flex;flex-wrap:wrap;gap:16px}.card{margin:0;max-width:360px}
figure.wide{margin:0}
.mutant{border-top:1px solid #ddd;padding:12px 0}.pair{display:flex;gap:20px;
flex-wrap:wrap;align-items:flex-start}.pair img{flex:0 0 auto}
.pair .facts{flex:1 1 320px;min-width:0}
.remarks{margin:0;padding-left:18px;color:#8a4b00}
.tag{font-size:12px;font-weight:normal;padding:0 6px;border-radius:8px;border:1px solid #999;
white-space:nowrap;background:#fff}
.key{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 12px}
details{margin:6px 0}.back{font-size:12px}dt{font-weight:600}dd{margin:0 0 8px 16px}
"""

#: Sorting and filtering of the mutant table: plain JavaScript, no library. The view
#: (outcomes shown, words) is kept in the URL's hash: ``#show=killed,not-settled&q=label``.
SCRIPT = """
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var table = document.getElementById("mutant-table");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var headers = table.tHead.rows[0].cells;
  var filter = document.getElementById("filter");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("#outcomes input"));
  var shown = document.getElementById("shown");

  function value(row, column, numeric) {
    var text = row.cells[column].getAttribute("data-value");
    if (!numeric) { return text.toLowerCase(); }
    return text === "" ? NaN : Number(text);
  }

  function sortBy(column) {
    var header = headers[column];
    var numeric = header.getAttribute("data-type") === "number";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    for (var i = 0; i < headers.length; i++) { headers[i].removeAttribute("aria-sort"); }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var sign = ascending ? 1 : -1;
    var sorted = rows.slice().sort(function (a, b) {
      var x = value(a, column, numeric), y = value(b, column, numeric);
      if (numeric && (isNaN(x) || isNaN(y))) { return isNaN(x) - isNaN(y); }
      return sign * (x < y ? -1 : x > y ? 1 : 0);
    });
    sorted.forEach(function (row) { body.appendChild(row); });
  }

  function writeView() {
    var chosen = boxes.filter(function (b) { return b.checked; })
      .map(function (b) { return b.value; });
    var parts = [];
    if (chosen.length) { parts.push("show=" + chosen.join(",")); }
    if (filter.value.trim()) { parts.push("q=" + encodeURIComponent(filter.value.trim())); }
    var here = location.pathname + location.search;
    history.replaceState(null, "", parts.length ? here + "#" + parts.join("&") : here);
  }

  function readView() {
    var hash = location.hash.slice(1);
    if (!/^(show|q)=/.test(hash)) { return false; }  // a section of the page, not a view
    var view = {};
    hash.split("&").forEach(function (part) {
      var at = part.indexOf("=");
      if (at > 0) { view[part.slice(0, at)] = decodeURIComponent(part.slice(at + 1)); }
    });
    var chosen = (view.show || "").split(",");
    boxes.forEach(function (b) { b.checked = chosen.indexOf(b.value) >= 0; });
    filter.value = view.q || "";
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

  Array.prototype.forEach.call(headers, function (header, column) {
    header.tabIndex = 0;
    header.title = "sort by " + header.getAttribute("data-label");
    header.addEventListener("click", function () { sortBy(column); });
    header.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { sortBy(column); }
    });
  });
  filter.addEventListener("input", function () { apply(); writeView(); });
  boxes.forEach(function (b) {
    b.addEventListener("change", function () { apply(); writeView(); });
  });
  window.addEventListener("hashchange", function () { if (readView()) { apply(); } });
  readView();
  apply();
})();
"""
