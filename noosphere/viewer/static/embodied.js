// Embodied episodes (noosphere/embodied): the map as the robot uncovered it, step by step, with what each step
// said: the first mate's questions, the observer's answers, the first mate's report and the captain's action
// (or the single agent's note), the coverage curve, and the questions asked after the episode.
//
// Events: emb_episode {world, seed, system, max_steps, layout: [rows], things: [{kind, colour, x, y, state}], floor,
// pose: [x, y, heading], seen: [[x, y]], coverage, view}; emb_step {step, said, action, invented, forfeited, pose,
// seen, coverage, note, effect, view}; emb_question {question_id, question_kind, question, gold, answerer, answer,
// canonical, correct}. The society's soc_message events of a step come before its emb_step.

const CELL = 18;
const THING_FILL = {red: "#ef4444", green: "#22c55e", blue: "#3b82f6", purple: "#a855f7", yellow: "#eab308",
  grey: "#9ca3af"};

// Episodes in trace order; each step keeps the society messages that led to it. A benchmark scores several
// episodes at a time (--parallel), so their events interleave: each event goes to the episode of its item.
function embodiedEpisodes(events) {
  const episodes = [];
  const open = new Map();  // item id -> {episode, messages}
  let latest = null;
  for (const e of events) {
    if (e.kind === "emb_episode") {
      const episode = {start: e, steps: [], questions: [], item: e.item_id};
      episodes.push(episode);
      latest = {episode, messages: []};
      open.set(e.item_id, latest);
      continue;
    }
    const current = e.item_id === undefined ? latest : open.get(e.item_id);
    if (!current) {
      continue;
    } else if (e.kind === "soc_message" || e.kind === "soc_forfeit") {
      current.messages.push(e);
    } else if (e.kind === "emb_step") {
      current.episode.steps.push({event: e, messages: current.messages});
      current.messages = [];
    } else if (e.kind === "emb_question") {
      current.episode.questions.push(e);
    }
  }
  return episodes;
}

// The map after `upTo` steps: cells seen so far drawn as they are, the rest dark; the robot as a triangle.
function episodeMap(episode, upTo) {
  const start = episode.start;
  const rows = start.layout || [];
  const seen = new Set((start.seen || []).map(([x, y]) => `${x},${y}`));
  for (const step of episode.steps.slice(0, upTo)) for (const [x, y] of step.event.seen || []) seen.add(`${x},${y}`);
  const pose = upTo > 0 ? episode.steps[upTo - 1].event.pose : start.pose;
  // drawn cropped to the house: MiniGrid lays some houses out in a grid mostly outside them
  const inside = [];
  rows.forEach((row, y) => [...row].forEach((ch, x) => { if (ch !== " ") inside.push([x, y]); }));
  const x0 = Math.min(...inside.map((c) => c[0]), Infinity), y0 = Math.min(...inside.map((c) => c[1]), Infinity);
  const width = inside.length ? Math.max(...inside.map((c) => c[0])) - x0 + 1 : 0;
  const height = inside.length ? Math.max(...inside.map((c) => c[1])) - y0 + 1 : 0;
  const parts = [];
  rows.forEach((row, y) => [...row].forEach((ch, x) => {
    if (ch === " ") return;
    const known = seen.has(`${x},${y}`);
    const fill = !known ? "#1f2937" : ch === "#" ? "#6b7280" : "#f9fafb";
    parts.push(svg("rect", {x: x * CELL, y: y * CELL, width: CELL, height: CELL, fill, stroke: "#e5e7eb",
      "stroke-width": 0.3, class: known ? "seen" : "unseen"}));
  }));
  for (const t of start.things || []) {
    if (!seen.has(`${t.x},${t.y}`)) continue;
    const fill = THING_FILL[t.colour] || "#6b7280";
    const cx = t.x * CELL + CELL / 2, cy = t.y * CELL + CELL / 2;
    const title = svg("title", null, `${t.state ? t.state + " " : ""}${t.colour} ${t.kind}`);
    if (t.kind === "door") {
      parts.push(svg("rect", {x: t.x * CELL + 2, y: t.y * CELL + 2, width: CELL - 4, height: CELL - 4,
        fill: t.state === "open" ? "none" : fill, stroke: fill, "stroke-width": 2, class: "thing"}, title));
    } else if (t.kind === "ball") {
      parts.push(svg("circle", {cx, cy, r: CELL / 3, fill, class: "thing"}, title));
    } else if (t.kind === "key") {
      parts.push(svg("polygon", {points: `${cx},${cy - 6} ${cx + 5},${cy} ${cx},${cy + 6} ${cx - 5},${cy}`, fill,
        class: "thing"}, title));
    } else {
      parts.push(svg("rect", {x: t.x * CELL + 4, y: t.y * CELL + 4, width: CELL - 8, height: CELL - 8, fill,
        class: "thing"}, title));
    }
  }
  if (pose) {
    const [x, y, heading] = pose;
    const cx = x * CELL + CELL / 2, cy = y * CELL + CELL / 2, r = CELL / 2 - 2;
    const tip = [[r, 0], [0, r], [-r, 0], [0, -r]][heading] || [r, 0];
    const back = (sign) => [cx - tip[0] * 0.7 + sign * tip[1] * 0.7, cy - tip[1] * 0.7 - sign * tip[0] * 0.7];
    parts.push(svg("polygon", {class: "robot", fill: "#dc2626", points:
      `${cx + tip[0]},${cy + tip[1]} ${back(1).join(",")} ${back(-1).join(",")}`}));
  }
  return svg("svg", {class: "chart gridmap", viewBox: `${x0 * CELL} ${y0 * CELL} ${width * CELL} ${height * CELL}`,
    width: width * CELL, height: height * CELL, role: "img", "aria-label": `the map after ${upTo} actions`}, parts);
}

