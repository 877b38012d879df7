// Workspace (CTM) runs: per iteration the chunks and their scores, the competition, the STM answer and
// the link graph between processors as it stood after that iteration, with an iteration selector.

// A trace may hold several workspace runs. In a benchmark each item runs its own, and every event of an item
// carries its `item_id`: items scored in parallel interleave in the trace, so the tag, not the order, says whose
// an event is (an item scored again after a kill keeps its last try). Events without a tag (a single run, or a
// trace written before items were tagged) start a new run when the iteration count goes back.
function workspaceEpisodes(events) {
  const episodes = [];
  const byItem = new Map();
  let current = null;
  let last = Infinity;
  const add = (episode, event) => {
    if (event.kind === "ws_iteration") episode.iterations.push(event.iteration);
    episode.events.push(event);
  };
  for (const event of events) {
    const item = event.item_id;
    if (event.kind === "bench_item_started" && byItem.has(item)) {  // tried again: the earlier try goes
      episodes.splice(episodes.indexOf(byItem.get(item)), 1);
      byItem.delete(item);
    }
    if (!event.kind.startsWith("ws_")) continue;
    if (item !== undefined && item !== null) {
      if (!byItem.has(item)) {
        byItem.set(item, {item, events: [], iterations: []});
        episodes.push(byItem.get(item));
      }
      add(byItem.get(item), event);
      continue;
    }
    if (current === null || (event.kind === "ws_iteration" && event.iteration <= last)) {
      current = {item: null, events: [], iterations: []};
      episodes.push(current);
    }
    if (event.kind === "ws_iteration") last = event.iteration;
    add(current, event);
  }
  return episodes;
}

function processorsOf(events) {
  const names = new Set();
  for (const e of events) {
    if (e.kind === "ws_chunk" || e.kind === "ws_forfeit") names.add(e.processor);
    else if (e.kind === "ws_competition") Object.keys(e.weights || {}).forEach((n) => names.add(n));
    else if (e.kind === "ws_link") { names.add(e.a); names.add(e.b); }
    else if (e.kind === "ws_broadcast") (e.recipients || []).forEach((n) => names.add(n));
  }
  return [...names];
}

const edgeKey = (a, b) => [a, b].sort().join("\u0000");

// The links after `iteration`: replay every change up to it.
function linksAfter(events, iteration) {
  const edges = new Map();
  for (const e of events) {
    if (e.kind !== "ws_link" || e.iteration > iteration) continue;
    if (e.change === "removed") edges.delete(edgeKey(e.a, e.b));
    else edges.set(edgeKey(e.a, e.b), {a: e.a, b: e.b, weight: e.weight, change: null});
  }
  return edges;
}

function linkGraph(names, events, iteration, winner) {
  const edges = linksAfter(events, iteration);
  const changes = events.filter((e) => e.kind === "ws_link" && e.iteration === iteration);
  const size = 340;
  const centre = size / 2;
  const radius = names.length > 1 ? size / 2 - 46 : 0;
  const at = new Map(names.map((name, i) => {
    const angle = (2 * Math.PI * i) / names.length - Math.PI / 2;
    return [name, [centre + radius * Math.cos(angle), centre + radius * Math.sin(angle)]];
  }));
  const line = (a, b, props, label) => {
    const [x1, y1] = at.get(a) || [centre, centre];
    const [x2, y2] = at.get(b) || [centre, centre];
    return svg("line", {x1, y1, x2, y2, ...props}, svg("title", null, label));
  };
  const drawn = [];
  for (const change of changes) {
    const edge = edges.get(edgeKey(change.a, change.b));
    if (edge) edge.change = change.change;
    else drawn.push(line(change.a, change.b, {class: "edge-removed", "data-a": change.a, "data-b": change.b},
      `${change.a} – ${change.b} removed`));
  }
  for (const edge of edges.values()) {
    drawn.push(line(edge.a, edge.b, {class: `edge ${edge.change || "kept"}`, "stroke-width": 1.5 + 3 * Math.min(1,
      Math.abs(edge.weight || 0)), "data-a": edge.a, "data-b": edge.b},
    `${edge.a} – ${edge.b}: weight ${num(edge.weight)}${edge.change ? `, ${edge.change} now` : ""}`));
  }
  const nodes = names.map((name) => {
    const [x, y] = at.get(name);
    return svg("g", {class: name === winner ? "node winner" : "node"},
      svg("circle", {cx: x, cy: y, r: 26}), svg("text", {x, y: y + 4, "text-anchor": "middle"}, short(name, 10)),
      svg("title", null, name === winner ? `${name} (winner)` : name));
  });
  return el("figure", {class: "graph-figure"},
    svg("svg", {class: "graph", viewBox: `0 0 ${size} ${size}`, width: size, height: size, role: "img",
      "aria-label": `link graph after iteration ${iteration}`}, drawn, nodes),
    el("figcaption", null, `${edges.size} links after iteration ${iteration}` +
      (changes.length ? `; changed now: ${changes.map((c) => `${c.a}–${c.b} ${c.change}`).join(", ")}` : "")));
}

