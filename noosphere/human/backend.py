"""A person behind the model interface: a member whose turns are answered by somebody rather than by weights.

`HumanBackend` serves a `Request` by asking a person through a `Channel`: the request's last message is the
prompt, its JSON schema the form, and the filled-in form goes back as the JSON a model would have written.
So a person sits in any seat a model can (a society's member, organizer, leader, a role-play's user) and
everything above the model layer treats the turn as any other: the form is validated, the turn is traced
(a `model_call` of model `human`, whose latency is the person's), replayed from the run's cache on a resume,
and counted as a call (of no tokens).

A person who does not answer within `timeout_s` forfeits the turn (`NoAnswer`, a runtime fault, under the
forfeit policy of `noosphere.concurrent`); the forfeit is kept in the run's answer book so that a resumed
run forfeits the same turn again instead of asking anew.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, NoReturn

from noosphere.human.book import AnswerBook
from noosphere.human.channel import Channel, NoAnswer, Question
from noosphere.human.events import HumanAnswered, HumanAsked, HumanForfeited
from noosphere.human.forms import FormError, fields_of, read_answer, reply_text
from noosphere.llm.cache import request_key
from noosphere.llm.messages import Message
from noosphere.llm.types import Capabilities, Reply, Request, Usage
from noosphere.trace import Event, Trace

HUMAN_MODEL = "human"
QUESTION_ID_CHARS = 16


class HumanBackend:
    """One person, answering as the member `name`. `trace`: where the questions and answers are told (a
    member sets it when it joins a run); `book`: the run folder's answer book, for resumes and forfeits."""

    native_tools = False
    in_process = True  # no wall-clock timeout from `Model`, whose timeouts are retried: the person's is below
    context_window: int | None = None
    max_concurrency = 1

    def __init__(self, name: str, channel: Channel, *, role: str = "", timeout_s: float | None = None,
                 book: AnswerBook | None = None, trace: Trace | None = None) -> None:
        self.name = name
        self.channel = channel
        self.role = role
        self.timeout_s = timeout_s
        self.book = book
        self.trace = trace
        self.model_id = HUMAN_MODEL
        self.capabilities = Capabilities(json_schema=True)

    @property
    def fingerprint(self) -> str:
        """Per person: two people asked the same question do not share an answer through a cache."""
        return f"human:{self.name}"

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        return None

    def question_id(self, request: Request) -> str:
        """The same turn gets the same id in every session of a run (it is the request's cache key)."""
        return request_key(self.fingerprint, request)[:QUESTION_ID_CHARS]

    def _emit(self, event: Event) -> None:
        if self.trace is not None:
            self.trace.emit(event)

    async def generate(self, request: Request) -> Reply:
        prompt = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        question = Question(self.question_id(request), self.name, prompt, fields_of(request.json_schema),
                            self.role, self.timeout_s)
        saved = self.book.entry(question.id) if self.book is not None else None
        if saved is not None and "forfeit" in saved:  # forfeited in an earlier session: forfeited again
            self._forfeit(question, str(saved["forfeit"]))
        self._emit(HumanAsked(question=question.id, member=self.name, prompt=prompt, channel=self.channel.name,
                              fields=[field.to_json() for field in question.fields], timeout_s=self.timeout_s))
        started = time.perf_counter()
        if saved is not None:  # answered in the viewer while the run was stopped
            values, by = self._checked(question, saved.get("answer") or {}), "saved"
        else:
            try:
                values = await asyncio.wait_for(self.channel.ask(question), self.timeout_s)
            except TimeoutError:
                self._forfeit(question, f"{self.name} gave no answer within {self.timeout_s:g} s")
            by = self.channel.name
            if self.book is not None:
                self.book.answer(question.id, self.name, values, by)
        seconds = round(time.perf_counter() - started, 3)
        self._emit(HumanAnswered(question=question.id, member=self.name, seconds=seconds, by=by))
        return Reply(reply_text(question.fields, values), usage=Usage(0, 0))

    def _checked(self, question: Question, given: dict[str, Any]) -> dict[str, Any]:
        try:
            return read_answer(question.fields, given)
        except FormError as wrong:
            self._forfeit(question, f"the saved answer does not fit the form: {wrong}")

    def _forfeit(self, question: Question, reason: str) -> NoReturn:
        if self.book is not None:
            self.book.forfeit(question.id, self.name, reason)
        self._emit(HumanForfeited(question=question.id, member=self.name, reason=reason))
        raise NoAnswer(reason)
