"""Our own implementation of BFCL's AST match rules for single-turn categories.

A call matches a ground-truth entry when the function name is the same, every parameter the call
gives is declared by the function, every required parameter is given, and every value is among
the accepted ones. Values are compared after BFCL's normalisation: an int is a valid float, a list
a valid tuple, strings are compared lower-cased without spaces and common punctuation, lists
element by element and dicts key by key. A parameter the call leaves out is fine only if the
accepted values include "" (optional). Parallel categories match calls to entries in any order;
irrelevance is right only when no call is made.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from noosphere.bench.bfcl_data import BfclItem
from noosphere.llm import ToolCall

_STRIP = re.compile(r"[ ,./\-_*^]")


def _norm_str(value: str) -> str:
    return _STRIP.sub("", value.lower()).replace("'", '"')


def _same(value: Any, accepted: Any) -> bool:
    if isinstance(accepted, bool) or isinstance(value, bool):
        return isinstance(value, bool) and value == accepted
    if isinstance(accepted, int | float) and isinstance(value, int | float):
        return float(value) == float(accepted)
    if isinstance(accepted, str) and isinstance(value, str):
        return _norm_str(value) == _norm_str(accepted)
    if isinstance(accepted, list | tuple) and isinstance(value, list | tuple):
        return len(value) == len(accepted) and all(_same(v, a) for v, a in zip(value, accepted, strict=True))
    if isinstance(accepted, dict) and isinstance(value, dict):
        return _dict_matches(value, accepted)
    return False


def _dict_matches(value: dict[str, Any], accepted: dict[str, Any]) -> bool:
    """Nested dict in a ground truth: each key maps to a list of accepted values, "" meaning optional."""
    for key, options in accepted.items():
        choices = options if isinstance(options, list) else [options]
        if key not in value:
            if "" not in choices:
                return False
            continue
        if not any(_same(value[key], option) for option in choices if option != ""):
            return False
    return all(key in accepted for key in value)


def _type_ok(value: Any, declared: str | None) -> bool:
    checks = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
              "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "array": lambda v: isinstance(v, list | tuple), "tuple": lambda v: isinstance(v, list | tuple),
              "dict": lambda v: isinstance(v, dict)}
    return checks.get(declared or "", lambda v: True)(value)


def call_matches(call: ToolCall, expected: dict[str, dict[str, list[Any]]], functions: Sequence[dict[str, Any]]
                 ) -> str | None:
    """None when `call` matches the single-entry ground truth `expected`; otherwise why not."""
    [(name, accepted)] = expected.items()
    if call.name != name:
        return f"called {call.name}, expected {name}"
    function = next((f for f in functions if f["name"] == name), None)
    properties = (function or {}).get("parameters", {}).get("properties", {})
    required = (function or {}).get("parameters", {}).get("required", [])
    for parameter in call.arguments:
        if parameter not in properties:
            return f"unexpected parameter {parameter!r}"
    for parameter in required:
        if parameter not in call.arguments:
            return f"missing required parameter {parameter!r}"
    for parameter, options in accepted.items():
        if parameter not in call.arguments:
            if "" not in options:
                return f"missing parameter {parameter!r}"
            continue
        value = call.arguments[parameter]
        if not _type_ok(value, properties.get(parameter, {}).get("type")):
            return f"{parameter!r} has the wrong type ({type(value).__name__})"
        if not any(_same(value, option) for option in options if option != ""):
            return f"{parameter!r}={value!r} is not among {options}"
    return None


def score(item: BfclItem, calls: Sequence[ToolCall]) -> tuple[bool, str]:
    """(correct, reason) for the calls a system made on `item`."""
    if item.category == "irrelevance":
        return (not calls, "no call" if not calls else f"called {calls[0].name} on an irrelevant request")
    if len(calls) != len(item.ground_truth):
        return False, f"made {len(calls)} calls, expected {len(item.ground_truth)}"
    unused = list(calls)
    for expected in item.ground_truth:
        reasons = []
        for call in unused:
            reason = call_matches(call, expected, item.functions)
            if reason is None:
                unused.remove(call)
                break
            reasons.append(reason)
        else:
            return False, reasons[0] if reasons else "no call left to match"
    return True, "match"
