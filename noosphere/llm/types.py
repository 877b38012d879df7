"""Value types of the model layer: what a request asks, what a backend answers, what a caller gets."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

from noosphere.llm.messages import Message

T = TypeVar("T")


@dataclass(frozen=True)
class Capabilities:
    """What a model can serve; a request needing more fails before any call is made."""

    vision: bool = False
    audio: bool = False
    tools: bool = False
    json_schema: bool = False
    logprobs: bool = False
    """The backend can score given options from token probabilities (`Model.score_options`)."""
    first_token_scores: bool = False
    """With `logprobs`: it scores only an option's first token (a provider's `top_logprobs`), so options must
    differ at their first token and cannot be scored after a prefix of the reply."""

    def missing(self, needed: set[str]) -> list[str]:
        return sorted(name for name in needed if not getattr(self, name))


@dataclass(frozen=True)
class Settings:
    """Sampling and fault settings of one call. Part of the cache key except the fault policy."""

    temperature: float = 0.0
    max_tokens: int = 512
    seed: int = 0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    timeout_s: float = 120.0
    """Wall-clock limit of one call to a provider; in-process backends ignore it (see `Backend.in_process`)."""
    max_retries: int = 2
    """How often an invalid structured output is sent back to the model with its error."""
    retry_temperature: float = 0.5
    """Temperature of the attempts after an invalid structured output (seeded, so reproducible)."""
    overflow: Literal["error", "truncate"] = "error"
    """What to do when the prompt does not fit: fail, or drop the oldest non-system messages."""

    def cache_key(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed,
                "top_p": self.top_p, "stop": list(self.stop)}

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call: a name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    reused_prompt_tokens: int = 0
    """Prompt tokens the backend did not evaluate again: a prefix the local engine still held, or a
    provider's prompt cache. Part of `prompt_tokens`; what a call really cost is the rest. 0 where the
    backend cannot tell (the serial local path, providers that do not report it); a reply from the call
    cache reports what the original call reused, as it reports the original call's tokens."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None and other.cost_usd is None else (
            (self.cost_usd or 0.0) + (other.cost_usd or 0.0))
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens, cost,
                     self.reused_prompt_tokens + other.reused_prompt_tokens)


@dataclass(frozen=True)
class Request:
    """Everything a backend needs for one generation."""

    messages: tuple[Message, ...]
    settings: Settings = Settings()
    json_schema: dict[str, Any] | None = None
    tools: tuple[ToolSpec, ...] = ()
    agent: str | None = None
    """Who is asking (a processor, a member); for accounting and scripted routing, not the cache key."""
    logprobs: bool = False
    """The reply must carry its own log-probability (`Reply.logprob`): a model that cannot give one is refused."""

    def needs(self) -> set[str]:
        needed: set[str] = set()
        for message in self.messages:
            needed |= message.needs()
        if self.tools:
            needed.add("tools")
        if self.logprobs:
            needed.add("logprobs")
        return needed


@dataclass(frozen=True)
class Reply:
    """A backend's raw answer to one request."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str = "stop"
    logprob: float | None = None
    """With `Request.logprobs`: the sum of the generated tokens' log-probabilities under the model's own distribution
    (its logits before temperature, top-p or a grammar shaped the choice), over `usage.completion_tokens` tokens."""


@dataclass(frozen=True)
class ScoreRequest:
    """Score each option as the continuation of the prompt: the assistant's reply begins with `prefix`,
    then the option. Backends return the options' raw log-probabilities; `Model` normalises them."""

    messages: tuple[Message, ...]
    options: tuple[str, ...]
    prefix: str = ""
    agent: str | None = None
    timeout_s: float = Settings.timeout_s
    """Wall-clock limit of the provider's call (the caller's `Settings.timeout_s`); not part of the cache key."""

    def needs(self) -> set[str]:
        needed: set[str] = set()
        for message in self.messages:
            needed |= message.needs()
        return needed


@dataclass(frozen=True)
class ScoreReply:
    """A backend's raw scores: per option the summed log-probability of its tokens and their number.

    `method` is `logprob` for exact scores, and `first_token` where a provider only returned the first token's
    top alternatives: an option's score is then the log-probability of the first token it starts with, an
    approximation."""

    logprobs: tuple[float, ...]
    tokens: tuple[int, ...]
    usage: Usage = Usage()
    method: Literal["logprob", "first_token"] = "logprob"


@dataclass(frozen=True)
class Repair:
    """One fix applied to a reply on the way to a valid object (recorded in the trace)."""

    attempt: int
    kind: Literal["json_repaired", "invalid", "empty", "refusal"]
    detail: str


@dataclass(frozen=True)
class Completion(Generic[T]):
    """What a caller of `Model.complete` gets back."""

    text: str
    output: T | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    latency_s: float
    model_id: str
    attempts: int = 1
    repairs: tuple[Repair, ...] = ()
    cached: bool = False
    logprob: float | None = None
    """The reply's log-probability when the call asked for it (`complete(..., logprobs=True)`): the sum over its
    `logprob_tokens` generated tokens (the accepted attempt's, not a repaired one's)."""
    logprob_tokens: int = 0

    @property
    def token_probability(self) -> float | None:
        """The geometric mean of the generated tokens' probabilities, exp(logprob / tokens): the reply's probability
        normalised by its length, in (0, 1] (None without a log-probability)."""
        if self.logprob is None or self.logprob_tokens <= 0:
            return None
        return math.exp(self.logprob / self.logprob_tokens)
