"""The report page's inline style and script (no external file, font or request of any kind).

The script reads the page's embedded JSON (``<script type="application/json" id="report-data">``),
renders the per-question table (sort by a column header, filter by text, status, verdict, run)
and, on a row's click or a ``#ep=N`` address, the trajectory of that episode. Text is always set
with ``textContent``: answers and documents are data, never markup."""

from __future__ import annotations

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;
vertical-align:top}th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
#questions th{cursor:pointer;user-select:none}#questions th.sorted-asc::after{content:" \\25B2"}
#questions th.sorted-desc::after{content:" \\25BC"}#questions tbody tr{cursor:pointer}
#questions tbody tr:hover{background:#eef}#questions td{max-width:22em;overflow:hidden;text-overflow:ellipsis;
white-space:nowrap}.correct{color:#080}.incorrect{color:#b00}.plots{display:flex;flex-wrap:wrap;gap:1em}
.controls{display:flex;flex-wrap:wrap;gap:.6em;align-items:center;margin:.5em 0}
#trajectory{border:2px solid #88a;padding:.6em 1em;margin:1em 0;background:#fafaff}
#trajectory[hidden]{display:none}.turn{border-left:3px solid #ccd;margin:.6em 0;padding-left:.6em}
.turn.leak{border-left-color:#e80}.leakmark{color:#b50;font-weight:bold}.call{margin:.3em 0 .3em 1em}
.args{font-family:monospace;white-space:pre-wrap;background:#f4f4f4;padding:2px 4px}
.doc.leakdoc{background:#ffe7c2}.text{white-space:pre-wrap}.muted{color:#777}
"""

JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var rows = data.episodes, table = document.getElementById("questions");
  var body = table.tBodies[0], count = document.getElementById("shown");
  var columns = data.columns, sortKey = "index", sortDir = 1;
  var filters = {text: document.getElementById("f-text"), status: document.getElementById("f-status"),
                 outcome: document.getElementById("f-verdict"), run: document.getElementById("f-run")};
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function cell(row, key) {
    var v = row[key];
    return v === null || v === undefined ? "" : v;
  }
  function matches(row) {
    var t = filters.text.value.toLowerCase();
    if (filters.status.value && row.status !== filters.status.value) return false;
    if (filters.outcome.value && row.outcome !== filters.outcome.value) return false;
    if (filters.run && filters.run.value && row.run !== filters.run.value) return false;
    if (!t) return true;
    return [row.qid, row.question, row.final_answer, row.gold].join("\n").toLowerCase().indexOf(t) >= 0;
  }
  function compare(a, b) {
    var x = cell(a, sortKey), y = cell(b, sortKey);
    if (typeof x === "number" && typeof y === "number") return (x - y) * sortDir || a._i - b._i;
    x = String(x); y = String(y);
    return (x < y ? -1 : x > y ? 1 : 0) * sortDir || a._i - b._i;
  }
  function render() {
    var shown = rows.filter(matches).sort(compare), frag = document.createDocumentFragment();
    shown.forEach(function (row) {
      var tr = document.createElement("tr");
      tr.dataset.ep = row._i;
      columns.forEach(function (c) {
        var td = el("td", cell(row, c.key), c.num ? "n" : (c.key === "outcome" ?
          (row.correct ? "correct" : "incorrect") : ""));
        td.title = String(cell(row, c.key));
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    count.textContent = shown.length + " of " + rows.length + " episode(s)";
  }
  function trajectory(i) {
    var row = rows[i], turns = data.trajectories[i], box = document.getElementById("trajectory");
    if (!row) return;
    box.replaceChildren();
    box.appendChild(el("h3", row.run + " · " + row.qid));
    box.appendChild(el("p", row.question));
    var facts = el("p");
    facts.appendChild(el("b", "status: ")); facts.appendChild(el("span", row.status + " "));
    facts.appendChild(el("b", "verdict: "));
    facts.appendChild(el("span", row.outcome + " ", row.correct ? "correct" : "incorrect"));
    facts.appendChild(el("b", "gold: ")); facts.appendChild(el("span", row.gold || "—"));
    box.appendChild(facts);
    box.appendChild(el("p", row.leak_turn === null ?
      "leak audit: the gold answer appeared in no tool response" :
      "leak audit: the gold answer first appeared at turn " + row.leak_turn + " (" + row.leak_tool +
      (row.leak_docid ? ", " + row.leak_docid : "") + ")", row.leak_turn === null ? "muted" : "leakmark"));
    turns.forEach(function (turn) {
      var d = el("div", null, "turn" + (turn.turn === row.leak_turn ? " leak" : ""));
      d.appendChild(el("b", "turn " + turn.turn));
      if (turn.turn === row.leak_turn) d.appendChild(el("span", " ← gold first appeared here", "leakmark"));
      if (turn.text) d.appendChild(el("div", turn.text, "text"));
      turn.calls.forEach(function (call) {
        var c = el("div", null, "call");
        c.appendChild(el("b", call.name + (call.malformed ? " (malformed)" : "")));
        c.appendChild(el("div", JSON.stringify(call.arguments), "args"));
        if (call.documents.length) {
          var ol = el("ol");
          call.documents.forEach(function (doc) {
            var li = el("li", null, "doc" + (turn.turn === row.leak_turn && doc.docid === row.leak_docid ?
              " leakdoc" : ""));
            li.appendChild(el("code", doc.docid)); li.appendChild(el("span", " " + doc.title + " "));
            li.appendChild(el("span", doc.url, "muted"));
            ol.appendChild(li);
          });
          c.appendChild(ol);
        } else if (call.text) {
          c.appendChild(el("div", call.text, "text muted"));
        }
        d.appendChild(c);
      });
      box.appendChild(d);
    });
    var fin = el("p"); fin.appendChild(el("b", "final answer: "));
    fin.appendChild(el("span", row.final_answer || "(none)")); box.appendChild(fin);
    var why = el("p"); why.appendChild(el("b", "judge: "));
    why.appendChild(el("span", row.outcome + (row.judge_reason ? " — " + row.judge_reason : "")));
    box.appendChild(why);
    box.hidden = false;
    box.scrollIntoView();
  }
  function fromHash() {
    var m = /^#ep=(\d+)$/.exec(location.hash);
    if (m) trajectory(Number(m[1]));
  }
  table.tHead.addEventListener("click", function (ev) {
    var th = ev.target.closest("th");
    if (!th) return;
    var key = th.dataset.key;
    sortDir = key === sortKey ? -sortDir : 1; sortKey = key;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.className = h === th ? (sortDir > 0 ? "sorted-asc" : "sorted-desc") : "";
    });
    render();
  });
  body.addEventListener("click", function (ev) {
    var tr = ev.target.closest("tr");
    if (tr) { location.hash = "ep=" + tr.dataset.ep; }
  });
  Object.keys(filters).forEach(function (k) {
    if (!filters[k]) return;
    filters[k].addEventListener("input", render);
    filters[k].addEventListener("change", render);  // a select fires only change in some browsers
  });
  window.addEventListener("hashchange", fromHash);
  rows.forEach(function (row, i) { row._i = i; });
  render();
  fromHash();
  // milliseconds from navigation start until the table is on the page (the browser test reads it)
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "1";
})();
"""

__all__ = ["CSS", "JS"]
