"""`noosphere.syntax.parse`: CPython 3.11's transient AST depth mismatch is parsed again, nothing else is hidden."""

from __future__ import annotations

import ast

import pytest

from noosphere import syntax


def test_the_transient_depth_mismatch_is_parsed_again_and_other_errors_are_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """CI caught `SystemError: AST constructor recursion depth mismatch (before=33, after=74)` from the expression
    tool's screen, for an expression that parses, while other threads parsed too."""
    real = ast.parse
    failures = [SystemError("AST constructor recursion depth mismatch (before=33, after=74)")]

    def flaky(source: str, mode: str = "exec") -> ast.AST:
        if failures:
            raise failures.pop()
        return real(source, mode=mode)

    monkeypatch.setattr(ast, "parse", flaky)
    assert isinstance(syntax.parse("1 + 1", mode="eval"), ast.Expression) and not failures
    failures.extend([SystemError("something else")])
    with pytest.raises(SystemError, match="something else"):
        syntax.parse("1 + 1", mode="eval")
    failures.extend([SystemError("recursion depth mismatch")] * syntax.ATTEMPTS)
    with pytest.raises(SystemError, match="recursion depth mismatch"):
        syntax.parse("1 + 1", mode="eval")
    with pytest.raises(SyntaxError):
        syntax.parse("1 +", mode="eval")
