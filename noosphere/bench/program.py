"""The program an assistant's code blocks amount to, for hidden tests to run against.

An assistant in a conversation writes code in pieces: a first version, usage examples, a fixed
version, a line that reads input. Joining the blocks whole failed correct solutions (an example that
called a function defined only in a later block raised before the tests ran), so the program keeps
what defines things and leaves out what runs:

- imports first (a `from __future__` import before the rest), each once, in the order first seen;
- functions, classes and constants at the place each first appeared, in their last version, so a
  later fix replaces the earlier code without moving it past what depends on it;
- left out: top-level code that runs (prints, loops, the assistant's own asserts) and assignments that
  call the blocks' own functions or read input, and any block that is not Python.
"""

from __future__ import annotations

import ast
import re

from noosphere.syntax import parse

_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_RUNS_THINGS = {"input", "print", "open", "exec", "eval", "breakpoint"}


def code_blocks(texts: list[str]) -> list[ast.Module]:
    """The fenced blocks of `texts` that parse as Python, in order."""
    modules = []
    for text in texts:
        for block in _CODE.findall(text):
            try:
                modules.append(parse(block))
            except SyntaxError:
                continue
    return modules


def _is_import(node: ast.stmt) -> bool:
    """An import, or a `try` that only imports and names a fallback (an optional dependency)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    if isinstance(node, ast.Try):
        inner = [*node.body, *node.orelse, *(s for handler in node.handlers for s in handler.body)]
        return all(isinstance(s, ast.Import | ast.ImportFrom | ast.Pass | ast.Assign) for s in inner) and not any(
            isinstance(c, ast.Call) for s in inner for c in ast.walk(s))
    return False


def _constant_names(node: ast.stmt, defined: set[str]) -> str | None:
    """The names an assignment defines, if it is a module constant rather than code that runs: plain
    names assigned a value that calls none of the blocks' own functions and reads no input."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    if not targets or getattr(node, "value", None) is None:
        return None
    names = []
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(e, ast.Name) for e in elements):
            return None
        names += [e.id for e in elements if isinstance(e, ast.Name)]
    calls = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    return None if calls & (defined | _RUNS_THINGS) else "=" + ",".join(names)


def program_from(texts: list[str]) -> str:
    """The module that `texts` (an assistant's replies) define, as source."""
    modules = code_blocks(texts)
    defined = {n.name for m in modules for n in m.body if isinstance(n, _DEFINITIONS)}
    imports: dict[str, ast.stmt] = {}
    latest: dict[str, ast.stmt] = {}  # insertion order is the first place a name appeared
    for module in modules:
        for node in module.body:
            if _is_import(node):
                imports.setdefault(ast.unparse(node), node)
                continue
            name = node.name if isinstance(node, _DEFINITIONS) else _constant_names(node, defined)
            if name is not None:
                latest[name] = node
    future = [text for text in imports if text.startswith("from __future__")]
    ordered = future + [text for text in imports if text not in future] + [ast.unparse(n) for n in latest.values()]
    return "\n\n".join(ordered)
