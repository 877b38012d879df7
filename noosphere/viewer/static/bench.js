// Benchmark runs: the report's metrics, every item's outcome, and a click from an item into the part
// of the trace between its bench_item_started and bench_item_finished events.

function metricsTable(report) {
  const rows = [];
  for (const [name, value] of Object.entries(report.metrics || {})) {
    if (name === "calibration" || name === "outcomes") continue;  // each drawn as a figure in its own card
    if (name === "confusion" && value) rows.push([name, confusion(value)]);
    else if (Array.isArray(value) && value.every((v) => typeof v === "number")) {
      rows.push([name, value.map((v) => v.toFixed(3)).join(" – ")]);
    } else rows.push([name, typeof value === "object" && value !== null ? nestedTable(value) : metric(name, value)]);
  }
  for (const [name, value] of Object.entries(report.costs || {})) rows.push([name, num(value)]);
  return table(["metric", "value"], rows);
}

function confusion(matrix) {
  return table(["gold \\ predicted", ...(matrix.predicted || [])],
    (matrix.gold || []).map((label, i) => [label, ...((matrix.matrix || [])[i] || []).map(String)]));
}

const three = (value) => (typeof value === "number" ? value.toFixed(3) : "n/a");
// Calibration figures keep three digits wherever they are shown (table, card, compare), as report.md has them.
const CALIBRATION_FIGURES = new Set(["ece", "ece_recalibrated", "brier", "auroc"]);
const metric = (name, value) => (CALIBRATION_FIGURES.has(name) && typeof value === "number" ? three(value) : num(value));

// A reliability diagram from a report's calibration (noosphere/bench/calibration.py): per confidence bin, the
// accuracy (bar), the mean confidence (dot) and the items (number over the bar), against the diagonal of
// perfect calibration; the same figures as the run's reliability.png, drawn here so the page stays one file.
function reliabilityDiagram(cal) {
  const width = 360, height = 320, left = 44, right = 14, top = 34, bottom = 44;
  const x = (v) => left + v * (width - left - right);
  const y = (v) => top + (1 - v) * (height - top - bottom);
  const parts = [];
  for (const v of [0, 0.2, 0.4, 0.6, 0.8, 1]) {
    parts.push(svg("line", {class: "grid", x1: x(0), x2: x(1), y1: y(v), y2: y(v)}),
      svg("text", {class: "tick", x: left - 6, y: y(v) + 4, "text-anchor": "end"}, v.toFixed(1)),
      svg("text", {class: "tick", x: x(v), y: y(0) + 15, "text-anchor": "middle"}, v.toFixed(1)));
  }
  parts.push(svg("line", {class: "axis", x1: x(0), y1: y(0), x2: x(1), y2: y(0)}),
    svg("line", {class: "axis", x1: x(0), y1: y(0), x2: x(0), y2: y(1)}),
    svg("text", {class: "tick", x: x(0.5), y: height - 8, "text-anchor": "middle"}, "confidence"),
    svg("text", {class: "tick", x: 12, y: y(0.5), "text-anchor": "middle", transform: `rotate(-90 12 ${y(0.5)})`},
      "accuracy"));
  for (const b of (cal.bins || []).filter((bin) => bin.count)) {
    const label = `confidence ${b.lower.toFixed(1)}–${b.upper.toFixed(1)}: ${b.count} items, mean confidence ` +
      `${three(b.confidence)}, accuracy ${three(b.accuracy)}`;
    parts.push(svg("rect", {class: "bin", x: x(b.lower), y: y(b.accuracy), width: x(b.upper) - x(b.lower),
      height: y(0) - y(b.accuracy)}, svg("title", null, label)),
    svg("circle", {class: "confidence", cx: x(b.confidence), cy: y(b.accuracy), r: 3.5}, svg("title", null, label)),
    svg("text", {class: "count", x: x((b.lower + b.upper) / 2), y: y(b.accuracy) - 4, "text-anchor": "middle"},
      String(b.count)));
  }
  parts.push(svg("line", {class: "diagonal", x1: x(0), y1: y(0), x2: x(1), y2: y(1)}),
    svg("text", {class: "title", x: width / 2, y: 16, "text-anchor": "middle"},
      `ECE ${three(cal.ece)} · Brier ${three(cal.brier)} · AUROC ${three(cal.auroc)} · n ${cal.n}`));
  return svg("svg", {class: "chart reliability", viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
    "aria-label": "reliability diagram"}, parts);
}

