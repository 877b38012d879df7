"""Reading files at the edge: data files are validated whole, run files line by line.

Two kinds of file come in from outside. A data file (benchmark items, game files) must be right as
a whole: any fault is a `DataError` naming the file, the line or key and what was expected there,
raised before any work starts. A file a run writes as it goes (`items.jsonl`, `trace.jsonl`) may
end in a line torn by a kill, or be damaged later: each bad line is reported with its number and
skipped, and the rest is read.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from noosphere.errors import DataError

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

_SHOWN = 60
"""Characters of an offending value shown in a message."""


def read_text(path: Path, *, expected: str) -> str:
    """A data file's text: UTF-8 (a byte-order mark is allowed), not empty."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise DataError(f"is a folder; expected a file holding {expected}", source=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot be read ({exc.strerror or exc}); expected {expected}", source=str(path)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(f"byte {data[exc.start]:#04x} is not UTF-8 text; expected {expected}", source=str(path),
                        line=line) from None
    if not text.strip():
        raise DataError(f"is empty; expected {expected}", source=str(path))
    return text


class RepeatedKey(ValueError):
    """A key given twice in one object or mapping; `line` where the parser knows it."""

    def __init__(self, key: Any, line: int | None = None) -> None:
        super().__init__(key)
        self.key, self.line = key, line


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (`json.loads` would keep the last of a repeated key, silently): the
    `object_pairs_hook` of every JSON file read at the edge."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise RepeatedKey(key)
        found[key] = value
    return found


def _loads(text: str, path: Path, line: int | None, expected: str) -> Any:
    try:
        value = json.loads(text, object_pairs_hook=unique_keys)
        if _SURROGATE_ESCAPE_TEXT.search(text) and lone_surrogate(value):
            raise DataError("holds a lone surrogate (an escape such as \\ud800 that names no character), which no "
                            f"prompt or trace can carry; expected {expected}", source=str(path), line=line)
        return value
    except RepeatedKey as exc:
        raise DataError(f"the key {exc.args[0]!r} is given twice in one object (the first would be lost); "
                        f"expected {expected}", source=str(path), line=line) from None
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        raise DataError(f"not JSON ({exc.msg}, column {exc.colno}); expected {expected}", source=str(path),
                        line=at) from None
    except RecursionError:
        raise DataError(f"JSON nested too deeply; expected {expected}", source=str(path), line=line) from None


def read_json(path: Path, shape: TypeAdapter[T], *, expected: str) -> T:
    """A JSON file validated against `shape`."""
    data = _loads(read_text(path, expected=expected), path, None, expected)
    try:
        return shape.validate_python(data)
    except ValidationError as exc:
        raise DataError(describe(exc, expected), source=str(path)) from None


def read_json_lines(path: Path, row: type[M], *, expected: str) -> list[tuple[int, M, dict[str, Any]]]:
    """A JSON-lines file whose every non-blank line must be an object of `row`: (line number, row, the object
    as read) triples."""
    text = read_text(path, expected=expected)
    rows = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: JSON strings may hold U+2028
        if not line.strip():
            continue
        data = _loads(line, path, number, expected)
        if not isinstance(data, dict):
            raise DataError(f"{_kind(data)} where a JSON object was expected; expected {expected}",
                            source=str(path), line=number)
        try:
            rows.append((number, row.model_validate(data), data))
        except ValidationError as exc:
            raise DataError(describe(exc, expected), source=str(path), line=number) from None
    if not rows:
        raise DataError(f"holds no rows; expected {expected}", source=str(path))
    return rows


def describe(error: ValidationError, expected: str) -> str:
    """The first fault of a validation as one line: where, what was wrong, and how many more there are."""
    first = error.errors()[0]
    location = _location(first["loc"])
    if first["type"] == "missing":
        message = f"key {location!r} is missing"
    else:
        given = first.get("input")
        shown = json.dumps(given, default=str) if not isinstance(given, dict | list) else _kind(given)
        if len(shown) > _SHOWN:
            shown = shown[: _SHOWN - 3] + "..."
        where = f"key {location!r}: " if location else ""
        text = _flat(first["msg"]).removeprefix("Value error, ")  # our own checks say what they expected
        got = "" if first["type"] == "value_error" and isinstance(given, dict | list) else f" (got {shown})"
        message = f"{where}{text}{got}"
        if not location:
            message += f"; expected {expected}"
    more = error.error_count() - 1
    return message + (f" (and {more} more {'fault' if more == 1 else 'faults'})" if more else "")