// Coverage after each action, with a marker at the step shown.
function coverageCurve(episode, upTo) {
  const points = [episode.start.coverage, ...episode.steps.map((s) => s.event.coverage)];
  const width = 320, height = 140, left = 34, bottom = 22, top = 8;
  const n = Math.max(1, episode.start.max_steps || points.length - 1);
  const x = (i) => left + (i / n) * (width - left - 8);
  const y = (v) => top + (1 - v) * (height - top - bottom);
  const line = points.map((v, i) => `${x(i)},${y(v)}`).join(" ");
  return svg("svg", {class: "chart coverage", viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
    "aria-label": "coverage after each action"},
  [0, 0.5, 1].map((v) => svg("text", {class: "tick", x: left - 4, y: y(v) + 4, "text-anchor": "end"}, v.toFixed(1))),
  svg("line", {class: "axis", x1: left, y1: y(0), x2: width - 8, y2: y(0)}),
  svg("polyline", {points: line, fill: "none", stroke: "#2563eb", "stroke-width": 2}),
  svg("circle", {cx: x(upTo), cy: y(points[Math.min(upTo, points.length - 1)]), r: 4, fill: "#dc2626"}),
  svg("text", {class: "tick", x: width / 2, y: height - 4, "text-anchor": "middle"}, "actions"));
}

// What one step said: the society's messages (first mate, observer, captain) or the system's note, and the action.
function stepDetail(episode, upTo) {
  if (upTo === 0) {
    return el("div", null, el("p", null, `start · coverage ${num(episode.start.coverage)}`),
      lazyDetails("what the robot sees", () => block(episode.start.view)));
  }
  const step = episode.steps[upTo - 1];
  const e = step.event;
  const done = e.forfeited ? el("span", {class: "bad"}, `turn failed: ${e.forfeited}`) :
    e.invented ? el("span", {class: "bad"}, `invented action "${short(e.said, 60)}": nothing done`) :
      el("b", null, e.action);
  const talk = step.messages.filter((m) => m.kind === "soc_message" && m.phase !== "execution").map((m) =>
    el("div", {class: `msg${m.member === "captain" ? " staff" : ""}`}, el("div", {class: "who"},
      `${m.member}${m.to && m.to !== "all" ? ` → ${m.to}` : ""} · ${m.phase}${m.round ? ` ${m.round}` : ""}`),
    block(m.text)));
  const forfeits = step.messages.filter((m) => m.kind === "soc_forfeit").map((m) =>
    el("div", {class: "msg forfeit"}, el("div", {class: "who"}, `${m.member} forfeited (${m.phase})`), block(m.error)));
  const decision = step.messages.find((m) => m.kind === "soc_message" && m.phase === "execution");
  return el("div", {class: "step-detail"},
    el("p", null, `step ${e.step} · action: `, done, e.effect ? el("span", {class: "bad"}, ` (${e.effect})`) : null,
      ` · coverage ${num(e.coverage)}`),
    talk, forfeits,
    decision ? el("div", {class: "msg staff"}, el("div", {class: "who"}, `${decision.member} decides`),
      block(`${decision.text}\n→ ${decision.answer}`)) : null,
    !talk.length && e.note ? el("div", {class: "msg"}, el("div", {class: "who"}, "note"), block(e.note)) : null,
    lazyDetails("what the robot sees after it", () => block(e.view)));
}

