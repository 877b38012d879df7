"""How a person is asked: a `Channel` takes a question (a prompt and a form) and returns the values filled in.

`ViewerChannel` asks through the run folder: the question goes into the run's trace, the page of
`noosphere view RUN` shows it with a text box, and the answer comes back through `human/answers.jsonl`.
`ListChannel` answers from a list (for scripts and tests); the terminal's is in `terminal.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from noosphere.errors import NoosphereError, TurnRefused
from noosphere.human.book import AnswerBook
from noosphere.human.forms import Field, FormError, read_answer


@dataclass(frozen=True)
class Question:
    """One question put to a person: the asking member, the prompt, the form to fill in (`fields`) and how long
    to wait for an answer (`None`: as long as it takes)."""

    id: str
    member: str
    prompt: str
    fields: tuple[Field, ...]
    role: str = ""
    timeout_s: float | None = None


class NoAnswer(TurnRefused):
    """A person did not answer in time: the turn is forfeited, as a member's failed turn is."""


class HumanStopped(NoosphereError):
    """The person stopped answering (the terminal's input ended): the run stops here, to be resumed."""

    def __init__(self, member: str, reason: str) -> None:
        self.member = member
        super().__init__(f"{member}'s turn could not be asked ({reason})")


class Channel(Protocol):
    name: str
    """Where the person answers, as the trace records it (`terminal`, `viewer`)."""

    async def ask(self, question: Question) -> dict[str, Any]:
        """The checked values of the question's fields (`forms.read_answer`)."""
        ...


class ViewerChannel:
    """The person answers in the page of `noosphere view RUN`, which writes to the run's answer book."""

    name = "viewer"

    def __init__(self, book: AnswerBook) -> None:
        self.book = book

    async def ask(self, question: Question) -> dict[str, Any]:
        entry = await self.book.wait(question.id)
        if "forfeit" in entry:
            raise NoAnswer(str(entry["forfeit"]))
        return read_answer(question.fields, entry.get("answer") or {})


class ListChannel:
    """Answers given in advance, one per question, in order: a mapping of field values or, for a form with one
    field, the value alone. Runs out: the person has stopped."""

    name = "list"

    def __init__(self, answers: Iterable[Mapping[str, Any] | str]) -> None:
        self.answers = list(answers)
        self.asked: list[Question] = []

    async def ask(self, question: Question) -> dict[str, Any]:
        self.asked.append(question)
        if not self.answers:
            raise HumanStopped(question.member, "no answer left in the list")
        given = self.answers.pop(0)
        values = given if isinstance(given, Mapping) else {question.fields[0].name: given}
        try:
            return read_answer(question.fields, values)
        except FormError as wrong:
            raise NoAnswer(f"{question.member}'s listed answer does not fit the form: {wrong}") from None
