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
    """The member the person plays."""


class HumanAsked(HumanTurnEvent):
    """A person was asked a question (a member's turn played by a person); the viewer shows it until it is
    answered or forfeited."""

    kind: str = "human_asked"
    prompt: str
    """The question as the person reads it: the request's last user message."""
    fields: list[dict[str, Any]] = Field(default_factory=list)
    """The form to fill in, one dict a field (from the request's JSON schema; without a schema, one free-text
    field)."""
    channel: str
    """Where the person answers: `terminal`, or `viewer` (the text box of `noosphere view RUN`)."""
    timeout_s: float | None = None
    """Seconds the person has to answer before the turn is forfeited; None: no limit."""


class HumanAnswered(HumanTurnEvent):
    """The person answered (the answer itself is in the turn's `model_call`, as the JSON a model would have
    written)."""

    kind: str = "human_answered"
    seconds: float
    """How long the person took, from the question to the answer."""
    by: str = ""
    """Where the answer came from (`terminal`, `viewer`, or `saved`: given while the run was stopped)."""


class HumanForfeited(HumanTurnEvent):
    """The person's turn was forfeited: no answer in time, a saved answer that no longer fits the form, or a
    forfeit carried over from an earlier session of the run."""

    kind: str = "human_forfeited"
    reason: str
    """Why, in words."""
