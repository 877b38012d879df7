"""The one extension point of the model layer: a backend turns a `Request` into a `Reply`.

Everything else (capability checks, structured output, repair and retry, provider-fault retries,
caching, tracing, usage) lives once in `Model` on top of it, so a new provider is one small class.

Two methods are optional, for a backend that can score options: `async score(ScoreRequest) -> ScoreReply` (the
summed log-probability of each option's tokens), and `check_score(ScoreRequest) -> None`, which `Model` calls before
the call is counted, to refuse what only the backend's tokenizer knows (an option that tokenizes to nothing).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from noosphere.llm.messages import Message
from noosphere.llm.types import Capabilities, Reply, Request


@runtime_checkable
class Backend(Protocol):
    model_id: str
    capabilities: Capabilities
    native_tools: bool
    """True when the backend returns tool calls itself; otherwise `Model` emulates them with JSON."""
    max_concurrency: int
    context_window: int | None
    in_process: bool
    """True when the work of a call is bounded by its `max_tokens` alone (an embedded model). `Model`
    then applies no wall-clock timeout: on a busy engine a timeout would only throw decoded work away."""

    @property
    def fingerprint(self) -> str:
        """Identifies the exact weights or endpoint, so cached replies never cross models."""
        ...

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        """Prompt tokens of these messages, or None when the backend cannot tell."""
        ...

    async def generate(self, request: Request) -> Reply:
        """Serve one request. Raise `ModelError` (with `retryable`) for provider faults."""
        ...
