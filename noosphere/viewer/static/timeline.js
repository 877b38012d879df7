// The timeline: the run cut into iterations, phases, steps (and benchmark items), each opening to its
// events; a model call opens to its prompt, response, tokens, latency and repairs. Bodies are built on
// first open and a page at a time, so a trace of 10,000 calls opens as fast as a small one.

const STARTS = {
  ws_iteration: (e) => `iteration ${e.iteration}`,
  soc_started: (e) => `society: ${e.organisation}`,
  soc_phase: (e) => `${e.phase}${e.round ? ` round ${e.round}` : ""}`,
};

// Meta-agent events carry their step; a model call belongs to the step of the next event that has one.
function stepsOf(events) {
  const steps = new Array(events.length);
  let next;
  for (let i = events.length - 1; i >= 0; i -= 1) {
    if (events[i].kind.startsWith("ma_") && events[i].step !== undefined) next = events[i].step;
    steps[i] = next;
  }
  return steps;
}

function segments(events) {
  const out = [];
  let current = {label: "start", events: []};
  const steps = events.some((e) => e.kind.startsWith("ma_")) ? stepsOf(events) : null;
  let step;
  events.forEach((event, index) => {
    let label = Object.hasOwn(STARTS, event.kind) ? STARTS[event.kind](event) : null;  // not the prototype's
    if (steps && steps[index] !== undefined && steps[index] !== step) {
      step = steps[index];
      label = `step ${step}`;
    }
    if (label) {
      if (current.events.length) out.push(current);
      current = {label, events: []};
    }
    current.events.push(event);
  });
  if (current.events.length) out.push(current);
  return out;
}

function callSummary(call) {
  return [el("span", {class: "badge call"}, `call #${call._n}`), " ",
    `${call.agent || "-"} · ${call.model} · try ${call.attempt} · ${num(call.prompt_tokens)}→` +
    `${num(call.completion_tokens)} tok · ${seconds(call.latency_s)}`,
    call.cached ? el("span", {class: "badge"}, "cached") : null,
    call._repairs ? el("span", {class: "badge warn"}, `repair: ${call._repairs.map((r) => r.repair).join(", ")}`)
      : null,
    " ", el("span", {class: "snippet"}, short(call.response, 90))];
}

// Structured replies are JSON: show their fields as well, strings unescaped (still as text).
function parsedReply(text) {
  if (typeof text !== "string" || !text.trimStart().startsWith("{")) return null;
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" ? el("div", {class: "parsed"}, el("h4", null, "parsed"), keyValues(value))
      : null;
  } catch {
    return null;
  }
}

function callDetail(call) {
  const meta = {model: call.model, agent: call.agent, attempt: call.attempt, schema: call.schema_name,
    prompt_tokens: call.prompt_tokens, reused_prompt_tokens: call.reused_prompt_tokens,
    completion_tokens: call.completion_tokens, cost: usd(call.cost_usd),
    latency: seconds(call.latency_s), cached: call.cached, finish_reason: call.finish_reason};
  return el("div", {class: "call-detail"},
    keyValues(meta),
    (call._repairs || []).map((r) => el("div", {class: "repair"},
      el("strong", null, `repair (try ${r.attempt}): ${r.repair}`), block(r.detail))),
    el("h4", null, `prompt (${(call.messages || []).length} messages)`),
    (call.messages || []).map((m) => el("div", {class: `message role-${m.role}`},
      el("div", {class: "role"}, m.name ? `${m.role} (${m.name})` : m.role),
      block(m.content), m.media ? block(m.media, "json") : null)),
    el("h4", null, "response"), block(call.response, "text response"), parsedReply(call.response),
    call.tool_calls && call.tool_calls.length ? [el("h4", null, "tool calls"), block(call.tool_calls, "json")] : null);
}

function eventRow(event) {
  if (event.kind === "model_call") {
    return lazyDetails(callSummary(event), () => callDetail(event), {class: "event call"});
  }
  const warn = ["output_repaired", "output_failed", "ws_forfeit", "soc_forfeit", "soc_program_repair", "ma_forfeit", "model_retried"].includes(event.kind);
  return lazyDetails([el("span", {class: warn ? "badge warn" : "badge"}, event.kind), " ", describe(event)],
    () => keyValues(fields(event)), {class: "event"});
}

function segmentSummary(segment) {
  const sum = totals(segment.events);
  const notes = [];
  for (const e of segment.events) {
    if (e.kind === "ws_competition") notes.push(`winner ${e.winner}`);
    else if (e.kind === "ws_stm") notes.push(`STM ${fixed(e.confidence)}`);
    else if (e.kind === "ma_transition") notes.push(`${e.source} → ${e.target}`);
    else if (e.kind === "soc_tally") notes.push(`vote: ${e.winner}`);
    else if (e.kind === "bench_item_finished") notes.push(e.correct ? "correct" : "wrong");
  }
  return [el("strong", null, segment.label),
    ` · ${sum.calls} calls · ${num(sum.tokens)} tokens · ${seconds(sum.time)}`,
    sum.repairs ? el("span", {class: "badge warn"}, `${sum.repairs} repair${sum.repairs === 1 ? "" : "s"}`) : null,
    notes.length ? el("span", {class: "note"}, ` ${notes.slice(0, 3).join(" · ")}`) : null];
}

function segmentBody(events) {
  const list = el("div", {class: "events"});
  return paged(list, list, events, eventRow, 100);
}

function segmentList(events) {
  const list = el("div", {class: "segments"});
  return paged(list, list, segments(events), (segment) => lazyDetails(segmentSummary(segment),
    () => segmentBody(segment.events), {class: "segment"}), 100);
}

// Benchmark runs: one entry per item, where the item started, each opening to its own iterations,
// phases or steps. Items scored in parallel interleave in the trace; their tags pull them apart.
function itemSegments(run, events) {
  const firstOf = new Map();  // index of an item's first event -> item id
  const owned = new Set();
  for (const [itemId, indexes] of run.itemIndexes) {
    if (indexes.length) firstOf.set(indexes[0], itemId);
    for (const index of indexes) owned.add(index);
  }
  const out = [];
  let loose = [];
  events.forEach((event, index) => {
    if (firstOf.has(index)) {
      if (loose.length) out.push({label: out.length ? "between items" : "start", events: loose});
      loose = [];
      const itemId = firstOf.get(index);
      out.push({label: `item ${itemId}`, events: itemEvents(run, itemId), item: true});
    } else if (!owned.has(index)) {
      loose.push(event);
    }
  });
  if (loose.length) out.push({label: "end", events: loose});
  return out;
}

function timelineView(run, events) {
  const root = el("div", {class: "timeline"});
  const sum = totals(events);
  root.appendChild(el("p", {class: "hint"}, `${events.length.toLocaleString("en")} events, ` +
    `${sum.calls.toLocaleString("en")} model calls. Click a row to open it.`));
  if (run.itemIndexes.size && events === run.events) {
    const list = el("div", {class: "segments"});
    root.appendChild(paged(list, list, itemSegments(run, events), (segment) => lazyDetails(segmentSummary(segment),
      () => (segment.item ? segmentList(segment.events) : segmentBody(segment.events)), {class: "segment"}), 100));
  } else {
    root.appendChild(segmentList(events));
  }
  return root;
}
