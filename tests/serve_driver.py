"""A scripted model that answers any form, for `noosphere serve` tests; run as `python -m tests.serve_driver ARGS` it
is the CLI in a process of its own on that model (the command is tested as users start it, Ctrl-C included).

Every structured call is answered by filling its JSON schema: each string field says ANSWER, each number is 0.9
(the STM is sure at once, so a workspace runs one iteration), each list holds one item, each choice its first
option. A plain call whose system message carries noosphere's format sentence (a noosphere member asking a served
system through LiteLLM) gets that schema filled; any other plain call gets REPLY.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from noosphere.cli import make_app, run
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request

ANSWER = "42"
REPLY = "The answer is 42."
FORMAT_SENTENCE = re.compile(r"It must validate against this JSON schema: (\{.*\})\s*$", re.DOTALL)


def fill(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """The simplest value that validates against `schema` (whose `$ref`s point into `root`, itself by default)."""
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for step in schema["$ref"].removeprefix("#").split("/")[1:]:
            target = target[step]
        return fill(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return fill(next(s for s in schema[key] if s.get("type") != "null"), root)
    kind = schema.get("type", "object")
    kind = next(k for k in kind if k != "null") if isinstance(kind, list) else kind
    if kind == "object":
        return {name: fill(field, root) for name, field in schema.get("properties", {}).items()}
    if kind == "array":
        return [fill(schema.get("items", {}), root) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "string":
        return ANSWER if schema.get("minLength", 0) <= len(ANSWER) else f"Is it {ANSWER}?"
    if kind in ("number", "integer"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 1)
        value = 0.9 if low <= 0.9 <= high else low
        return int(value) if kind == "integer" else value
    return False if kind == "boolean" else None


def answer_anything(request: Request) -> Any:
    if request.json_schema is not None:
        return fill(request.json_schema)
    system = next((m.content for m in request.messages if m.role == "system"), "")
    asked = FORMAT_SENTENCE.search(system)
    return json.dumps(fill(json.loads(asked.group(1)))) if asked else REPLY


def main() -> int:
    backend = ScriptedBackend(answer_anything, latency_s=0.005)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    return run(make_app(opener), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
