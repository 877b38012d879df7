// Society runs: members and organisation, the messages of every phase and round, summaries, ballots
// and tallies, and for economies the balances over time and every payment and contract.

// A nested society's events carry its path (`society`, e.g. "artist-3"), so societies that ran at the
// same time are told apart; events without it belong to the outermost society.
function societyEpisodes(events) {
  const episodes = [];
  const current = new Map();
  for (const event of events) {
    if (!(event.kind.startsWith("soc_") || event.kind.startsWith("econ_"))) continue;
    const path = event.society || "";
    if (event.kind === "soc_started" || !current.has(path)) {
      current.set(path, {path, events: []});
      episodes.push(current.get(path));
    }
    current.get(path).events.push(event);
  }
  return episodes;
}

// Societies record who runs them (organizer, leader, editor, arbiter); for older traces, whoever did
// not speak in the first phase (where members solve the task) is taken to be staff.
function staffOf(events, members, started) {
  if (Array.isArray(started.staff)) return new Set(started.staff);
  const first = events.find((e) => e.kind === "soc_message");
  if (!first) return new Set();
  const solvers = new Set(events.filter((e) => e.kind === "soc_message" && e.phase === first.phase)
    .map((e) => e.member));
  return new Set(Object.keys(members).filter((name) => !solvers.has(name)));
}

function message(event, staff) {
  if (event.kind === "soc_forfeit") {
    return el("div", {class: "msg forfeit"}, el("div", {class: "who"}, `${event.member} forfeited`),
      block(event.error));
  }
  if (event.kind === "soc_image") return el("div", {class: "msg"}, keyValues(fields(event)));
  return el("div", {class: staff.has(event.member) ? "msg staff" : "msg"},
    el("div", {class: "who"}, el("strong", null, event.member), ` → ${event.to || "all"}`,
      staff.has(event.member) ? el("span", {class: "badge"}, "staff") : null,
      event.answer ? el("span", {class: "badge answer"}, `answer: ${short(event.answer, 60)}`) : null),
    block(event.text));
}

// Opinions and the execution carry the steps after the last round (R + 1, R + 2): only a mindstorm
// round is labelled as one.
function phaseGroups(events, rounds) {
  const groups = [];
  let current = {label: "start", events: []};
  for (const event of events) {
    if (event.kind === "soc_phase") {
      if (current.events.length) groups.push(current);
      const inRound = event.round >= 1 && !(rounds >= 1 && event.round > rounds);
      current = {label: `${event.phase}${inRound ? ` · round ${event.round}` : ""}`, events: []};
    } else if (["soc_message", "soc_forfeit", "soc_image"].includes(event.kind)) {
      current.events.push(event);
    }
  }
  if (current.events.length) groups.push(current);
  return groups;
}

function balanceChart(snapshots) {
  const names = [];
  for (const snap of snapshots) {
    for (const name of Object.keys(snap.balances || {})) if (!names.includes(name)) names.push(name);
  }
  const values = snapshots.flatMap((s) => Object.values(s.balances || {}));
  const low = Math.min(0, ...values);
  const high = Math.max(1, ...values);
  const [width, height, left, right, top, bottom] = [640, 260, 48, 130, 12, 30];
  const x = (i) => left + (snapshots.length > 1 ? (i * (width - left - right)) / (snapshots.length - 1) : 0);
  const y = (v) => top + (height - top - bottom) * (1 - (v - low) / (high - low));
  const axis = [svg("line", {class: "axis", x1: left, y1: y(low), x2: width - right, y2: y(low)}),
    svg("line", {class: "axis", x1: left, y1: top, x2: left, y2: y(low)})];
  for (const v of [low, (low + high) / 2, high]) {
    axis.push(svg("text", {class: "tick", x: left - 6, y: y(v) + 4, "text-anchor": "end"}, num(v, 1)));
  }
  const every = Math.max(1, Math.ceil(snapshots.length / 12));
  snapshots.forEach((s, i) => {
    if (i % every === 0) axis.push(svg("text", {class: "tick", x: x(i), y: height - 10, "text-anchor": "middle"},
      `r${s.round}`));
  });
  const series = names.map((name, n) => {
    const colour = PALETTE[n % PALETTE.length];
    const runs = [];
    let run = [];
    snapshots.forEach((s, i) => {
      const value = (s.balances || {})[name];
      if (value === undefined) {
        if (run.length) runs.push(run);
        run = [];
      } else run.push([i, value]);
    });
    if (run.length) runs.push(run);
    return svg("g", {class: "series", "data-name": name},
      runs.map((points) => svg("polyline", {fill: "none", stroke: colour, "stroke-width": 2,
        points: points.map(([i, v]) => `${x(i)},${y(v)}`).join(" ")})),
      runs.flat().map(([i, v]) => svg("circle", {cx: x(i), cy: y(v), r: 3, fill: colour},
        svg("title", null, `${name}, round ${snapshots[i].round}: ${num(v)}`))),
      svg("line", {x1: width - right + 12, x2: width - right + 30, y1: top + 8 + n * 18, y2: top + 8 + n * 18,
        stroke: colour, "stroke-width": 3}),
      svg("text", {class: "legend", x: width - right + 36, y: top + 12 + n * 18}, short(name, 14)));
  });
  return svg("svg", {class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
    "aria-label": "balances over time"}, axis, series);
}

