// DOM helpers. Every piece of run data reaches the page as a text node or an attribute value set
// through the DOM API: nothing from a trace is ever parsed as HTML, so hostile model output stays text.

const SVG_NS = "http://www.w3.org/2000/svg";

function appendAll(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function setProps(node, props) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.setAttribute("class", value);
    else if (key === "text") node.textContent = String(value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  return node;
}

// el("td", {class: "num"}, "12") -> <td class="num">12</td>; children are nodes or plain text.
function el(tag, props, ...children) {
  return appendAll(setProps(document.createElement(tag), props), children);
}

function svg(tag, props, ...children) {
  return appendAll(setProps(document.createElementNS(SVG_NS, tag), props), children);
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// Any value as readable text: strings as they are, everything else as indented JSON.
function asText(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function short(value, width = 90) {
  const flat = asText(value).replace(/\s+/g, " ").trim();
  return flat.length <= width ? flat : flat.slice(0, width - 1) + "…";
}

function num(value, digits = 2) {
  if (value === null || value === undefined || value === "") return "–";
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return value.toLocaleString("en");
  if (Math.abs(value) < 0.1) return String(Number(value.toPrecision(3)));
  // thousands grouped as for integers, so 3,076.5 and 3,076 read alike in one column
  return value.toLocaleString("en", {minimumFractionDigits: digits, maximumFractionDigits: digits});
}

// Scores and weights: always two decimals, so a column of them lines up.
function fixed(value) {
  return typeof value === "number" ? value.toFixed(2) : "–";
}

function seconds(value) {
  if (value === null || value === undefined) return "–";
  return value < 1 ? `${(value * 1000).toFixed(0)} ms` : value < 120 ? `${value.toFixed(2)} s` :
    `${Math.floor(value / 60)} min ${Math.round(value % 60)} s`;
}

function usd(value) {
  return value === null || value === undefined ? "–" : `$${value < 0.01 ? value.toFixed(6) : value.toFixed(4)}`;
}

function mark(ok) {
  return el("span", {class: ok ? "ok" : "bad"}, ok ? "✓" : "✗");
}

function block(text, cls = "text") {
  return el("pre", {class: cls}, asText(text));
}

// A table from header labels and rows of cells (nodes or text).
function table(headers, rows) {
  const body = el("tbody", null, rows.map((cells) => el("tr", null, cells.map((cell) => el("td", null, cell)))));
  return el("table", null, el("thead", null, el("tr", null, headers.map((h) => el("th", null, h)))), body);
}

function keyValues(object, skip = []) {
  const rows = Object.entries(object || {}).filter(([key]) => !skip.includes(key))
    .map(([key, value]) => [key, value === null || value === undefined ? "–" :
      typeof value === "object" ? block(value, "json") : asText(value)]);
  return table(["field", "value"], rows);
}

// Renders `items` a page at a time into `target` (inside `view`): big traces never build every row at once.
function paged(view, target, items, render, step = 100) {
  let shown = 0;
  const more = el("button", {class: "more"});
  const showMore = () => {
    const next = items.slice(shown, shown + step);
    next.forEach((item, offset) => target.appendChild(render(item, shown + offset)));
    shown += next.length;
    more.textContent = `show more (${(items.length - shown).toLocaleString("en")} left)`;
    if (shown >= items.length) more.remove();
  };
  more.addEventListener("click", showMore);
  showMore();
  return el("div", {class: "paged"}, view, shown < items.length ? more : null);
}

function pagedTable(headers, items, toCells, onRow, step = 100) {
  const view = table(headers, []);
  return paged(view, view.tBodies[0], items, (item, index) => {
    const tr = el("tr", null, toCells(item, index).map((cell) => el("td", null, cell)));
    if (onRow) onRow(tr, item, index);
    return tr;
  }, step);
}

// A <details> whose body is built the first time it is opened.
function lazyDetails(summary, build, props = {}) {
  const body = el("div", {class: "body"});
  const details = el("details", props, el("summary", null, summary), body);
  let built = false;
  const fill = () => {
    if (details.open && !built) {
      built = true;
      appendAll(body, [build()]);
    }
  };
  details.addEventListener("toggle", fill);
  if (props.open) queueMicrotask(fill);
  return details;
}

function section(title, ...children) {
  return el("section", {class: "card"}, el("h3", null, title), children);
}

// Horizontal bars for a {name: value} mapping (weights, scores); widths are set through CSSOM, not markup.
function bars(values, highlight) {
  const entries = Object.entries(values || {});
  const top = Math.max(...entries.map(([, v]) => Math.abs(v)), 1e-9);
  return el("div", {class: "bars"}, entries.map(([name, value]) => {
    const fill = el("div", {class: name === highlight ? "fill win" : "fill"});
    fill.style.width = `${Math.max(2, (100 * Math.abs(value)) / top)}%`;
    return el("div", {class: "bar"}, el("span", {class: "label"}, name), el("div", {class: "track"}, fill),
      el("span", {class: "value"}, fixed(value)));
  }));
}

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563",
  "#65a30d", "#9333ea"];
