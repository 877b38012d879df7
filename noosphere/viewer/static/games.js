// Games runs (ALFWorld, TextWorld): the success rate with its 95 % interval and the actions per success, per task
// type or per run, the same figures as the run's outcomes.png (noosphere/bench/game_figures.py) drawn here so the
// page stays one file; and two runs' transition heatmaps side by side, on one agent order (memory off and on).

// A report's `outcomes` ({label: {games, won, success_rate, ci95, actions_per_success}}) as rows, in its order.
function outcomeRows(metrics) {
  const found = (metrics || {}).outcomes;
  if (!found || typeof found !== "object") return [];
  return Object.entries(found).filter(([, o]) => o && typeof o.games === "number")
    .map(([label, o]) => ({label, ...o}));
}

// Two panels, a row per outcome: success rate on 0-100 with the interval as a whisker and won/games after it, and
// actions per success on a scale of its own.
function outcomeFigure(rows, title) {
  const labelWidth = 220, rateWidth = 300, gap = 70, actionWidth = 200, row = 26, top = 40;
  const height = top + row * rows.length + 34;
  const rx = (v) => labelWidth + (rateWidth * Math.max(0, Math.min(100, v))) / 100;
  const most = Math.max(1, ...rows.map((r) => r.actions_per_success || 0));
  const left = labelWidth + rateWidth + gap;
  const ax = (v) => left + (actionWidth * v) / (most * 1.15);
  const parts = [];
  for (const v of [0, 25, 50, 75, 100]) {
    parts.push(svg("line", {class: "grid", x1: rx(v), x2: rx(v), y1: top - 6, y2: height - 28}),
      svg("text", {class: "tick", x: rx(v), y: height - 14, "text-anchor": "middle"}, String(v)));
  }
  parts.push(svg("text", {class: "tick", x: rx(50), y: top - 12, "text-anchor": "middle"},
    "success rate, % (whisker: 95 % interval)"),
  svg("text", {class: "tick", x: left + actionWidth / 2, y: top - 12, "text-anchor": "middle"}, "actions per success"));
  rows.forEach((r, i) => {
    const y = top + i * row;
    const band = Array.isArray(r.ci95) ? r.ci95 : [r.success_rate, r.success_rate];
    const said = `${r.label}: ${r.won} of ${r.games} won, ${num(r.success_rate)} % (95 % interval ${num(band[0])}–` +
      `${num(band[1])}), ${r.actions_per_success === null || r.actions_per_success === undefined ? "no win" :
        `${num(r.actions_per_success)} actions per success`}`;
    parts.push(svg("text", {class: "label", x: labelWidth - 8, y: y + 16, "text-anchor": "end"}, short(r.label, 32)),
      svg("rect", {class: "success", x: rx(0), y: y + 4, width: rx(r.success_rate) - rx(0), height: row - 10,
        "data-label": r.label}, svg("title", null, said)),
      svg("line", {class: "interval", x1: rx(band[0]), x2: rx(band[1]), y1: y + 12, y2: y + 12}),
      svg("line", {class: "interval", x1: rx(band[0]), x2: rx(band[0]), y1: y + 8, y2: y + 16}),
      svg("line", {class: "interval", x1: rx(band[1]), x2: rx(band[1]), y1: y + 8, y2: y + 16}),
      svg("text", {class: "value", x: rx(100) + 6, y: y + 16}, `${r.won}/${r.games}`));
    if (typeof r.actions_per_success === "number") {
      parts.push(svg("rect", {class: "actions", x: ax(0), y: y + 4, width: ax(r.actions_per_success) - ax(0),
        height: row - 10, "data-label": r.label}, svg("title", null, said)),
      svg("text", {class: "value", x: ax(r.actions_per_success) + 4, y: y + 16}, num(r.actions_per_success)));
    } else parts.push(svg("text", {class: "value none", x: ax(0) + 4, y: y + 16}, "no win"));
  });
  parts.push(svg("line", {class: "axis", x1: ax(0), x2: ax(0), y1: top - 6, y2: height - 28}),
    svg("text", {class: "title", x: (labelWidth + left + actionWidth) / 2, y: 14, "text-anchor": "middle"}, title));
  const width = left + actionWidth + 60;
  return svg("svg", {class: "chart outcomes", viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
    "aria-label": title}, parts);
}

