"""One request, one run: its folder, the system running as a task of its own, and what the client is sent.

The run's models report into a trace that is also watched (`ObservedTrace`), so that a stream can send each phase
as it happens. The system runs as its own task so that the request can outlive it or it the request: a client
that goes away is noticed (the stream is closed, or the connection reports it), and the run is then cancelled or
left to finish, as the server's `on_disconnect` says; either way `result.json` and the trace say which.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import string
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from noosphere.errors import BudgetExceededError, ModelError, RuntimeFault, UsageError
from noosphere.llm import Model
from noosphere.llm.allowance import spending_from
from noosphere.runs import Run
from noosphere.serve.compose import compose, needs_composing
from noosphere.serve.events import AnswerReached, ClientDisconnected, phase_of
from noosphere.serve.protocol import (
    ChatRequest,
    Conversation,
    Refused,
    chunk,
    completion,
    error_body,
    sse,
    usage_of,
)
from noosphere.serve.service import Service
from noosphere.serve.systems import ServedSystem
from noosphere.systems import Answer
from noosphere.trace import Event, Trace

log = logging.getLogger(__name__)

HEADER_SAFE = string.punctuation.replace("%", "") + " "
"""What the run folder's header keeps as it is: printable ASCII but `%`; anything else is percent-encoded (a header
holds Latin-1 only, and an --out of `/home/дарья/runs` made every reply a 500 after its run had answered)."""


class ObservedTrace(Trace):
    """A run's trace, watched: every event is written to the run's trace, then handed to `watch`."""

    def __init__(self, inner: Trace, watch: Callable[[Event], None]) -> None:
        super().__init__(None, redactor=inner.redactor, keep=False)
        self.inner = inner
        self.events = inner.events
        self.watch = watch

    def emit(self, event: Event) -> None:
        self.inner.emit(event)
        self.watch(event)

    def close(self) -> None:
        """The run closes its own trace."""


@dataclass(frozen=True)
class Answered:
    content: str
    answer: Answer
    usage: dict[str, int]


@dataclass(frozen=True)
class Failed:
    refusal: Refused


Outcome = Answered | Failed


def server_stopped() -> Refused:
    """What a client still waiting is told when the server stops and its grace period is over (its run is cancelled):
    OpenAI's error object, not uvicorn's plain-text 500 or a stream cut off mid-chunk."""
    return Refused(503, "The server stopped before the answer; the run was cancelled.", type="server_error",
                   code="server_stopped")


def refusal_for(error: BaseException, service: Service) -> Refused:
    """What a client is told when a run stops on an error: a spent budget is 429 (and not worth retrying), a model
    that failed 502, anything else 500 (the run folder has the details). The request was checked before the run
    started, so a usage error inside it is the server's (its systems, models or files), not the client's."""
    if isinstance(error, BudgetExceededError):
        whose = "the server's budget (--total-budget)" if error.owner is service.allowance and error.owner is not None \
            else "this request's budget (--budget)"
        return Refused(429, f"{whose} is spent: {error}", type="insufficient_quota", code="insufficient_quota",
                       headers={"x-should-retry": "false"})
    if isinstance(error, Refused):
        return error
    if isinstance(error, ModelError):
        return Refused(502, f"the model failed: {error}", type="server_error", code="model_error")
    if isinstance(error, RuntimeFault | UsageError):
        return Refused(500, f"the run failed: {error}", type="server_error", code="run_failed")
    return Refused(500, f"internal error ({type(error).__name__}); the run folder has the details",
                   type="server_error")


@dataclass
class ServedRun:
    """Started by `start`, from within the server's event loop."""

    service: Service
    served: ServedSystem
    request: ChatRequest
    conversation: Conversation
    schema: dict[str, Any] | None
    run: Run
    queue: asyncio.Queue[Event | Outcome] = field(default_factory=asyncio.Queue)
    client_left: str | None = None
    """What the run did when its client left (`cancel`, `finish`); None while the client is there."""
    delivered: bool = False
    finishing: bool = False
    """The answer (or the error) is in; `result.json` is being written and the run can no longer be cancelled."""
    task: asyncio.Task[Outcome] | None = None

    @classmethod
    async def start(cls, service: Service, served: ServedSystem, request: ChatRequest, conversation: Conversation,
                    schema: dict[str, Any] | None) -> ServedRun:
        """Make the run folder (in a thread: its files are synced to disk, and the loop serves other requests
        meanwhile) and start the system."""
        settings = service.settings
        config = {"served_as": served.name, "system": served.system, "society": served.source,
                  "society_spec": served.society.model_dump() if served.society is not None else None,
                  "model": settings.default_model, "query": conversation.query,
                  "instructions": conversation.instructions, "response_format": schema, "stream": request.stream,
                  "seed": settings.seed if request.seed is None else request.seed,
                  "temperature": request.temperature, "top_p": request.top_p, "stop": request.stop_sequences,
                  "budget": settings.budget}
        run = await asyncio.to_thread(Run.create, settings.out, command="serve", config=config,
                                      redactor=service.redactor)
        if settings.on_run is not None:
            settings.on_run(run)
        served_run = cls(service, served, request, conversation, schema, run)
        served_run.task = asyncio.get_running_loop().create_task(served_run._execute())
        return served_run

    @property
    def extension(self) -> dict[str, Any]:
        return {"run_id": self.run.run_id, "run_dir": str(self.run.directory), "served_as": self.served.name}

    @property
    def headers(self) -> dict[str, str]:
        return {"x-noosphere-run-id": self.run.run_id,
                "x-noosphere-run-dir": quote(str(self.run.directory), safe=HEADER_SAFE)}

    def _post(self, item: Event | Outcome) -> None:
        """Events may come from a backend's thread: they join the queue on the loop, in the order posted."""
        loop = asyncio.get_running_loop() if self.task is None else self.task.get_loop()
        loop.call_soon_threadsafe(self.queue.put_nowait, item)

    async def _execute(self) -> Outcome:
        """The run, then its outcome posted: a reply, or a refusal (also when `result.json` cannot be written, so a
        stream is never left waiting)."""
        try:
            outcome = await self._answer()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # result.json could not be written (a full disk, a folder removed meanwhile)
            log.exception("a served run could not be finished: %s", self.run.directory)
            outcome = Failed(Refused(500, f"the run's result could not be written ({type(error).__name__}: {error})",
                                     type="server_error"))
        self._post(outcome)
        return outcome

    async def _answer(self) -> Outcome:
        trace = ObservedTrace(self.run.trace, self._post)
        settings = self.service.run_settings(self.request)
        default_model = self.service.settings.default_model

        def models(model_id: str) -> Model:
            return self.service.pool.bound(model_id, trace, self.run.ledger, settings)

        allowance = self.service.allowance
        answer: Answer | None = None
        try:
            with spending_from(allowance) if allowance is not None else contextlib.nullcontext():
                answer = await self.served.answer(models, default_model, self.conversation.query,
                                                  self.run.directory / "paintings")
                trace.emit(AnswerReached(served_as=self.served.name, answer=answer.answer,
                                         confidence=answer.confidence))
                content = answer.answer
                if needs_composing(self.conversation, self.schema):
                    content = await compose(models(default_model), self.conversation, answer, self.served.name,
                                            self.schema)
                content = self.request.until_stop(content)
        except asyncio.CancelledError:
            why = ("the client disconnected before the answer" if self.client_left == "cancel"
                   else "the server stopped before the answer")
            await self._finish(self._result(answer, None), status="cancelled", error=why)  # off the loop too
            raise
        except Exception as error:
            if not isinstance(error, RuntimeFault | UsageError):
                log.exception("a served run failed: %s", self.run.directory)
            status = "budget" if isinstance(error, BudgetExceededError) else "failed"
            await self._finish(self._result(answer, None), status=status, error=f"{type(error).__name__}: {error}")
            return Failed(refusal_for(error, self.service))
        total = self.run.ledger.total
        await self._finish(self._result(answer, content))
        return Answered(content, answer, usage_of(total.prompt_tokens, total.completion_tokens))

    async def _finish(self, result: dict[str, Any], status: str = "ok", error: str | None = None) -> None:
        """Write `result.json` in a thread; a cancellation meanwhile (the server stopping) lets it complete."""
        self.finishing = True
        await asyncio.shield(asyncio.to_thread(self.run.finish, result, status=status, error=error))

    def _result(self, answer: Answer | None, content: str | None) -> dict[str, Any]:
        return {"query": self.conversation.query, "served_as": self.served.name,
                "answer": answer.answer if answer is not None else None,
                "confidence": answer.confidence if answer is not None else None, "reply": content,
                "client": "disconnected" if self.client_left else "connected"}

    def client_gone(self) -> None:
        """The client left before its reply: cancel the run, or let it finish, as the server says."""
        assert self.task is not None
        if self.task.done() or self.finishing or self.client_left is not None:
            return
        self.client_left = self.service.settings.on_disconnect
        self.run.trace.emit(ClientDisconnected(action=self.client_left))
        if self.client_left == "cancel":
            self.task.cancel()
        else:
            self.service.keep(self.task)

    async def reply(self, disconnected: Callable[[], Awaitable[Any]]) -> Outcome | None:
        """The outcome for a whole (not streamed) reply; None when the client left first."""
        assert self.task is not None
        watcher = asyncio.ensure_future(disconnected())
        try:
            await asyncio.wait({self.task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the server is stopping
            self.client_gone()
            raise
        finally:
            watcher.cancel()
        if not self.task.done():
            self.client_gone()
            return None
        self.delivered = True
        return self.task.result()

    async def stream(self) -> AsyncIterator[str]:
        """Server-sent events: a first chunk with the run, a chunk per phase as it happens (an empty delta, the
        event in the `noosphere` field), the reply's content, the finishing chunk, usage if asked, `[DONE]`."""
        rid, name = self.run.run_id, self.served.name
        include_usage = bool(self.request.stream_options and self.request.stream_options.include_usage)
        try:
            yield sse(chunk(rid, name, delta={"role": "assistant", "content": ""}, extension=self.extension))
            while True:
                try:
                    item = await asyncio.wait_for(self.queue.get(), self.service.settings.keepalive_s)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                except asyncio.CancelledError:  # the server stopped (or the client left: then nothing is sent)
                    self.client_gone()
                    stopped = server_stopped()
                    yield sse(error_body(str(stopped), type=stopped.type, code=stopped.code))
                    yield sse("[DONE]")
                    return
                if isinstance(item, Event):
                    phase = phase_of(item, self.service.redactor)
                    yield sse(chunk(rid, name, extension={"run_id": rid, "phase": phase}))
                    continue
                if isinstance(item, Answered):
                    yield sse(chunk(rid, name, delta={"content": item.content}, extension={"run_id": rid}))
                    yield sse(chunk(rid, name, finish="stop", extension={
                        **self.extension, "status": "ok", "answer": item.answer.answer,
                        "confidence": item.answer.confidence}))
                    if include_usage:
                        yield sse(chunk(rid, name, choices=False, usage=item.usage, extension={"run_id": rid}))
                else:
                    yield sse(error_body(str(item.refusal), type=item.refusal.type, param=item.refusal.param,
                                         code=item.refusal.code))
                self.delivered = True
                yield sse("[DONE]")
                return
        finally:
            if not self.delivered:
                self.client_gone()

    def response_body(self, outcome: Answered) -> dict[str, Any]:
        return completion(self.run.run_id, self.served.name, outcome.content, outcome.usage,
                          {**self.extension, "status": "ok", "answer": outcome.answer.answer,
                           "confidence": outcome.answer.confidence})
