"""Every test can fail: an AST pass over the test files that finds tests which check nothing.

A test passes this check when its body (nested functions included) asserts, expects an exception or a warning
(`pytest.raises`, `pytest.warns`, `pytest.deprecated_call`), fails explicitly (`pytest.fail`, `raise
AssertionError`), or calls a helper that does: any function, method or class of the test files that itself
passes, by name, to any depth (a class passes when one of its methods does; a fixture the test takes as an
argument counts as called). A test that rightly checks nothing but "it ran" carries the marker
`# noassert: <why>` on its `def` line (or a decorator line above it); a marker without a reason does not count.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"#\s*noassert:\s*\S")
EXPECTING = {"raises", "warns", "deprecated_call", "fail"}
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Unchecked:
    path: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} asserts nothing and calls nothing that does"


def _called(node: ast.AST) -> Iterator[str]:
    """The names a node calls: `f(...)` gives f, `a.b.f(...)` gives f."""
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            if isinstance(call.func, ast.Name):
                yield call.func.id
            elif isinstance(call.func, ast.Attribute):
                yield call.func.attr


def _checks_directly(node: ast.AST) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assert):
            return True
        if isinstance(inner, ast.Raise) and inner.exc is not None:
            raised = inner.exc.func if isinstance(inner.exc, ast.Call) else inner.exc
            if isinstance(raised, ast.Name) and raised.id == "AssertionError":
                return True
        if isinstance(inner, ast.Call):
            func = inner.func
            if (isinstance(func, ast.Attribute) and func.attr in EXPECTING and isinstance(func.value, ast.Name)
                    and func.value.id == "pytest") or (isinstance(func, ast.Name) and func.id in EXPECTING):
                return True
    return False


def _definitions(tree: ast.Module) -> Iterator[Definition]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node


def checking_names(trees: Iterable[ast.Module]) -> set[str]:
    """Names of every function, method and class that checks something, directly or through what it calls."""
    calls: dict[str, set[str]] = {}
    checking: set[str] = set()
    for tree in trees:
        for node in _definitions(tree):
            calls.setdefault(node.name, set()).update(_called(node))
            if _checks_directly(node):
                checking.add(node.name)
    grown = True
    while grown:
        found = {name for name, called in calls.items() if name not in checking and called & checking}
        checking |= found
        grown = bool(found)
    return checking


def _tests(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            yield node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (f for f in node.body
                        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name.startswith("test"))


def _marked(test: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    first = min([test.lineno, *(d.lineno for d in test.decorator_list)])
    return any(MARKER.search(line) for line in lines[first - 1:test.body[0].lineno - 1])


def _passes(test: ast.FunctionDef | ast.AsyncFunctionDef, checking: set[str]) -> bool:
    arguments = {a.arg for a in [*test.args.posonlyargs, *test.args.args, *test.args.kwonlyargs]}
    return _checks_directly(test) or bool((set(_called(test)) | arguments) & checking)


def _parse(text: str, name: str, attempts: int = 3) -> ast.Module:
    """`ast.parse`, asked again on CPython 3.11's spurious "AST constructor recursion depth mismatch" SystemError
    (python/cpython#106905: the AST converter's depth counter is shared between threads, and a thread left by an
    earlier test in the same worker can move it); a real syntax error is raised at once."""
    for attempt in range(attempts):
        try:
            return ast.parse(text, filename=name)
        except SystemError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def unchecked(sources: dict[str, str]) -> list[Unchecked]:
    """The tests of `sources` (file name -> text; test files are those named test_*.py) that can never fail."""
    trees = {name: _parse(text, name) for name, text in sources.items()}
    checking = checking_names(trees.values())
    found = []
    for name, tree in trees.items():
        if not Path(name).name.startswith("test_"):
            continue
        lines = sources[name].splitlines()
        found += [Unchecked(name, test.lineno, test.name) for test in _tests(tree)
                  if not _passes(test, checking) and not _marked(test, lines)]
    return found


def unchecked_in(folder: Path) -> list[Unchecked]:
    """`unchecked` over every Python file of a test folder (helpers and conftest count as helpers)."""
    return unchecked({str(path.relative_to(folder.parent)): path.read_text(encoding="utf-8")
                      for path in sorted(folder.rglob("*.py"))})
