"""Trace events of a society run: every message, round, summary, ballot and tally."""

from __future__ import annotations

from pydantic import Field

from noosphere.trace import Event


class SocietyStarted(Event):
    """A society begins a task (`Society.run`), before its first phase: its organisation, every member and staff member
    with its role, the number of rounds, its rights and how it votes."""

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
    `sequence` probability, or `every` answer they gave weighted by its reply's probability); None where a leader or
    editor decides."""


class PhaseStarted(Event):
    """A phase of a society begins (`Session.phase`; a role-play opens its one `roleplay` phase). A phase that runs in
    rounds begins again at each round; `round` is the step its messages carry."""

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
    """One message of a society: a member's contribution, kept by `Session.record`, or what a phase writes for a member
    or staff member (a question put, a market offer or service, the arbiter's verdict, a decision, a role-play turn).
    `answer` is the answer it gives, if any."""

    kind: str = "soc_message"
    to: str = "all"
    text: str
    answer: str = ""
    probability: float | None = None
    """Where the society weighs answers by them (`vote: sequence`): the probability of the reply that made `answer`
    the member's answer (this reply's, or an earlier one's passed on where this turn left the answer standing)."""


class MemberForfeited(MemberTurnEvent):
    """A member's turn failed at run time (its model, its output, a spent budget: `Session.each`, or a role-play turn)
    and was forfeited; the phase goes on without it, and `error` says why."""

    kind: str = "soc_forfeit"
    error: str


class ProgramRepaired(Event):
    """A program member's program failed and, with repairs left (`repairs` in its spec), it was shown why and asked for
    a corrected one in the same turn (`attempt`: 1 for the first repair). A turn whose last repair fails too is
    forfeited (`soc_forfeit`)."""

    kind: str = "soc_program_repair"
    member: str
    attempt: int
    reason: str


class BallotCast(Event):
    """One ballot counted by `hold_vote`, traced before the tally: a vote cast in the execution phase (a member's, or a
    critic's), or a member's standing answer counted as its vote. `ranking` lists the options it names, first choice
    first."""

    kind: str = "soc_ballot"
    voter: str
    ranking: list[str]
    standing: bool = False
    """An answer the voter gave, counted for it (no vote was cast), not a ballot it filled in: its standing answer, or,
    under `every_answer`, any one answer it gave (the voter named `member@phase:round`)."""
    weight: float | None = None
    """In a weighted vote: what the ballot counts (the voter's P(True) that its answer is right, or the probability
    of the reply that gave it)."""


class Tallied(Event):
    """The count of the ballots just cast (`hold_vote`): the voting rule, each option's score, the winner and the
    options that shared the top score (the winner was drawn among them when there are several)."""

    kind: str = "soc_tally"
    rule: str
    scores: dict[str, float]
    winner: str | None
    tied: list[str]


class ConsensusReached(Event):
    """Every member holds the same answer before mindstorm round `round`, so the rounds stop there (a debate
    `until_consensus`): the calls a problem costs then follow how hard the members found it."""

    kind: str = "soc_consensus"
    phase: str
    round: int
    answer: str


class QuorumReached(Event):
    """`holders` members gave the same answer at the mission (a debate with a `quorum`): no later member is asked
    and no round is held; `asked` members were asked in all, the calls the problem cost."""

    kind: str = "soc_quorum"
    phase: str
    answer: str
    holders: int
    asked: int


class BudgetSpent(Event):
    """The society's own budget ran out in `phase`: it stopped there and decided with what it had."""

    kind: str = "soc_budget_spent"
    phase: str
    budget: str
    limit: float
    used: float


class SocietyFinished(Event):
    """A society's task is over (`Society.run`, or a role-play run on its own): its answer and what decided it (a
    member's name, `vote`, `count`, `standing`, `fallback`, `budget`...; for a role-play, why the conversation
    stopped)."""

    kind: str = "soc_finished"
    answer: str
    decided_by: str
