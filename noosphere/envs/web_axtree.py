"""Chromium's accessibility tree as text, one node a line, elements by their bid (BrowserGym's layout):

    RootWebArea 'Click Button Task', focused
      [14] button 'Submit'
      [15] textbox '', value='kasie'
      StaticText 'Lorem ipsum'

Ignored nodes and nameless containers (generic, none, presentation) are left out and their children moved up;
a text node that repeats its parent's name is left out too. A nameless container the page makes clickable (a
`<span>` with a click handler or a hand pointer, as MiniWoB's links are) is kept, named by its own text and marked
`clickable` (BrowserGym marks such nodes the same way), since otherwise its bid would be nowhere in the tree; one
with no text of its own (a colour swatch, a grid cell, an e-mail's row) is kept too, its children's text under it:

      [14] generic 'cursus', clickable
      [10] generic '', clickable
        StaticText 'Mirella'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SKIPPED_ROLES = frozenset({"generic", "none", "presentation", "LineBreak"})
HIDDEN_ROLES = frozenset({"InlineTextBox", "ListMarker"})
"""Left out with their subtree: the text of an InlineTextBox is its parent's."""
SHOWN_PROPERTIES = ("focused", "checked", "selected", "expanded", "pressed", "disabled", "required", "readonly",
                    "multiselectable")


def axtree_text(tree: dict[str, Any], by_backend: dict[int, str], clickable: Mapping[str, str] | None = None) -> str:
    """The tree as text; `clickable` maps the bids of the page's clickable elements to their own text."""
    nodes = {node["nodeId"]: node for node in tree["nodes"]}
    roots = [node for node in tree["nodes"] if not node.get("parentId") or node["parentId"] not in nodes]
    lines: list[str] = []
    for root in roots:
        _walk(root, nodes, by_backend, clickable or {}, 0, "", lines)
    return "\n".join(lines)


def _value(field: dict[str, Any] | None) -> Any:
    return (field or {}).get("value")


def _walk(node: dict[str, Any], nodes: dict[str, dict[str, Any]], by_backend: dict[int, str],
          clickable: Mapping[str, str], depth: int, parent_name: str, lines: list[str]) -> None:
    role = str(_value(node.get("role")) or "")
    name = " ".join(str(_value(node.get("name")) or "").split())
    if role in HIDDEN_ROLES:
        return
    bid = by_backend.get(node.get("backendDOMNodeId", -1))
    marked = bool(bid) and role in SKIPPED_ROLES and not name and bid in clickable and not node.get("ignored")
    if marked:
        name = clickable[bid or ""]
    shown = not node.get("ignored") and (marked or not (role in SKIPPED_ROLES and not name))
    if role == "StaticText" and (not name or name == parent_name):
        shown = False
    if shown:
        line = f"{'  ' * depth}{f'[{bid}] ' if bid and role != 'StaticText' else ''}{role} {_quoted(name)}"
        extras = _properties(node) + (["clickable"] if marked else [])
        lines.append(line + (", " + ", ".join(extras) if extras else ""))
    for child in node.get("childIds", []):
        if child in nodes:
            _walk(nodes[child], nodes, by_backend, clickable, depth + 1 if shown else depth,
                  name if shown else parent_name, lines)


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _properties(node: dict[str, Any]) -> list[str]:
    found = []
    value = _value(node.get("value"))
    if value not in (None, ""):
        found.append(f"value={_quoted(str(value))}")
    for prop in node.get("properties", []):
        name, setting = prop.get("name"), _value(prop.get("value"))
        if name not in SHOWN_PROPERTIES or setting in (None, False, "false"):
            continue
        found.append(name if setting is True or setting == "true" else f"{name}={setting}")
    return found
