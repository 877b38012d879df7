"""OpenAI's chat-completions wire format, as much of it as `noosphere serve` speaks: the request read at the edge,
the conversation it holds, and the replies, chunks and error objects written back.

Requests are checked here, before any run starts: a body that is not a chat request, a content part that is not
text, a parameter no system can honour (`n` above 1, `tools`, a `tool_choice` that requires a call, `logprobs`) is a
`Refused` with the status and the error object OpenAI would send. Parameters that change nothing here (`max_tokens`,
`user`, `presence_penalty`, ...) are accepted and left alone, so that clients which always send them keep working.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import unquote

import jsonschema
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from noosphere.errors import UsageError

EXTENSION = "noosphere"
"""The top-level field of every reply and chunk that carries what OpenAI's format has no place for (the run, its
phases, the confidence). Clients read the fields they know and ignore it."""


class Refused(UsageError):
    """A request the server will not run, with the HTTP status and OpenAI error object that say why."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        return error_body(str(self), type=self.type, param=self.param, code=self.code)


def error_body(message: str, *, type: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


Flag = Annotated[bool, BeforeValidator(lambda value: False if value is None else value)]
"""A switch that is off when null: OpenAI's API takes `"stream": null` as its default, and clients that send every
field they have send it."""


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None
    refusal: str | None = None
    """What an assistant's `refusal` part (OpenAI's, when a model declined) says."""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None

    def text(self, index: int) -> str:
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        texts = []
        for number, part in enumerate(self.content):
            said = {"text": part.text, "refusal": part.refusal}.get(part.type)
            if said is None and part.type in ("text", "refusal"):
                raise Refused(400, f"a content part of type {part.type!r} needs its {part.type!r} string",
                              param=f"messages.{index}.content.{number}.{part.type}")
            if said is None:
                raise Refused(400, f"content parts of type {part.type!r} are not served; send text",
                              param=f"messages.{index}.content.{number}.type")
            texts.append(said)
        return "\n".join(texts)


class JsonSchemaFormat(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str = "reply"
    json_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"}, alias="schema")


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None

    def schema_wanted(self) -> dict[str, Any] | None:
        """The JSON schema the reply must follow; None for plain text."""
        if self.type == "text":
            return None
        if self.type == "json_object" or self.json_schema is None:
            return {"type": "object"}
        return self.json_schema.json_schema


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: Flag = False


class ChatRequest(BaseModel):
    """A chat-completions request; unknown fields are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: Flag = False
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    seed: int | None = None
    n: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    response_format: ResponseFormat | None = None
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    function_call: str | dict[str, Any] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None

    @classmethod
    def parse(cls, body: bytes) -> ChatRequest:
        """The request in `body`, or `Refused` (400) naming the first thing wrong with it."""
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise Refused(400, f"the request body is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise Refused(400, "the request body must be a JSON object")
        _check_text(data)
        try:
            request = cls.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(step) for step in error["loc"]) or None
            raise Refused(400, f"{where or 'body'}: {error['msg']}", param=where) from None
        request.check_supported()
        return request

    @property
    def stop_sequences(self) -> list[str]:
        return [sequence for sequence in ([self.stop] if isinstance(self.stop, str) else self.stop or []) if sequence]

    def until_stop(self, reply: str) -> str:
        """The reply as `stop` leaves it, as OpenAI's API does: up to the first stop sequence in it, without it."""
        return reply[:min((reply.find(s) for s in self.stop_sequences if s in reply), default=len(reply))]

    def check_supported(self) -> None:
        if self.n not in (None, 1):
            raise Refused(400, "n must be 1: each request is one run of the system, with one answer", param="n")
        if self.tools or self.functions:
            raise Refused(400, "tools are not served: a noosphere system answers, it does not call your functions",
                          param="tools" if self.tools else "functions")
        if self.tool_choice not in (None, "none", "auto") or isinstance(self.function_call, dict):
            raise Refused(400, "a tool call cannot be required: tools are not served, a noosphere system answers in "
                               "text", param="tool_choice" if self.tool_choice is not None else "function_call")
        if self.logprobs or self.top_logprobs:
            raise Refused(400, "logprobs are not served: the answer comes from a whole run, not from one sampling",
                          param="logprobs" if self.logprobs else "top_logprobs")
        if self.stream_options is not None and not self.stream:  # as OpenAI's API answers it
            raise Refused(400, "stream_options is only allowed when stream is true", param="stream_options")
        schema = self.response_format.schema_wanted() if self.response_format is not None else None
        if schema is not None:
            where = "response_format.json_schema.schema"
            if _depth(schema) > MAX_SCHEMA_DEPTH:
                raise Refused(400, f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels", param=where)
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise Refused(400, f"not a JSON schema: {exc.message}", param=where) from None
            except Exception as exc:  # jsonschema's own checks fail on some garbage ("$schema": [] is unhashable)
                raise Refused(400, f"not a JSON schema ({type(exc).__name__}: {exc})", param=where) from None
            if schema.get("type") != "object":
                raise Refused(400, 'the schema of a reply describes an object ("type": "object")', param=where)
            ref = _unresolved_ref(schema, schema)
            if ref is not None:
                raise Refused(400, f"the schema's $ref {ref!r} points at nothing in it; only references within the "
                                   "schema (#/$defs/NAME) are followed, nothing is fetched", param=where)


def _check_text(data: dict[str, Any]) -> None:
    """A string escape that is half of a UTF-16 pair (`"\\ud800"`): JSON parsers take it, but it is no character, and
    the run's UTF-8 trace could not hold it (a 500, with the run folder left behind)."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Refused(400, f"the request body holds {exc.object[exc.start:exc.end]!r}, half of a UTF-16 surrogate "
                           "pair, which is no character; send text as UTF-8") from None


MAX_SCHEMA_DEPTH = 32
"""How deeply a reply's schema may nest (objects and lists inside one another); far beyond any reply's shape."""


_VALUES = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose value is data, not a schema: a "$ref" key in it is no reference."""


def _unresolved_ref(node: Any, root: dict[str, Any]) -> str | None:
    """The first `$ref` under `node` that is no JSON pointer into `root` (a remote schema, a name that is not there):
    the run's check of the reply, and a local model's grammar, would fail on it after the system had run."""
    if isinstance(node, list):
        return next((ref for item in node if (ref := _unresolved_ref(item, root)) is not None), None)
    if not isinstance(node, dict):
        return None
    ref = node.get("$ref")
    if isinstance(ref, str) and not _points_into(root, ref):
        return ref
    return next((found for key, value in node.items()
                 if key not in _VALUES and (found := _unresolved_ref(value, root)) is not None), None)


def _points_into(root: dict[str, Any], ref: str) -> bool:
    if ref == "#":
        return True
    if not ref.startswith("#/"):
        return False
    target: Any = root
    for step in ref[2:].split("/"):
        step = unquote(step).replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and step in target:
            target = target[step]
        elif isinstance(target, list) and step.isdigit() and int(step) < len(target):
            target = target[int(step)]
        else:
            return False
    return True


def _depth(value: Any, limit: int = MAX_SCHEMA_DEPTH + 1) -> int:
    """How deeply `value` nests, counted no further than `limit` (so a hostile schema is not walked whole)."""
    if limit <= 0 or not isinstance(value, dict | list):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(child, limit - 1) for child in children), default=0)


@dataclass(frozen=True)
class Conversation:
    """A request's messages as a system sees them: the instructions (system and developer messages), the earlier
    turns, and the user's last message, which is the question."""

    instructions: str
    turns: tuple[tuple[str, str], ...]
    question: str

    @classmethod
    def of(cls, messages: list[ChatMessage]) -> Conversation:
        texts = [(message.role, message.text(index)) for index, message in enumerate(messages)]
        last_role, question = texts[-1]
        if last_role != "user" or not question.strip():
            raise Refused(400, "the last message must be the user's, with the question in it",
                          param=f"messages.{len(texts) - 1}")
        instructions = "\n\n".join(text for role, text in texts[:-1] if role in ("system", "developer") and text)
        turns = tuple((role, text) for role, text in texts[:-1] if role not in ("system", "developer"))
        return cls(instructions, turns, question)

    @property
    def characters(self) -> int:
        """The length of the instructions and of what the system is asked: the query, with a line per earlier turn
        (so that thousands of short turns count as the query they make, not as their texts alone)."""
        return len(self.instructions) + len(self.query)

    @property
    def query(self) -> str:
        """What the system is asked: the question, after the earlier turns when there are any."""
        if not self.turns:
            return self.question
        earlier = "\n".join(f"{role}: {text}" for role, text in self.turns)
        return f"Earlier in this conversation:\n{earlier}\n\nThe question now:\n{self.question}"


def usage_of(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def completion_id(run_id: str) -> str:
    return f"chatcmpl-{run_id}"


def completion(run_id: str, model: str, content: str, usage: dict[str, int], extension: dict[str, Any]
               ) -> dict[str, Any]:
    """A whole reply (`chat.completion`)."""
    return {"id": completion_id(run_id), "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": usage, EXTENSION: extension}


def chunk(run_id: str, model: str, *, delta: dict[str, Any] | None = None, finish: str | None = None,
          extension: dict[str, Any] | None = None, usage: dict[str, int] | None = None,
          choices: bool = True) -> dict[str, Any]:
    """One streamed piece (`chat.completion.chunk`). A phase of the run is a chunk with an empty delta and the
    event in the extension field; the usage chunk at the end has no choices, as OpenAI's has."""
    data: dict[str, Any] = {"id": completion_id(run_id), "object": "chat.completion.chunk",
                            "created": int(time.time()), "model": model,
                            "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
                            if choices else []}
    if usage is not None:
        data["usage"] = usage
    if extension is not None:
        data[EXTENSION] = extension
    return data


def sse(data: dict[str, Any] | str) -> str:
    """One server-sent event: `data: <json>` and a blank line."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text}\n\n"
