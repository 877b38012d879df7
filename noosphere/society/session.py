"""The state of one society run, shared by its phases, and the parallel turn-taking they all use."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from pydantic import BaseModel

from noosphere.concurrent import Forfeit, gather_turns
from noosphere.errors import BudgetExceededError
from noosphere.llm.messages import MediaPart
from noosphere.observation import Observation
from noosphere.society.events import ConsensusReached, MemberForfeited, MemberSpoke, PhaseStarted, QuorumReached
from noosphere.society.member import Member
from noosphere.society.programs import program_statement
from noosphere.society.statement import Statement
from noosphere.society.voting import Ballot
from noosphere.tools.sandbox import Sandbox
from noosphere.trace import Trace

__all__ = ["Contribution", "Session", "Statement", "default_key"]

T = TypeVar("T")
OutputT = TypeVar("OutputT", bound=BaseModel)


@dataclass(frozen=True)
class Contribution:
    member: str
    phase: str
    round: int
    text: str
    answer: str
    probability: float | None = None
    """The probability the member's model gave the reply that made `answer` its answer (the geometric mean of
    the reply's token probabilities), where the session asks for it (`Session.answer_probabilities`)."""


def default_key(answer: str) -> str:
    """Answers that differ only in case, spacing or a final full stop count as the same option."""
    return " ".join(answer.strip().rstrip(".").lower().split())