// What a run is, in a few words: its system and, for the meta-agent, its memory.
function configLabel(run) {
  const config = run.config || {};
  const system = config.system || "?";
  return system === "metaagent" ? `metaagent, memory ${config.memory || "?"}` : system;
}

// Every transition of the run's games, from the `moves` each item row keeps.
function itemMoves(run) {
  return (run.items || []).flatMap((row) => (Array.isArray(row.moves) ? row.moves : []))
    .filter((move) => Array.isArray(move) && move.length === 2).map(([source, target]) => ({source, target}));
}

// One run's transitions as a heatmap on the given agent order: each cell the share of the row's transitions
// (the probability of that successor), its count in the tooltip, coloured on one 0-1 scale for both runs.
function sharedHeatmap(moves, agents, caption) {
  const counts = new Map();
  const totals = new Map();
  for (const m of moves) {
    counts.set(`${m.source}\u0000${m.target}`, (counts.get(`${m.source}\u0000${m.target}`) || 0) + 1);
    totals.set(m.source, (totals.get(m.source) || 0) + 1);
  }
  const share = (from, to) => (totals.get(from) ? (counts.get(`${from}\u0000${to}`) || 0) / totals.get(from) : 0);
  const view = table(["from \\ to", ...agents], agents.map((from) => [from, ...agents.map((to) =>
    (counts.get(`${from}\u0000${to}`) ? share(from, to).toFixed(2) : ""))]));
  [...view.tBodies[0].rows].forEach((tr, r) => {
    agents.forEach((to, c) => {
      const p = share(agents[r], to);
      const cell = tr.cells[c + 1];
      cell.classList.add("heat");
      cell.style.backgroundColor = `rgba(37, 99, 235, ${p ? 0.12 + 0.88 * p : 0})`;
      if (p > 0.55) cell.classList.add("dark");
      cell.title = `${agents[r]} → ${to}: ${counts.get(`${agents[r]}\u0000${to}`) || 0} of ${totals.get(agents[r]) || 0}`;
    });
  });
  view.classList.add("heatmap");
  return el("figure", {class: "transitions"}, el("figcaption", null, caption),
    moves.length ? view : el("p", {class: "note"}, "no agent transitions in this run (ReAct and Reflexion have none)"));
}

// Two runs' heatmaps side by side, on the agents of both in order of first appearance (A's first).
function transitionPair(a, b) {
  const movesA = itemMoves(a), movesB = itemMoves(b);
  const agents = [];
  for (const m of [...movesA, ...movesB]) for (const s of [m.source, m.target]) if (!agents.includes(s)) agents.push(s);
  return el("div", {class: "split"},
    sharedHeatmap(movesA, agents, `A: ${a.name} · ${configLabel(a)} · ${movesA.length} transitions`),
    sharedHeatmap(movesB, agents, `B: ${b.name} · ${configLabel(b)} · ${movesB.length} transitions`));
}

// The compare tab's games section: both runs' outcomes in one figure, then their transitions side by side.
function gamesCompare(a, b) {
  const whole = (run) => outcomeRows((run.report || {}).metrics)[0];
  const rows = [[a, "A"], [b, "B"]].filter(([run]) => whole(run))
    .map(([run, side]) => ({...whole(run), label: `${side}: ${configLabel(run)}`}));
  const moved = itemMoves(a).length || itemMoves(b).length;
  if (!rows.length && !moved) return [];
  return [rows.length ? section("Success and actions per success",
    outcomeFigure(rows, "all games of each run")) : null,
  moved ? section("Transitions side by side (share of each agent's hand-overs)", transitionPair(a, b)) : null];
}
