// Meta-agent runs: the path through the transition graph, how often each transition was taken, the
// steps with their actions and beliefs, memory retrievals and focus-loop recoveries.
//
// Events: ma_step {step, agent, output}; ma_transition {step, source,
// target, valid, fallback}; ma_action {step, action, observation, reward, done, won}; ma_belief {step,
// belief}; ma_retrieval {step, memory: episodic|conceptual, method: random|relevant, items: [str]};
// ma_focus {step, reason, loop, struck}; ma_focus_outcome {step, loop, action, recovered}: the first action after
// that loop did something. Older traces put `recovered` on ma_focus itself. ma_judged {step, written, chosen,
// candidates, policy, p_true}: a react-scored step, the written action and the judge's candidates.

function transitionPath(transitions) {
  const path = el("div", {class: "path"});
  const chip = (state) => el("span", {class: "state"}, state);
  return paged(path, path, transitions, (t, i) => el("span", {class: "hop"}, i === 0 ? chip(t.source) : null,
    el("span", {class: t.valid === false || t.fallback ? "arrow bad" : "arrow",
      title: `step ${t.step}${t.valid === false ? ": invalid proposal" : ""}${t.fallback ? ", fallback taken" : ""}`},
    t.valid === false || t.fallback ? " ⇢ " : " → "), chip(t.target)), 200);
}

function heatmap(transitions) {
  const states = [];
  const counts = new Map();
  for (const t of transitions) {
    for (const s of [t.source, t.target]) if (!states.includes(s)) states.push(s);
    const key = `${t.source}\u0000${t.target}`;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  const top = Math.max(1, ...counts.values());
  const view = table(["from \\ to", ...states], states.map((from) => [from, ...states.map((to) =>
    String(counts.get(`${from}\u0000${to}`) || ""))]));
  [...view.tBodies[0].rows].forEach((row, r) => {
    states.forEach((to, c) => {
      const count = counts.get(`${states[r]}\u0000${to}`) || 0;
      const cell = row.cells[c + 1];
      cell.classList.add("heat");
      cell.style.backgroundColor = `rgba(37, 99, 235, ${count ? 0.15 + (0.85 * count) / top : 0})`;
      if (count / top > 0.55) cell.classList.add("dark");
      cell.title = `${states[r]} → ${to}: ${count}`;
    });
  });
  view.classList.add("heatmap");
  return view;
}

function metaView(events) {
  const of = (kind) => events.filter((e) => e.kind === kind);
  const transitions = of("ma_transition");
  const byStep = new Map();
  for (const e of events) {
    if (!e.kind.startsWith("ma_") || e.step === undefined) continue;
    const entry = byStep.get(e.step) || {step: e.step};
    entry[e.kind] = e;
    byStep.set(e.step, entry);
  }
  const steps = [...byStep.values()];
  const actions = of("ma_action");
  const last = actions[actions.length - 1];
  const reward = actions.reduce((sum, a) => sum + (a.reward || 0), 0);
  const focus = of("ma_focus");
  const judged = of("ma_judged");
  const outcomes = new Map(of("ma_focus_outcome").map((o) => [o.loop, o]));
  const recovered = (f) => (outcomes.size ? Boolean(outcomes.get(f.loop)?.recovered) : Boolean(f.recovered));
  return el("div", {class: "meta"},
    section("Outcome", keyValues({steps: steps.length, total_reward: reward,
      done: last ? last.done : false, won: last ? last.won : false,
      invalid_transitions: transitions.filter((t) => t.valid === false).length,
      fallbacks: transitions.filter((t) => t.fallback).length,
      focus_recoveries: `${focus.filter(recovered).length} of ${focus.length}`})),
    section("Path through the transition graph", transitionPath(transitions)),
    section("Transitions (from → to, counts)", heatmap(transitions)),
    section("Steps", pagedTable(["step", "state", "transition", "action", "observation", "reward", "belief"], steps,
      (s) => [String(s.step), s.ma_step ? s.ma_step.agent : "", s.ma_transition ? describe(s.ma_transition) : "",
        s.ma_action ? block(s.ma_action.action) : "", s.ma_action ? block(s.ma_action.observation) : "",
        s.ma_action ? num(s.ma_action.reward) : "", s.ma_belief ? block(s.ma_belief.belief, "json") : ""],
      (tr, s) => {
        if (s.ma_focus) tr.classList.add("focus");
        const t = s.ma_transition;
        if (t && (t.valid === false || t.fallback)) tr.classList.add("bad-row");
      })),
    section("Agent outputs", pagedTable(["step", "agent", "output"], of("ma_step"),
      (s) => [String(s.step), s.agent, lazyDetails(short(s.output, 80), () => block(s.output))])),
    section(`Memory retrievals (${of("ma_retrieval").length})`, pagedTable(["step", "memory", "method", "items"],
      of("ma_retrieval"), (r) => [String(r.step), r.memory, r.method,
        el("ul", null, (r.items || []).map((item) => el("li", null, asText(item))))])),
    section(`Focus-loop recoveries (${focus.length})`, pagedTable(["step", "reason", "recovered"], focus,
      (f) => [String(f.step), block(f.struck && f.struck.length ? `${f.reason} (struck: ${f.struck.join(", ")})`
        : f.reason), mark(recovered(f))])),
    judged.length ? section(`Judge (${judged.filter((j) => j.chosen !== j.written).length} of ${judged.length} ` +
      "actions changed)", pagedTable(["step", "written", "candidates: policy, P(True)", "taken"], judged,
      (j) => [String(j.step), j.written, el("ul", null, j.candidates.map((c, i) =>
        el("li", null, `${c}: ${num(j.policy[i])}, ${num(j.p_true[i])}`))), j.chosen],
      (tr, j) => { if (j.chosen !== j.written) tr.classList.add("focus"); })) : null);
}
