"""Trace events of a person's turns: asked, answered, forfeited. The viewer reads the open questions from them."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from noosphere.trace import Event


class HumanAsked(Event):
    kind: str = "human_asked"
    question: str
    """The question's id: the same turn has the same id in every session of the run (a resume asks it again)."""
    member: str
    prompt: str
    fields: list[dict[str, Any]] = Field(default_factory=list)
    channel: str
    """Where the person answers: `terminal`, or `viewer` (the text box of `noosphere view RUN`)."""
    timeout_s: float | None = None


class HumanAnswered(Event):
    kind: str = "human_answered"
    question: str
    member: str
    seconds: float
    by: str = ""
    """Where the answer came from (`terminal`, `viewer`, or `saved`: given while the run was stopped)."""


class HumanForfeited(Event):
    kind: str = "human_forfeited"
    question: str
    member: str
    reason: str
