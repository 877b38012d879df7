"""What a step visibly did to the page, measured from the observations before and after it, in one short line.

An agent's history shows each step's action; without its effect a model cannot tell that a field already holds
its text or that a second click unticked a box (the 1.5B model filled the same field on all ten steps of
enter-text). `page_effect` compares two `PageState`s element by element (bids are kept across steps) and says,
in this order: where the page went, fields whose value changed, lists whose choice changed, boxes ticked or
unticked, buttons, links or tabs whose text changed, text that appeared or went, elements that appeared or went,
and what took the focus. At most `MAX_PARTS` of these are named (the rest counted), the line is cut at
`MAX_CHARS`, and the same two states always give the same line. A step that changed none of them says `NO_CHANGE`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from noosphere.envs.web_page import Element, PageState

NO_CHANGE = "no visible change on the page"
MAX_PARTS = 3
MAX_CHARS = 160
MAX_QUOTED = 40
"""A quoted value or text longer than this is cut."""

_QUOTED = r"'((?:[^'\\]|\\.)*)'"
_STATIC_TEXT = re.compile(rf"^\s*StaticText {_QUOTED}")
_AX_VALUE = re.compile(rf"^\s*\[([^\]]+)\] \S+ {_QUOTED}(?:, value={_QUOTED})?")
_UNNAMED_ROLES = frozenset({"", "generic", "none", "presentation", "StaticText", "InlineTextBox"})
_NAMED_BY_TEXT = frozenset({"button", "link", "tab", "heading", "option", "menuitem", "label", "treeitem"})
"""Roles whose accessible name is their own text: a new name is news (a container's is only its content's)."""
_FIELD_TYPES = frozenset({"", "text", "password", "email", "search", "tel", "url", "number", "date", "time",
                          "datetime-local", "month", "week", "color", "range"})


@dataclass(frozen=True)
class PageEffect:
    """One step's effect on the page: the line an agent is shown, and whether anything changed."""

    text: str
    changed: bool


def page_effect(before: PageState, after: PageState) -> PageEffect:
    """What changed from `before` to `after`, as one short deterministic line."""
    parts: list[str] = []
    if after.url != before.url:
        parts.append(f"the page went to {_quoted(_short_url(before.url, after.url), tail=True)}")
    named: set[str] = set()
    parts += _element_changes(before, after, named)
    parts += _text_changes(before, after)
    parts += _shown_changes(before, after)
    focused = after.element(after.focused) if after.focused != before.focused else None
    if focused is not None and focused.tag not in ("html", "body") and focused.bid not in named:
        parts.append(f"{_kind(focused)} {focused.bid} is now focused")
    if not parts:
        return PageEffect(NO_CHANGE, False)
    line = "; ".join(parts[:MAX_PARTS])
    if len(parts) > MAX_PARTS:
        line += f"; and {len(parts) - MAX_PARTS} more change" + ("s" if len(parts) - MAX_PARTS > 1 else "")
    return PageEffect(line if len(line) <= MAX_CHARS else line[:MAX_CHARS - 1] + "…", True)


def _element_changes(before: PageState, after: PageState, named: set[str]) -> list[str]:
    """Elements on both pages (by bid) whose value, choice, tick or name changed; their bids go into `named`."""
    old = {e.bid: e for e in before.elements}
    kept = [(old[e.bid], e) for e in after.elements if e.bid in old]
    old_values, new_values = _ax_values(before.axtree), _ax_values(after.axtree)
    values: list[tuple[str, str]] = []
    chosen: list[tuple[str, str]] = []
    ticked: list[tuple[str, str]] = []
    renamed: list[tuple[str, str]] = []
    for was, now in kept:
        bid, kind = now.bid, _kind(now)
        if _is_field(now):
            if was.value != now.value:
                values.append((bid, f"{kind} {bid} now holds {_quoted(now.value)}" if now.value else
                               f"{kind} {bid} is now empty"))
        elif bid in old_values and bid in new_values and old_values[bid] != new_values[bid]:  # a list's option
            chosen.append((bid, f"{kind} {bid} now shows {_quoted(new_values[bid])}"))
        if now.input_type in ("checkbox", "radio") and was.checked != now.checked:
            state = ("checked" if now.checked else "unchecked") if now.input_type == "checkbox" else \
                ("selected" if now.checked else "not selected")
            ticked.append((bid, f"{kind} {bid} is now {state}"))
        elif now.visible and was.visible and now.name != was.name and now.role in _NAMED_BY_TEXT and \
                bid not in dict(values + chosen):
            renamed.append((bid, f"{kind} {bid} now reads {_quoted(now.name)}"))
    found = values + chosen + ticked + renamed
    named.update(bid for bid, _ in found)
    return [part for _, part in found]


