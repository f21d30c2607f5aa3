// grtreport --html: the page's script (inlined by html.rs; no network, no libraries).
// Reads the data element, draws tables, the timeline (SVG: bars scaled by one transform,
// so zooming and panning touch a single attribute), per-ring plots and job details.
// Several cards: a data element (class grt-data) and a section per card, element ids
// suffixed with -cardN.
"use strict";
(function () {
  const one = document.getElementById("grt-data");
  const several = !one;
  const datas = one ? [one] : [...document.querySelectorAll("script.grt-data")];
  const SVGNS = "http://www.w3.org/2000/svg";
  function el(tag, attrs, parent, text) {
    const e = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4))
      : document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  const cards = datas.map(e => drawCard(JSON.parse(e.textContent)));
  const body = document.body;
  body.dataset.jobs = String(cards.reduce((n, c) => n + c.data.jobs.length, 0));
  body.dataset.bars = String(cards.reduce((n, c) => n + c.bars, 0));
  body.dataset.ready = "1";
  window.grtreport = Object.assign({ cards }, cards[0]);

  function drawCard(D) {
    // Element ids of this card's section.
    const S = several ? "-card" + D.card : "";
    // Job fields, looked up by the names in D.job_columns (grtreport's job column table,
    // JOBS.md §10): times in ns since the first record, -1 = not seen.
    function column(name) {
      const i = D.job_columns.indexOf(name);
      if (i < 0) throw new Error("the page's data has no job column " + name);
      return i;
    }
    const CTX = column("ctx"), RING = column("ring"), SEQ = column("seqno"), PID = column("pid"),
      COMMIT = column("commit_ns"), SUBMIT = column("submit_ns"), START = column("start_ns"),
      END = column("end_ns"), DONE = column("done_ns"), TAGS = column("tags"), FLAGS = column("flags"),
      FLAGTXT = column("flags_text"), FILL = column("fill"), OUT = column("outstanding"),
      BLOCKER = column("blocker_job"), BINFO = column("blocker_info");
    // Phases, in D.phases order.
    const PH = D.phases.map(p => column(p + "_ns"));
    const INFERRED = 1, INCOMPLETE = 2;
    const TAG_COLORS = ["#d95f02", "#e7298a", "#7570b3", "#1b9e77", "#e41a1c", "#a6761d"];
    const UNTAGGED = "#6baed6";
    const jobs = D.jobs;
    const ringLabel = {};
    D.rings.forEach(r => { ringLabel[r.id] = r.label; });
    const label = id => ringLabel[id] || ("ring " + id);
    const keyOf = j => j[CTX] + "/" + j[RING] + "/" + j[SEQ];
    const byKey = new Map(jobs.map((j, i) => [keyOf(j), i]));

    const ms = ns => (ns / 1e6).toFixed(3);
    const secs = ns => (ns / 1e9).toFixed(6);
    function color(j) {
      if (j[FLAGS] & INCOMPLETE) return "#bbb";
      for (let t = 0; t < TAG_COLORS.length; t++) if (j[TAGS] & (1 << t)) return TAG_COLORS[t];
      return UNTAGGED;
    }
    function tagNames(bits) {
      const n = D.tags.filter((_, t) => bits & (1 << t));
      return n.length ? n.join(", ") : "none";
    }
    const first = j => [j[COMMIT], j[SUBMIT], j[START], j[END]].find(t => t >= 0);
    const last = j => Math.max(j[DONE], j[END], j[START], j[SUBMIT], j[COMMIT]);

    // ---------------------------------------------------------------- header, verdicts
    const body = several ? el("section", { class: "card", id: "card" + D.card }, document.body)
      : document.body;
    el("h1", {}, body, "grtreport: card" + D.card + " (" + D.driver + ")");
    el("p", { class: "meta" }, body, "input " + D.input + " · " + D.records + " records, " +
      D.events + " events over " + secs(D.span_ns) + " s · " + D.jobs_total + " jobs" +
      (D.lost_records ? " · " + D.lost_records + " records lost" : ""));
    if (D.jobs_left_out > 0 || D.marks_left_out > 0) {
      const p = el("p", { class: "notice", id: "leftout" + S }, body);
      p.textContent = "This page carries the " + jobs.length + " jobs that began before " +
        secs(D.window_end_ns) + " s; " + D.jobs_left_out + " later jobs are left out of the " +
        "timeline (the tables and the plots below cover all " + D.jobs_total + " jobs)" +
        (D.marks_left_out ? "; " + D.marks_left_out + " markers are left out too" : "") +
        ". For another window: grtreport " + D.input + " -w START:END --html FILE" +
        " (or --html-jobs N for more jobs).";
    }
    el("h2", {}, body, "Verdicts");
    const ul = el("ul", { id: "verdicts" + S }, body);
    D.verdicts.forEach(v => el("li", { class: "verdict" }, ul, v));
    (D.hints.length ? D.hints : ["none: no structural bottleneck stands out"])
      .forEach(h => el("li", {}, ul, h));
    D.warnings.forEach(w => el("li", { class: "warn" }, ul, "warning: " + w));

    el("h2", {}, body, "Per ring and context (complete jobs; ms)");
    const tbl = el("table", { id: "groups" + S }, body);
    const hr = el("tr", {}, el("thead", {}, tbl));
    ["", "jobs", "complete", "incomplete", "inferred", "queue p50", "p90", "p99", "exec p50",
      "p90", "p99", "total p50", "p99", "tagged"].concat(D.tags)
      .forEach(h => el("th", {}, hr, h));
    const tb = el("tbody", {}, tbl);
    const QI = D.phases.indexOf("queue"), XI = D.phases.indexOf("exec"),
      TI = D.phases.indexOf("total");
    D.groups.forEach(g => {
      const tr = el("tr", {}, tb);
      const p = (i, q) => g.phases[i][0] ? ms(g.phases[i][q]) : "-";
      [g.label, g.jobs, g.complete, g.incomplete, g.inferred, p(QI, 2), p(QI, 3), p(QI, 4),
        p(XI, 2), p(XI, 3), p(XI, 4), p(TI, 2), p(TI, 4), g.tagged].concat(g.tag_jobs.map(v => v === null ? "-" : v))
        .forEach(v => el("td", {}, tr, String(v)));
    });

    // ---------------------------------------------------------------- timeline rows
    el("h2", {}, body, "Timeline: rings (execution) and contexts (host submit, queued, running)");
    const bar = el("div", { class: "toolbar" }, body);
    const bIn = el("button", { id: "zoom-in" + S }, bar, "zoom in");
    const bOut = el("button", { id: "zoom-out" + S }, bar, "zoom out");
    const bFit = el("button", { id: "zoom-fit" + S }, bar, "fit");
    const viewText = el("span", { id: "view" + S }, bar);
    const legend = el("span", { class: "legend" }, bar);
    D.tags.forEach((t, i) => {
      const s = el("span", {}, legend);
      el("i", { style: "background:" + TAG_COLORS[i] }, s);
      s.appendChild(document.createTextNode(t));
    });
    [["untagged", UNTAGGED], ["incomplete", "#bbb"]].forEach(([t, c]) => {
      const s = el("span", {}, legend);
      el("i", { style: "background:" + c }, s);
      s.appendChild(document.createTextNode(t));
    });
    el("span", {}, legend, "dashed outline: START inferred · purple lines: messages · red marks: faults, resets, timeouts, stalls · arrows: blocker → job (red: dependency, orange: ring queue) · wheel: zoom, drag: pan");

    // Greedy lanes: an item goes to the first lane whose last item ended before it starts.
    function lanes(items) {
      const ends = [];
      items.sort((a, b) => a.s - b.s);
      for (const it of items) {
        let l = ends.findIndex(e => e <= it.s);
        if (l < 0) { l = ends.length; ends.push(0); }
        ends[l] = Math.max(it.e, it.s);
        it.lane = l;
      }
      return Math.max(ends.length, 1);
    }
    const rows = []; // {label, section}
    const ROW = 16, AXIS = 22, LABEL = 170;
    const ringIds = [...new Set(D.rings.map(r => r.id).concat(jobs.map(j => j[RING])))]
      .sort((a, b) => a - b);
    const ringRow = {}, jobRingRow = new Array(jobs.length), jobCtxRow = new Array(jobs.length);
    rows.push({ label: "rings", head: true });
    for (const r of ringIds) {
      const items = [];
      jobs.forEach((j, i) => {
        if (j[RING] === r && j[START] >= 0 && j[END] >= 0) items.push({ s: j[START], e: j[END], i });
      });
      const n = lanes(items);
      ringRow[r] = rows.length;
      for (let l = 0; l < n; l++) rows.push({ label: label(r) + (l ? " #" + (l + 1) : "") });
      items.forEach(it => { jobRingRow[it.i] = ringRow[r] + it.lane; });
    }
    rows.push({ label: "contexts", head: true });
    const ctxIds = [...new Set(jobs.map(j => j[CTX]))].sort((a, b) => a - b);
    for (const c of ctxIds) {
      const items = [];
      jobs.forEach((j, i) => {
        if (j[CTX] === c) items.push({ s: first(j), e: Math.max(j[END], j[START], j[SUBMIT], j[COMMIT]), i });
      });
      const n = lanes(items);
      const base = rows.length;
      for (let l = 0; l < n; l++) rows.push({ label: "ctx " + c + (l ? " #" + (l + 1) : "") });
      items.forEach(it => { jobCtxRow[it.i] = base + it.lane; });
    }
    const rowY = r => AXIS + r * ROW;
    const height = AXIS + rows.length * ROW + 4;

    const box = el("div", { id: "timeline" + S, class: "timeline" }, body);
    const width = Math.max(800, (box.clientWidth || document.documentElement.clientWidth - 40));
    const svg = el("svg:svg", { width, height, id: "tl-svg" + S }, box);
    const plotW = width - LABEL - 8;
    const defs = el("svg:defs", {}, svg);
    const clip = el("svg:clipPath", { id: "plotclip" + S }, defs);
    el("svg:rect", { x: LABEL, y: 0, width: plotW, height }, clip);
    rows.forEach((r, i) => {
      if (!r.head) el("svg:rect", { class: "lanebg" + (i % 2 ? " odd" : ""), x: LABEL, y: rowY(i), width: plotW, height: ROW }, svg);
      el("svg:text", { class: r.head ? "sechead" : "rowlabel", x: 4, y: rowY(i) + ROW - 4 }, svg, r.label);
    });
    const axis = el("svg:g", { class: "axis" }, svg);
    const clipped = el("svg:g", { "clip-path": "url(#plotclip" + S + ")" }, svg);
    const zoom = el("svg:g", { id: "zoom" + S }, clipped);
    const overlay = el("svg:g", {}, clipped);

    // Bars, in microseconds since the first record (the transform maps them to pixels).
    const US = ns => ns / 1000;
    function rect(cls, i, s, e, row, fill) {
      const j = jobs[i];
      let c = cls;
      if (j[FLAGS] & INFERRED) c += " inferred";
      if (j[FLAGS] & INCOMPLETE) c += " incomplete";
      return el("svg:rect", {
        class: c, "data-i": i, x: US(s), y: rowY(row) + 2, width: Math.max(US(e - s), 0),
        height: ROW - 4, fill, stroke: fill,
      }, zoom);
    }
    jobs.forEach((j, i) => {
      const c = color(j);
      if (jobRingRow[i] !== undefined) rect("job", i, j[START], j[END], jobRingRow[i], c);
      const row = jobCtxRow[i];
      if (j[COMMIT] >= 0 && j[SUBMIT] >= 0 && j[PH[0]] !== null) rect("phase host", i, j[COMMIT], j[SUBMIT], row, c);
      if (j[SUBMIT] >= 0 && j[START] >= 0 && j[PH[1]] !== null) rect("phase queue", i, j[SUBMIT], j[START], row, c);
      if (j[START] >= 0 && j[END] >= 0) rect("phase exec", i, j[START], j[END], row, c);
    });

    // ---------------------------------------------------------------- view, zoom, pan
    // "fit": the carried jobs, with a little margin (the trace may idle around them).
    let lo = Infinity, hi = -Infinity;
    jobs.forEach(j => { lo = Math.min(lo, first(j)); hi = Math.max(hi, last(j)); });
    if (!(lo <= hi)) { lo = 0; hi = Math.min(D.window_end_ns, D.span_ns + 1); }
    const pad = Math.max((hi - lo) * 0.02, 1000);
    const full = [US(Math.max(lo - pad, 0)), US(hi + pad)];
    let v0 = full[0], v1 = full[1];
    const k = () => plotW / (v1 - v0);
    const px = us => LABEL + (us - v0) * k();
    function niceStep(span) {
      const raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
      return [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
    }
    function drawAxis() {
      axis.textContent = "";
      const step = niceStep(v1 - v0);
      for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
        const x = px(t);
        el("svg:line", { x1: x, x2: x, y1: AXIS - 4, y2: height }, axis);
        const txt = step >= 1e6 ? (t / 1e6).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e6)))) + " s"
          : (t / 1e3).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e3)))) + " ms";
        el("svg:text", { x: x + 2, y: 12 }, axis, txt);
      }
    }
    // Markers and arrows are drawn in pixels (few of them), so they keep their shape.
    function drawOverlay() {
      overlay.textContent = "";
      for (const [t, pid, text] of D.msgs) {
        const x = px(US(t));
        if (x < LABEL || x > LABEL + plotW) continue;
        el("svg:line", { class: "msg", x1: x, x2: x, y1: AXIS, y2: height }, overlay);
        const m = el("svg:path", { class: "msgmark", d: `M${x - 4},${AXIS - 8}h8l-4,6z` }, overlay);
        el("svg:title", {}, m, secs(t) + " s pid " + pid + ": " + text);
      }
      for (const [t, ring, name, ctx, seqno] of D.marks) {
        const x = px(US(t));
        const r = ringRow[ring];
        if (r === undefined || x < LABEL || x > LABEL + plotW) continue;
        const y = rowY(r);
        const m = el("svg:path", { class: "mark", d: `M${x - 4},${y}h8l-4,7z` }, overlay);
        el("svg:title", {}, m, secs(t) + " s " + name + " on " + label(ring) + " ctx " + ctx + " seqno " + seqno);
      }
      for (const [t, n] of D.lost) {
        const x = px(US(t));
        if (x < LABEL || x > LABEL + plotW) continue;
        const m = el("svg:path", { class: "lostmark", d: `M${x - 4},${AXIS - 8}h8l-4,6z` }, overlay);
        el("svg:title", {}, m, secs(t) + " s: " + n + " records lost");
      }
      jobs.forEach((j, i) => {
        const b = j[BLOCKER] && byKey.get(j[BLOCKER]);
        if (b === undefined || b === null || jobRingRow[i] === undefined || jobRingRow[b] === undefined) return;
        const x0 = px(US(jobs[b][END])), y0 = rowY(jobRingRow[b]) + ROW / 2;
        const x1 = px(US(j[START])), y1 = rowY(jobRingRow[i]) + ROW / 2;
        if (Math.max(x0, x1) < LABEL || Math.min(x0, x1) > LABEL + plotW) return;
        const a = el("svg:path", { class: "dep " + j[BINFO][0], d: `M${x0},${y0}C${x0 + 20},${y0} ${x1 - 20},${y1} ${x1},${y1}m-5,-3l5,3l-5,3` }, overlay);
        el("svg:title", {}, a, j[CTX] + "/" + j[SEQ] + (j[BINFO][0] === "dep" ? " waited for " : " queued behind ") +
          j[BINFO][1] + " (" + ms(j[BINFO][2]) + " ms)");
      });
    }
    const viewListeners = [];
    let pending = false;
    function render() {
      pending = false;
      zoom.setAttribute("transform", `translate(${LABEL - v0 * k()},0) scale(${k()},1)`);
      drawAxis();
      drawOverlay();
      viewText.textContent = "view " + (v0 / 1e6).toFixed(6) + " – " + (v1 / 1e6).toFixed(6) + " s";
      viewListeners.forEach(f => f(v0, v1));
    }
    function setView(a, b) {
      const span = Math.max(b - a, 0.01);
      v0 = a; v1 = a + span;
      if (!pending) { pending = true; requestAnimationFrame(render); }
    }
    function zoomAt(x, f) {
      const t = v0 + (x - LABEL) / k();
      setView(t - (t - v0) * f, t + (v1 - t) * f);
    }
    svg.addEventListener("wheel", ev => {
      ev.preventDefault();
      const r = svg.getBoundingClientRect();
      zoomAt(ev.clientX - r.left, Math.exp(ev.deltaY * 0.002));
    }, { passive: false });
    let drag = null;
    svg.addEventListener("mousedown", ev => { drag = { x: ev.clientX, a: v0, b: v1, moved: false }; });
    window.addEventListener("mousemove", ev => {
      if (!drag) return;
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 2) { drag.moved = true; box.classList.add("dragging"); }
      const dt = dx / (plotW / (drag.b - drag.a));
      setView(drag.a - dt, drag.b - dt);
    });
    window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); box.classList.remove("dragging"); });
    bIn.onclick = () => zoomAt(LABEL + plotW / 2, 0.5);
    bOut.onclick = () => zoomAt(LABEL + plotW / 2, 2);
    bFit.onclick = () => setView(full[0], full[1]);

    // ---------------------------------------------------------------- job details
    el("h2", {}, body, "Job");
    const det = el("div", { id: "details" + S, class: "details" }, body, "Click a job bar for its phases, tags, blocker chain and the grtparse command that prints its events.");
    let selected = -1;
    function showJob(i) {
      zoom.querySelectorAll("rect.sel").forEach(r => r.classList.remove("sel"));
      zoom.querySelectorAll(`rect[data-i="${i}"]`).forEach(r => r.classList.add("sel"));
      selected = i;
      const j = jobs[i];
      det.textContent = "";
      det.dataset.job = keyOf(j);
      el("h3", {}, det, "ctx " + j[CTX] + " · " + label(j[RING]) + " · seqno " + j[SEQ] +
        (j[PID] ? " · pid " + j[PID] : ""));
      const t1 = el("table", { class: "times" }, det);
      const h1 = el("tr", {}, t1), r1 = el("tr", {}, t1);
      [["COMMIT", COMMIT], ["SUBMIT", SUBMIT], ["START", START], ["END", END], ["done", DONE]]
        .forEach(([n, f]) => { el("th", {}, h1, n); el("td", {}, r1, j[f] >= 0 ? secs(j[f]) + " s" : "not seen"); });
      const t2 = el("table", { class: "phases" }, det);
      const h2 = el("tr", {}, t2), r2 = el("tr", {}, t2);
      D.phases.forEach((p, n) => { el("th", {}, h2, p); el("td", {}, r2, j[PH[n]] === null ? "-" : ms(j[PH[n]]) + " ms"); });
      const info = el("p", {}, det);
      info.textContent = "tags: " + tagNames(j[TAGS]) + " · flags: " + j[FLAGTXT] +
        " · ring fill at SUBMIT: " + (j[FILL] === null ? "unknown" : (j[FILL] * 100).toFixed(0) + "%") +
        " · outstanding: " + j[OUT];
      const bl = el("p", { class: "blocker" }, det);
      bl.textContent = "blocker: " + (j[BINFO] ? (j[BINFO][0] === "dep" ? "waited for " : "queued behind ") +
        j[BINFO][1] + ", " + ms(j[BINFO][2]) + " ms lost" +
        (j[BINFO][0] === "dep" ? ", chain depth " + j[BINFO][3] : "") : "none");
      const chain = el("p", { class: "blockers" }, det, "blocker chain: ");
      if (!j[BLOCKER]) chain.appendChild(document.createTextNode(j[BINFO] ? "(not a recorded job)" : "none attributed"));
      const seen = new Set();
      for (let b = j[BLOCKER]; b && !seen.has(b); ) {
        seen.add(b);
        const bi = byKey.get(b);
        chain.appendChild(document.createTextNode(" ← "));
        if (bi === undefined) {
          chain.appendChild(document.createTextNode(b + " (not in this page)"));
          break;
        }
        const a = el("a", { href: "#" }, chain, b);
        a.onclick = ev => { ev.preventDefault(); showJob(bi); };
        b = jobs[bi][BLOCKER];
      }
      const lo = Math.floor(first(j) / 1000) / 1e6, hi = Math.ceil(last(j) / 1000) / 1e6;
      const cmd = "grtparse " + D.input + " --ring " + j[RING] + " -w " + lo.toFixed(6) + ":" +
        hi.toFixed(6) + " | awk '" + (several ? "$1 == \"card" + D.card + "\" && " : "") +
        "$9 == " + j[SEQ] + " && ($8 == " + j[CTX] + " || $8 == 0)'";
      const p = el("p", {}, det, "its events: ");
      el("code", { id: "grtparse-cmd" + S }, p, cmd);
    }
    zoom.addEventListener("click", ev => {
      if (drag && drag.moved) return;
      const i = ev.target.getAttribute && ev.target.getAttribute("data-i");
      if (i !== null && i !== undefined) showJob(+i);
    });

    // ---------------------------------------------------------------- plots per ring
    el("h2", {}, body, "Per ring over time (whole trace; " + ms(D.bucket_ns) + " ms per point; the shaded band is the timeline's view)");
    const PLOTS = [
      ["busy %", [[0, "#1f77b4"]], false],
      ["jobs outstanding (max)", [[1, "#ff7f0e"]], false],
      ["ring fill % (max at ALLOC/COMMIT/SUBMIT)", [[2, "#2ca02c"]], false],
      ["latency ms, log: queue p50/p90/p99 (dashed), exec p50/p90/p99", [[3, "#9467bd", 1], [4, "#9467bd", 2], [5, "#9467bd", 3], [6, "#d62728"], [7, "#d62728"], [8, "#d62728"]], true],
    ];
    const plotViews = [];
    // Plots span the trace up to its last activity (the series end there).
    const nPts = Math.max(1, ...Object.values(D.series).map(s => s.length));
    const plotSpanUs = nPts * D.bucket_ns / 1000;
    for (const r of Object.keys(D.series).map(Number).sort((a, b) => a - b)) {
      const s = D.series[r];
      el("h3", {}, body, label(r));
      const grid = el("div", { class: "plots" }, body);
      for (const [title, lines, log] of PLOTS) {
        const cell = el("div", { class: "plot" }, grid);
        let max = 0, min = Infinity;
        for (const [f] of lines) for (const p of s) if (p[f] !== null) { max = Math.max(max, p[f]); min = Math.min(min, p[f]); }
        const W = 400, H = 100;
        const y = v => log ? H - 4 - (H - 8) * (Math.log10(Math.max(v, 1)) - Math.log10(Math.max(min, 1))) /
          Math.max(Math.log10(Math.max(max, 1)) - Math.log10(Math.max(min, 1)), 1e-9)
          : H - 4 - (H - 8) * v / Math.max(max, 1e-9);
        el("div", { class: "title" }, cell, title + (max ? " (max " + (log ? ms(max) : max.toFixed(1)) + ")" : ""));
        const g = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", "data-ring": r }, cell);
        const view = el("svg:rect", { class: "view", y: 0, height: H }, g);
        plotViews.push(view);
        const xs = i => (i + 0.5) * W / nPts;
        for (const [f, c, dash] of lines) {
          const pts = [];
          s.forEach((p, i) => { if (p[f] !== null) pts.push(xs(i).toFixed(1) + "," + y(p[f]).toFixed(1)); });
          const pl = el("svg:polyline", { points: pts.join(" "), stroke: c }, g);
          if (dash) pl.setAttribute("stroke-dasharray", "4 " + dash);
        }
        g.addEventListener("click", ev => {
          const b = g.getBoundingClientRect();
          const t = (ev.clientX - b.left) / b.width * plotSpanUs;
          const half = (v1 - v0) / 2;
          setView(t - half, t + half);
          box.scrollIntoView({ block: "nearest" });
        });
      }
    }
    viewListeners.push((a, b) => {
      const span = plotSpanUs;
      for (const v of plotViews) {
        v.setAttribute("x", Math.max(a / span * 400, 0));
        v.setAttribute("width", Math.max((Math.min(b, span) - Math.max(a, 0)) / span * 400, 0.5));
      }
    });

    el("h2", {}, body, "Text report");
    const d = el("details", {}, body);
    el("summary", {}, d, "grtreport's text report (as printed on the terminal)");
    el("pre", { id: "report" + S }, d, D.report);

    render();
    return { data: D, showJob, setView, selected: () => selected,
      bars: zoom.querySelectorAll("rect.job").length };
  }
})();
