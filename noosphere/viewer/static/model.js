// Reading a run: one pass over the events indexes model calls, their repairs and the benchmark items,
// so that each view later touches only what it shows.

function callKey(event) {
  return `${event.model}|${event.agent}|${event.attempt}`;
}

function indexRun(bundle) {
  const calls = [];
  const lastCall = new Map();
  const itemIndexes = new Map();  // item id -> indexes of its events
  let openItem = null;  // traces written before items were tagged: the item whose events follow
  bundle.events.forEach((event, index) => {
    if (event.kind === "model_call") {
      event._n = calls.length + 1;
      calls.push(event);
      lastCall.set(callKey(event), event);
    } else if (event.kind === "output_repaired") {  // emitted right after the call it repairs
      const call = lastCall.get(callKey(event));
      if (call) (call._repairs = call._repairs || []).push(event);
    }
    if (event.kind === "bench_item_started") {
      itemIndexes.set(event.item_id, []);  // a resumed item keeps its last try
      openItem = event.item_id;
    }
    const owner = event.item_id !== undefined ? event.item_id : openItem;
    if (owner !== null && itemIndexes.has(owner)) itemIndexes.get(owner).push(index);
    if (event.kind === "bench_item_finished") openItem = null;
  });
  return {...bundle, calls, itemIndexes};
}

// An item's events: those tagged with its id (items scored in parallel interleave in the trace), or in
// older traces the events between its start and finish.
function itemEvents(run, itemId) {
  return (run.itemIndexes.get(itemId) || []).map((index) => run.events[index]);
}

function totals(events) {
  const sum = {calls: 0, prompt: 0, reused: 0, completion: 0, tokens: 0, cost: null, latency: 0, cached: 0,
    repairs: 0, time: 0};
  let finished = null;
  for (const event of events) {
    if (event.kind === "model_call") {
      sum.calls += 1;
      sum.prompt += event.prompt_tokens || 0;
      sum.reused += event.reused_prompt_tokens || 0;
      sum.completion += event.completion_tokens || 0;
      sum.latency += event.latency_s || 0;
      if (event.cached) sum.cached += 1;
      if (typeof event.cost_usd === "number") sum.cost = (sum.cost || 0) + event.cost_usd;
    } else if (event.kind === "output_repaired") {
      sum.repairs += 1;
    } else if (event.kind === "run_finished") {
      finished = event;
    }
  }
  sum.tokens = sum.prompt + sum.completion;
  const span = events.length > 1 ? events[events.length - 1].ts - events[0].ts : 0;
  sum.time = finished && typeof finished.seconds === "number" ? finished.seconds : span;
  return sum;
}

function perAgent(events) {
  const rows = new Map();
  for (const event of events) {
    if (event.kind !== "model_call" && event.kind !== "output_repaired") continue;
    const name = event.agent || "(none)";
    const row = rows.get(name) || {agent: name, calls: 0, tokens: 0, latency: 0, repairs: 0};
    if (event.kind === "model_call") {
      row.calls += 1;
      row.tokens += (event.prompt_tokens || 0) + (event.completion_tokens || 0);
      row.latency += event.latency_s || 0;
    } else {
      row.repairs += 1;
    }
    rows.set(name, row);
  }
  return [...rows.values()];
}

function fields(event) {
  const out = {};
  for (const [key, value] of Object.entries(event)) {
    if (key !== "kind" && key !== "ts" && !key.startsWith("_")) out[key] = value;
  }
  return out;
}


