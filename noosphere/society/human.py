"""People as members of a society: a `Member` whose model is a person (`noosphere.human.HumanBackend`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from noosphere.human import AnswerBook, Channel, HumanBackend
from noosphere.llm import Model
from noosphere.society.member import Member
from noosphere.trace import Trace

HUMAN_ROLE = "You are a person taking part in a discussion among problem solvers."
"""The brief of a person given no role: shown to the person, as a model member's role is its system prompt."""


@dataclass
class HumanMember(Member):
    """Takes part as any member does; joining a run also tells its person's questions to the run's trace."""

    def join(self, trace: Trace) -> None:
        super().join(trace)
        if isinstance(self.model.backend, HumanBackend):
            self.model.backend.trace = trace


@dataclass(frozen=True)
class People:
    """How a society's people are asked: the `channel`, the run's answer `book` (resumes, forfeits), and
    `model`, which puts a person's backend behind a `Model` reporting into the run (its ledger and cache)."""

    channel: Channel
    book: AnswerBook | None = None
    model: Callable[[HumanBackend], Model] = field(default=Model)

    def member(self, name: str, role: str = "", timeout_s: float | None = None) -> HumanMember:
        backend = HumanBackend(name, self.channel, role=role or HUMAN_ROLE, timeout_s=timeout_s, book=self.book)
        return HumanMember(name, self.model(backend), role or HUMAN_ROLE)


def human_member(name: str, channel: Channel, *, role: str = "", timeout_s: float | None = None,
                 book: AnswerBook | None = None) -> HumanMember:
    """A member whose turns `channel` asks of a person; one who has not answered after `timeout_s` seconds
    forfeits the turn, as a member whose model failed does."""
    return People(channel, book).member(name, role, timeout_s)
