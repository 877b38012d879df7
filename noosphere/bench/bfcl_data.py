"""BFCL items and their functions, converted to standard JSON schema for our tool layer.

BFCL writes parameter types in its own dialect ("dict", "float", "tuple", "any"); constrained
decoding and validation need JSON schema, so types are mapped recursively. Function names keep
their dots; the ground truth maps each name to accepted values per parameter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noosphere.bench.data import shared_data
from noosphere.errors import UnknownNameError
from noosphere.llm import Message, ToolSpec

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "integer": "integer", "int": "integer",
          "string": "string", "str": "string", "boolean": "boolean", "bool": "boolean", "array": "array",
          "list": "array", "number": "number", "object": "object"}


@dataclass(frozen=True)
class BfclItem:
    id: str
    category: str
    messages: tuple[Message, ...]
    functions: tuple[dict[str, Any], ...]
    ground_truth: tuple[dict[str, dict[str, list[Any]]], ...]

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        return tuple(ToolSpec(f["name"], f.get("description", ""), to_json_schema(f.get("parameters", {})))
                     for f in self.functions)


def to_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """BFCL's parameter dialect to JSON schema (descriptions, enums and defaults kept)."""
    out: dict[str, Any] = {}
    kind = schema.get("type")
    if kind == "any" or kind is None:
        pass
    elif kind in _TYPES:
        out["type"] = _TYPES[kind]
    for key in ("description", "enum", "default"):
        if key in schema:
            out[key] = schema[key]
    if "properties" in schema:
        out["properties"] = {name: to_json_schema(sub) for name, sub in schema["properties"].items()}
        if schema.get("required"):
            out["required"] = list(schema["required"])
    if "items" in schema:
        out["items"] = to_json_schema(schema["items"])
    if out.get("type") == "object" and "properties" not in out:
        out["additionalProperties"] = True
    return out


def _read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_bfcl(category: str, folder: Path | None = None, *, limit: int | None = None) -> list[BfclItem]:
    if category not in CATEGORIES:
        raise UnknownNameError("BFCL category", category, CATEGORIES)
    source = shared_data("bfcl", f"BFCL_v4_{category}.json", folder / f"BFCL_v4_{category}.json" if folder else None)
    answers_path = source.parent / "possible_answer" / source.name
    answers = {row["id"]: row["ground_truth"] for row in _read_lines(answers_path)} if answers_path.exists() else {}
    items = []
    for row in _read_lines(source)[:limit] if limit else _read_lines(source):
        turn = row["question"][0]
        messages = tuple(Message(m["role"], m["content"]) for m in turn)
        items.append(BfclItem(row["id"], category, messages, tuple(row["function"]),
                              tuple(answers.get(row["id"], ()))))
    return items
