"""The calculator: arithmetic read from the expression's syntax tree, never `eval`.

Allowed: int and float literals, + - * / // % ** (and ^ for **), unary + and -, parentheses, the
constants pi, e, tau, and a few functions of `math` called by name with positional arguments.
Anything else (names, attributes, strings, subscripts, comprehensions, keyword arguments) is refused.
So that no expression can hold a CPU or fill memory, the text is at most 500 characters, integers at
most 4,000 bits (about 1,200 digits), a power is refused before it is computed if its result would be
larger, `factorial` takes at most 1,000, and results must be finite real numbers.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

from noosphere.errors import UsageError
from noosphere.syntax import parse

MAX_LENGTH = 500
MAX_BITS = 4000
MAX_FACTORIAL = 1000

Number = int | float


class ExpressionError(UsageError, ValueError):
    """An expression the calculator refuses: not arithmetic, too large, or not a finite real number."""


_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _factorial(n: Number) -> int:
    if not isinstance(n, int) or not 0 <= n <= MAX_FACTORIAL:
        raise ExpressionError(f"factorial takes an integer from 0 to {MAX_FACTORIAL}")
    return math.factorial(n)


_FUNCTIONS: dict[str, Callable[..., Number]] = {
    name: getattr(math, name) for name in
    ("sqrt", "log", "log10", "log2", "exp", "sin", "cos", "tan", "asin", "acos", "atan", "floor", "ceil", "gcd",
     "radians", "degrees")}
_FUNCTIONS.update({"factorial": _factorial, "abs": abs, "round": round, "min": min, "max": max})
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _checked(value: object) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExpressionError(f"the result {value!r} is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise ExpressionError(f"a number in the expression is over {MAX_BITS} bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError("the result is not a finite number")
    return value


def _power(base: Number, exponent: Number) -> Number:
    """base ** exponent, refused first when the result would be over the size limit."""
    if abs(base) > 1 and exponent > 0:
        bits = math.log2(abs(base)) * exponent
        if bits > MAX_BITS:
            raise ExpressionError(f"{base} ** {exponent} is too large (about {bits:.3g} bits; the limit is {MAX_BITS})")
    return base**exponent


def _evaluate(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return _checked(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _checked(_power(left, right))
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_evaluate(node.operand)))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords:
            raise ExpressionError(f"{node.func.id}() takes positional arguments only")
        return _checked(_FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args)))
    raise ExpressionError(f"not allowed in a calculation: {ast.unparse(node)[:60]!r}"
                          if isinstance(node, ast.expr) else "not an arithmetic expression")


def calculate(expression: str) -> Number:
    """Evaluate an arithmetic expression (+ - * / // % **, parentheses, math functions, pi, e)."""
    if len(expression) > MAX_LENGTH:
        raise ExpressionError(f"the expression is over {MAX_LENGTH} characters")
    try:
        tree = parse(expression.replace("^", "**").strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not an arithmetic expression: {exc.msg}") from None
    try:
        return _evaluate(tree)
    except ExpressionError:
        raise
    except (ArithmeticError, ValueError, TypeError) as exc:  # 1/0, sqrt(-1), an overflow, min() of nothing
        raise ExpressionError(f"{type(exc).__name__}: {exc}") from None
    except RecursionError:
        raise ExpressionError("the expression is nested too deeply") from None
