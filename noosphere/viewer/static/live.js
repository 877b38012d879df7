// The live panel of a page served by `noosphere view`: whose turn it is, and a form for every question a
// person of the run is to answer. It polls the server (`/live`) and posts answers (`/answer`) with the token
// the server put in the page. A written report (`noosphere report`) has no live data and no panel.

function liveTurn(state) {
  const waiting = state.waiting.filter((q) => !q.answered);
  const phase = state.phase || "";
  if (state.status !== "running") {
    if (waiting.length) {
      return [el("strong", null, `stopped (${state.status}) while waiting for ${waiting.map((q) => q.member).join(", ")}`),
        `: answer below, and the run takes it when it goes on: `, el("code", null, state.resume)];
    }
    return [el("strong", null, `the run is over (${state.status})`)];
  }
  if (waiting.length) {
    return [el("strong", {class: "who-now"}, `waiting for ${waiting.map((q) => q.member).join(", ")}`),
      phase ? ` · ${phase}` : "", " · answer below"];
  }
  const answered = state.waiting.filter((q) => q.answered).map((q) => q.member);
  return [el("strong", null, answered.length ? `${answered.join(", ")} answered` : "the members are thinking"),
    phase ? ` · ${phase}` : ""];
}

function questionForm(question, live, onDone) {
  const error = el("p", {class: "error", hidden: true});
  const inputs = question.fields.map((field) => {
    const props = {name: field.name, placeholder: field.description || field.name,
      "aria-label": `${field.name} (${question.member})`};
    if (field.kind === "text" && field.max_length) props.maxlength = field.max_length;
    const input = field.kind === "text" ? el("textarea", {...props, rows: 3}) : el("input", {...props, type: "text"});
    return el("label", {class: "field"}, el("span", {class: "name"}, field.name),
      el("span", {class: "hint"}, hintOf(field)), input);
  });
  const button = el("button", {type: "submit", class: "answer"}, `Answer as ${question.member}`);
  const form = el("form", {class: "question", dataset: {question: question.question, member: question.member}},
    el("h4", null, `${question.member}, your turn`, question.timeout_s ?
      el("span", {class: "badge warn"}, `${question.timeout_s} s to answer`) : null),
    block(question.prompt), inputs, button, error);
  form.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    const answer = {};
    for (const field of question.fields) answer[field.name] = form.elements[field.name].value;
    button.disabled = true;
    try {
      const reply = await fetch("answer", {method: "POST", cache: "no-store",
        headers: {"Content-Type": "application/json", "X-Noosphere-Token": live.token},
        body: JSON.stringify({question: question.question, answer})});
      const said = await reply.json();
      if (!reply.ok) throw new Error(said.error || `HTTP ${reply.status}`);
      onDone(question.question);
    } catch (failed) {
      error.hidden = false;
      error.textContent = failed.message;
      button.disabled = false;
    }
  });
  return form;
}

function hintOf(field) {
  if (field.kind === "choice") return `one of ${field.options.join(", ")}`;
  if (field.kind === "ranking") return `letters from ${field.options.join(", ")}, best first`;
  if (field.kind === "yes/no") return "yes or no";
  if (field.kind === "number" || field.kind === "integer") return field.kind;
  return field.max_length ? `up to ${field.max_length} characters` : "";
}

function livePanel(run, live) {
  const turn = el("p", {class: "turn"}, "…");
  const questions = el("div", {class: "questions"});
  const fresh = el("button", {class: "more", hidden: true, onclick: () => location.reload()});
  const panel = el("section", {class: "card live", id: "live"}, el("h3", null, "Now"), turn, questions, fresh);
  const forms = new Map();
  const sent = new Set();
  const shownEvents = run.events.length;
  const draw = (state) => {
    clear(turn).append(...liveTurn(state).map((part) => part instanceof Node ? part : document.createTextNode(part)));
    const open = new Set(state.waiting.filter((q) => !q.answered && !sent.has(q.question)).map((q) => q.question));
    for (const [id, form] of forms) {
      if (!open.has(id)) {
        form.remove();
        forms.delete(id);
      }
    }
    for (const question of state.waiting) {
      if (open.has(question.question) && !forms.has(question.question)) {
        const form = questionForm(question, live, (id) => {
          sent.add(id);
          form.remove();
          forms.delete(id);
        });
        forms.set(question.question, form);
        questions.appendChild(form);
      }
    }
    const more = state.events - shownEvents;
    fresh.hidden = more <= 0;
    fresh.textContent = `${more.toLocaleString("en")} new events: reload the page to see them`;
    panel.dataset.status = state.status;
  };
  const poll = async () => {
    try {
      const reply = await fetch("live", {cache: "no-store", headers: {"X-Noosphere-Token": live.token}});
      if (reply.ok) draw(await reply.json());
    } catch (lost) {
      clear(turn).append("the viewer's server does not answer (stopped?)");
    }
    setTimeout(poll, live.poll_ms || 1000);
  };
  poll();
  return panel;
}
