"""BrowserGym's action strings, read without evaluating them and carried out through Playwright.

An action is one call, such as `click("12")`, `fill("14", "Kasie")`, `select_option("7", "Lesotho")` or
`send_msg_to_user("done")`. The text is parsed by Python's `ast` (a parser: nothing is run) and each
argument must be a literal; the call must be one of `ACTIONS`, with its arguments. BrowserGym itself
executes the action as Python code; here nothing a model writes is ever run as code, in Python or in the
page: each action is a fixed Playwright call on the element whose `bid` it names, and text goes in as text.

Actions that would leave the task's page (`goto`, `go_back`, `new_tab`, `tab_focus`, `upload_file`...) are
refused by name. A refused or unparsable action, or one that names no element, is a `WebActionError`: the
step is lost and the episode goes on.
"""

from __future__ import annotations

import ast
import asyncio
import math
import re
from dataclasses import dataclass
from typing import Any

from noosphere.errors import RuntimeFault
from noosphere.syntax import parse

Param = tuple[str, type | tuple[type, ...], Any]
"""A parameter: name, accepted types, default (`REQUIRED` when it must be given)."""
REQUIRED = object()

ACTIONS: dict[str, tuple[Param, ...]] = {
    "click": (("bid", (str, int), REQUIRED), ("button", str, "left")),
    "dblclick": (("bid", (str, int), REQUIRED),),
    "hover": (("bid", (str, int), REQUIRED),),
    "fill": (("bid", (str, int), REQUIRED), ("value", (str, int, float), REQUIRED)),
    "clear": (("bid", (str, int), REQUIRED),),
    "check": (("bid", (str, int), REQUIRED),),
    "uncheck": (("bid", (str, int), REQUIRED),),
    "select_option": (("bid", (str, int), REQUIRED), ("options", (str, list), REQUIRED)),
    "press": (("bid", (str, int), REQUIRED), ("key_comb", str, REQUIRED)),
    "focus": (("bid", (str, int), REQUIRED),),
    "drag_and_drop": (("from_bid", (str, int), REQUIRED), ("to_bid", (str, int), REQUIRED)),
    "scroll": (("delta_x", (int, float), REQUIRED), ("delta_y", (int, float), REQUIRED)),
    "keyboard_press": (("key", str, REQUIRED),),
    "keyboard_type": (("text", str, REQUIRED),),
    "send_msg_to_user": (("text", str, REQUIRED),),
    "report_infeasible": (("reason", str, REQUIRED),),
    "noop": (("wait_ms", (int, float), 1000),),
}
"""BrowserGym's element-level actions (its `bid` and `nav`-free set), with their parameters in its order."""

LEAVING = frozenset({"goto", "go_back", "go_forward", "new_tab", "tab_close", "tab_focus", "upload_file",
                     "mouse_upload_file"})
"""BrowserGym actions that would leave or replace the task's page: refused."""

