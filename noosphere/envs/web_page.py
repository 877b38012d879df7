"""What an agent sees of a page: its elements by bid, the pruned HTML, the accessibility tree, a screenshot.

BrowserGym's conventions: every element of the page gets a `bid` attribute (kept across steps, new elements
get new ones), and actions name elements by it. The accessibility tree is Chromium's own (the DevTools
protocol's `Accessibility.getFullAXTree`), its nodes tied to bids through the DOM snapshot, which also gives
each element's box on the screen and whether the browser finds it clickable. The HTML view is the live DOM
with scripts, styles, hidden elements and most attributes left out, form values written in.

Only fixed scripts of this module are evaluated in the page; what they are given goes in as JSON arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from noosphere.envs.web_axtree import axtree_text

BID = "bid"

MARK_ELEMENTS = """() => {
  const skip = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "META", "LINK", "HEAD", "TITLE"]);
  let next = window.__noosphereNextBid || 1;
  for (const element of document.querySelectorAll("body, body *")) {
    if (skip.has(element.tagName) || element.hasAttribute("bid")) continue;
    element.setAttribute("bid", String(next++));
  }
  window.__noosphereNextBid = next;
  return next - 1;
}"""
"""Give every element without a bid the next number; the counter lives on the page, so bids stay stable."""

PRUNED_HTML = """(keep) => {
  const skip = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "META", "LINK"]);
  const kept = new Set(keep);
  const out = [];
  const text = (value) => value.replace(/\\s+/g, " ").trim();
  const quote = (value) => String(value).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  const visible = (element) => element.tagName === "OPTION" || element.tagName === "OPTGROUP" ||
    !element.checkVisibility || element.checkVisibility({checkVisibilityCSS: true});
  const walk = (node, depth) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const words = text(node.textContent);
      if (words) out.push("  ".repeat(depth) + quote(words).replace(/>/g, "&gt;"));
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE || skip.has(node.tagName) || !visible(node)) return;
    const tag = node.tagName.toLowerCase();
    const attributes = [];
    for (const attribute of node.attributes) {
      if (kept.has(attribute.name) || attribute.name.startsWith("aria-")) {
        attributes.push(`${attribute.name}="${quote(attribute.value)}"`);
      }
    }
    if (tag === "input" || tag === "textarea" || tag === "select") {
      if (node.type === "checkbox" || node.type === "radio") {
        if (node.checked) attributes.push("checked");
      } else if (node.value) {
        attributes.push(`value="${quote(node.value)}"`);
      }
    }
    if (tag === "option" && node.selected) attributes.push("selected");
    const open = `<${[tag, ...attributes].join(" ")}>`;
    const children = [...node.childNodes];
    const onlyText = children.every((child) => child.nodeType === Node.TEXT_NODE);
    if (onlyText) {
      const words = quote(text(node.textContent)).replace(/>/g, "&gt;");
      out.push("  ".repeat(depth) + open + words + (["input", "br", "img", "hr"].includes(tag) ? "" : `</${tag}>`));
      return;
    }
    out.push("  ".repeat(depth) + open);
    for (const child of children) walk(child, depth + 1);
    out.push("  ".repeat(depth) + `</${tag}>`);
  };
  walk(document.body, 0);
  return out.join("\\n");
}"""

MAX_TEXT = 80
"""The most of an element's own text kept on it (`Element.text`)."""
KEPT_ATTRIBUTES = ("bid", "id", "type", "name", "placeholder", "href", "role", "title", "alt", "for", "disabled",
                   "readonly")


@dataclass(frozen=True)
class Box:
    """An element's box in CSS pixels of the viewport (the screenshot's pixels)."""

    x: float
    y: float
    width: float
    height: float

    def to_json(self) -> list[float]:
        return [round(self.x, 1), round(self.y, 1), round(self.width, 1), round(self.height, 1)]


@dataclass(frozen=True)
class Element:
    """One element with a bid, as the DOM snapshot and the accessibility tree describe it."""

    bid: str
    tag: str
    role: str
    name: str
    box: Box | None
    visible: bool
    clickable: bool
    input_type: str = ""
    value: str = ""
    """A field's text, or a <select>'s chosen option."""
    checked: bool = False
    options: tuple[str, ...] = ()
    """A <select>'s options, by their text."""
    parent: str = ""
    """The bid of the nearest ancestor with one."""
    pointer: bool = False
    """The mouse pointer over it is a hand (cursor: pointer): a page's own sign that it can be clicked."""
    text: str = ""
    """Its own text (its text nodes, not its children's elements'), at most `MAX_TEXT` characters."""

    def label(self) -> str:
        """What the element is, in a few words, e.g. `link 'Tab #2'` or `span 'cursus'`."""
        kind = self.role if self.role not in ("", "generic", "none") else self.tag
        shown = self.name or self.text or self.value
        return f"{kind} '{shown}'" if shown else kind


@dataclass(frozen=True)
class PageState:
    """One observation of a page."""

    url: str
    title: str
    html: str
    axtree: str
    elements: tuple[Element, ...]
    screenshot: bytes
    focused: str = ""
    """The bid of the focused element, if any."""

    def element(self, bid: str) -> Element | None:
        return next((e for e in self.elements if e.bid == bid), None)

    @property
    def bids(self) -> tuple[str, ...]:
        return tuple(e.bid for e in self.elements)


