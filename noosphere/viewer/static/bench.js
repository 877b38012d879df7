// Benchmark runs: the report's metrics, every item's outcome, and a click from an item into the part
// of the trace between its bench_item_started and bench_item_finished events.

function metricsTable(report) {
  const rows = [];
  for (const [name, value] of Object.entries(report.metrics || {})) {
    if (name === "confusion" && value) rows.push([name, confusion(value)]);
    else rows.push([name, typeof value === "object" && value !== null ? block(value, "json") : num(value)]);
  }
  for (const [name, value] of Object.entries(report.costs || {})) rows.push([name, num(value)]);
  return table(["metric", "value"], rows);
}

function confusion(matrix) {
  return table(["gold \\ predicted", ...(matrix.predicted || [])],
    (matrix.gold || []).map((label, i) => [label, ...((matrix.matrix || [])[i] || []).map(String)]));
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
    section("Items (click one for its trace)", buttons, holder),
    panel);
}

function delta(a, b) {
  return typeof a === "number" && typeof b === "number" ? num(b - a) : "";
}

function sideBySide(label, a, b) {
  const names = [...new Set([...Object.keys(a || {}), ...Object.keys(b || {})])]
    .filter((n) => typeof (a || {})[n] !== "object" && typeof (b || {})[n] !== "object");
  return table([label, "A", "B", "B − A"], names.map((n) => [n, num((a || {})[n]), num((b || {})[n]),
    delta((a || {})[n], (b || {})[n])]));
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
  return el("div", {class: "compare"},
    section("Runs", table(["", "run", "command", "system", "model"], [["A", a.name, a.config.command,
      asText(a.config.system), asText(a.config.model)], ["B", b.name, b.config.command, asText(b.config.system),
      asText(b.config.model)]])),
    section("Totals", sideBySide("total", sums[0], sums[1])),
    bench ? section("Metrics", sideBySide("metric", (a.report || {}).metrics, (b.report || {}).metrics),
      sideBySide("cost", (a.report || {}).costs, (b.report || {}).costs)) : null,
    ids.length ? section("Items side by side (click an outcome for its trace)",
      el("p", null, `both right ${count((p) => p.a?.correct && p.b?.correct)} · only A ` +
        `${count((p) => p.a?.correct && !p.b?.correct)} · only B ${count((p) => !p.a?.correct && p.b?.correct)} · ` +
        `both wrong ${count((p) => p.a && p.b && !p.a.correct && !p.b.correct)}`),
      el("label", null, el("input", {type: "checkbox", onchange: (e) => showPairs(e.target.checked)}),
        " only items where A and B differ"), holder) : null,
    panel);
}
