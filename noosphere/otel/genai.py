"""Model calls as OpenTelemetry GenAI spans: names and attributes after the GenAI semantic conventions.

A `model_call` event becomes a `chat {model}` client span: provider, requested and answering model, token
usage, finish reason, the agent that called; its duration is the call's latency. An `options_scored` event
(option probabilities from one forward pass) becomes a `text_completion {model}` span, a tool run an
`execute_tool {tool}` span. Prompts and completions are attached only when asked for (`content=True`), as the
conventions' opt-in `gen_ai.system_instructions`, `gen_ai.input.messages` and `gen_ai.output.messages`, and
every string passes through the run's `Redactor` first, as the lines of a trace file do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from noosphere.trace import ModelCall, OptionsScored

AttributeValue = str | bool | int | float | list[str] | list[float] | list[int]
Attributes = dict[str, AttributeValue]

# the GenAI semantic conventions' attribute names (gen_ai.*), spelled once
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
OUTPUT_TYPE = "gen_ai.output.type"
AGENT_NAME = "gen_ai.agent.name"
WORKFLOW_NAME = "gen_ai.workflow.name"
TOOL_NAME = "gen_ai.tool.name"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

PROVIDERS = {"local": "llama_cpp", "scripted": "noosphere.scripted", "human": "noosphere.human"}
"""Providers by the prefix of a noosphere model id; `litellm:<provider>/<model>` names its own."""


def provider_and_model(model_id: str) -> tuple[str, str]:
    """`litellm:openai/gpt-4o` -> ("openai", "gpt-4o"); `local:qwen2.5-coder-1.5b` -> ("llama_cpp", ...)."""
    prefix, sep, rest = model_id.partition(":")
    if not sep:
        return PROVIDERS.get(model_id, model_id), model_id
    if prefix == "litellm":
        provider, slash, model = rest.partition("/")
        return (provider, model) if slash else ("litellm", rest)
    return PROVIDERS.get(prefix, prefix), rest


def _text_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": str(message.get("content", ""))}]
    for media in message.get("media") or ():  # reduced to a summary (kind and hash) in the trace already
        parts.append({"type": "blob", "modality": str(media.get("kind", "media")) if isinstance(media, dict)
                      else "media", "content": json.dumps(media, default=str)})
    return parts


def content_attributes(messages: list[dict[str, Any]], response: str, tool_calls: list[dict[str, Any]],
                       finish_reason: str) -> Attributes:
    """The opt-in content attributes: system instructions, input and output messages (JSON, as the
    conventions have them on spans)."""
    system = [part for m in messages if m.get("role") == "system" for part in _text_parts(m)]
    inputs = [{"role": m.get("role", "user"), "parts": _text_parts(m)} for m in messages if m.get("role") != "system"]
    parts: list[dict[str, Any]] = [{"type": "text", "content": response}] if response else []
    parts += [{"type": "tool_call", "name": call.get("name", ""), "arguments": call.get("arguments", {})}
              for call in tool_calls]
    out: Attributes = {INPUT_MESSAGES: json.dumps(inputs, ensure_ascii=False, default=str),
                       OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": parts,
                                                     "finish_reason": finish_reason}], ensure_ascii=False,
                                                   default=str)}
    if system:
        out[SYSTEM_INSTRUCTIONS] = json.dumps(system, ensure_ascii=False, default=str)
    return out


def call_span(event: ModelCall, *, content: bool) -> tuple[str, Attributes]:
    """The span name and attributes of one model call."""
    provider, model = provider_and_model(event.model)
    attributes: Attributes = {
        OPERATION: "chat", PROVIDER: provider, REQUEST_MODEL: model, RESPONSE_MODEL: model,
        INPUT_TOKENS: event.prompt_tokens, OUTPUT_TOKENS: event.completion_tokens,
        FINISH_REASONS: [event.finish_reason], OUTPUT_TYPE: "json" if event.schema_name else "text",
        "noosphere.model": event.model, "noosphere.call.attempt": event.attempt,
        "noosphere.call.cached": event.cached, "noosphere.call.latency_s": round(event.latency_s, 6)}
    if event.reused_prompt_tokens:
        attributes[CACHE_READ_TOKENS] = event.reused_prompt_tokens
    if event.agent:
        attributes[AGENT_NAME] = event.agent
    if event.schema_name:
        attributes["noosphere.call.schema"] = event.schema_name
    if event.cost_usd is not None:
        attributes["noosphere.call.cost_usd"] = event.cost_usd
    if event.tool_calls:
        attributes["noosphere.call.tool_calls"] = [str(call.get("name", "")) for call in event.tool_calls]
    if content:
        attributes.update(content_attributes(event.messages, event.response, event.tool_calls, event.finish_reason))
    return f"chat {model}", attributes


def scoring_span(event: OptionsScored, *, content: bool) -> tuple[str, Attributes]:
    """Option probabilities from one pass over the prompt: a completion that is scored, not sampled."""
    provider, model = provider_and_model(event.model)
    attributes: Attributes = {
        OPERATION: "text_completion", PROVIDER: provider, REQUEST_MODEL: model, RESPONSE_MODEL: model,
        INPUT_TOKENS: event.prompt_tokens, OUTPUT_TOKENS: 0, "noosphere.model": event.model,
        "noosphere.scores.method": event.method, "noosphere.scores.probs": [float(p) for p in event.probs],
        "noosphere.call.cached": event.cached, "noosphere.call.latency_s": round(event.latency_s, 6)}
    if event.agent:
        attributes[AGENT_NAME] = event.agent
    if content:
        attributes["noosphere.scores.options"] = list(event.options)
        attributes.update(content_attributes(event.messages, "", [], "stop"))
    return f"text_completion {model}", attributes


def redacted(attributes: Attributes, redact: Callable[[str], str]) -> Attributes:
    """Every string (and every string in a list) through the redactor."""
    out: Attributes = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            out[key] = redact(value)
        elif isinstance(value, list) and value and isinstance(value[0], str):
            out[key] = [redact(str(item)) for item in value]
        else:
            out[key] = value
    return out


def scalar(value: Any) -> AttributeValue | None:
    """A config value as an attribute: scalars as they are, lists of scalars as strings, the rest left out."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list) and all(isinstance(item, str | int | float | bool) for item in value):
        return [str(item) for item in value]
    return None
