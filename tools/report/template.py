"""The report's HTML page: inline CSS, inline SVG drawn by inline JS, no network.

Filled with ``string.Template``: $title, $banner, $campaign (a campaign's before/after panel,
first), $kpis, $task_coverage (server-side HTML
table), $gaps, $notes, $trend (server-side HTML table),
$data (JSON).
The script sets ``data-ok="1"`` on <body> after drawing (and ``data-table-overflow``: whether the
task x bin table is wider than the page) and records any error in
``data-error``, so a headless browser can check that the page rendered.
"""

TEMPLATE = r'''<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>STRUCT-COVER report $title</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.kpis { display: flex; gap: 18px; flex-wrap: wrap; }
.kpi { background: #f4f6f8; padding: 8px 14px; border-radius: 6px; }
.kpi b { display: block; font-size: 20px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 4px 8px; vertical-align: top; text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 18px; }
svg text { font-size: 11px; fill: #333; }
.note { color: #666; font-size: 12px; }
.tc td.n { text-align: right; min-width: 18px; padding: 2px 3px; }
.tc th.bin { font-weight: normal; font-size: 11px; white-space: nowrap; padding: 4px 2px; vertical-align: bottom; }
.tc th.bin span { writing-mode: vertical-rl; transform: rotate(180deg); }
ol.notes { font-size: 12px; color: #444; }
.sim { background: #fff4d6; border: 1px solid #e6c35c; padding: 6px 10px; border-radius: 4px; }
</style>
</head>
<body data-ok="0">
<h1>STRUCT-COVER diagnosis $title</h1>
$banner
$campaign
<h2>The round as it came in</h2>
<div class="kpis">$kpis</div>
<h2>Coverage per task (task × bin)</h2>
$task_coverage
<h2>Coverage heatmaps over pairs of archive features</h2>
<div class="plots" id="heatmaps"></div>
<h2>Mutual information with performance, by tier</h2>
<div id="mi"></div>
<h2>Structural entropy and SCov across rounds</h2>
<div class="plots" id="rounds"></div>
$trend
<h2>Structure–reward mismatch (SRMis)</h2>
<p class="note">Each point is a correct program: predicted rank (from structure alone, out of fold)
against actual rank of R_perf, both divided by N. Points far above the diagonal look optimized
but are slow (shortcuts); far below, look naive but are fast (hidden optimizations).</p>
<div id="srmis"></div>
<h2>Gaps, by priority</h2>
$gaps
<h2>Notes</h2>
$notes
<script type="application/json" id="report-data">$data</script>
<script>
(function () {
  "use strict";
  var body = document.body;
  window.onerror = function (msg) { body.setAttribute("data-error", String(msg)); };
  var NS = "http://www.w3.org/2000/svg";
  var D = JSON.parse(document.getElementById("report-data").textContent);
  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svg(parent, w, h, cls) {
    var s = el("svg", {width: w, height: h, viewBox: "0 0 " + w + " " + h, "class": cls});
    parent.appendChild(s);
    return s;
  }
  function heatmap(hm) {
    var cw = 64, ch = 26, left = 150, top = 30;
    var s = svg(document.getElementById("heatmaps"), Math.max(left + cw * hm.x_labels.length + 20,
                7 * (hm.x.length + hm.y.length) + left + 40),
                top + ch * hm.y_labels.length + 50, "plot heatmap");
    var max = 1;
    hm.counts.forEach(function (r) { r.forEach(function (v) { if (v > max) max = v; }); });
    el("text", {x: left, y: 14}, s, hm.y + " (rows) \u00d7 " + hm.x + " (columns)");
    hm.counts.forEach(function (row, i) {
      el("text", {x: left - 6, y: top + ch * i + 17, "text-anchor": "end"}, s, hm.y_labels[i]);
      row.forEach(function (v, j) {
        var a = v === 0 ? 0 : 0.15 + 0.85 * Math.log(1 + v) / Math.log(1 + max);
        var r = el("rect", {x: left + cw * j, y: top + ch * i, width: cw - 2, height: ch - 2,
                    fill: v === 0 ? "#f3d5d5" : "rgba(30,100,200," + a.toFixed(3) + ")",
                    "class": "cell"}, s);
        el("title", {}, r, hm.y_labels[i] + ", " + hm.x_labels[j] + ": " + v);
        el("text", {x: left + cw * j + cw / 2 - 1, y: top + ch * i + 17, "text-anchor": "middle"},
           s, String(v));
      });
    });
    hm.x_labels.forEach(function (lab, j) {
      el("text", {x: left + cw * j + cw / 2, y: top + ch * hm.y_labels.length + 14,
                  "text-anchor": "middle"}, s, lab);
    });
  }
  function bars(feats) {
    var colors = {critical: "#c0392b", moderate: "#e67e22", marginal: "#95a5a6"};
    var left = 230, bh = 18, w = 700;
    var s = svg(document.getElementById("mi"), w, 30 + bh * Math.max(feats.length, 1), "plot mi");
    var max = 1e-9;
    feats.forEach(function (f) { if ((f.mi || 0) > max) max = f.mi; });
    if (!feats.length) el("text", {x: 10, y: 20}, s, "no discovery for this round: no MI");
    feats.forEach(function (f, i) {
      var len = (w - left - 80) * (f.mi || 0) / max;
      el("text", {x: left - 6, y: 22 + bh * i, "text-anchor": "end"}, s, f.name);
      el("rect", {x: left, y: 10 + bh * i, width: Math.max(len, 1), height: bh - 4,
                  fill: colors[f.tier] || "#7f8c8d", "class": "bar"}, s);
      el("text", {x: left + len + 4, y: 22 + bh * i}, s,
         (f.mi === null ? "n/a" : f.mi.toFixed(3)) + " " + (f.tier || ""));
    });
  }
  function line(title, key, color) {
    var pts = D.rounds, w = 360, h = 220, l = 50, b = 30, t = 24;
    var s = svg(document.getElementById("rounds"), w, h, "plot rounds");
    el("text", {x: l, y: 14}, s, title);
    var ys = pts.map(function (p) { return p[key]; });
    var ymax = Math.max.apply(null, ys.concat([1e-9])) * 1.1;
    var xs = pts.map(function (p) { return p.round; });
    var xmin = Math.min.apply(null, xs), xmax = Math.max.apply(null, xs);
    function X(v) { return l + (w - l - 20) * (xmax > xmin ? (v - xmin) / (xmax - xmin) : 0.5); }
    function Y(v) { return h - b - (h - b - t) * v / ymax; }
    el("line", {x1: l, y1: h - b, x2: w - 10, y2: h - b, stroke: "#999"}, s);
    el("line", {x1: l, y1: t, x2: l, y2: h - b, stroke: "#999"}, s);
    el("text", {x: l - 4, y: t + 4, "text-anchor": "end"}, s, ymax.toFixed(2));
    el("polyline", {points: pts.map(function (p) {
        return X(p.round) + "," + Y(p[key]); }).join(" "),
                    fill: "none", stroke: color, "stroke-width": 2}, s);
    pts.forEach(function (p) {
      el("circle", {cx: X(p.round), cy: Y(p[key]), r: 4, fill: color, "class": "point"}, s);
      el("text", {x: X(p.round), y: h - b + 14, "text-anchor": "middle"}, s, "round " + p.round);
    });
  }
  function scatter(points) {
    var w = 420, h = 420, m = 40;
    var s = svg(document.getElementById("srmis"), w, h, "plot scatter");
    el("rect", {x: m, y: m / 2, width: w - 1.5 * m, height: h - 1.5 * m, fill: "none",
                stroke: "#999"}, s);
    el("line", {x1: m, y1: h - m, x2: w - m / 2, y2: m / 2, stroke: "#bbb",
                "stroke-dasharray": "4 3"}, s);
    el("text", {x: w / 2, y: h - 8, "text-anchor": "middle"}, s, "actual rank / N");
    el("text", {x: 12, y: h / 2, transform: "rotate(-90 12 " + h / 2 + ")",
                "text-anchor": "middle"}, s, "predicted rank / N");
    if (!points.length)
      el("text", {x: w / 2, y: h / 2, "text-anchor": "middle"}, s, "SRMis not computed");
    points.forEach(function (p) {
      var c = el("circle", {cx: m + (w - 1.5 * m) * p[1], cy: h - m - (h - 1.5 * m) * p[0], r: 2.2,
                            fill: Math.abs(p[0] - p[1]) > 0.4 ? "#c0392b" : "#2e86c1",
                            "fill-opacity": 0.6, "class": "point"}, s);
      el("title", {}, c, p[2]);
    });
  }
  D.heatmaps.forEach(heatmap);
  if (!D.heatmaps.length)
    document.getElementById("heatmaps").textContent = "fewer than two archive features";
  bars(D.features);
  line("structural entropy H(S(D)) (nats)", "entropy", "#8e44ad");
  line("SCov (covered / all bins)", "scov", "#16a085");
  scatter(D.scatter);
  body.setAttribute("data-plots", String(document.querySelectorAll("svg.plot").length));
  // Whether the task x bin table overflows the page's width (a browser test reads it).
  var tc = document.getElementById("task-coverage");
  if (tc) { body.setAttribute("data-table-overflow", String(tc.scrollWidth > body.clientWidth ? 1 : 0)); }
  body.setAttribute("data-ok", "1");
})();
</script>
</body>
</html>
'''