// The calibration card's body: the diagram, what it was computed on, and why any figure is missing.
function calibrationView(cal, heading) {
  if (!cal) return el("figure", {class: "calibration"}, heading ? el("figcaption", null, heading) : null,
    el("p", {class: "note"}, "no confidence in this run's items"));
  const band = cal.auroc_ci95;
  const facts = [`${cal.n} items with a confidence` + (cal.without_confidence ? ` (${cal.without_confidence} ` +
    "without one left out)" : ""), `ECE over 10 equal-width bins ${three(cal.ece)}`, `Brier ${three(cal.brier)}`,
  `AUROC ${three(cal.auroc)}` + (band ? ` (95 % interval ${three(band[0])}–${three(band[1])}, ` +
    `${cal.interval_method})` : ""), `mean confidence ${three(cal.mean_confidence)}, accuracy ${three(cal.accuracy)}`];
  return el("figure", {class: "calibration"}, heading ? el("figcaption", null, heading) : null,
    reliabilityDiagram(cal), el("ul", {class: "facts"}, [...facts, ...(cal.notes || [])].map((f) => el("li", null, f))));
}

// The panel an item's trace opens in; `show(run, id)` fills it and scrolls to it.
function itemTracePanel() {
  const panel = el("div", {class: "item-trace", id: "item-trace"});
  panel.show = (run, itemId) => {
    const row = run.items.find((r) => r.id === itemId) || {};
    const events = itemEvents(run, itemId);
    clear(panel).appendChild(section(`Trace of item ${itemId} (${run.name})`,
      lazyDetails("item row", () => keyValues(row), {class: "item-row"}),
      events.length ? eventsView(run, events) : el("p", null, "this item has no events in the trace")));
    panel.scrollIntoView({block: "start"});
  };
  return panel;
}

function itemCells(row) {
  return [row.id, short(row.prediction, 40), short(row.gold, 40), mark(row.correct), num(row.calls), num(row.tokens),
    num(row.seconds), row.error ? short(row.error, 60) : ""];
}

function benchView(run) {
  const report = run.report || {};
  const panel = itemTracePanel();
  const holder = el("div");
  const filters = {all: () => true, correct: (r) => r.correct, wrong: (r) => !r.correct, errors: (r) => !!r.error};
  const buttons = el("div", {class: "picker"}, "items: ");
  const showItems = (name) => {
    const rows = run.items.filter(filters[name]);
    clear(holder).appendChild(pagedTable(["item", "prediction", "gold", "correct", "calls", "tokens", "seconds",
      "error"], rows, itemCells, (tr, row) => {
      tr.classList.add("clickable");
      tr.dataset.item = row.id;
      tr.title = "show this item's trace";
      tr.addEventListener("click", () => panel.show(run, row.id));
    }));
    for (const b of buttons.querySelectorAll("button")) b.classList.toggle("active", b.dataset.filter === name);
  };
  for (const name of Object.keys(filters)) {
    buttons.appendChild(el("button", {dataset: {filter: name}, onclick: () => showItems(name)},
      `${name} (${run.items.filter(filters[name]).length})`));
  }
  showItems("all");
  return el("div", {class: "bench"},
    section(report.benchmark || "Benchmark", keyValues({system: report.system, model: report.model,
      ablation: report.ablation, limit: report.limit, items: run.items.length})),
    section("Metrics", metricsTable(report)),
    (report.metrics || {}).calibration ? section("Calibration", calibrationView(report.metrics.calibration)) : null,
    groupRates(report.metrics).length ? section("Per group", ratesPlot(groupRates(report.metrics))) : null,
    outcomeRows(report.metrics).length ? section("Success and actions per success",
      outcomeFigure(outcomeRows(report.metrics), `${report.benchmark || "games"} · ${configLabel(run)}`)) : null,
    section("Items (click one for its trace)", buttons, holder),
    panel);
}