function questionsTable(questions) {
  const byQuestion = new Map();
  for (const q of questions) {
    const entry = byQuestion.get(q.question_id) || {q, answers: []};
    entry.answers.push(q);
    byQuestion.set(q.question_id, entry);
  }
  return table(["question", "gold", "answers"], [...byQuestion.values()].map(({q, answers}) => [q.question, q.gold,
    el("div", null, answers.map((a) => el("div", null, mark(a.correct), ` ${a.answerer}: ${short(a.answer, 50)}` +
      (a.canonical && a.canonical !== a.answer ? ` (${a.canonical})` : ""))))]));
}

function embodiedEpisodeView(episode) {
  const start = episode.start;
  const last = episode.steps.length;
  const mapHolder = el("div", {class: "map-holder"});
  const curveHolder = el("div");
  const detailHolder = el("div", {class: "stack"});
  const label = el("span", {class: "step-label"});
  const slider = el("input", {type: "range", min: 0, max: last, value: last, class: "step-slider"});
  const show = (upTo) => {
    slider.value = upTo;
    label.textContent = `after ${upTo} of ${last} actions`;
    clear(mapHolder).appendChild(episodeMap(episode, upTo));
    clear(curveHolder).appendChild(coverageCurve(episode, upTo));
    clear(detailHolder).appendChild(stepDetail(episode, upTo));
  };
  slider.addEventListener("input", () => show(Number(slider.value)));
  const nudge = (by) => show(Math.max(0, Math.min(last, Number(slider.value) + by)));
  show(last);
  const final = last ? episode.steps[last - 1].event : start;
  const invented = episode.steps.filter((s) => s.event.invented).length;
  return el("div", {class: "embodied"},
    section(`${start.world} · seed ${start.seed} · ${start.system}`, keyValues({coverage: final.coverage,
      actions: last, max_steps: start.max_steps, floor_cells: start.floor, invented_actions: invented,
      questions_right: episode.questions.length ? `${episode.questions.filter((q) => q.correct).length} of ` +
        `${episode.questions.length} answers` : "–"})),
    section("The map as the robot uncovered it", el("div", {class: "picker"},
      el("button", {class: "step-prev", onclick: () => nudge(-1)}, "◀"), slider,
      el("button", {class: "step-next", onclick: () => nudge(1)}, "▶"), label),
    el("div", {class: "split"}, el("div", null, mapHolder, curveHolder), detailHolder)),
    episode.questions.length ? section("Questions after the episode", questionsTable(episode.questions)) : null);
}

function embodiedView(events) {
  const episodes = embodiedEpisodes(events);
  if (!episodes.length) return el("p", null, "no embodied episode in these events");
  if (episodes.length === 1) return embodiedEpisodeView(episodes[0]);
  const holder = el("div", null, embodiedEpisodeView(episodes[0]));
  const select = el("select", {class: "episode-select", onchange: () => clear(holder).appendChild(
    embodiedEpisodeView(episodes[Number(select.value)]))}, episodes.map((ep, i) => el("option", {value: i},
    `${ep.start.world} #${ep.start.seed} (${ep.start.system})`)));
  return el("div", null, el("p", null, `${episodes.length} episodes: `, select), holder);
}