// One line per event kind for the timeline; unknown kinds (from newer code) show their fields.
const DESCRIBE = {
  run_started: (e) => `command ${e.command}`,
  run_finished: (e) => `${e.status}, ${seconds(e.seconds)}${e.error ? `: ${e.error}` : ""}`,
  model_call: (e) => `${e.agent || "-"} · ${short(e.response, 80)}`,
  output_repaired: (e) => `${e.agent || "-"} try ${e.attempt}: ${e.repair}: ${short(e.detail, 80)}`,
  output_failed: (e) => `${e.agent || "-"} failed after ${e.attempts} tries: ${short((e.errors || []).at(-1), 80)}`,
  model_retried: (e) => `${e.agent || "-"} retried in ${seconds(e.delay_s)}: ${short(e.error, 80)}`,
  prompt_truncated: (e) => `dropped ${e.dropped_messages} messages to fit ${e.context} tokens`,
  bench_item_started: (e) => `item ${e.item_id}`,
  bench_item_finished: (e) => `item ${e.item_id}: ${e.correct ? "correct" : "wrong"} (${short(e.prediction, 30)} vs ` +
    `${short(e.gold, 30)})${e.error ? ` ${e.error}` : ""}`,
  ws_iteration: (e) => `iteration ${e.iteration}`,
  ws_chunk: (e) => `${e.processor} (${e.phase}) w=${fixed(e.weight)}: ${short(e.gist, 70)}`,
  ws_forfeit: (e) => `${e.processor} forfeited (${e.phase}): ${short(e.error, 70)}`,
  ws_competition: (e) => `${e.method}: ${e.winner} wins`,
  ws_stm: (e) => `STM confidence ${fixed(e.confidence)}${e.stop ? " (stop)" : ""}: ${short(e.answer, 70)}`,
  ws_broadcast: (e) => `${e.winner} → ${(e.recipients || []).join(", ")}`,
  ws_link: (e) => `${e.a} – ${e.b} ${e.change} (w=${fixed(e.weight)})`,
  ws_fusion: (e) => `${e.asker} ← ${e.answerer}: ${short(e.answer, 70)}`,
  ws_finished: (e) => `${short(e.answer, 60)} (confidence ${fixed(e.confidence)}, ${e.stopped_by})`,
  ws_tool: (e) => `${e.processor} ran ${e.tool}: ${e.ok ? "ok" : "failed"} ${short(e.output, 60)}`,
  soc_started: (e) => `${e.organisation}: ${Object.keys(e.members || {}).join(", ")}`,
  soc_phase: (e) => `${e.phase}${e.round ? ` round ${e.round}` : ""}`,
  soc_message: (e) => `${e.member} → ${e.to || "all"}: ${short(e.text, 60)}` +
    `${e.answer ? ` [${short(e.answer, 20)}]` : ""}`,
  soc_forfeit: (e) => `${e.member} forfeited: ${short(e.error, 70)}`,
  soc_program_repair: (e) => `${e.member}'s program failed, repair ${e.attempt} asked: ${short(e.reason, 60)}`,
  soc_ballot: (e) => `${e.voter}: ${(e.ranking || []).join(" > ")}${e.standing ? " (standing answer)" : ""}` +
    `${e.weight != null ? `, weighing ${fixed(e.weight)}` : ""}`,
  soc_tally: (e) => `${e.rule}: ${e.winner ?? "no winner"} ${short(e.scores, 60)}`,
  soc_consensus: (e) => `every member holds ${short(e.answer, 40)}: ${e.phase} stops before round ${e.round}`,
  soc_quorum: (e) => `${e.holders} of ${e.asked} asked hold ${short(e.answer, 40)}: no one else is asked`,
  soc_budget_spent: (e) => `${e.budget} budget of ${num(e.limit)} spent in ${e.phase}: deciding with what there is`,
  soc_finished: (e) => `${short(e.answer, 60)} (decided by ${e.decided_by})`,
  econ_balances: (e) => `round ${e.round}: ${short(e.balances, 80)}`,
  econ_payment: (e) => `${e.payer} → ${e.payee}: ${num(e.amount)} (${e.reason})`,
  econ_contract: (e) => `#${e.contract} ${e.client} hires ${e.provider} for ${num(e.price)}: ${e.status}`,
  econ_departure: (e) => `${e.agent} left in round ${e.round} with ${num(e.balance)}`,
  econ_spawn: (e) => `${e.parent} spawned ${e.child} with ${num(e.endowment)}`,
  ma_step: (e) => `step ${e.step} · ${e.agent}: ${short(e.output, 60)}`,
  ma_transition: (e) => `${e.source} → ${e.target}${e.valid === false ? " (invalid)" : ""}` +
    `${e.fallback ? " (fallback)" : ""}`,
  ma_action: (e) => `${short(e.action, 40)} → ${short(e.observation, 50)}` +
    `${e.done ? (e.won ? " (won)" : " (done)") : ""}`,
  ma_belief: (e) => short(e.belief, 90),
  ma_judged: (e) => `${short(e.written, 30)} → ${short(e.chosen, 30)}` +
    `${e.written === e.chosen ? "" : " (the judge's pick)"}`,
  ma_retrieval: (e) => `${e.memory} (${e.method}): ${(e.items || []).length} items`,
  ma_focus: (e) => (e.loop ? `focus loop ${e.loop}: ${e.reason}` +
    `${e.struck && e.struck.length ? ` (struck: ${short(e.struck.join(", "), 60)})` : ""}`
    : `${e.reason}${e.recovered ? " (recovered)" : " (not recovered)"}`),
  ma_forfeit: (e) => `${e.agent} forfeited: ${short(e.error, 60)} (instead: ${e.instead})`,
  ma_focus_outcome: (e) => `after focus loop ${e.loop}: ${short(e.action, 40)}` +
    `${e.recovered ? " (recovered)" : " (did nothing)"}`,
};

function describe(event) {
  const fn = Object.hasOwn(DESCRIBE, event.kind) ? DESCRIBE[event.kind] : null;  // "__proto__" is a kind too
  return fn ? fn(event) : short(fields(event), 100);
}
