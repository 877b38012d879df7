"""Trace events of a person's turns: asked, answered, forfeited. The viewer reads the open questions from them."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from noosphere.trace import Event


class HumanTurnEvent(Event):
    """Fields shared by the events of one question to a person (not a kind of its own: subclasses name theirs)."""

    question: str
    """The question's id: the same turn has the same id in every session of the run (a resume asks it again)."""
    member: str


class HumanAsked(HumanTurnEvent):
    kind: str = "human_asked"
    prompt: str
    fields: list[dict[str, Any]] = Field(default_factory=list)
    channel: str
    """Where the person answers: `terminal`, or `viewer` (the text box of `noosphere view RUN`)."""
    timeout_s: float | None = None


class HumanAnswered(HumanTurnEvent):
    kind: str = "human_answered"
    seconds: float
    by: str = ""
    """Where the answer came from (`terminal`, `viewer`, or `saved`: given while the run was stopped)."""


class HumanForfeited(HumanTurnEvent):
    kind: str = "human_forfeited"
    reason: str
