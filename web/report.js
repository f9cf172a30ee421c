// The stepscope HTML report: draws the JSON document that renderers/report/html.cpp
// embeds in #stepscope-data (docs/html-report.md). Every string from the run
// reaches the page through textContent or d3's .text(), never as markup.
// Each section renders on its own: one that is absent from the data stays
// hidden, one that fails shows why without taking the others down.
"use strict";

(function () {
  const PHASES = ["data_wait", "forward", "backward", "optimizer", "other"];
  const PHASE_COLORS = { data_wait: "#d9534f", forward: "#4a7fd6", backward: "#7a5cc2", optimizer: "#3aa57a",
                         other: "#b0b7c3", outside: "#e0b050" };
  const SERIES_COLORS = ["#4a7fd6", "#d9534f", "#3aa57a", "#e0a020", "#7a5cc2", "#2aa0b8", "#c2569c", "#7d8a99",
                         "#8c6d31", "#5a9e3a", "#b04d4d", "#3d5a99"];
  const MAX_SERIES_PER_CHART = 12;
  const TABLE_ROWS = 100;

  // --- small helpers --------------------------------------------------------

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  const byId = (id) => document.getElementById(id);
  const isNumber = (v) => typeof v === "number" && isFinite(v);
  const isScalar = (v) => v === null || ["string", "number", "boolean"].includes(typeof v);

  // A duration in the unit that suits it: µs below a millisecond, s from 10 s.
  function fmtMs(ns) {
    if (!isNumber(ns)) return "–";
    const magnitude = Math.abs(ns);
    if (magnitude > 0 && magnitude < 1e6) return (ns / 1e3).toFixed(1) + " µs";
    if (magnitude >= 1e10) return (ns / 1e9).toFixed(2) + " s";
    return (ns / 1e6).toFixed(1) + " ms";
  }
  function fmtPct(f) { return isNumber(f) ? (100 * f).toFixed(1) + "%" : "–"; }
  function fmtNumber(v, digits) {
    if (!isNumber(v)) return v === null || v === undefined ? "–" : String(v);
    if (Number.isInteger(v)) return v.toLocaleString("en-US");
    return v.toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 3 : digits });
  }
  function fmtBytes(b) {
    if (!isNumber(b)) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return b.toFixed(i ? 1 : 0) + " " + units[i];
  }
  function fmtValue(unit, v) {
    if (!isNumber(v)) return "–";
    if (unit === "bytes") return fmtBytes(v);
    if (unit === "bytes/s") return fmtBytes(v) + "/s";
    if (unit === "percent") return fmtNumber(v, 1) + "%";
    return fmtNumber(v, 2) + (unit ? " " + unit : "");
  }

  function chartWidth(container) {
    return Math.max(400, Math.min(1350, (container.clientWidth || document.body.clientWidth || 1000) - 10));
  }

  function showSection(id) { byId(id).hidden = false; }

  function safely(sectionId, render) {
    try {
      render();
    } catch (err) {
      const section = byId(sectionId);
      section.hidden = false;
      section.appendChild(el("p", { class: "render-error" }, "Could not draw this section: " + err));
    }
  }

  function figure(container, label, value) {
    const box = el("div", { class: "figure" });
    box.appendChild(el("div", { class: "label" }, label));
    box.appendChild(el("div", { class: "value" }, value));
    container.appendChild(box);
  }

  // A table sortable by any column; `columns` are {key, label, numeric, format}.
  // Long tables show their first rows (in the current order) until asked.
  function sortableTable(container, columns, rows) {
    const table = el("table");
    const head = el("tr");
    const body = el("tbody");
    let sortKey = null, descending = true, limit = TABLE_ROWS;
    const more = el("button", { type: "button", class: "show-all" }, "Show all " + rows.length + " rows");
    more.hidden = rows.length <= limit;
    more.addEventListener("click", () => { limit = Infinity; more.hidden = true; fill(); });
    function fill() {
      const sorted = rows.slice();
      if (sortKey !== null) {
        sorted.sort((a, b) => {
          const x = a[sortKey], y = b[sortKey];
          const order = isNumber(x) && isNumber(y) ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
          return descending ? -order : order;
        });
      }
      body.replaceChildren();
      for (const row of sorted.slice(0, limit)) {
        const tr = el("tr");
        for (const c of columns) {
          const v = row[c.key];
          tr.appendChild(el("td", { class: c.numeric ? "num" : "name" }, c.format ? c.format(v, row) : fmtNumber(v)));
        }
        body.appendChild(tr);
      }
    }
    columns.forEach((c) => {
      const th = el("th", { class: c.numeric ? "num" : "" }, c.label);
      th.addEventListener("click", () => {
        descending = sortKey === c.key ? !descending : !!c.numeric;
        sortKey = c.key;
        head.querySelectorAll("th").forEach((h) => h.classList.remove("sorted-asc", "sorted-desc"));
        th.classList.add(descending ? "sorted-desc" : "sorted-asc");
        fill();
      });
      head.appendChild(th);
    });
    const thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    table.appendChild(body);
    fill();
    container.appendChild(table);
    container.appendChild(more);
    return table;
  }

  // --- verdict and findings -------------------------------------------------

  function findingsOf(diagnosis) {
    if (Array.isArray(diagnosis)) return diagnosis;
    if (diagnosis && Array.isArray(diagnosis.findings)) return diagnosis.findings;
    return [];
  }

  function evidenceText(item) {
    if (isScalar(item)) return String(item);
    if (item && typeof item === "object") {
      if (typeof item.text === "string") return item.text;
      return Object.entries(item).map(([k, v]) => k + ": " + (isScalar(v) ? String(v) : JSON.stringify(v))).join(", ");
    }
    return "";
  }

  function speedupText(value) {
    if (isNumber(value)) return "expected speed-up: up to " + value.toFixed(2) + "x";
    if (typeof value === "string" && value) return "expected speed-up: " + value;
    return "";
  }

  function renderVerdict(report) {
    const verdict = byId("verdict");
    const list = byId("findings");
    const findings = findingsOf(report.diagnosis);
    const stated = report.diagnosis && typeof report.diagnosis.verdict === "string" ? report.diagnosis.verdict : null;
    if (findings.length || stated) {
      verdict.textContent = stated || String(findings[0].title ?? findings[0].id ?? "");
      for (const f of findings) {
        const li = el("li", { class: "finding" });
        const head = el("div");
        if (f.severity !== undefined) head.appendChild(el("span", { class: "severity " + String(f.severity) }, f.severity));
        head.appendChild(el("span", { class: "finding-title" }, f.title ?? f.id ?? ""));
        if (f.id !== undefined) head.appendChild(el("span", { class: "note" }, " (" + String(f.id) + ")"));
        li.appendChild(head);
        if (Array.isArray(f.evidence) && f.evidence.length) {
          const ul = el("ul", { class: "evidence" });
          for (const e of f.evidence) ul.appendChild(el("li", {}, evidenceText(e)));
          li.appendChild(ul);
        }
        if (f.recommendation) li.appendChild(el("div", { class: "recommendation" }, evidenceText(f.recommendation)));
        const speedup = speedupText(f.expected_speedup);
        if (speedup) li.appendChild(el("div", { class: "note" }, speedup));
        list.appendChild(li);
      }
      return;
    }
    // No diagnosis in this report: a summary in its place.
    byId("verdict-heading").textContent = "Summary";
    const steps = report.steps || {};
    const parts = [];
    if (steps.count > 0) {
      parts.push(steps.count + " steps");
      if (steps.step_time_ms && isNumber(steps.step_time_ms.p50)) parts.push("median step " + steps.step_time_ms.p50.toFixed(1) + " ms");
      if (isNumber(steps.data_wait_fraction)) parts.push(fmtPct(steps.data_wait_fraction) + " of step time waiting for data");
    }
    // The steady steps' table where a recording has one: start-up does not crowd it.
    const profile = report.profile && (report.profile.in_steps || report.profile);
    const functions = profile && profile.functions;
    if (Array.isArray(functions) && functions.length && profile.total_ns > 0) {
      const where = profile === report.profile ? "" : " during steps";
      parts.push("hottest function" + where + ": " + functionName(functions[0].name) + " (" + fmtPct(functions[0].self_ns / profile.total_ns) + " self)");
    }
    verdict.textContent = parts.length ? parts.join("; ") : "Nothing recorded to summarize.";
  }

  // --- steps and throughput -------------------------------------------------

  // The steps of the main process as rows, from the columns of step_series
  // (consecutive steps averaged in groups of steps_per_point on long runs).
  function stepsOf(data) {
    const series = data.step_series;
    if (!series || !Array.isArray(series.time_ns)) return [];
    return series.time_ns.map((_, i) => {
      const row = { start_ns: data.origin_ns + series.start_us[i] * 1000 };
      for (const [key, values] of Object.entries(series)) if (Array.isArray(values)) row[key] = values[i];
      return row;
    });
  }

  function renderSteps(data) {
    const steps = data.report.steps;
    if (!steps || !(steps.count > 0)) return;
    showSection("steps-section");
    const summary = byId("steps-summary");
    figure(summary, "steps (warm-up)", steps.count + " (" + (steps.warmup_steps ?? 0) + ")");
    if (steps.step_time_ms) {
      for (const q of ["p50", "p90", "p99"]) {
        if (isNumber(steps.step_time_ms[q])) figure(summary, "step time " + q, steps.step_time_ms[q].toFixed(1) + " ms");
      }
    }
    if (isNumber(steps.samples_per_sec)) figure(summary, "samples/s", fmtNumber(steps.samples_per_sec, 1));
    if (isNumber(steps.tokens_per_sec)) figure(summary, "tokens/s", fmtNumber(steps.tokens_per_sec, 0));
    if (steps.phases) {
      for (const p of PHASES) if (isNumber(steps.phases[p])) figure(summary, p.replace("_", " "), fmtPct(steps.phases[p]));
    }
    const perStep = stepsOf(data);
    if (!perStep.length) return;
    drawStepChart(perStep, data.step_series.steps_per_point || 1);
    drawThroughputChart(data, perStep);
  }

  // Stacked bars, one per step: series i is the sum of phases 0..i, drawn
  // from the tallest down so each phase shows as its own band.
  function drawStepChart(perStep, perPoint) {
    const container = byId("step-chart");
    const x = perStep.map((s) => s.first_step);
    const cumulative = [];
    let running = perStep.map(() => 0);
    for (const p of PHASES) {
      running = running.map((sum, i) => sum + (perStep[i][p + "_ns"] || 0) / 1e6);
      cumulative.push(running);
    }
    const series = [{ label: "step" }];
    const values = [x];
    for (let i = PHASES.length - 1; i >= 0; i--) {
      const phase = PHASES[i];
      series.push({
        label: phase.replace("_", " "), stroke: PHASE_COLORS[phase], fill: PHASE_COLORS[phase],
        paths: uPlot.paths.bars({ size: [0.8, 40] }), points: { show: false },
        value: (u, v, si, idx) => idx === null || idx === undefined ? "–" : fmtMs(perStep[idx][phase + "_ns"]),
      });
      values.push(cumulative[i]);
    }
    new uPlot({
      title: "Step time by phase (ms); warm-up steps included" +
             (perPoint > 1 ? "; each bar the mean of " + perPoint + " consecutive steps" : ""),
      width: chartWidth(container), height: 260,
      scales: { x: { time: false }, y: { range: (u, min, max) => [0, max * 1.05 || 1] } },
      axes: [{ label: "step" }, { label: "ms" }],
      series: series,
    }, values, container);
  }

  function drawThroughputChart(data, perStep) {
    const container = byId("throughput-chart");
    const origin = data.origin_ns;
    const x = perStep.map((s) => (s.start_ns - origin) / 1e9);
    const series = [{ label: "time (s)" }, { label: "step time (ms)", stroke: "#1d2330", scale: "ms", width: 1.5,
                                              value: (u, v) => isNumber(v) ? v.toFixed(1) : "–" }];
    const values = [x, perStep.map((s) => s.time_ns / 1e6)];
    const axes = [{ label: "seconds since start" }, { label: "ms", scale: "ms" }];
    const rates = [["samples_per_s", "samples/s", "#3aa57a"], ["tokens_per_s", "tokens/s", "#4a7fd6"]];
    const rate = rates.find(([key]) => perStep.some((s) => isNumber(s[key])));
    if (rate) {
      const [key, label, color] = rate;
      series.push({ label: label, stroke: color, scale: "rate", width: 1.5 });
      values.push(perStep.map((s) => isNumber(s[key]) ? s[key] : null));
      axes.push({ label: label, scale: "rate", side: 1, grid: { show: false } });
    }
    new uPlot({
      title: rate ? "Step time and throughput over time" : "Step time over time",
      width: chartWidth(container), height: 220,
      cursor: { sync: { key: "timeline" } },
      scales: { x: { time: false, range: timelineRange(data) } },
      axes: axes, series: series,
    }, values, container);
  }

  // --- counters -------------------------------------------------------------

  // The x range every timeline shares, so they line up.
  function timelineRange(data) {
    let end = 0;
    for (const s of stepsOf(data)) end = Math.max(end, (s.start_ns + s.time_ns - data.origin_ns) / 1e9);
    for (const c of data.counters || []) if (c.t_us.length) end = Math.max(end, c.t_us[c.t_us.length - 1] / 1e6);
    return () => [0, end > 0 ? end : 1];
  }

  function stepLinesHook(data) {
    const starts = stepsOf(data).map((s) => (s.start_ns - data.origin_ns) / 1e9);
    return (u) => {
      if (!starts.length || starts.length > 5000) return;
      const ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = "rgba(29, 35, 48, 0.18)";
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (const t of starts) {
        const x = Math.round(u.valToPos(t, "x", true));
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
      }
      ctx.stroke();
      ctx.restore();
    };
  }

  // Tracks grouped into charts: system ones by their first name part and
  // unit (cpu, memory, disk, gpu...), per-process ones by process and unit.
  function counterGroups(counters) {
    const groups = new Map();
    for (const c of counters) {
      const scope = c.pid ? "process " + c.pid : String(c.name).split(".")[0];
      const key = scope + " (" + (c.unit || "value") + ")";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(c);
    }
    const charts = [];
    for (const [title, tracks] of groups) {
      for (let i = 0; i < tracks.length; i += MAX_SERIES_PER_CHART) {
        charts.push({ title: title, tracks: tracks.slice(i, i + MAX_SERIES_PER_CHART) });
      }
    }
    return charts;
  }

  // uPlot wants one shared x array: the union of the group's times, with
  // nulls where a track has no value (drawn as gaps bridged by spanGaps).
  function alignSeries(tracks) {
    const times = new Set();
    for (const t of tracks) for (const us of t.t_us) times.add(us);
    const x = Array.from(times).sort((a, b) => a - b);
    const index = new Map(x.map((us, i) => [us, i]));
    const columns = tracks.map((t) => {
      const column = new Array(x.length).fill(null);
      t.t_us.forEach((us, i) => { column[index.get(us)] = t.values[i]; });
      return column;
    });
    return [x.map((us) => us / 1e6), ...columns];
  }

  function renderCounters(data) {
    const counters = (data.counters || []).filter((c) => Array.isArray(c.t_us) && c.t_us.length);
    if (!counters.length) return;
    showSection("counters-section");
    const host = byId("counter-charts");
    const range = timelineRange(data);
    const hook = stepLinesHook(data);
    for (const group of counterGroups(counters)) {
      const container = el("div", { class: "chart counter-chart" });
      host.appendChild(container);
      const unit = group.tracks[0].unit || "";
      const series = [{ label: "time (s)" }];
      group.tracks.forEach((t, i) => series.push({
        label: String(t.name), stroke: SERIES_COLORS[i % SERIES_COLORS.length], width: 1.25, spanGaps: true,
        value: (u, v) => fmtValue(unit, v),
      }));
      new uPlot({
        title: group.title, width: chartWidth(host), height: 200,
        cursor: { sync: { key: "timeline" } },
        scales: { x: { time: false, range: range } },
        axes: [{ label: "seconds since start" }, { values: (u, ticks) => ticks.map((v) => fmtValue(unit, v)), size: 90 }],
        series: series,
        hooks: { draw: [hook] },
      }, alignSeries(group.tracks), container);
    }
  }

  // --- flame graph ----------------------------------------------------------

  // The d3-flame-graph tree of one process for one phase (null: all phases).
  function flameHierarchy(flame, process, phaseIndex) {
    const nodes = process.nodes;
    const valueOf = (node) => {
      if (phaseIndex === null) {
        let sum = 0;
        for (let i = 2; i < node.length; i++) sum += node[i];
        return sum;
      }
      return node[2 + phaseIndex];
    };
    // Native frames take d3-flame-graph's colours for native code (red, yellow for C++).
    const native = new Set(Array.isArray(flame.native) ? flame.native : []);
    const built = new Array(nodes.length);
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i];
      const value = valueOf(node);
      if (!(value > 0)) continue;
      const item = { name: String(flame.names[node[1]] ?? ""), value: value, children: [] };
      if (native.has(node[1])) item.libtype = "native";
      built[i] = item;
      if (i > 0 && built[node[0]]) built[node[0]].children.push(item);
    }
    return built[0] || { name: "(no samples in this phase)", value: 0, children: [] };
  }

  function renderFlame(data) {
    const flame = data.flame;
    if (!flame || !Array.isArray(flame.processes) || !flame.processes.length) return;
    showSection("flame-section");
    const processSelect = byId("flame-process");
    flame.processes.forEach((p, i) => {
      processSelect.appendChild(el("option", { value: String(i) }, flame.names[p.nodes[0][1]] + " — " + fmtMs(p.total_ns)));
    });
    // The process whose steps the report describes, else the busiest: not a
    // launcher that waits for its children.
    const steps = data.report && data.report.steps;
    let shown = flame.processes.findIndex((p) => steps && p.pid === steps.pid);
    if (shown < 0) {
      shown = flame.processes.reduce((best, p, i) => (p.total_ns > flame.processes[best].total_ns ? i : best), 0);
    }
    processSelect.value = String(shown);
    const phaseSelect = byId("flame-phase");
    if (Array.isArray(flame.phases)) {
      phaseSelect.appendChild(el("option", { value: "" }, "all"));
      flame.phases.forEach((name, i) => phaseSelect.appendChild(el("option", { value: String(i) }, name.replace("_", " "))));
    } else {
      byId("flame-phase-label").hidden = true;
    }
    const container = byId("flame");
    const details = byId("flame-details");
    let chart = null;
    function draw() {
      const process = flame.processes[Number(processSelect.value) || 0];
      const phase = phaseSelect.value === "" ? null : Number(phaseSelect.value);
      if (chart) chart.destroy();
      container.replaceChildren();
      chart = flamegraph.default()
        .width(chartWidth(container))
        .cellHeight(18)
        .transitionDuration(0)
        .minFrameSize(2)
        .title("")
        .sort(true)
        .inverted(true)
        .getName((d) => d.data.name)
        .setDetailsElement(details)
        .setDetailsHandler((d) => { details.textContent = d ? String(d) : ""; });
      chart.setLabelHandler((d) => d.data.name + " — " + fmtMs(d.value) + " (" + fmtPct(d.value / (chart.__total || 1)) + ")");
      const root = flameHierarchy(flame, process, phase);
      chart.__total = root.value;
      d3.select(container).datum(root).call(chart);
    }
    processSelect.addEventListener("change", draw);
    phaseSelect.addEventListener("change", draw);
    byId("flame-search").addEventListener("input", (e) => chart && chart.search(e.target.value));
    byId("flame-reset").addEventListener("click", () => chart && chart.resetZoom());
    draw();
  }

  // --- tables ---------------------------------------------------------------

  // A native frame where no symbol covers the pc has no name (as the text report shows it).
  function functionName(name) {
    return name || "<unknown>";
  }

  function renderFunctions(report) {
    const profile = report.profile;
    if (!profile || !Array.isArray(profile.functions) || !profile.functions.length) return;
    showSection("functions-section");
    const total = profile.total_ns || 1;
    sortableTable(byId("functions-table"), [
      { key: "name", label: "function", format: functionName },
      { key: "file", label: "file" },
      { key: "kind", label: "kind" },
      { key: "self_ns", label: "self", numeric: true, format: fmtMs },
      { key: "self_ns", label: "self %", numeric: true, format: (v) => fmtPct(v / total) },
      { key: "total_ns", label: "total", numeric: true, format: fmtMs },
      { key: "total_ns", label: "total %", numeric: true, format: (v) => fmtPct(v / total) },
    ], profile.functions);
  }

  function columnFormat(key) {
    if (/_ns$/.test(key)) return fmtMs;
    if (/bytes/.test(key)) return fmtBytes;
    if (/(fraction|share)$/.test(key)) return fmtPct;
    return undefined;
  }

  // A section whose shape this page does not know in detail (ops and gpu
  // arrive from their own analyses): its scalar fields as figures and each
  // list of objects as a sortable table.
  function renderGenericSection(section, sectionId, hostId) {
    if (!section || typeof section !== "object") return;
    const host = byId(hostId);
    const scalars = el("div", { class: "figures" });
    let shown = false;
    for (const [key, value] of Object.entries(section)) {
      if (isScalar(value) && value !== null) {
        figure(scalars, key.replace(/_ns$/, "").replace(/_/g, " "), isNumber(value) && columnFormat(key) ? columnFormat(key)(value) : fmtNumber(value));
        shown = true;
      }
    }
    host.appendChild(scalars);
    for (const [key, value] of Object.entries(section)) {
      if (!Array.isArray(value) || !value.length || typeof value[0] !== "object" || value[0] === null) continue;
      const keys = [];
      for (const row of value.slice(0, 50)) {
        for (const [k, v] of Object.entries(row || {})) if (isScalar(v) && !keys.includes(k)) keys.push(k);
      }
      host.appendChild(el("h3", {}, key.replace(/_/g, " ")));
      sortableTable(host, keys.map((k) => ({
        key: k, label: k.replace(/_ns$/, "").replace(/_/g, " "), numeric: value.some((r) => isNumber(r && r[k])), format: columnFormat(k),
      })), value.filter((r) => r && typeof r === "object"));
      shown = true;
    }
    if (shown) showSection(sectionId);
  }

  function renderRanks(report) {
    const ranks = report.steps && report.steps.ranks;
    if (!Array.isArray(ranks) || ranks.length < 2) return;
    showSection("ranks-section");
    const rows = ranks.map((r) => Object.assign({}, r, {
      p50: r.step_time_ms && r.step_time_ms.p50,
      mean: r.step_time_ms && r.step_time_ms.mean,
      mark: [r.waited_for ? "waited for" : "", r.slow ? "slow" : ""].filter(Boolean).join(", "),
    }));
    sortableTable(byId("ranks-table"), [
      { key: "rank", label: "rank", numeric: true, format: (v) => (v === null || v === undefined ? "–" : String(v)) },
      { key: "host", label: "host", format: (v) => String(v ?? "–") },
      { key: "node_rank", label: "node", numeric: true, format: (v) => (v === null || v === undefined ? "–" : String(v)) },
      { key: "pid", label: "pid", numeric: true, format: String },
      { key: "count", label: "steps", numeric: true },
      { key: "p50", label: "p50 ms", numeric: true, format: (v) => fmtNumber(v, 2) },
      { key: "mean", label: "mean ms", numeric: true, format: (v) => fmtNumber(v, 2) },
      { key: "data_wait_fraction", label: "data wait", numeric: true, format: fmtPct },
      { key: "collective_wait_fraction", label: "collective wait", numeric: true, format: fmtPct },
      { key: "top_phase", label: "top phase" },
      { key: "mark", label: "straggler" },
    ], rows);
  }

  function renderProcesses(report) {
    if (!Array.isArray(report.processes) || !report.processes.length) return;
    showSection("processes-section");
    sortableTable(byId("processes-table"), [
      { key: "pid", label: "pid", numeric: true, format: String },
      { key: "command", label: "command" },
      { key: "python_version", label: "Python" },
      { key: "threads", label: "threads", numeric: true },
      { key: "samples", label: "samples", numeric: true },
      { key: "running_samples", label: "running", numeric: true },
      { key: "idle_samples", label: "idle", numeric: true },
      { key: "disk_wait_samples", label: "disk wait", numeric: true },
      { key: "exit_status", label: "exit", numeric: true },
    ], report.processes);
  }

  // --- the page -------------------------------------------------------------

  // "1 MiB", "500 MiB", "2 GiB": how record --max-size's limit was given.
  function byteSize(bytes) {
    const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let value = bytes, unit = 0;
    while (value >= 1024 && unit + 1 < units.length) { value /= 1024; unit++; }
    return (Number.isInteger(value) ? String(value) : value.toFixed(1)) + " " + units[unit];
  }

  // A run that record --max-size trimmed says what it no longer holds, as the text report's header does.
  function renderTrimmed(trimmed) {
    if (!trimmed) return;
    const what = trimmed.dropped_seconds != null
      ? `the recording's first ${Number(trimmed.dropped_seconds).toFixed(1)} s`
      : `the data before ${trimmed.before_ns} ns`;
    const p = byId("trimmed");
    p.textContent = `trimmed to ${byteSize(trimmed.max_size_bytes)} (--max-size): ${what} dropped ` +
      `(${trimmed.samples} samples, ${trimmed.spans} spans, ${trimmed.counter_values} counter values)`;
    p.hidden = false;
  }

  function main() {
    const data = JSON.parse(byId("stepscope-data").textContent);
    const report = data.report || {};
    byId("source").textContent = String(report.source ?? "");
    renderTrimmed(report.trimmed);
    safely("verdict-section", () => renderVerdict(report));
    safely("steps-section", () => renderSteps(data));
    safely("ranks-section", () => renderRanks(report));
    safely("counters-section", () => renderCounters(data));
    safely("flame-section", () => renderFlame(data));
    safely("functions-section", () => renderFunctions(report));
    safely("ops-section", () => renderGenericSection(report.ops, "ops-section", "ops-tables"));
    safely("gpu-section", () => renderGenericSection(report.gpu, "gpu-section", "gpu-tables"));
    safely("processes-section", () => renderProcesses(report));
    document.body.dataset.rendered = "true";
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", main);
  } else {
    main();
  }
})();
