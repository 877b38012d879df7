"""A society: members under an organisation, run as the four phases of a mindstorm."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from noosphere.errors import BudgetExceededError, UnknownNameError, UsageError
from noosphere.llm.allowance import Allowance, spending_limit
from noosphere.llm.usage import Budget
from noosphere.observation import Observation
from noosphere.society.decisions import MembersVote, count_standing
from noosphere.society.economy import Economy
from noosphere.society.events import BudgetSpent, SocietyFinished, SocietyStarted
from noosphere.society.member import Member
from noosphere.society.phases import Phase
from noosphere.society.session import Contribution, Session, default_key
from noosphere.society.voting import RULES, Ballot
from noosphere.trace import Trace


@dataclass(frozen=True)
class SocietyResult:
    """What a mindstorm decided (`answer`, and by which rule: `decided_by`), with every contribution and ballot
    that led there."""

    answer: str
    decided_by: str
    summary: str
    records: tuple[Contribution, ...]
    ballots: tuple[Ballot, ...] = ()
    """The ballots members cast in the execution phase (none when nobody was asked to vote)."""
    support: float = 0.0
    """The share of the society behind the answer: of the ballots counted, those for it; where a leader or
    editor decided, of the members, those whose standing answer it is; of a role-play's two members, both
    when the user agent declared the task done, else the assistant alone."""


@dataclass
class Society:
    """`phases` run in order (mission, mindstorm, opinion, execution); any of them can be swapped."""

    organisation: str
    members: list[Member]
    phases: Sequence[Phase]
    rounds: int = 3
    voting_rule: str = "plurality"
    rights: frozenset[str] = frozenset()
    staff: list[Member] = field(default_factory=list)
    """Members who run the society (organizer, leader, editor) rather than answer."""
    max_concurrency: int = 8
    seed: int = 0
    economy: Economy | None = None
    """The ledger of an economy of minds; None for societies without money."""
    budget: Budget | None = None
    """What one run of this society may spend (calls, tokens, money). Spent, the society stops where it is
    and decides with what it has (the members' standing answers), instead of failing the whole run."""

    def __post_init__(self) -> None:
        if not self.members:
            raise UsageError("a society needs at least one member")
        if self.rounds < 0:
            raise UsageError(f"rounds must be 0 or more, not {self.rounds}")
        if self.voting_rule not in RULES:
            raise UnknownNameError("voting rule", self.voting_rule, RULES)
        names = [m.name for m in [*self.members, *self.staff]]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UsageError(f"member names must be unique; repeated: {', '.join(duplicates)}")

    async def run(self, task: str, observation: Observation | None = None, *, trace: Trace | None = None,
                  answer_key: Callable[[str], str] = default_key,
                  reward: Callable[[str], float] | None = None) -> SocietyResult:
        """Run the phases on `task`. `reward` scores the final answer for economies (None: no reward)."""
        if observation is not None:
            self._check_views(observation)
        # an economy's members may all have gone bankrupt by now; its arbiter (staff) is still there
        trace = trace if trace is not None else [*self.members, *self.staff][0].model.trace
        for member in [*self.members, *self.staff]:
            member.join(trace)
        session = Session(task, observation, self.members, trace, random.Random(self.seed), self.rounds,
                          self.voting_rule, answer_key, self.max_concurrency, reward)
        voting = next((p for p in self.phases if isinstance(p, MembersVote)), None)
        session.answer_probabilities = voting is not None and voting.by_standing and voting.weights == "sequence"
        trace.emit(SocietyStarted(organisation=self.organisation, rounds=self.rounds, rights=sorted(self.rights),
                                  staff=[m.name for m in self.staff],
                                  vote=None if voting is None else _vote_name(voting),
                                  members={m.name: m.role for m in [*self.members, *self.staff]}))
        if self.economy is not None:  # whatever phases run, the reward flows back only along this task's services
            self.economy.trace = trace
            self.economy.start_task()
        with spending_limit(self.budget) if self.budget is not None else contextlib.nullcontext() as allowance:
            skipped = await self._run_phases(session, allowance)
        if session.answer is None:  # nobody decided (every turn forfeited, everyone left, or the budget ran out)
            count_standing(session, decided_by="fallback" if skipped is None else "budget")
        if session.answer is None:  # no member stands by an answer: the last one anybody gave
            given = next((r.answer for r in reversed(session.records) if r.answer.strip()), None)
            session.answer, session.decided_by = (given, "fallback") if given is not None else ("", "none")
        for phase in skipped or ():  # what the budget cut short still settles its accounts (an economy's reward)
            if getattr(phase, "settles", False):
                await phase.run(session)
        trace.emit(SocietyFinished(answer=session.answer, decided_by=session.decided_by))
        return SocietyResult(session.answer, session.decided_by, session.summary, tuple(session.records),
                             tuple(session.ballots), session.support if session.support is not None
                             else session.agreement())

    def _check_views(self, observation: Observation) -> None:
        """A view a member is to see must be in the input: a mistyped name would leave it seeing nothing."""
        names = [view.name for view in observation.views]
        for member in [*self.members, *self.staff]:
            for view in member.sees or ():
                if view not in names:
                    raise UnknownNameError(f"view for {member.name} to see", view, names)

    async def _run_phases(self, session: Session, allowance: Allowance | None) -> list[Phase] | None:
        """Run the phases in order. When this society's own budget runs out, stop after the phase it ran out
        in and return the phases left (None when none was cut short); an outer budget's error goes on up to
        the society or run that set it."""
        for index, phase in enumerate(self.phases):
            try:
                await phase.run(session)
            except BudgetExceededError as spent:  # a call outside the members' turns (an organizer's)
                session.spent.append(spent)
            if not session.spent:
                continue
            outer = next((e for e in session.spent if allowance is None or e.owner is not allowance), None)
            if outer is not None:
                raise outer
            own = session.spent[0]
            session.trace.emit(BudgetSpent(phase=phase.name, budget=own.budget, limit=own.limit, used=own.used))
            return list(self.phases[index + 1:])
        return None

    def run_sync(self, task: str, observation: Observation | None = None, **kwargs) -> SocietyResult:
        return asyncio.run(self.run(task, observation, **kwargs))


def _vote_name(voting: MembersVote) -> str:
    if not voting.by_standing:
        return "ballot"
    if voting.every_answer:
        return "every"
    return {"none": "standing", "p-true": "weighted", "sequence": "sequence"}[voting.weights]