function economyView(events) {
  const of = (kind) => events.filter((e) => e.kind === kind);
  const snapshots = of("econ_balances");
  const left = [...of("econ_departure").map((e) => `${e.agent} left in round ${e.round} with ${num(e.balance)}`),
    ...of("econ_spawn").map((e) => `${e.parent} spawned ${e.child} with ${num(e.endowment)}`)];
  return [
    snapshots.length ? section("Balances over time", balanceChart(snapshots)) : null,
    section(`Payments (${of("econ_payment").length})`, pagedTable(["payer", "payee", "amount", "reason"],
      of("econ_payment"), (p) => [p.payer, p.payee, num(p.amount), p.reason])),
    of("econ_contract").length ? section("Contracts", pagedTable(["#", "client", "provider", "service", "price",
      "deadline", "status", "note"], of("econ_contract"), (c) => [String(c.contract), c.client, c.provider,
      block(c.service), num(c.price), String(c.deadline), c.status, c.note || ""])) : null,
    left.length ? section("Departures and spawns", el("ul", null, left.map((line) => el("li", null, line)))) : null];
}

function societyEpisodeView(episode) {
  const events = episode.events;
  const started = events.find((e) => e.kind === "soc_started") || {members: {}};
  const finished = events.find((e) => e.kind === "soc_finished");
  const staff = staffOf(events, started.members || {}, started);
  const summaries = events.filter((e) => e.kind === "soc_message" && staff.has(e.member) && e.phase !== "execution");
  const ballots = events.filter((e) => e.kind === "soc_ballot");
  const tallies = events.filter((e) => e.kind === "soc_tally");
  const groups = phaseGroups(events, started.rounds);
  return el("div", {class: "society"},
    section("Organisation", keyValues({organisation: started.organisation, rounds: started.rounds,
      rights: (started.rights || []).join(", ") || "–", vote: started.vote || "–", answer: finished ? finished.answer : "(not finished)",
      decided_by: finished ? finished.decided_by : "–"}),
    table(["member", "role"], Object.entries(started.members || {}).map(([name, role]) => [
      staff.has(name) ? [name, " ", el("span", {class: "badge"}, "staff")] : name, block(role)]))),
    summaries.length ? section("Staff: questions, summaries, verdicts", summaries.map((e) => message(e, staff))) : null,
    section("Messages by phase", groups.map((group, i) => lazyDetails(
      `${group.label} (${group.events.length} messages)`, () => {
        const list = el("div", {class: "messages"});
        return paged(list, list, group.events, (e) => message(e, staff), 50);
      }, {class: "phase", open: i < 6}))),
    ballots.length || tallies.length ? section("Votes",
      ballots.length ? table(["voter", "ranking"], ballots.map((b) => [
        b.voter, (b.ranking || []).join(" > ") + (b.standing ? " (standing answer, no vote cast)" : "") +
          (b.weight != null ? `, weighing ${fixed(b.weight)}` : "")])) : null,
      tallies.map((t) => el("div", {class: "tally"}, el("p", null, `${t.rule}: winner `,
        el("strong", null, t.winner ?? "none"), t.tied && t.tied.length > 1 ? ` (tied: ${t.tied.join(", ")})` : ""),
      bars(t.scores, t.winner)))) : null,
    events.some((e) => e.kind.startsWith("econ_")) ? economyView(events) : null);
}

function societyView(events) {
  const episodes = societyEpisodes(events);
  if (episodes.length === 1) return societyEpisodeView(episodes[0]);
  const holder = el("div", null, societyEpisodeView(episodes[0]));
  const select = el("select", {class: "episode-select", onchange: () => clear(holder).appendChild(
    societyEpisodeView(episodes[Number(select.value)]))}, episodes.map((ep, i) => el("option", {value: i},
    `society run ${i + 1}${ep.path ? ` · ${ep.path}` : ""}`)));
  const snapshots = events.filter((e) => e.kind === "econ_balances");
  return el("div", null,
    snapshots.length ? section("Balances over the whole run", balanceChart(snapshots)) : null,
    el("p", null, `${episodes.length} society runs: `, select), holder);
}
