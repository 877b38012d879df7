"""Tool calling for backends without a native tool API, as schema-constrained JSON.

The model answers `{"tool_calls": [{"name": ..., "arguments": {...}}]}`; with a grammar-capable
backend the names and argument shapes are enforced while decoding. An empty list means "call
nothing", which matters as much as calling right (BFCL's irrelevance category).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from pydantic import BaseModel, Field, model_validator

from noosphere.llm.types import ToolCall, ToolSpec


class _Call(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


UNPARSED = "__unparsed__"
"""The key a backend puts a provider's tool arguments under when they are not a JSON object (checked as an error)."""


class ToolCallsOutput(BaseModel):
    tool_calls: list[_Call]

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, data: Any) -> Any:
        """A call written without the wrapper (`{"name": ..., "arguments": ...}`, or a list of them) is that call;
        a reply with neither is an error for the model, not a decision to call nothing."""
        if isinstance(data, dict) and "tool_calls" not in data and "name" in data:
            return {"tool_calls": [data]}
        if isinstance(data, list) and data and all(isinstance(item, dict) and "name" in item for item in data):
            return {"tool_calls": data}
        return data


def tool_calls_schema(tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
    """The schema of a reply that calls `tools`. A tool whose parameters refer within themselves (`#/$defs/...`, as
    a pydantic model's schema does) has them kept under the reply's `$defs` and its references moved there with
    them: nested in the reply's schema as they are, they would point into the reply's root, where a local model's
    grammar found nothing (an AssertionError) and a schema-checking provider nothing either."""
    defs: dict[str, Any] = {}
    variants = []
    for index, tool in enumerate(tools):
        arguments = tool.parameters
        if _has_local_ref(arguments):
            defs[f"tool{index}"] = _moved_refs(arguments, f"#/$defs/tool{index}")
            arguments = {"$ref": f"#/$defs/tool{index}"}
        variants.append({"type": "object", "properties": {"name": {"const": tool.name}, "arguments": arguments},
                         "required": ["name", "arguments"]})
    schema: dict[str, Any] = {"type": "object",
                              "properties": {"tool_calls": {"type": "array", "items": {"anyOf": variants}}},
                              "required": ["tool_calls"]}
    return {**schema, "$defs": defs} if defs else schema


def _has_local_ref(node: Any) -> bool:
    if isinstance(node, list):
        return any(_has_local_ref(item) for item in node)
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    return (isinstance(ref, str) and ref.startswith("#")) or any(
        _has_local_ref(value) for key, value in node.items() if key not in ("const", "enum", "default", "examples"))


def _moved_refs(node: Any, root: str) -> Any:
    """`node` with each reference to its own root (`#`, `#/...`) made one to `root` (`#/$defs/tool0`, `...`)."""
    if isinstance(node, list):
        return [_moved_refs(item, root) for item in node]
    if not isinstance(node, dict):
        return node
    moved = {key: value if key in ("const", "enum", "default", "examples") else _moved_refs(value, root)
             for key, value in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        moved["$ref"] = root + ref[1:]
    return moved


def tool_instruction(tools: tuple[ToolSpec, ...]) -> str:
    listing = "\n".join(
        f"- {tool.name}: {tool.description} Arguments schema: {json.dumps(tool.parameters, separators=(',', ':'))}"
        for tool in tools
    )
    return (
        "You can call these functions:\n" + listing + "\n"
        'Reply with one JSON object {"tool_calls": [{"name": ..., "arguments": {...}}, ...]} listing every '
        "call needed, in order. If no function fits the request, reply {\"tool_calls\": []}."
    )


def check_tool_calls(parsed: ToolCallsOutput, tools: tuple[ToolSpec, ...]) -> tuple[tuple[ToolCall, ...], str | None]:
    """Validate names and arguments; return the calls and an error message for the model, if any."""
    by_name = {tool.name: tool for tool in tools}
    calls = []
    for index, call in enumerate(parsed.tool_calls):
        tool = by_name.get(call.name)
        if tool is None:
            return (), f"tool_calls.{index}.name: {call.name!r} is not one of {sorted(by_name)}"
        if UNPARSED in call.arguments:
            return (), f"tool_calls.{index}.arguments: not a JSON object: {str(call.arguments[UNPARSED])[:200]}"
        try:
            jsonschema.validate(call.arguments, tool.parameters)
        except jsonschema.ValidationError as exc:
            where = ".".join(str(p) for p in exc.absolute_path) or "(arguments)"
            return (), f"tool_calls.{index}.arguments.{where}: {exc.message}"
        except jsonschema.SchemaError:
            pass  # a loose schema from the caller is their business; the call itself is kept
        calls.append(ToolCall(name=call.name, arguments=call.arguments, id=f"call_{index}"))
    return tuple(calls), None
