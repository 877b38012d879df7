"""Python source parsed into an AST, safe to call from several threads at once.

CPython 3.11 keeps one AST-construction depth counter per interpreter; two threads building trees at once can
leave it off, and `ast.parse` then raises `SystemError: AST constructor recursion depth mismatch` for a source
that parses (CPython gh-106905). The tools parse in worker threads (`asyncio.to_thread`; a call that timed out may
still be running when the next begins), and CI saw the expression tool fail that way once. The mismatch is
transient: the parse is tried again.
"""

from __future__ import annotations

import ast

ATTEMPTS = 5


def parse(source: str, mode: str = "exec") -> ast.AST:
    """`ast.parse(source, mode=mode)`, tried again when CPython 3.11 reports its transient depth mismatch; any
    other error (a `SyntaxError`, a `RecursionError` of a source nested too deep) is raised as `ast.parse` raises it."""
    for attempt in range(ATTEMPTS):
        try:
            return ast.parse(source, mode=mode)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