def _location(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for part in loc:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}" if parts else str(part))
    return "".join(parts)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class BadLine:
    """A line of a run file that could not be read, and why."""

    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}; skipped"


def scan_json_lines(path: Path, *, parse_constant: Callable[[str], Any] | None = None
                    ) -> tuple[list[tuple[int, dict[str, Any]]], list[BadLine]]:
    """A run's JSON-lines file, as its readable objects and the lines that are not: not UTF-8, not JSON (a line
    torn by a kill), or not an object. A missing file reads as empty, a byte-order mark as nothing. `parse_constant`
    is `json.loads`'s."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [BadLine(path, 0, f"cannot be read ({exc.strerror or exc})")]
    rows: list[tuple[int, dict[str, Any]]] = []
    bad: list[BadLine] = []
    for number, raw in _numbered(data.removeprefix(codecs.BOM_UTF8)):  # saved again by an editor that marks UTF-8
        reason = None
        try:
            value = json.loads(raw.decode("utf-8"), parse_constant=parse_constant)
        except UnicodeDecodeError:
            reason = "not UTF-8 text"
        except RecursionError:
            reason = NESTED_TOO_DEEPLY
        except ValueError:
            reason = "not JSON (a line torn by a kill?)"
        else:
            if _lone_surrogate(raw, value):
                reason = "holds a lone surrogate (an escape such as \\ud800 that names no character), not text"
            elif raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and too_deep(value):
                reason = NESTED_TOO_DEEPLY
            elif isinstance(value, dict):
                rows.append((number, value))
            else:
                reason = f"{_kind(value)}, not a JSON object"
        if reason is not None:
            bad.append(BadLine(path, number, reason))
    return rows, bad


MAX_DEPTH = 200
"""How deeply a value of a run's file may nest. No run writes anything near it; a deeper line (damaged, or written by
hand) is not read, since the readers that walk a value level by level (the viewer's `finite`, JSON writers) would run
out of Python's recursion limit on it."""
NESTED_TOO_DEEPLY = f"nested too deeply (over {MAX_DEPTH} levels), not a line a run writes"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and objects nest in `value` more than `limit` levels deep (walked without recursing)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: half of a pair, or a lone one."""
_SURROGATE_ESCAPE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(raw: bytes, value: Any) -> bool:
    """Whether the JSON value read from `raw` holds a lone surrogate (looked for only where `raw` escapes one)."""
    return bool(_SURROGATE_ESCAPE.search(raw)) and lone_surrogate(value)


def lone_surrogate(value: Any) -> bool:
    """Whether a value read from JSON holds a lone surrogate: `"\\ud800"` is JSON, but the string it reads as
    cannot be written as UTF-8 again (by a terminal, a page, a prompt's digest or a trace), so it is no text. A pair
    of escapes that makes one character is text."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:  # nested as deeply as the reader allows: no string of it is checked
        return False
    return False


def _numbered(data: bytes) -> Iterator[tuple[int, bytes]]:
    for number, raw in enumerate(data.split(b"\n"), 1):
        if raw.strip():
            yield number, raw


def finite(value: Any) -> Any:
    """`value` with every NaN or infinite number (in dicts, lists and tuples) made None: what strict JSON, and so a
    browser's `JSON.parse`, accepts."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def end_torn_line(path: Path) -> None:
    """A kill mid-write leaves a JSON Lines file's last line without its newline; close it so that the next line
    appended starts a line of its own (the torn one is then skipped alone when the file is read)."""
    if path.exists() and path.stat().st_size:
        with path.open("rb") as handle:
            handle.seek(-1, 2)
            torn = handle.read(1) != b"\n"
        if torn:
            with path.open("a", encoding="utf-8") as out:
                out.write("\n")
