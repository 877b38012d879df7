"""Chromium's accessibility tree as text, one node a line, elements by their bid (BrowserGym's layout):

    RootWebArea 'Click Button Task', focused
      [14] button 'Submit'
      [15] textbox '', value='kasie'
      StaticText 'Lorem ipsum'

Ignored nodes and nameless containers (generic, none, presentation) are left out and their children moved up;
a text node that repeats its parent's name is left out too.
"""

from __future__ import annotations

from typing import Any

SKIPPED_ROLES = frozenset({"generic", "none", "presentation", "LineBreak"})
HIDDEN_ROLES = frozenset({"InlineTextBox", "ListMarker"})
"""Left out with their subtree: the text of an InlineTextBox is its parent's."""
SHOWN_PROPERTIES = ("focused", "checked", "selected", "expanded", "pressed", "disabled", "required", "readonly",
                    "multiselectable")


def axtree_text(tree: dict[str, Any], by_backend: dict[int, str]) -> str:
    nodes = {node["nodeId"]: node for node in tree["nodes"]}
    roots = [node for node in tree["nodes"] if not node.get("parentId") or node["parentId"] not in nodes]
    lines: list[str] = []
    for root in roots:
        _walk(root, nodes, by_backend, 0, "", lines)
    return "\n".join(lines)


def _value(field: dict[str, Any] | None) -> Any:
    return (field or {}).get("value")


def _walk(node: dict[str, Any], nodes: dict[str, dict[str, Any]], by_backend: dict[int, str], depth: int,
          parent_name: str, lines: list[str]) -> None:
    role = str(_value(node.get("role")) or "")
    name = " ".join(str(_value(node.get("name")) or "").split())
    if role in HIDDEN_ROLES:
        return
    shown = not node.get("ignored") and not (role in SKIPPED_ROLES and not name)
    if role == "StaticText" and (not name or name == parent_name):
        shown = False
    if shown:
        bid = by_backend.get(node.get("backendDOMNodeId", -1))
        line = f"{'  ' * depth}{f'[{bid}] ' if bid and role != 'StaticText' else ''}{role} {_quoted(name)}"
        extras = _properties(node)
        lines.append(line + (", " + ", ".join(extras) if extras else ""))
    for child in node.get("childIds", []):
        if child in nodes:
            _walk(nodes[child], nodes, by_backend, depth + 1 if shown else depth, name if shown else parent_name,
                  lines)


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
