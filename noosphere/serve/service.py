"""What a server holds between requests: its systems, its models, its settings, and what every request must pass
before a run is started for it (the prompt's size, the server's own budget)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from noosphere.llm import Budget, Message, Settings
from noosphere.llm.allowance import Allowance
from noosphere.redact import Redactor
from noosphere.runs import Run
from noosphere.serve.protocol import ChatRequest, Conversation, Refused
from noosphere.serve.systems import ModelPool, ServedSystem

DisconnectAction = Literal["cancel", "finish"]
DISCONNECT_ACTIONS: tuple[DisconnectAction, ...] = ("cancel", "finish")


@dataclass(frozen=True)
class ServeSettings:
    default_model: str
    """The model of every system (and of society members that name none)."""
    out: Path = Path("runs")
    """The folder that receives a run folder per request."""
    api_key: str | None = None
    """The key clients must send (`Authorization: Bearer KEY`); None: any key, or none, is let in."""
    seed: int = 0
    """The seed of a request that gives none."""
    budget: dict[str, Any] | None = None
    """What one request's run may spend (the fields of `Budget`), saved in its config as `ask --budget` is."""
    total_budget: Budget | None = None
    """What all the requests together may spend while the server runs."""
    max_prompt_chars: int = 32_000
    """The longest conversation a request may send: its instructions and the query its messages make
    (`Conversation.characters`)."""
    max_body_bytes: int = 1_000_000
    """The largest request body read at all."""
    on_disconnect: DisconnectAction = "cancel"
    """What the run of a client that goes away does: stop where it is, or finish and keep its answer."""
    on_run: Callable[[Run], None] | None = None
    """Called with each request's run as soon as it exists (the command line's `--otel` attaches its exporter)."""
    keepalive_s: float = 15.0
    """Seconds of silence after which a stream sends a comment line, so proxies keep it open and a client that
    has gone is noticed."""


class Service:
    """The systems by model name, one `Model` per model id, and the server's budget across requests."""

    def __init__(self, systems: list[ServedSystem], pool: ModelPool, settings: ServeSettings) -> None:
        self.systems = {system.name: system for system in systems}
        self.pool = pool
        self.settings = settings
        self.allowance = Allowance(settings.total_budget) if settings.total_budget is not None else None
        self.redactor = Redactor.from_environment((settings.api_key,) if settings.api_key else ())
        self.started = int(time.time())
        self.background: set[asyncio.Task[Any]] = set()
        """Runs that go on after their client left (`on_disconnect="finish"`): kept so they are not collected, and
        cancelled if the server stops first."""

    def open_models(self) -> None:
        for system in self.systems.values():
            system.open_models(self.pool, self.settings.default_model)

    def system(self, name: str) -> ServedSystem:
        if name not in self.systems:
            known = ", ".join(self.systems)
            raise Refused(404, f"The model {name!r} does not exist here; this server serves {known}.",
                          param="model", code="model_not_found")
        return self.systems[name]

    def run_settings(self, request: ChatRequest) -> Settings:
        """The sampling settings of a request's model calls: the server's, with the request's temperature, top_p
        and seed where it gives them (a society member with a temperature of its own keeps it)."""
        base = self.pool.get(self.settings.default_model).settings
        return base.with_(seed=self.settings.seed if request.seed is None else request.seed,
                          temperature=base.temperature if request.temperature is None else request.temperature,
                          top_p=base.top_p if request.top_p is None else request.top_p)

    def check_prompt(self, conversation: Conversation) -> None:
        """A conversation longer than the server takes, or than the model's context window, is refused before any
        run starts, with OpenAI's code for it."""
        limit = self.settings.max_prompt_chars
        if conversation.characters > limit:
            raise Refused(400, f"The messages hold {conversation.characters} characters; this server takes at most "
                               f"{limit} (--max-prompt-chars).", param="messages", code="context_length_exceeded")
        model = self.pool.get(self.settings.default_model)
        window = model.backend.context_window
        if window is None:
            return
        messages = (Message.system(conversation.instructions), Message.user(conversation.query))
        tokens = model.backend.count_tokens(messages)
        room = window - model.settings.max_tokens
        if tokens is not None and tokens > room:
            raise Refused(400, f"The messages are {tokens} tokens; {model.id} has room for {room} in its context "
                               f"window of {window}.", param="messages", code="context_length_exceeded")

    def check_budget(self) -> None:
        """Refuse a request outright once the server's own budget is spent (429, as a quota that ran out)."""
        if self.allowance is not None:
            spent = self.allowance
            spent.budget.check(spent.calls, spent.tokens, spent.cost_usd, owner=spent)

    def keep(self, task: asyncio.Task[Any]) -> None:
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def stop(self) -> None:
        """Cancel the runs still going after their clients left; each writes its folder as cancelled."""
        for task in list(self.background):
            task.cancel()
        await asyncio.gather(*self.background, return_exceptions=True)
