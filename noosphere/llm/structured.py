"""From model text to a validated pydantic object: extract, repair, validate, explain.

Small models wrap JSON in prose or code fences, leave it unterminated, add trailing commas, or
refuse. This module turns a reply into either a valid object or a precise complaint that can be
sent back to the model for another attempt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import json_repair
from pydantic import BaseModel, ValidationError

from noosphere.llm.forms import LISTED

_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.DOTALL)
_REFUSAL = re.compile(r"^\s*(i'?m sorry|i cannot|i can'?t|as an ai|i am unable|i'm unable)", re.IGNORECASE)


def schema_of(output: type[BaseModel]) -> dict[str, Any]:
    return output.model_json_schema()


def _shown(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as the prompt shows it: a choice whose options the prompt lists loses its enum (also where the
    choice is one alternative of an `anyOf` or `oneOf`)."""
    properties = {name: (_unlisted(field) | {"description": f"{field.get('description', 'one option')}, exactly "
                                                             "as listed above"}
                         if field.get(LISTED) else field)
                  for name, field in schema.get("properties", {}).items()}
    return schema | {"properties": properties} if properties else schema


def _unlisted(field: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in field.items() if k not in ("enum", LISTED)}
    for union in ("anyOf", "oneOf"):
        if isinstance(kept.get(union), list):
            kept[union] = [{k: v for k, v in option.items() if k != "enum"} if isinstance(option, dict) else option
                           for option in kept[union]]
    return kept


def schema_instruction(output: type[BaseModel]) -> str:
    """The sentence added to the prompt so that every model, constrained or not, knows the format."""
    schema = json.dumps(_shown(schema_of(output)), separators=(",", ":"))
    return (
        "Reply with one JSON object only, no prose and no code fence. "
        f"It must validate against this JSON schema: {schema}"
    )


@dataclass(frozen=True)
class ParseOutcome:
    """Result of one parse: the object, or the error to show the model; `repaired` notes a fix."""

    value: BaseModel | None
    error: str | None
    repaired: str | None


def _candidate_json(text: str) -> str:
    """Where the JSON of a reply is: a fence marked json (or unmarked); else the first complete JSON object (or list
    of objects) anywhere, prose before or after it left out; else a fence of another language that holds one; else
    from the first brace or bracket on (for the repair to finish)."""
    fences = [(language.lower(), body.strip()) for language, body in _FENCE.findall(text)]
    for language, body in fences:
        if language in ("json", "") and body.startswith(("{", "[")):
            return body
    decoder = json.JSONDecoder()
    for opening in re.finditer(r"[{\[]", text):
        try:
            value, end = decoder.raw_decode(text, opening.start())
        except ValueError:
            continue
        if isinstance(value, dict) or (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
            return text[opening.start():end]
    for _, body in fences:
        if body.startswith(("{", "[")):
            return body
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    return text[start:].strip() if start >= 0 else text.strip()


def _format_validation(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:6]:
        where = ".".join(str(p) for p in item["loc"]) or "(root)"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def parse_output(text: str, output: type[BaseModel]) -> ParseOutcome:
    """Parse `text` into `output`, repairing broken JSON when that is all that is wrong."""
    if not text.strip():
        return ParseOutcome(None, "the reply was empty", None)
    candidate = _candidate_json(text)
    repaired: str | None = None
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as exc:
        data = json_repair.loads(candidate)
        if data in ("", None, [], {}) and candidate not in ("{}", "[]"):
            return ParseOutcome(None, f"no JSON object found ({exc.msg})", None)
        repaired = f"repaired malformed JSON ({exc.msg} at char {exc.pos})"
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict):
        data = data[0]
    try:
        return ParseOutcome(output.model_validate(data), None, repaired)
    except ValidationError as exc:
        return ParseOutcome(None, _format_validation(exc), repaired)


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text))


def correction_message(error: str) -> str:
    """What the model is told after an invalid reply, before it tries again."""
    return (
        f"That reply was not valid: {error}. Answer again with one JSON object that follows the schema "
        "exactly, with every required field and every number inside its allowed range."
    )