function iterationView(episode, names, iteration) {
  const events = episode.events.filter((e) => e.iteration === iteration);
  const of = (kind) => events.filter((e) => e.kind === kind);
  const competition = of("ws_competition")[0];
  const stm = of("ws_stm")[0];
  const winner = competition ? competition.winner : stm ? stm.winner : null;
  const chunkRows = of("ws_chunk").map((c) => [c.phase, c.processor, block(c.gist), c.question || "",
    fixed(c.relevance), fixed(c.confidence), fixed(c.surprise), el("strong", null, fixed(c.weight))]);
  const chunks = table(["phase", "processor", "gist", "question", "relevance", "confidence", "surprise", "weight"],
    chunkRows);
  [...chunks.tBodies[0].rows].forEach((row, i) => {
    const chunk = of("ws_chunk")[i];
    if (chunk.phase === "chunk" && chunk.processor === winner) row.classList.add("winner");
  });
  return el("div", {class: "iteration", dataset: {iteration: String(iteration)}},
    el("div", {class: "split"},
      section("Link graph", linkGraph(names, episode.events, iteration, winner)),
      el("div", {class: "stack"},
        section("Competition", competition ? [el("p", null, `method ${competition.method}; winner `,
          el("strong", {class: "winner-name"}, competition.winner)), bars(competition.weights, competition.winner),
        competition.matches && competition.matches.length ? lazyDetails(`${competition.matches.length} matches`,
          () => block(competition.matches, "json")) : null] : el("p", null, "no competition")),
        section("Short-term memory", stm ? [block(stm.answer, "text answer"), keyValues({label: stm.label,
          confidence: stm.confidence, threshold: stm.threshold, stop: stm.stop, winner: stm.winner})] :
          el("p", null, "no STM answer")))),
    section("Chunks", chunks),
    of("ws_broadcast").map((b) => el("p", null, `broadcast: ${b.winner} → ${(b.recipients || []).join(", ")}`)),
    of("ws_fusion").length ? section("Fusion", table(["asker", "answerer", "question", "answer"],
      of("ws_fusion").map((f) => [f.asker, f.answerer, block(f.question), block(f.answer)]))) : null,
    of("ws_forfeit").length ? section("Forfeits", table(["phase", "processor", "error"],
      of("ws_forfeit").map((f) => [f.phase, f.processor, block(f.error)]))) : null);
}

function episodeView(episode) {
  const names = processorsOf(episode.events);
  const finished = episode.events.find((e) => e.kind === "ws_finished");
  const panel = el("div", {class: "iteration-panel"});
  const picker = el("div", {class: "picker"}, el("span", null, "iteration: "));
  const show = (iteration) => {
    clear(panel).appendChild(iterationView(episode, names, iteration));
    for (const button of picker.querySelectorAll("button")) {
      button.classList.toggle("active", Number(button.dataset.iteration) === iteration);
    }
    const select = picker.querySelector("select");
    if (select) select.value = String(iteration);
  };
  if (episode.iterations.length <= 30) {
    episode.iterations.forEach((n) => picker.appendChild(el("button", {class: "iter", dataset: {iteration: String(n)},
      onclick: () => show(n)}, `iteration ${n}`)));
  } else {
    picker.appendChild(el("select", {onchange: (event) => show(Number(event.target.value))},
      episode.iterations.map((n) => el("option", {value: n}, `iteration ${n}`))));
  }
  const tools = episode.events.filter((e) => e.kind === "ws_tool");
  const view = el("div", {class: "episode"},
    finished ? section("Answer", block(finished.answer, "text answer"), keyValues({label: finished.label,
      confidence: finished.confidence, iterations: finished.iterations, stopped_by: finished.stopped_by,
      final_links: (finished.links || []).map((pair) => pair.join(" – ")).join(", ")})) : null,
    el("p", null, `processors: ${names.join(", ")}`),
    tools.length ? section("Tool calls", table(["processor", "tool", "arguments", "ok", "output"],
      tools.map((t) => [t.processor, t.tool, block(t.arguments, "json"), mark(t.ok), block(t.output)]))) : null,
    picker, panel);
  if (episode.iterations.length) show(episode.iterations[0]);
  return view;
}

function workspaceView(events) {
  const episodes = workspaceEpisodes(events);
  if (episodes.length === 1) return episodeView(episodes[0]);
  const holder = el("div");
  const items = episodes.filter((ep) => ep.item !== null).length;
  const select = el("select", {class: "episode-select", onchange: () => clear(holder).appendChild(
    episodeView(episodes[Number(select.value)]))}, episodes.map((ep, i) => el("option", {value: i},
    `${ep.item !== null ? `item ${ep.item}` : `workspace run ${i + 1}`} (${ep.iterations.length} iterations)`)));
  holder.appendChild(episodeView(episodes[0]));
  return el("div", null, el("p", {class: "episode-count"}, `${episodes.length} workspace runs` +
    (items ? `, one per item (${items} items)` : "") + ": ", select), holder);
}