async def observe(page: Any, *, screenshot: bool = True) -> PageState:
    """Mark the page's elements and read every view of it."""
    await page.evaluate(MARK_ELEMENTS)
    cdp = await page.context.new_cdp_session(page)
    try:
        snapshot = await cdp.send("DOMSnapshot.captureSnapshot",
                                  {"computedStyles": ["visibility", "cursor"], "includeDOMRects": True})
        tree = await cdp.send("Accessibility.getFullAXTree")
    finally:
        await cdp.detach()
    elements, by_backend = _elements(snapshot)
    ax_roles = _ax_roles(tree, by_backend)
    elements = tuple(_with_role(e, ax_roles.get(e.bid)) for e in elements)
    clickable = {e.bid: e.text for e in elements
                 if e.visible and (e.clickable or e.pointer) and e.tag not in ("body", "html")}
    html = await page.evaluate(PRUNED_HTML, list(KEPT_ATTRIBUTES))
    focused = await page.evaluate("() => (document.activeElement && document.activeElement.getAttribute('bid')) "
                                  "|| ''")
    image = await page.screenshot(type="png") if screenshot else b""
    return PageState(page.url, await page.title(), html, axtree_text(tree, by_backend, clickable), elements, image,
                     focused)


def _elements(snapshot: dict[str, Any]) -> tuple[list[Element], dict[int, str]]:
    """Elements with a bid from the DOM snapshot, in document order, and the backend node id -> bid map."""
    strings: list[str] = snapshot["strings"]
    document = snapshot["documents"][0]
    nodes, layout = document["nodes"], document["layout"]
    count = len(nodes["backendNodeId"])

    def text(index: int) -> str:
        return strings[index] if index >= 0 else ""

    attributes = [dict(zip(map(text, row[::2]), map(text, row[1::2]), strict=True)) for row in nodes["attributes"]]
    clickable = set(nodes.get("isClickable", {}).get("index", []))
    checked = set(nodes.get("inputChecked", {}).get("index", []))
    values = dict(zip(nodes.get("inputValue", {}).get("index", []), nodes.get("inputValue", {}).get("value", []),
                      strict=True))
    boxes: dict[int, tuple[Box, bool, bool]] = {}
    for position, node in enumerate(layout["nodeIndex"]):
        x, y, width, height = layout["bounds"][position]
        styles = [text(i) for i in layout["styles"][position]]
        visibility = styles[0] if styles else "visible"
        cursor = styles[1] if len(styles) > 1 else ""
        boxes.setdefault(node, (Box(x, y, width, height), visibility == "visible", cursor == "pointer"))
    parents: list[int] = nodes["parentIndex"]
    bid_of = {i: attributes[i].get("bid", "") for i in range(count)}
    chosen: dict[int, str] = {}  # a <select>'s chosen option, by its text
    own_text: dict[int, list[str]] = {}
    for i in range(count):
        if nodes["nodeType"][i] == 3 and parents[i] >= 0:
            own_text.setdefault(parents[i], []).append(text(nodes["nodeValue"][i]))

    def text_of(index: int) -> str:
        return " ".join(" ".join(own_text.get(index, ())).split())

    option_texts: dict[int, list[str]] = {}
    selected = set(nodes.get("optionSelected", {}).get("index", []))
    for i in range(count):
        if text(nodes["nodeName"][i]) == "OPTION" and parents[i] >= 0:
            option_texts.setdefault(parents[i], []).append(text_of(i))
            if i in selected:
                chosen[parents[i]] = text_of(i)
    elements: list[Element] = []
    by_backend: dict[int, str] = {}
    for i in range(count):
        bid = bid_of[i]
        if not bid:
            continue
        by_backend[nodes["backendNodeId"][i]] = bid
        box, shown, pointer = boxes.get(i, (None, False, False))
        has_area = box is not None and box.width > 0 and box.height > 0
        parent = parents[i]
        while parent >= 0 and not bid_of[parent]:
            parent = parents[parent]
        parent_pointer = parent >= 0 and boxes.get(parent, (None, False, False))[2]
        elements.append(Element(
            bid=bid, tag=text(nodes["nodeName"][i]).lower(), role="", name="", box=box if has_area else None,
            visible=has_area and shown, clickable=i in clickable, input_type=attributes[i].get("type", "").lower(),
            value=chosen.get(i, text(values[i]) if i in values else ""), checked=i in checked,
            options=tuple(option_texts.get(i, ())), parent=bid_of[parent] if parent >= 0 else "",
            pointer=pointer and not parent_pointer, text=text_of(i)[:MAX_TEXT]))
    return elements, by_backend


def _ax_roles(tree: dict[str, Any], by_backend: dict[int, str]) -> dict[str, tuple[str, str]]:
    """bid -> (role, accessible name) from the accessibility tree."""
    roles: dict[str, tuple[str, str]] = {}
    for node in tree["nodes"]:
        bid = by_backend.get(node.get("backendDOMNodeId", -1))
        if bid and not node.get("ignored"):
            roles[bid] = (str(node.get("role", {}).get("value", "")), str(node.get("name", {}).get("value", "")))
    return roles


def _with_role(element: Element, role: tuple[str, str] | None) -> Element:
    if role is None:
        return element
    return replace(element, role=role[0], name=" ".join(role[1].split()))