@dataclass
class Session:
    task: str
    observation: Observation | None
    members: list[Member]
    trace: Trace
    rng: random.Random
    rounds: int
    voting_rule: str = "plurality"
    answer_key: Callable[[str], str] = default_key
    max_concurrency: int = 8
    reward: Callable[[str], float] | None = None
    """The environment's reward for an answer (economies pay it to the members who gave it)."""
    records: list[Contribution] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    heard: dict[str, int] = field(default_factory=dict)
    """For a member that follows the discussion as one conversation (the organizer): how many records it
    has been shown, so that its next prompt carries only the ones after them."""
    summary: str = ""
    summary_answer: str = ""
    """The answer the organizer's summary supports: it may correct every member's."""
    answer: str | None = None
    decided_by: str = ""
    support: float | None = None
    """The share of the society behind its answer, set by whatever decided it (a count of votes, a
    role-play's ending); None until then."""
    ballots: list[Ballot] = field(default_factory=list)
    """The ballots the members cast, in the options' wording (standing answers counted as votes are not
    ballots): with the members' standing answers, they show how often a voter left its own answer."""
    spent: list[BudgetExceededError] = field(default_factory=list)
    """Budgets that ran out during the current phase: no member takes a turn after that, and the society
    stops after the phase."""
    answer_probabilities: bool = False
    """Whether each turn that gives a member's answer also takes the probability of its reply (a vote
    weighted by it, `MembersVote.weights == "sequence"`): from the same call, so at no extra cost."""
    quorum: str | None = None
    """The answer a quorum of members gave at the mission (`SolveAlone(quorum=...)`), once one has: no round is
    held."""
    sandbox: Sandbox | None = None
    """Where the programs of members who answer with one (`answers: program`) run; made at the first one."""

    def __post_init__(self) -> None:
        self._gate = asyncio.Semaphore(self.max_concurrency)

    def phase_rounds(self, name: str, *, until_consensus: bool = False) -> Iterator[int]:
        """The rounds 1 to `rounds` of phase `name`, each begun (`phase`) as it is reached; ending early once a
        budget has run out or a quorum has settled the answer, and with `until_consensus` once every member holds
        the same answer (traced)."""
        for round_ in range(1, self.rounds + 1):
            if self.spent or self.quorum is not None:
                return
            if until_consensus and self.unanimous():
                self.trace.emit(ConsensusReached(phase=name, round=round_, answer=self.options()[0]))
                return
            self.phase(name, round_)
            yield round_

    def phase(self, name: str, round: int = 0) -> int:
        """Begin phase `name` at step `round` (see `PhaseStarted.round`) and return the step."""
        self.trace.emit(PhaseStarted(phase=name, round=round))
        return round

    async def answering(self, member: Member, prompt: str, output: type[OutputT], *,
                     media: tuple[MediaPart, ...] = ()) -> tuple[OutputT, float | None]:
        """A member's turn that gives its answer to the task: its reply, and the reply's probability where
        the session takes it (`answer_probabilities`), else None. A member who answers with a program writes one
        instead of a statement, and the program's output is its answer (`noosphere.society.programs`)."""
        if member.answers == "program" and output is Statement:
            if self.sandbox is None:
                self.sandbox = Sandbox(trace=self.trace)
            statement, probability = await program_statement(member, prompt, self.sandbox, media=media,
                                                             logprobs=self.answer_probabilities)
            return statement, probability  # type: ignore[return-value]  # output is Statement
        if self.answer_probabilities:
            return await member.ask_scored(prompt, output, media=media)
        return await member.ask(prompt, output, media=media), None

    def say(self, member: str, phase: str, round: int, statement: Statement,
            probability: float | None = None) -> Contribution:
        return self.record(member, phase, round, statement.reasoning, statement.answer, probability)

    def record(self, member: str, phase: str, round: int, text: str, answer: str,
               probability: float | None = None) -> Contribution:
        """Keep and trace one contribution; `answer` is the member's answer to the task ("": none yet),
        `probability` that of the reply that gave it (None: not taken)."""
        contribution = Contribution(member, phase, round, text, answer, probability)
        self.records.append(contribution)
        self.trace.emit(MemberSpoke(phase=phase, round=round, member=member, text=text, answer=answer,
                                    probability=probability))
        return contribution

    def latest(self, members: Sequence[Member] | None = None) -> dict[str, Contribution]:
        """Each member's most recent contribution, in member order."""
        names = [m.name for m in (members if members is not None else self.members)]
        last: dict[str, Contribution] = {}
        for record in self.records:
            if record.member in names:
                last[record.member] = record
        return {name: last[name] for name in names if name in last}

    def unanimous(self) -> bool:
        """Whether every member holds an answer and all hold the same one (a member whose turns all forfeited
        holds none, so the society is not unanimous without it)."""
        latest = self.latest()
        return (len(latest) == len(self.members) and all(r.answer.strip() for r in latest.values())
                and len(self.options()) == 1)

    def settle_by_quorum(self, phase: str, quorum: int, asked: int) -> bool:
        """Whether `quorum` members now hold one answer; the first such answer settles the session (traced)."""
        held = Counter(self.answer_key(r.answer) for r in self.latest().values() if r.answer.strip())
        for option in self.options():  # the first proposer's wording, in member order
            if held[self.answer_key(option)] >= quorum:
                self.quorum = option
                self.trace.emit(QuorumReached(phase=phase, answer=option, holders=held[self.answer_key(option)],
                                              asked=asked))
                return True
        return False

    def agreement(self) -> float:
        """The share of the members (those still here) whose standing answer is the society's answer."""
        standing = [r.answer for r in self.latest().values()]
        agreeing = sum(self.answer_key(answer) == self.answer_key(self.answer or "") for answer in standing)
        return agreeing / len(standing) if standing else 0.0

    def options(self, *, also: str = "") -> list[str]:
        """The distinct current answers of the members, first proposer's wording, in member order;
        then `also` (an answer from outside the members, such as the organizer's) unless one of them."""
        seen: dict[str, str] = {}
        for answer in [r.answer for r in self.latest().values()] + [also]:
            if answer.strip():
                seen.setdefault(self.answer_key(answer), answer)
        return list(seen.values())

    async def each(self, members: Sequence[Member], phase: str, round: int,
                   turn: Callable[[Member], Awaitable[T]]) -> dict[str, T]:
        """Run one turn per member in parallel, under the engines' forfeit policy (`noosphere.concurrent`): a
        member whose turn fails at run time (its model, its output, a sub-society standing for it) forfeits
        it, traced; a usage error or a bug is raised. A spent budget forfeits the turn too, and is kept in
        `spent`: the phase goes on with the turns that were done, no turn starts after it, and the society
        stops after the phase (`Society` decides whether the budget was its own)."""
        if self.spent:
            return {}

        async def guarded(member: Member) -> T | Forfeit:
            if self.spent:  # the budget ran out while this turn waited for its place
                return Forfeit(self.spent[0])
            try:
                return await turn(member)
            except BudgetExceededError as spent:
                self.spent.append(spent)
                return Forfeit(spent)

        results = await gather_turns((partial(guarded, member) for member in members), limit=self._gate)
        done: dict[str, T] = {}
        for member, result in zip(members, results, strict=True):  # traced in member order, as statements are
            if isinstance(result, Forfeit):
                self.trace.emit(MemberForfeited(phase=phase, round=round, member=member.name, error=str(result)))
            elif result is not None:
                done[member.name] = result
        return done
