"""BFCL items and their functions, converted to standard JSON schema for our tool layer.

BFCL writes parameter types in its own dialect ("dict", "float", "tuple", "any"); constrained
decoding and validation need JSON schema, so types are mapped recursively. Function names keep
their dots; the ground truth maps each name to accepted values per parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from noosphere.bench.data import shared_data
from noosphere.datafiles import read_json_lines
from noosphere.errors import DataError, UnknownNameError, UsageError
from noosphere.llm import Message, ToolSpec

R = TypeVar("R", bound="BfclIdentified")
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
UNANSWERED = ("irrelevance",)
"""Categories whose right answer is to call nothing: they come without a possible-answer file."""
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


class BfclTurnMessage(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class BfclParameters(BaseModel):
    """BFCL's parameter dialect, as deep as `to_json_schema` reads it."""

    model_config = ConfigDict(strict=True, frozen=True, extra="allow")
    type: str | None = None
    description: str = ""
    properties: dict[str, BfclParameters] = {}
    items: BfclParameters | None = None
    required: list[str] = []
    enum: list[Any] | None = None


class BfclFunction(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="allow")
    name: str = Field(min_length=1)
    description: str = ""
    parameters: BfclParameters = BfclParameters()


class BfclIdentified(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="allow")
    id: str = Field(min_length=1)


class BfclRow(BfclIdentified):
    question: list[list[BfclTurnMessage]] = Field(min_length=1)
    function: list[BfclFunction]

    @field_validator("question")
    @classmethod
    def _first_turn_speaks(cls, question: list[list[BfclTurnMessage]]) -> list[list[BfclTurnMessage]]:
        if not question[0]:
            raise ValueError("the first turn has no messages")
        return question


class BfclAnswer(BfclIdentified):
    ground_truth: list[dict[str, dict[str, list[Any]]]]


QUESTIONS = ('one JSON object a line: {"id", "question": [[{"role", "content"}, ...]], '
             '"function": [{"name", "description", "parameters"}]}')
ANSWERS = 'one JSON object a line: {"id", "ground_truth": [{"function": {"parameter": [accepted values]}}]}'


def _read_rows(path: Path, row: type[R], expected: str) -> list[tuple[int, R, dict[str, Any]]]:
    """Every line validated; an id given twice is refused too (a resumed run tells items apart by id)."""
    rows = read_json_lines(path, row, expected=expected)
    seen: dict[str, int] = {}
    for line, parsed, _ in rows:
        item_id = parsed.id
        if item_id in seen:
            raise DataError(f"id {item_id!r} is given again (first on line {seen[item_id]}); ids must be unique",
                            source=str(path), line=line)
        seen[item_id] = line
    return rows


def load_bfcl(category: str, folder: Path | None = None, *, limit: int | None = None,
              offset: int = 0) -> list[BfclItem]:
    """A category's questions (and, where the folder has them, their possible answers), validated whole first:
    after its first `offset` (items a prompt was tuned on), its first `limit`. An offset that leaves none of the
    category's items is a usage error."""
    if category not in CATEGORIES:
        raise UnknownNameError("BFCL category", category, CATEGORIES)
    if offset < 0:
        raise UsageError(f"offset must be 0 or more, got {offset}")
    if folder is not None and folder.is_file():
        raise UsageError(f"--data {folder} is a file; give BFCL's folder, which holds BFCL_v4_<category>.json and "
                         "possible_answer/ (choose categories with --category)")
    source = shared_data("bfcl", f"BFCL_v4_{category}.json", folder / f"BFCL_v4_{category}.json" if folder else None)
    answers_path = source.parent / "possible_answer" / source.name
    rows = [(row, raw) for _, row, raw in _read_rows(source, BfclRow, QUESTIONS)]
    answered = category not in UNANSWERED  # irrelevance: the right answer is no call, and it has no answer file
    if answered and not answers_path.exists():
        raise DataError(f"has no possible answers beside it ({answers_path} is missing): its items cannot be scored",
                        source=str(source))
    answers = ({answer.id: answer.ground_truth for _, answer, _ in _read_rows(answers_path, BfclAnswer, ANSWERS)}
               if answered else {})
    if offset and offset >= len(rows):
        raise UsageError(f"offset {offset} leaves none of the {len(rows)} items of BFCL category {category}")
    chosen = rows[offset:offset + limit] if limit else rows[offset:]
    if answered and (unanswered := [row.id for row, _ in chosen if row.id not in answers]):
        raise DataError(f"{answers_path.name} has no possible answer for {', '.join(unanswered[:5])}"
                        f"{' and more' if len(unanswered) > 5 else ''}: a question without one would be scored right "
                        "whenever the model calls nothing", source=str(answers_path))
    items = []
    for row, raw in chosen:
        messages = tuple(Message(m.role, m.content) for m in row.question[0])
        # the functions as written (validated above): their order of keys is the order of the schema shown
        items.append(BfclItem(row.id, category, messages, tuple(raw["function"]), tuple(answers.get(row.id, ()))))
    return items