function delta(name, a, b) {
  return typeof a === "number" && typeof b === "number" ? metric(name, b - a) : "";
}

function sideBySide(label, a, b) {
  const names = [...new Set([...Object.keys(a || {}), ...Object.keys(b || {})])]
    .filter((n) => typeof (a || {})[n] !== "object" && typeof (b || {})[n] !== "object");
  return table([label, "A", "B", "B − A"], names.map((n) => [n, metric(n, (a || {})[n]), metric(n, (b || {})[n]),
    delta(n, (a || {})[n], (b || {})[n])]));
}

function compareView(a, b) {
  const panel = itemTracePanel();
  const sums = [totals(a.events), totals(b.events)].map((s) => ({calls: s.calls, tokens: s.tokens,
    prompt_tokens: s.prompt, reused_prompt_tokens: s.reused, completion_tokens: s.completion, cost_usd: s.cost,
    seconds: s.time, repairs: s.repairs}));
  const byId = new Map(b.items.map((row) => [row.id, row]));
  const ids = [...new Set([...a.items.map((r) => r.id), ...b.items.map((r) => r.id)])];
  const rowsA = new Map(a.items.map((row) => [row.id, row]));
  const pairs = ids.map((id) => ({id, a: rowsA.get(id), b: byId.get(id)}));
  const count = (test) => pairs.filter(test).length;
  const outcome = (row, run, id) => (row ? el("button", {class: "outcome", title: `trace of ${id} in ${run.name}`,
    dataset: {item: id, run: run === a ? "A" : "B"}, onclick: () => panel.show(run, id)}, mark(row.correct), " ",
    short(row.prediction, 30)) : "–");
  const holder = el("div");
  const showPairs = (onlyDifferent) => clear(holder).appendChild(pagedTable(["item", "gold", "A", "B"],
    pairs.filter((p) => !onlyDifferent || !p.a || !p.b || p.a.correct !== p.b.correct),
    (p) => [p.id, short((p.a || p.b).gold, 30), outcome(p.a, a, p.id), outcome(p.b, b, p.id)],
    (tr, p) => { if (p.a && p.b && p.a.correct !== p.b.correct) tr.classList.add("differs"); }));
  showPairs(false);
  const bench = a.report || b.report;
  const calibrations = [a, b].map((run) => ((run.report || {}).metrics || {}).calibration || null);
  return el("div", {class: "compare"},
    section("Runs", table(["", "run", "command", "system", "model"], [["A", a.name, a.config.command,
      asText(a.config.system), asText(a.config.model)], ["B", b.name, b.config.command, asText(b.config.system),
      asText(b.config.model)]])),
    section("Totals", sideBySide("total", sums[0], sums[1])),
    bench ? section("Metrics", sideBySide("metric", (a.report || {}).metrics, (b.report || {}).metrics),
      sideBySide("cost", (a.report || {}).costs, (b.report || {}).costs)) : null,
    calibrations.some(Boolean) ? section("Calibration", el("div", {class: "split"},
      calibrationView(calibrations[0], `A: ${a.name}`), calibrationView(calibrations[1], `B: ${b.name}`))) : null,
    gamesCompare(a, b),
    ids.length ? section("Items side by side (click an outcome for its trace)",
      el("p", null, `both right ${count((p) => p.a?.correct && p.b?.correct)} · only A ` +
        `${count((p) => p.a?.correct && !p.b?.correct)} · only B ${count((p) => !p.a?.correct && p.b?.correct)} · ` +
        `both wrong ${count((p) => p.a && p.b && !p.a.correct && !p.b.correct)}`),
      el("label", null, el("input", {type: "checkbox", onchange: (e) => showPairs(e.target.checked)}),
        " only items where A and B differ"), holder) : null,
    panel);
}
