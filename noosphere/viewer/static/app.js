// The page: a header with the run's totals and one tab per view. A tab is built the first time it is
// opened, so opening the page costs one JSON.parse and the overview, whatever the size of the trace.

function totalCards(sum) {
  const card = (label, value, sub) => el("div", {class: "total"}, el("div", {class: "value"}, value),
    el("div", {class: "label"}, label), sub ? el("div", {class: "sub"}, sub) : null);
  return el("div", {class: "totals"},
    card("model calls", num(sum.calls), sum.cached ? `${num(sum.cached)} cached` : null),
    card("tokens", num(sum.tokens), `${num(sum.prompt)} in (${num(sum.reused)} reused) · ${num(sum.completion)} out`),
    card("cost", usd(sum.cost)),
    card("time", seconds(sum.time), `${seconds(sum.latency)} in model calls`),
    card("repairs", num(sum.repairs)));
}

const has = (events, prefixes) => events.some((e) => prefixes.some((p) => e.kind.startsWith(p)));

// Totals, the views that apply and the timeline of any stretch of events (a whole run or one item).
function eventsView(run, events) {
  return el("div", {class: "events-view"}, totalCards(totals(events)),
    has(events, ["ws_"]) ? section("Workspace", workspaceView(events)) : null,
    has(events, ["soc_", "econ_"]) ? section("Society", societyView(events)) : null,
    has(events, ["ma_"]) ? section("Meta-agent", metaView(events)) : null,
    has(events, ["emb_"]) ? section("Embodied", embodiedView(events)) : null,
    has(events, ["web_"]) ? section("Web episode", webView(run, events)) : null,
    section("Timeline", timelineView(run, events)));
}

function overview(run) {
  const result = run.result || {};
  const report = run.report || (result.report && typeof result.report === "object" ? result.report : null);
  const kinds = new Map();
  for (const e of run.events) kinds.set(e.kind, (kinds.get(e.kind) || 0) + 1);
  return el("div", null,
    section("Result", Object.keys(result).length ? fieldsTable(result, ["usage", "report"]) :
      el("p", null, "no result.json yet: the run is still going, or was killed")),
    report ? reportView(report) : null,
    section("Model calls by agent", table(["agent", "calls", "tokens", "latency", "repairs"],
      perAgent(run.events).map((r) => [r.agent, num(r.calls), num(r.tokens), seconds(r.latency), num(r.repairs)]))),
    section("Config", fieldsTable(run.config, ["run_id"])),
    section("Events", el("p", null, [...kinds].map(([kind, n]) => `${kind} ${n.toLocaleString("en")}`).join(" · "))));
}

function tabsFor(run, other) {
  const tabs = [["overview", "Overview", () => overview(run)],
    ["timeline", "Timeline", () => timelineView(run, run.events)]];
  if (run.sections.includes("workspace")) tabs.push(["workspace", "Workspace", () => workspaceView(run.events)]);
  if (run.sections.includes("society")) tabs.push(["society", "Society", () => societyView(run.events)]);
  if (run.sections.includes("metaagent")) tabs.push(["metaagent", "Meta-agent", () => metaView(run.events)]);
  if (run.sections.includes("embodied")) tabs.push(["embodied", "Embodied", () => embodiedView(run.events)]);
  if (run.sections.includes("web")) tabs.push(["web", "Web", () => webView(run, run.events)]);
  if (run.sections.includes("benchmark")) tabs.push(["benchmark", "Benchmark", () => benchView(run)]);
  if (other) tabs.push(["compare", "Compare", () => compareView(run, other)]);
  return tabs;
}

function header(run, other) {
  const result = run.result || {};
  const status = result.status || "running";
  return el("header", null,
    el("h1", null, run.name),
    el("p", {class: "sub"}, `${run.config.command || "run"} · `, el("span", {class: `status ${status}`}, status),
      ` · ${run.path}`, other ? ` · compared with ${other.name}` : ""),
    totalCards(totals(run.events)));
}

function boot() {
  const data = JSON.parse(document.getElementById("run-data").textContent);
  const run = indexRun(data.run);
  const other = data.compare ? indexRun(data.compare) : null;
  document.title = `${run.name} · noosphere`;
  const nav = el("nav", {class: "tabs"});
  const main = el("main");
  const panels = new Map();
  const open = (id) => {
    for (const [key, panel] of panels) panel.hidden = key !== id;
    for (const button of nav.children) button.classList.toggle("active", button.dataset.tab === id);
  };
  for (const [id, label, build] of tabsFor(run, other)) {
    nav.appendChild(el("button", {class: "tab", dataset: {tab: id}, onclick: () => {
      if (!panels.has(id)) {
        const panel = el("div", {class: "panel", id: `panel-${id}`}, build());
        panels.set(id, panel);
        main.appendChild(panel);
      }
      open(id);
    }}, label));
  }
  clear(document.getElementById("app")).append(header(run, other),
    ...(data.live ? [livePanel(data.run, data.live)] : []), nav, main);
  nav.firstChild.click();
  document.body.dataset.ready = "1";
  window.__viewerReadyMs = performance.now();
}

boot();