def _text_changes(before: PageState, after: PageState) -> list[str]:
    """Static text that appeared or went (a field's own text is its value, said already)."""
    old_text, new_text = _texts(before.axtree), _texts(after.axtree)
    shown = [text for text in new_text if text not in old_text and text not in _field_values(after)]
    gone = [text for text in old_text if text not in new_text and text not in _field_values(before)]
    found = []
    if shown:
        found.append(f"the page now shows {_quoted(shown[0])}" + _more(shown))
    if gone:
        found.append(f"the text {_quoted(gone[0])} is gone" + _more(gone))
    return found


def _shown_changes(before: PageState, after: PageState) -> list[str]:
    """Elements that became visible (or are new) and that stopped being visible (or are gone)."""
    was_visible = {e.bid for e in before.elements if e.visible}
    now_visible = {e.bid for e in after.elements if e.visible}
    appeared = [e for e in after.elements if e.visible and e.bid not in was_visible]
    went = [e for e in before.elements if e.visible and e.bid not in now_visible]
    return ([_counted(appeared, "appeared")] if appeared else []) + ([_counted(went, "went away")] if went else [])


def _more(items: list[str]) -> str:
    return f" (and {len(items) - 1} more)" if len(items) > 1 else ""


def _is_field(element: Element) -> bool:
    return element.tag == "textarea" or (element.tag == "input" and element.input_type in _FIELD_TYPES)


def _kind(element: Element) -> str:
    if element.tag == "input":
        return {"checkbox": "box", "radio": "radio button", "button": "button", "submit": "button"}.get(
            element.input_type, "field")
    kind = {"textarea": "field", "select": "list", "button": "button", "a": "link"}.get(element.tag)
    return kind or (element.role if element.role not in _UNNAMED_ROLES else "element")


def _counted(elements: list[Element], what: str) -> str:
    if len(elements) == 1:
        return f"{_kind(elements[0])} {elements[0].bid} {what}"
    return f"{len(elements)} elements {what}"


def _texts(axtree: str) -> list[str]:
    """The page's static texts, in the tree's order, each once."""
    found = (_STATIC_TEXT.match(line) for line in axtree.splitlines())
    return list(dict.fromkeys(" ".join(_unescaped(m.group(1)).split()) for m in found if m and m.group(1).strip()))


def _ax_values(axtree: str) -> dict[str, str]:
    """bid -> the value the accessibility tree gives its element ('' for none)."""
    found = (_AX_VALUE.match(line) for line in axtree.splitlines())
    return {m.group(1): _unescaped(m.group(3) or "") for m in found if m}


def _field_values(state: PageState) -> set[str]:
    return {" ".join(e.value.split()) for e in state.elements if _is_field(e) and e.value}


def _unescaped(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _short_url(before: str, after: str) -> str:
    """The new address, or only its fragment when nothing else changed."""
    base, _, fragment = after.partition("#")
    return f"#{fragment}" if fragment and base == before.partition("#")[0] else after


def _quoted(text: str, *, tail: bool = False) -> str:
    """`text` in double quotes, cut to `MAX_QUOTED` characters (keeping its end when `tail`: an address's)."""
    text = " ".join(text.split())
    if len(text) > MAX_QUOTED:
        text = "…" + text[1 - MAX_QUOTED:] if tail else text[:MAX_QUOTED - 1] + "…"
    return f'"{text}"'