ELEMENT_PARAMS = ("bid", "from_bid", "to_bid")
BID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,20}$")
MAX_NOOP_MS = 3000
MAX_TEXT = 2000
MAX_SOURCE = 4000
MAX_TRIES = 200
BUTTONS = ("left", "middle", "right")
_CALL_START = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*\(")


class WebActionError(RuntimeFault):
    """An action that cannot be carried out: it does not parse, is not allowed, or names no element."""

    def __init__(self, action: str, reason: str) -> None:
        self.action = action
        self.reason = reason
        super().__init__(f"action {action[:120]!r}: {reason}")


@dataclass(frozen=True)
class WebAction:
    """One parsed action: its name and its arguments by parameter name (defaults filled in)."""

    name: str
    args: tuple[tuple[str, Any], ...]

    def arg(self, name: str) -> Any:
        return dict(self.args)[name]

    @property
    def bids(self) -> tuple[str, ...]:
        """The elements it names."""
        return tuple(str(value) for key, value in self.args if key in ELEMENT_PARAMS)

    def render(self) -> str:
        """The canonical action string: double quotes, trailing arguments left at their defaults left out."""
        defaults = {key: default for key, _, default in ACTIONS.get(self.name, ())}
        shown = list(self.args)
        while shown and defaults.get(shown[-1][0], REQUIRED) is not REQUIRED and shown[-1][1] == defaults[shown[-1][0]]:
            shown.pop()
        return f"{self.name}({', '.join(_literal(value) for _, value in shown)})"


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return repr(value)


def parse_action(text: str) -> WebAction:
    """The one action in `text` (surrounding prose and code fences are tolerated; the first call that parses is
    taken)."""
    source = text[:MAX_SOURCE].strip().strip("`").strip()
    if source.startswith(("python\n", "py\n")):
        source = source.split("\n", 1)[1]
    for candidate in _candidates(source):
        try:
            tree = parse(candidate, mode="eval")
        except (SyntaxError, ValueError, RecursionError):  # a reply nested past the parser's depth: not an action
            continue
        return _action(text, tree.body)
    raise WebActionError(text, "not an action call such as click(\"12\")")


def _candidates(source: str) -> list[str]:
    """The whole text, then each stretch from a `name(` to a closing parenthesis, shortest first (at most
    `MAX_TRIES` in all, so a long reply full of parentheses costs little)."""
    found = [source]
    closes = [i for i, char in enumerate(source) if char == ")"]
    for start in _CALL_START.finditer(source):
        found += [source[start.start(): i + 1] for i in closes if i > start.start()]
        if len(found) >= MAX_TRIES:
            break
    return found[:MAX_TRIES]


def _action(text: str, node: ast.expr) -> WebAction:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise WebActionError(text, "not a single call of a named action")
    name = node.func.id
    if name in LEAVING:
        raise WebActionError(text, f"{name} would leave the task's page; only actions on this page are allowed")
    if name not in ACTIONS:
        raise WebActionError(text, f"unknown action {name!r}; known: {', '.join(ACTIONS)}")
    params = ACTIONS[name]
    try:
        given = [ast.literal_eval(arg) for arg in node.args]
        named = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
    except (ValueError, SyntaxError, TypeError):
        raise WebActionError(text, "its arguments must be plain strings or numbers") from None
    if len(given) > len(params) or len(named) != len(node.keywords):
        raise WebActionError(text, f"{name} takes {_signature(name)}")
    values: dict[str, Any] = dict(zip((p[0] for p in params), given, strict=False))
    for key, value in named.items():
        if key in values or key not in {p[0] for p in params}:
            raise WebActionError(text, f"{name} takes {_signature(name)}")
        values[key] = value
    args = []
    for key, kinds, default in params:
        value = values.get(key, default)
        if value is REQUIRED:
            raise WebActionError(text, f"{name} takes {_signature(name)}")
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise WebActionError(text, f"{name}: {key} must be {_kinds(kinds)}")
        args.append((key, _normal(key, value, text)))
    return WebAction(name, tuple(args))


def _normal(key: str, value: Any, text: str) -> Any:
    if key in ELEMENT_PARAMS:
        value = str(value)
        if not BID_PATTERN.match(value):
            raise WebActionError(text, f"{value!r} is not an element id (bid)")
    if isinstance(value, float) and not math.isfinite(value):  # 1e999 is a literal Python reads as inf
        raise WebActionError(text, f"{key} must be a finite number")
    if key == "value":
        value = str(value)
    if key == "options" and isinstance(value, list) and not all(isinstance(v, str) for v in value):
        raise WebActionError(text, "select_option's options must be strings")
    if key == "button" and value not in BUTTONS:
        raise WebActionError(text, f"button must be one of {', '.join(BUTTONS)}")
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise WebActionError(text, f"{key} is longer than {MAX_TEXT} characters")
    return value


def _kinds(kinds: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "a number", float: "a number", list: "a list of strings"}
    return " or ".join(dict.fromkeys(names[k] for k in (kinds if isinstance(kinds, tuple) else (kinds,))))


def _signature(name: str) -> str:
    parts = [key if default is REQUIRED else f"{key}={default!r}" for key, _, default in ACTIONS[name]]
    return f"{name}({', '.join(parts)})"


@dataclass(frozen=True)
class Effect:
    """What carrying out an action did besides the page: a message to the user, or giving up."""

    message: str = ""
    infeasible: bool = False


_ELEMENT_METHODS = frozenset({"dblclick", "hover", "clear", "check", "uncheck", "focus"})
"""Actions that are the Playwright locator method of the same name, called with no argument."""


async def perform(page: Any, action: WebAction, known: tuple[str, ...]) -> Effect:
    """Carry `action` out on `page`; `known` are the bids of the observation the action was chosen from."""
    for bid in action.bids:
        if bid not in known:
            raise WebActionError(action.render(), f"no element with bid {bid!r} on this page")
    name = action.name
    if name == "send_msg_to_user":
        return Effect(message=action.arg("text"))
    if name == "report_infeasible":
        return Effect(message=action.arg("reason"), infeasible=True)
    if name == "noop":
        await asyncio.sleep(min(max(float(action.arg("wait_ms")), 0.0), MAX_NOOP_MS) / 1000)
        return Effect()
    if name == "scroll":
        await page.mouse.wheel(float(action.arg("delta_x")), float(action.arg("delta_y")))
        return Effect()
    if name == "keyboard_press":
        await page.keyboard.press(action.arg("key"))
        return Effect()
    if name == "keyboard_type":
        await page.keyboard.type(action.arg("text"))
        return Effect()
    target = await _element(page, action, action.bids[0])
    if name in _ELEMENT_METHODS:
        await getattr(target, name)()
    elif name == "click":
        await target.click(button=action.arg("button"))
    elif name == "fill":
        value = action.arg("value")
        await target.fill(value[:-1])
        if value:  # the last character as a key press, so that autocompletion menus open as they would for a person
            await target.press_sequentially(value[-1])
    elif name == "select_option":
        options = action.arg("options")
        await target.select_option(options if isinstance(options, list) else [options])
    elif name == "press":
        await target.press(action.arg("key_comb"))
    elif name == "drag_and_drop":
        await target.drag_to(await _element(page, action, action.bids[1]))
    return Effect()


async def _element(page: Any, action: WebAction, bid: str) -> Any:
    locator = page.locator(f'[bid="{bid}"]')  # bid matched BID_PATTERN: nothing of it can escape the selector
    count = await locator.count()
    if count != 1:
        raise WebActionError(action.render(), f"no element with bid {bid!r} on this page" if count == 0
                             else f"{count} elements carry bid {bid!r}")
    return locator
