"""Built-in tools a user can attach to a tool processor or an agent.

calculator (an arithmetic evaluator over the syntax tree, `arithmetic.py`), unit converter and date
arithmetic are pure functions; the SQLite lookup opens its database read-only; corpus search ranks
passages by TF-IDF; the Python evaluator runs one expression in the bubblewrap sandbox
(`sandbox.py`), with CPU, memory, process and wall-clock limits.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

from noosphere.tools.arithmetic import calculate
from noosphere.tools.base import FunctionTool
from noosphere.tools.sandbox import Sandbox, run_python_expression

__all__ = ["builtin_tools", "calculate", "calculator_tool", "convert_units", "corpus_search_tool", "date_arithmetic",
           "date_tool", "python_tool", "sqlite_lookup_tool", "unit_converter_tool"]

# Units as (dimension, factor to the base unit). Temperature is affine and handled apart.
_UNITS: dict[str, tuple[str, float]] = {
    "m": ("length", 1), "km": ("length", 1000), "cm": ("length", 0.01), "mm": ("length", 0.001),
    "mi": ("length", 1609.344), "mile": ("length", 1609.344), "yd": ("length", 0.9144), "ft": ("length", 0.3048),
    "in": ("length", 0.0254),
    "kg": ("mass", 1), "g": ("mass", 0.001), "mg": ("mass", 1e-6), "t": ("mass", 1000), "lb": ("mass", 0.45359237),
    "oz": ("mass", 0.028349523125),
    "s": ("time", 1), "min": ("time", 60), "h": ("time", 3600), "day": ("time", 86400), "week": ("time", 604800),
    "l": ("volume", 1), "ml": ("volume", 0.001), "m3": ("volume", 1000), "gal": ("volume", 3.785411784),
    "m/s": ("speed", 1), "km/h": ("speed", 1 / 3.6), "mph": ("speed", 0.44704), "kn": ("speed", 0.514444),
    "j": ("energy", 1), "kj": ("energy", 1000), "cal": ("energy", 4.184), "kcal": ("energy", 4184),
    "kwh": ("energy", 3.6e6),
}
_TEMPERATURE = {"c": (1.0, 0.0), "f": (5 / 9, -32.0), "k": (1.0, -273.15)}  # (scale, offset) to Celsius


def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a value between units of the same dimension (length, mass, time, volume, speed, energy, temperature)."""
    source, target = from_unit.strip().lower(), to_unit.strip().lower()
    if source in _TEMPERATURE and target in _TEMPERATURE:
        scale, offset = _TEMPERATURE[source]
        celsius = (value + offset) * scale
        scale, offset = _TEMPERATURE[target]
        return celsius / scale - offset
    if source not in _UNITS or target not in _UNITS:
        unknown = source if source not in _UNITS else target
        raise ValueError(f"unknown unit {unknown!r}; known: {', '.join(sorted([*_UNITS, *_TEMPERATURE]))}")
    (dimension, factor), (target_dimension, target_factor) = _UNITS[source], _UNITS[target]
    if dimension != target_dimension:
        raise ValueError(f"cannot convert {dimension} to {target_dimension}")
    return value * factor / target_factor


def date_arithmetic(operation: str, date: str, days: int = 0, other_date: str = "") -> str:
    """add_days: date + days; days_between: other_date - date in days; weekday: the day of the week."""
    start = dt.date.fromisoformat(date)
    if operation == "add_days":
        return (start + dt.timedelta(days=days)).isoformat()
    if operation == "days_between":
        return str((dt.date.fromisoformat(other_date) - start).days)
    if operation == "weekday":
        return start.strftime("%A")
    raise ValueError("operation must be add_days, days_between or weekday")


def calculator_tool() -> FunctionTool:
    return FunctionTool(calculate, name="calculator", parameters={
        "type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]})


def unit_converter_tool() -> FunctionTool:
    return FunctionTool(convert_units, name="unit_converter", parameters={
        "type": "object", "required": ["value", "from_unit", "to_unit"],
        "properties": {"value": {"type": "number"}, "from_unit": {"type": "string"}, "to_unit": {"type": "string"}}})


def date_tool() -> FunctionTool:
    return FunctionTool(date_arithmetic, name="date_arithmetic", parameters={
        "type": "object", "required": ["operation", "date"],
        "properties": {"operation": {"type": "string", "enum": ["add_days", "days_between", "weekday"]},
                       "date": {"type": "string", "description": "YYYY-MM-DD"}, "days": {"type": "integer"},
                       "other_date": {"type": "string", "description": "YYYY-MM-DD"}}})


def sqlite_lookup_tool(database: Path, table: str, *, limit: int = 20) -> FunctionTool:
    """Rows of `table` where a column equals a value; the database is opened read-only."""
    uri = f"{Path(database).resolve().as_uri()}?mode=ro"  # quoted: a '#' or '?' in the path stays in the path
    with sqlite3.connect(uri, uri=True) as db:
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table!r})")]
    if not columns:
        raise ValueError(f"no table {table!r} in {database}")

    def lookup(column: str, equals: str) -> str:
        with sqlite3.connect(uri, uri=True) as connection:
            rows = connection.execute(f'SELECT * FROM "{table}" WHERE "{column}" = ? LIMIT ?', (equals, limit))
            found = [dict(zip(columns, row, strict=True)) for row in rows]
        return repr(found) if found else "no matching rows"

    return FunctionTool(lookup, name=f"lookup_{table}",
                        description=f"Look up rows of the table {table} (columns: {', '.join(columns)}) by one column.",
                        parameters={"type": "object", "required": ["column", "equals"],
                                    "properties": {"column": {"type": "string", "enum": columns},
                                                   "equals": {"type": "string"}}})


def corpus_search_tool(passages: dict[str, str], *, top_k: int = 3) -> FunctionTool:
    """Keyword search over named passages, ranked by TF-IDF cosine similarity."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    names = list(passages)
    vectorizer = TfidfVectorizer(stop_words="english")
    matrix = vectorizer.fit_transform([passages[name] for name in names])

    def search(query: str) -> str:
        scores = (matrix @ vectorizer.transform([query]).T).toarray().ravel()
        ranked = [i for i in scores.argsort()[::-1][:top_k] if scores[i] > 0]
        return "\n".join(f"[{names[i]}] {passages[names[i]][:500]}" for i in ranked) or "no passage matches"

    return FunctionTool(search, name="search_corpus", description="Keyword search over a text corpus.",
                        parameters={"type": "object", "properties": {"query": {"type": "string"}},
                                    "required": ["query"]})


def python_tool(*, timeout_s: float = 5.0, memory_mb: int = 256, sandbox: Sandbox | None = None) -> FunctionTool:
    """One Python expression, evaluated in the sandbox; without bubblewrap each call fails saying how to install it."""

    def evaluate(expression: str) -> Any:
        return run_python_expression(expression, timeout_s=timeout_s, memory_mb=memory_mb, sandbox=sandbox)

    return FunctionTool(evaluate, name="python",
                        description="Evaluate one Python expression (no imports, no files) and return its value.",
                        parameters={"type": "object", "properties": {"expression": {"type": "string"}},
                                    "required": ["expression"]}, timeout_s=timeout_s + 2)


def builtin_tools() -> dict[str, FunctionTool]:
    """The built-ins that need no configuration, by name."""
    return {tool.spec.name: tool for tool in (calculator_tool(), unit_converter_tool(), date_tool(), python_tool())}
