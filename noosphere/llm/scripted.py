"""The scripted backend for tests: replies from a queue or a function, with the prompt history.

It goes through the same `Model` as real backends, so tests exercise parsing, repair, retries,
caching and tracing for real. A reply may be text, a `Reply`, or an exception to raise (to test
provider faults). An optional latency makes concurrency measurable.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from noosphere.errors import ScriptExhaustedError
from noosphere.llm.messages import Message
from noosphere.llm.types import Capabilities, Reply, Request, ScoreReply, ScoreRequest, Usage

ScriptItem = str | Reply | BaseException | dict[str, Any]
Script = Iterable[ScriptItem] | Callable[[Request], ScriptItem]
Scorer = Callable[[ScoreRequest], Mapping[str, float] | Sequence[float] | BaseException]
"""Option scores for tests: each option's probability (or any positive weight; they are turned into
log-probabilities), by option or in order; an exception is raised as a provider fault would be."""


def _as_reply(item: ScriptItem, request: Request) -> Reply:
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, dict):
        item = json.dumps(item)
    if isinstance(item, str):
        prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        return Reply(item, usage=Usage(prompt_tokens, len(item.split())))
    return item


class ScriptedBackend:
    """Answers from a script. `history` holds every request, in the order it arrived."""

    native_tools = False
    in_process = False  # it plays a provider: its latency can exceed a timeout
    context_window: int | None = None

    def __init__(self, script: Script, *, latency_s: float = 0.0, capabilities: Capabilities | None = None,
                 max_concurrency: int = 64, model_id: str = "scripted", scorer: Scorer | None = None,
                 deterministic: bool = False) -> None:
        """`scorer` makes the model able to score options (`capabilities.logprobs`). A script answers the same
        whatever runs beside it, so `deterministic` changes nothing here; it is kept, for tests to see that it
        reached the backend."""
        self.model_id = model_id
        self.deterministic = deterministic
        self.capabilities = capabilities or Capabilities(vision=True, audio=True, tools=True, json_schema=True,
                                                         logprobs=scorer is not None)
        self.scorer = scorer
        self.score_history: list[ScoreRequest] = []
        self.max_concurrency = max_concurrency
        self.latency_s = latency_s
        self.history: list[Request] = []
        self._function = script if callable(script) else None
        self._queue: deque[ScriptItem] = deque() if callable(script) else deque(script)
        self._identity = uuid.uuid4().hex[:12]  # never reused, as id(self) is once the backend is collected

    @property
    def fingerprint(self) -> str:
        return "scripted:" + self._identity

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        return sum(len(m.content.split()) for m in messages)

    @property
    def prompts(self) -> list[str]:
        """The last user message of every request: what most tests want to look at."""
        return [next((m.content for m in reversed(r.messages) if m.role == "user"), "") for r in self.history]

    async def score(self, request: ScoreRequest) -> ScoreReply:
        self.score_history.append(request)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if self.scorer is None:
            raise ScriptExhaustedError(len(self.history))
        given = self.scorer(request)
        if isinstance(given, BaseException):
            raise given
        weights = ([float(given.get(option, 0.0)) for option in request.options] if isinstance(given, Mapping)
                   else [float(w) for w in given])
        if len(weights) != len(request.options):
            raise ValueError(f"the scorer gave {len(weights)} scores for {len(request.options)} options")
        logprobs = tuple(math.log(w) if w > 0 else -math.inf for w in weights)
        prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        return ScoreReply(logprobs, tuple(max(1, len(o.split())) for o in request.options),
                          Usage(prompt_tokens * len(request.options), 0))

    async def generate(self, request: Request) -> Reply:
        self.history.append(request)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        if self._function is not None:
            return _as_reply(self._function(request), request)
        if not self._queue:
            raise ScriptExhaustedError(len(self.history))
        return _as_reply(self._queue.popleft(), request)
