"""The form a person fills in for one turn, read off the JSON schema a model would have been given.

A member's turn asks for a pydantic form (a statement: reasoning and answer; a ballot: a letter; a ranking:
letters, best first; a hiring decision: yes or no, a name, a price). A person gets the same form as fields to
fill in, on the terminal or in the viewer page, and what they type is checked here, field by field, with a
message a person can act on, before it goes back to the society as the JSON a model would have written. A
turn asking for free text (a role-play's conversation) is one text field, `reply`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from noosphere.errors import NoosphereError

FieldKind = Literal["text", "choice", "ranking", "number", "integer", "yes/no"]
FREE_TEXT = "reply"
"""The one field of a turn that asks for free text rather than a form."""


class FormError(NoosphereError):
    """What a person typed does not fit the field: the message says what would."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: FieldKind
    description: str = ""
    options: tuple[str, ...] = ()
    """The letters a choice or ranking picks from."""
    required: bool = True
    max_length: int | None = None
    min_length: int = 0
    minimum: float | None = None
    maximum: float | None = None
    default: Any = None

    def hint(self) -> str:
        """What to type, in a few words (shown beside the field)."""
        if self.kind == "choice":
            return f"one of {', '.join(self.options)}"
        if self.kind == "ranking":
            return f"letters from {', '.join(self.options)}, best first"
        if self.kind == "yes/no":
            return "yes or no"
        if self.kind in ("number", "integer"):
            bounds = [f"at least {_num(self.minimum)}" if self.minimum is not None else "",
                      f"at most {_num(self.maximum)}" if self.maximum is not None else ""]
            return " and ".join(b for b in bounds if b) or ("a whole number" if self.kind == "integer" else "a number")
        return f"up to {self.max_length} characters" if self.max_length else "text"

    def to_json(self) -> dict[str, Any]:
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Field:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["options"] = tuple(known.get("options") or ())
        return cls(**known)


def _num(value: float | None) -> str:
    return "" if value is None else str(int(value)) if float(value).is_integer() else str(value)


def fields_of(schema: Mapping[str, Any] | None) -> tuple[Field, ...]:
    """The fields of a form, in its order; no schema: one free-text field."""
    if not schema:
        return (Field(FREE_TEXT, "text", "your reply"),)
    required = set(schema.get("required") or ())
    fields = []
    for name, spec in (schema.get("properties") or {}).items():
        spec = _resolved(spec, schema)
        common = {"description": spec.get("description", ""), "required": name in required,
                  "default": spec.get("default")}
        if "enum" in spec:
            fields.append(Field(name, "choice", options=tuple(str(o) for o in spec["enum"]), **common))
        elif spec.get("type") == "array" and "enum" in _resolved(spec.get("items") or {}, schema):
            letters = tuple(str(o) for o in _resolved(spec["items"], schema)["enum"])
            fields.append(Field(name, "ranking", options=letters, min_length=int(spec.get("minItems", 0)),
                                max_length=spec.get("maxItems"), **common))
        elif spec.get("type") == "boolean":
            fields.append(Field(name, "yes/no", **common))
        elif spec.get("type") in ("number", "integer"):
            fields.append(Field(name, spec["type"], minimum=spec.get("minimum", spec.get("exclusiveMinimum")),
                                maximum=spec.get("maximum", spec.get("exclusiveMaximum")), **common))
        else:  # strings, and anything richer, as text (the form's own validation has the last word)
            fields.append(Field(name, "text", max_length=spec.get("maxLength"),
                                min_length=int(spec.get("minLength", 0)), **common))
    return tuple(fields)


def _resolved(spec: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A `$ref` into the schema's `$defs` (pydantic puts enums of a `Literal` alias there), followed."""
    ref = spec.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return (schema.get("$defs") or {}).get(ref.removeprefix("#/$defs/"), spec)
    return spec


def read_value(field: Field, raw: Any) -> Any:
    """One field's value from what was typed (a string from a terminal or a text box; JSON values pass too)."""
    text = raw.strip() if isinstance(raw, str) else raw
    if text in ("", None):
        if field.required and field.default is None and not (field.kind == "text" and field.min_length == 0):
            raise FormError(f"{field.name} is needed ({field.hint()})")
        return field.default if field.default is not None else ("" if field.kind == "text" else None)
    if field.kind == "text":
        if isinstance(text, list | dict | bool):  # a number is read as its digits; these would be Python's repr
            raise FormError(f"{field.name}: text, not {json.dumps(text, default=str)[:40]}")
        text = str(text)
        if len(text) < field.min_length:
            raise FormError(f"{field.name}: at least {field.min_length} characters")
        if field.max_length is not None and len(text) > field.max_length:
            raise FormError(f"{field.name}: at most {field.max_length} characters (this is {len(text)})")
        return text
    if field.kind == "choice":
        picked = str(text).strip("().").strip().upper()
        if picked not in [o.upper() for o in field.options]:
            raise FormError(f"{field.name}: {field.hint()}")
        return next(o for o in field.options if o.upper() == picked)
    if field.kind == "ranking":
        given = text if isinstance(text, list) else re.split(r"[\s,;>]+", str(text).strip())
        letters = [str(g).strip("().").upper() for g in given if str(g).strip("().")]
        wrong = [g for g in letters if g not in [o.upper() for o in field.options]]
        if wrong or not letters or len(set(letters)) != len(letters):
            raise FormError(f"{field.name}: {field.hint()}, each once")
        if len(letters) < field.min_length or (field.max_length is not None and len(letters) > field.max_length):
            raise FormError(f"{field.name}: {field.hint()} ({field.min_length} to {field.max_length})")
        return [next(o for o in field.options if o.upper() == g) for g in letters]
    if field.kind == "yes/no":
        said = str(text).lower()
        if said in ("y", "yes", "true", "1"):
            return True
        if said in ("n", "no", "false", "0"):
            return False
        raise FormError(f"{field.name}: yes or no")
    if isinstance(text, bool):  # float(True) is 1.0
        raise FormError(f"{field.name}: {field.hint()}")
    try:
        number = float(text)
    except (TypeError, ValueError):
        raise FormError(f"{field.name}: {field.hint()}") from None
    if not math.isfinite(number) or (field.kind == "integer" and not number.is_integer()):
        raise FormError(f"{field.name}: {field.hint()}")
    if (field.minimum is not None and number < field.minimum) or (field.maximum is not None and number > field.maximum):
        raise FormError(f"{field.name}: {field.hint()}")
    return int(number) if field.kind == "integer" else number


def read_answer(fields: tuple[Field, ...], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every field's value, checked; the first that does not fit raises `FormError` (as does an answer that is no
    mapping of field values: a saved one edited by hand, say)."""
    if not isinstance(given, Mapping):
        raise FormError("an answer is an object of field values")
    unknown = sorted(set(given) - {f.name for f in fields})
    if unknown:
        raise FormError(f"no field named {', '.join(unknown)} in this form")
    return {field.name: read_value(field, given.get(field.name)) for field in fields}


def reply_text(fields: tuple[Field, ...], values: Mapping[str, Any]) -> str:
    """The answer as a model would have written it: the free text itself, or the form as JSON."""
    if len(fields) == 1 and fields[0].name == FREE_TEXT:
        return str(values.get(FREE_TEXT, ""))
    return json.dumps({name: value for name, value in values.items() if value is not None}, ensure_ascii=False)
