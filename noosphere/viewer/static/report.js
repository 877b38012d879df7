// A benchmark's report (report.json, or the copy in result.json) as tables and plots, never raw JSON: what it
// measured on, its metrics and costs, the reliability diagram where items carried a confidence, and the rate of
// each group (games' success per task type, BFCL's accuracy per category) as bars.

// A nested metric (`decided_by: {leader: 50}`) as a small table of its own; lists of numbers on one line.
function nestedTable(value) {
  if (Array.isArray(value) && !value.length) return "–";
  if (Array.isArray(value)) {
    return value.every((v) => typeof v === "number" || typeof v === "string") ? value.map((v) => num(v)).join(", ")
      : table(["#", "value"], value.map((v, i) => [String(i + 1), nestedTable(v)]));
  }
  if (value !== null && typeof value === "object") {
    return el("table", {class: "nested"}, el("tbody", null, Object.entries(value).map(([key, v]) =>
      el("tr", null, el("th", null, key), el("td", null, nestedTable(v))))));
  }
  return num(value);
}

// An object's fields as a table, nested values as nested tables (a run's result and config).
function fieldsTable(object, skip = []) {
  return table(["field", "value"], Object.entries(object || {}).filter(([key]) => !skip.includes(key))
    .map(([key, value]) => [key, nestedTable(value)]));
}

// Groups with a rate out of 100 and the count it was measured on: `<type>_success_rate` with `<type>_games`
// (ALFWorld, TextWorld), `<category>_accuracy` with `<category>_n` (BFCL).
function groupRates(metrics) {
  const groups = [];
  for (const [key, value] of Object.entries(metrics || {})) {
    const found = key.match(/^(.+)_(success_rate|accuracy)$/);
    if (!found || typeof value !== "number") continue;
    const count = metrics[`${found[1]}_${found[2] === "success_rate" ? "games" : "n"}`];
    if (typeof count === "number") groups.push({name: found[1], rate: value, count, what: found[2]});
  }
  return groups;
}

// Horizontal bars of each group's rate on a 0-100 scale, with the count it rests on.
function ratesPlot(groups) {
  const labelWidth = 230, barWidth = 300, row = 24, top = 26;
  const height = top + row * groups.length + 24;
  const x = (v) => labelWidth + (barWidth * Math.max(0, Math.min(100, v))) / 100;
  const parts = [0, 25, 50, 75, 100].map((v) => [
    svg("line", {class: "grid", x1: x(v), x2: x(v), y1: top - 4, y2: height - 20}),
    svg("text", {class: "tick", x: x(v), y: height - 6, "text-anchor": "middle"}, String(v))]);
  groups.forEach((g, i) => {
    const y = top + i * row;
    const label = `${g.name}: ${num(g.rate)} % of ${num(g.count)}`;
    parts.push(svg("text", {class: "label", x: labelWidth - 8, y: y + 15, "text-anchor": "end"}, short(g.name, 34)),
      svg("rect", {class: "rate", x: x(0), y: y + 3, width: x(g.rate) - x(0), height: row - 8,
        "data-group": g.name}, svg("title", null, label)),
      svg("text", {class: "value", x: x(g.rate) + 4, y: y + 15}, `${num(g.rate)} % (${num(g.count)})`));
  });
  const what = groups.every((g) => g.what === "success_rate") ? "success rate per task type" : "accuracy per category";
  parts.push(svg("text", {class: "title", x: labelWidth + barWidth / 2, y: 14, "text-anchor": "middle"}, what));
  return svg("svg", {class: "chart rates", viewBox: `0 0 ${labelWidth + barWidth + 90} ${height}`,
    width: labelWidth + barWidth + 90, height, role: "img", "aria-label": what}, parts);
}

// The report card of the overview: every part of the report as a table or a plot.
function reportView(report) {
  const metrics = report.metrics || {};
  const groups = groupRates(metrics);
  const about = {};
  for (const [key, value] of Object.entries(report)) if (key !== "metrics" && key !== "costs") about[key] = value;
  return el("div", {class: "report"},
    section(report.benchmark || "Report", fieldsTable(about, ["benchmark"])),
    section("Metrics", metricsTable(report)),
    metrics.calibration ? section("Calibration", calibrationView(metrics.calibration)) : null,
    groups.length ? section("Per group", ratesPlot(groups)) : null);
}
