"""Trace events of a society run: every message, round, summary, ballot and tally."""

from __future__ import annotations

from pydantic import Field

from noosphere.trace import Event


class SocietyStarted(Event):
    kind: str = "soc_started"
    organisation: str
    members: dict[str, str]
    """Member name -> role."""
    rounds: int
    rights: list[str] = Field(default_factory=list)
    staff: list[str] = Field(default_factory=list)
    """Members who run the society (organizer, leader, editor, arbiter) rather than answer."""
    vote: str | None = None
    """How the members vote (`ballot`, `standing`, or standing answers `weighted` by P(True) or by their replies'
    `sequence` probability); None where a leader or editor decides."""


class PhaseStarted(Event):
    kind: str = "soc_phase"
    phase: str  # "mission", "mindstorm", "opinion" or "execution"
    round: int = 0
    """The step its messages carry: 0 for the mission, 1 to R for the mindstorm rounds, then R + 1 for
    opinions and R + 2 for the execution, so that messages sort and join to their phase by it."""


class MemberTurnEvent(Event):
    """Fields shared by the events of one member's turn in a phase (not a kind of its own: subclasses name theirs)."""

    phase: str
    """The name of the phase the turn belongs to: `mission`, `mindstorm` (`debate` in a debate), `opinion` or
    `execution` in a mindstorm; `roleplay`, `market`, `service`, `arbiter` or `collect` in other organisations."""
    round: int
    member: str


class MemberSpoke(MemberTurnEvent):
    kind: str = "soc_message"
    to: str = "all"
    text: str
    answer: str = ""
    probability: float | None = None
    """Where the society weighs answers by them (`vote: sequence`): the probability of the reply that made `answer`
    the member's answer (this reply's, or an earlier one's passed on where this turn left the answer standing)."""


class MemberForfeited(MemberTurnEvent):
    kind: str = "soc_forfeit"
    error: str


class BallotCast(Event):
    kind: str = "soc_ballot"
    voter: str
    ranking: list[str]
    standing: bool = False
    """The voter's standing answer counted for it (no vote was cast), not a ballot it filled in."""
    weight: float | None = None
    """In a weighted vote: what the ballot counts (the voter's P(True) that its answer is right, or the probability
    of the reply that gave it)."""


class Tallied(Event):
    kind: str = "soc_tally"
    rule: str
    scores: dict[str, float]
    winner: str | None
    tied: list[str]


class BudgetSpent(Event):
    """The society's own budget ran out in `phase`: it stopped there and decided with what it had."""

    kind: str = "soc_budget_spent"
    phase: str
    budget: str
    limit: float
    used: float


class SocietyFinished(Event):
    kind: str = "soc_finished"
    answer: str
    decided_by: str
