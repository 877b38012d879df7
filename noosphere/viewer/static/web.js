// Web episodes (MiniWoB++): each episode's goal and outcome, and each step's screenshot (the page before the
// action) with the element acted on outlined, the action as written and as carried out (or why the step was lost),
// what the guard refused, and for a workspace the chunks that competed for that step and what the STM chose.
//
// Events: web_episode_started {env, task, seed, goal, system}; web_step {env, step, action, performed, error, bid,
// box: [x, y, width, height], screenshot: a path the bundle's `media` maps to a data URL, thought, message, effect
// (what the step visibly did to the page; absent from older traces), reward, done, won}; web_refused {env, step,
// what, url}; web_episode_ended {env, won, reward, steps, lost_steps, reason, error}.
// A workspace's ws_chunk, ws_competition and ws_stm events between two web_step events of an episode are the
// competition of the later step. Events of a benchmark carry `item_id` (the episode), which keeps episodes scored
// in parallel apart.

function webEpisodes(events) {
  const episodes = new Map();
  let last = null;
  const episodeOf = (event) => {
    const key = event.item_id ?? event.env ?? last;
    if (key === null || key === undefined) return null;
    if (!episodes.has(key)) episodes.set(key, {key, start: null, end: null, steps: [], pending: [], refused: []});
    return episodes.get(key);
  };
  for (const event of events) {
    const web = event.kind.startsWith("web_");
    if (!web && !["ws_chunk", "ws_competition", "ws_stm"].includes(event.kind)) continue;
    if (event.kind === "web_episode_started") last = event.item_id ?? event.env;
    const episode = episodeOf(event);
    if (episode === null) continue;
    if (event.kind === "web_episode_started") episode.start = event;
    else if (event.kind === "web_episode_ended") episode.end = event;
    else if (event.kind === "web_refused") episode.refused.push(event);
    else if (event.kind === "web_step") {
      episode.steps.push({...event, competed: episode.pending});
      episode.pending = [];
    } else episode.pending.push(event);
  }
  return [...episodes.values()].filter((episode) => episode.start || episode.end || episode.steps.length);
}

function webShot(run, step) {
  const url = step.screenshot ? (run.media || {})[step.screenshot] : null;
  if (!url) return el("p", {class: "sub"}, "no screenshot");
  const holder = el("div", {class: "shot"}, el("img", {src: url, alt: `the page before step ${step.step}`}));
  if (Array.isArray(step.box) && step.box.length === 4) {
    const [x, y, width, height] = step.box;
    const mark = el("div", {class: step.error ? "mark lost" : "mark", title: `bid ${step.bid}`});
    mark.style.left = `${x}px`;
    mark.style.top = `${y}px`;
    mark.style.width = `${width}px`;
    mark.style.height = `${height}px`;
    holder.appendChild(mark);
  }
  return holder;
}

function webCompetition(step) {
  const chunks = step.competed.filter((e) => e.kind === "ws_chunk" && e.phase === "chunk");
  if (!chunks.length) return null;
  const winners = new Set(step.competed.filter((e) => e.kind === "ws_competition").map((e) => e.winner));
  const chosen = step.competed.filter((e) => e.kind === "ws_stm");
  return el("div", {class: "competed"},
    pagedTable(["iteration", "processor", "weight", "chunk"], chunks,
      (c) => [String(c.iteration), c.processor, fixed(c.weight), block(c.gist)],
      (tr, c) => { if (winners.has(c.processor)) tr.classList.add("winner"); }),
    chosen.map((s) => el("p", null, `STM (iteration ${s.iteration}, from ${s.winner}): `,
      el("code", null, s.label || s.answer), ` · confidence ${fixed(s.confidence)}`)));
}

function webStep(run, step, refused) {
  const outcome = step.error ? el("span", {class: "bad"}, `lost: ${step.error}`) :
    el("span", null, "carried out: ", el("code", null, step.performed || step.action));
  return el("div", {class: "web-step"},
    el("h4", null, `step ${step.step}`, step.done ? ` · episode over, reward ${num(step.reward)}` : ""),
    el("div", {class: "split"}, webShot(run, step),
      el("div", null,
        el("p", null, "action: ", el("code", null, step.action || "(none)")), el("p", null, outcome),
        step.effect ? el("p", null, `effect on the page: ${step.effect}`) : null,
        step.thought ? el("p", {class: "sub"}, step.thought) : null,
        step.message ? el("p", null, `message to the user: ${step.message}`) : null,
        refused.length ? el("ul", {class: "refused"}, refused.map((r) => el("li", null, `refused ${r.what}: ${r.url}`)))
          : null)),
    webCompetition(step));
}

function webView(run, events) {
  const episodes = webEpisodes(events);
  if (!episodes.length) return el("p", null, "no web episode in these events");
  return el("div", {class: "web"}, episodes.map((episode) => {
    const start = episode.start || {};
    const end = episode.end;
    const title = `${episode.key}` + (end ? ` · ${end.won ? "won" : "lost"} (${end.reason}), reward ${num(end.reward)}, ` +
      `${end.steps} steps, ${end.lost_steps} lost` : " · not finished");
    return section(title,
      el("p", null, `goal: ${start.goal || "?"}`, start.system ? ` · system ${start.system}` : ""),
      end && end.error ? el("p", {class: "bad"}, end.error) : null,
      lazyDetails(`${episode.steps.length} steps`, () => el("div", null, episode.steps.map((step) =>
        webStep(run, step, episode.refused.filter((r) => r.step === step.step)))), {open: episodes.length === 1}));
  }));
}
