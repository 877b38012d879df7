"""Opinion gathering and execution, the last two phases of a mindstorm.

`GatherOpinions` (with or without the right to change, and the organizer's summary), then
`LeaderDecides`, or `MembersVote` under the right to execute, counted by code with the society's
voting rule; every ballot and tally goes into the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from noosphere.errors import UsageError
from noosphere.society import prompts
from noosphere.society.ballots import choice_model, lettered, named_option, option_labels, picked, ranking_model
from noosphere.society.events import BallotCast, MemberSpoke, Tallied
from noosphere.society.member import Member
from noosphere.society.phases import said_line, transcript
from noosphere.society.session import Contribution, Session, Statement
from noosphere.society.voting import Ballot, tally

VoteWeights = Literal["none", "p-true", "sequence"]
"""What a counted standing answer weighs besides 1: nothing, its member's P(True), or its reply's probability."""


class Summary(BaseModel):
    summary: str = Field(max_length=1500, description="what the discussion established, wrong claims left out")
    answer: str = Field(min_length=1, max_length=300, description="the answer the discussion supports best")



@dataclass(frozen=True)
class GatherOpinions:
    """Opinion gathering: under the right to change, each member keeps its answer or adopts another's;
    then the organizer (if any) summarises the discussion, leaving out what it judges wrong.

    In the paper the change is offered per sub-question, because its VQA agents only ever answered
    sub-questions. Here members hold an answer to the task from the mission on, so the change is
    offered on that answer: it is what reaches the summary, the leader and the vote."""

    organizer: Member | None = None
    right_to_change: bool = False
    name: str = "opinion"

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 1)
        options = session.options()
        if self.right_to_change and len(options) > 1:
            choice = choice_model(len(options))

            async def turn(member: Member) -> tuple[Any, float | None]:
                return await session.answering(member, prompts.CHANGE.format(task=session.task,
                                                                          options=lettered(options)), choice)

            for name, (pick, probability) in (await session.each(session.members, self.name, round_, turn)).items():
                answer = picked(options, pick.choice)
                session.say(name, self.name, round_, Statement(reasoning=pick.reasoning, answer=answer), probability)
        if self.organizer is not None:
            # a fresh brief with the whole discussion, not the next turn of the organizer's conversation: asked
            # there, the summary followed the last sub-question (GSM8K: "3 sprints per day"; three members' 260
            # sheep summarised to 140); the change of form re-reads the conversation anyway
            done = await session.each([self.organizer], self.name, round_, lambda m: m.ask(
                prompts.SUMMARISE.format(task=session.task, transcript=transcript(session)), Summary, alone=True))
            if done:
                session.summary = done[self.organizer.name].summary
                session.summary_answer = done[self.organizer.name].answer
                session.say(self.organizer.name, self.name, round_,
                            Statement(reasoning=session.summary, answer=done[self.organizer.name].answer))


@dataclass(frozen=True)
class LeaderDecides:
    """Execution by one member: the leader reads the task, each member's latest reasoning, the summary,
    and the options with who holds each, and decides.

    Measured on GSM8K (29 problems): shown the summary alone, the leader chose the summary's answer in
    all 29, also where two of three members held the right one; it could not weigh reasoning it never saw.
    """

    leader: Member
    name: str = "execution"
    shows_confidence: bool = False
    """Whether the leader sees, beside each holder, the member's own P(True) that its answer is right (asked of
    the member after its own conversation, as a weighted vote asks it; one scoring call a member). A member whose
    question forfeits is shown without one."""

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 2)
        latest = session.latest()
        options = session.options(also=session.summary_answer)  # the organizer's correction is a candidate
        reasoning = "\n".join(said_line(r) for r in latest.values())
        summary = prompts.LEADER_SUMMARY.format(summary=session.summary) if session.summary else ""
        beliefs = await member_beliefs(session, self.name, round_) if self.shows_confidence else None
        shown = holders(session, options, beliefs) + (prompts.CONFIDENCE_NOTE if beliefs is not None else "")
        decided = await session.each([self.leader], self.name, round_, lambda m: m.ask(prompts.DECIDE.format(
            task=session.task, reasoning=reasoning, summary=summary, options=lettered(options),
            holders=shown), Statement))
        if decided:
            decision = decided[self.leader.name]
            session.answer = named_option(decision.answer, options)
            session.decided_by = self.leader.name
            session.trace.emit(MemberSpoke(phase=self.name, round=round_, member=self.leader.name,
                                           text=decision.reasoning, answer=session.answer))
        else:  # the leader forfeited: the society's majority stands in
            count_standing(session)


def holders(session: Session, options: list[str], beliefs: dict[str, float] | None = None) -> str:
    """One line per option: the members whose latest answer it is (each with its P(True) in it, where `beliefs`
    holds one), and the organizer if it summarised to it."""
    key = session.answer_key
    latest = session.latest()
    beliefs = beliefs or {}

    def holder(name: str) -> str:
        return prompts.HOLDER_CONFIDENCE.format(name=name, p=beliefs[name]) if name in beliefs else name

    lines = []
    for label, option in zip(option_labels(len(options)), options, strict=True):
        names = [holder(name) for name, record in latest.items() if key(record.answer) == key(option)]
        if session.summary_answer and key(session.summary_answer) == key(option):
            names.append(prompts.HELD_BY_SUMMARY)
        lines.append(prompts.HOLDERS_LINE.format(label=label, names=", ".join(names) or prompts.HELD_BY_NO_ONE))
    return "\n".join(lines)


@dataclass(frozen=True)
class MembersVote:
    """Execution under the right to execute: every member votes on the options; code counts.

    `by_standing`: no ballot is asked for; each member's standing answer is its vote (`decided_by: count`).
    On GSM8K (democracy-all) 42 of 93 cast ballots went against the voter's own answer, 31 of them to a
    number the organizer's summary named, and the plurality of standing answers was right more often
    than the vote; counting them tests that, at no extra call."""

    name: str = "execution"
    by_standing: bool = False
    weights: VoteWeights = "none"
    """With `by_standing`, what each standing answer counts besides 1. `p-true`: the member's P(True) that it is
    right, asked of the member after its own conversation (`Member.belief`, one scoring call a member); a member
    whose turn forfeits counts 0.5, no information either way; a unanimous society asks nothing. `sequence`: the
    probability the member's model gave the reply that made it its answer (taken in that same call, so no call
    at all): under the right to change, every member's pick is that reply (the short one that kept or changed its
    answer; one whose pick forfeited keeps its statement's); a sub-society's answer, which has none, counts the
    mean of the others'."""
    every_answer: bool = False
    """With `weights="sequence"`: every answer a member gave in the run (its mission statement and each debate
    round's) is counted with its reply's probability, not only its standing one; so each call that gave an answer
    is a weighted sample, as in a best-of-N. Where they differ, a member's earlier answer still counts for what it
    weighed."""
    shows_summary: bool = False
    """Whether the ballot repeats the organizer's summary. Off, each member votes on its own reading of the
    discussion, which is what makes a plurality of independent voters more often right than any one of them."""

    def __post_init__(self) -> None:
        if self.weights != "none" and not self.by_standing:
            raise UsageError(f"weights={self.weights!r} weigh the members' standing answers: give by_standing=True")
        if self.every_answer and self.weights != "sequence":
            raise UsageError("every_answer counts each answer with its reply's probability: give weights='sequence'")

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 2)
        options = session.options()
        if self.by_standing and self.weights == "p-true" and len(options) > 1:
            await count_weighted(session, self.name, round_)
            return
        if self.every_answer and len({session.answer_key(r.answer) for r in given_answers(session)}) > 1:
            count_every_answer(session)
            return
        if self.by_standing and self.weights == "sequence" and len(options) > 1:
            count_by_probability(session)
            return
        if self.by_standing:
            count_standing(session, decided_by="count")
            return
        if len(options) <= 1:  # the members agree: no ballot is asked for, and the label says so
            count_standing(session, decided_by="unanimous")
            return
        shown = session.summary and self.shows_summary
        context = prompts.BALLOT_SUMMARY.format(summary=session.summary) if shown else ""
        if session.voting_rule == "plurality":
            form, ask = choice_model(len(options)), prompts.VOTE_PLURALITY
        else:
            verb = prompts.VOTE_APPROVAL if session.voting_rule == "approval" else prompts.VOTE_RANKING
            form, ask = ranking_model(len(options)), prompts.VOTE_ORDERED.format(verb=verb)
        ballot = prompts.BALLOT.format(context=context, ask=ask, task=session.task, options=lettered(options))

        async def turn(member: Member) -> Any:
            return await member.ask(ballot, form)

        votes = await session.each(session.members, self.name, round_, turn)
        if not votes:  # every vote forfeited: the members' standing answers are their votes
            count_standing(session)
            return
        session.ballots = [Ballot(name, tuple(picked(options, label) for label in getattr(v, "ranking", None)
                                              or [v.choice])) for name, v in votes.items()]
        MembersVote.count(session, session.ballots, options)

    @staticmethod
    def count(session: Session, ballots: list[Ballot], options: list[str] | None = None, *,
              decided_by: str = "vote", standing: bool = False, weights: dict[str, float] | None = None) -> None:
        """Count over every option on the ballot paper, not only those some ballot names: a Borda score
        depends on how many options there are, and an option nobody chose still belongs in the tally."""
        if not ballots:
            return  # nothing to count: the answer stays undecided
        key = session.answer_key
        wording: dict[str, str] = {}
        for option in [*(options or []), *(o for ballot in ballots for o in ballot.ranking)]:
            wording.setdefault(key(option), option)
        keyed = [Ballot(b.voter, tuple(key(o) for o in b.ranking)) for b in ballots]
        session.answer = wording.get(hold_vote(session, keyed, list(wording), standing=standing,
                                               weights=weights) or "")
        session.decided_by = decided_by


def count_standing(session: Session, *, decided_by: str = "standing") -> None:
    """Decide by counting each member's latest answer to the task as its vote (members without one abstain),
    when there is no vote to count: nobody was asked, or every ballot forfeited."""
    ballots = [Ballot(r.member, (r.answer,)) for r in session.latest().values() if r.answer.strip()]
    MembersVote.count(session, ballots, decided_by=decided_by, standing=True)


NEUTRAL_WEIGHT = 0.5
"""The weight of a standing answer whose member gave no P(True) for it (its question forfeited, or a sub-society,
which has no probability): it still votes, as sure of its answer as of its opposite."""


async def member_beliefs(session: Session, phase: str, round_: int) -> dict[str, float]:
    """Each member with a standing answer: its P(True) that the answer is right, asked after its own conversation
    (`Member.belief`); a member whose question forfeits is left out of the result (its answer then weighs
    `NEUTRAL_WEIGHT` in `count_weighted`)."""
    latest = session.latest()
    holding = [m for m in session.members if m.name in latest and latest[m.name].answer.strip()]
    return await session.each(holding, phase, round_, lambda m: m.belief(
        prompts.BELIEF_QUESTION.format(answer=latest[m.name].answer)))


async def count_weighted(session: Session, phase: str, round_: int) -> None:
    """Count the standing answers, each with the weight of its member's P(True) in it (`NEUTRAL_WEIGHT` without
    one)."""
    latest = session.latest()
    voters = [m for m in session.members if m.name in latest and latest[m.name].answer.strip()]
    beliefs = await member_beliefs(session, phase, round_)
    weights = {m.name: beliefs.get(m.name, NEUTRAL_WEIGHT) for m in voters}
    ballots = [Ballot(m.name, (latest[m.name].answer,)) for m in voters]
    MembersVote.count(session, ballots, decided_by="weighted", standing=True, weights=weights)


def count_by_probability(session: Session) -> None:
    """Count the standing answers, each with the weight of the probability its member's model gave the reply
    that made it the member's answer (`Contribution.probability`); a sub-society's, which has none, counts the mean
    of the others'. A member that gives probabilities and has none answered outside `Session.answering`: a usage
    error of the phase that recorded it, refused rather than counted as a plain vote."""
    latest = [r for r in session.latest().values() if r.answer.strip()]
    _count_by_replies(session, [(r.member, r) for r in latest], "sequence", lambda names: (
        f"a vote by the replies' probability, but {names}'s standing answer was recorded without one: a phase "
        "that gives a member's answer asks it with `session.answering(...)` and passes the probability to "
        "`session.say`"))


def given_answers(session: Session) -> list[Contribution]:
    """Every answer a present member gave in the run, in the order given."""
    present = {m.name for m in session.members}
    return [r for r in session.records if r.member in present and r.answer.strip()]


def count_every_answer(session: Session) -> None:
    """Count every answer the members gave (`MembersVote.every_answer`), each a ballot of its own (voter
    `member@phase:round`) with the weight of its reply's probability, as `count_by_probability` weighs each
    member's standing one."""
    _count_by_replies(session, [(f"{r.member}@{r.phase}:{r.round}", r) for r in given_answers(session)], "every",
                      lambda names: (f"a vote over every answer by its reply's probability, but {names} gave one "
                                     "without it: a phase that gives a member's answer asks it with "
                                     "`session.answering(...)`"))


def _count_by_replies(session: Session, voters: list[tuple[str, Contribution]], decided_by: str,
                      refusal: Callable[[str], str]) -> None:
    """Count each (voter, answer) as a ballot with the weight of its reply's probability; an answer without one (a
    sub-society's) counts the mean of the others'. A member that gives probabilities and recorded an answer
    without one is a usage error (`refusal` of the members' names), not a plain vote."""
    scoring = {m.name for m in session.members if m.gives_probability}
    unweighed = list(dict.fromkeys(r.member for _, r in voters if r.probability is None and r.member in scoring))
    if unweighed:
        raise UsageError(refusal(", ".join(unweighed)))
    known = [r.probability for _, r in voters if r.probability is not None]
    fill = sum(known) / len(known) if known else 1.0
    weights = {voter: r.probability if r.probability is not None else fill for voter, r in voters}
    ballots = [Ballot(voter, (r.answer,)) for voter, r in voters]
    MembersVote.count(session, ballots, decided_by=decided_by, standing=True, weights=weights)


def hold_vote(session: Session, ballots: list[Ballot], options: list[str], *, standing: bool = False,
              weights: dict[str, float] | None = None) -> str | None:
    """Count `ballots` over `options` under the session's rule, tracing every ballot and the tally;
    `standing`: the ballots are the members' standing answers, not votes they cast; `weights`: what each
    voter's ballot counts (a weighted vote), the support then being the share of the weight."""
    for ballot in ballots:
        session.trace.emit(BallotCast(voter=ballot.voter, ranking=list(ballot.ranking), standing=standing,
                                      weight=None if weights is None else round(weights.get(ballot.voter, 1.0), 6)))
    result = tally(ballots, options, session.voting_rule, rng=session.rng, weights=weights)
    session.trace.emit(Tallied(rule=result.rule, scores=result.scores, winner=result.winner, tied=list(result.tied)))
    if result.winner is not None and ballots:  # approval counts every option a ballot lists, the others its first
        backs = (lambda b: result.winner in b.ranking) if result.rule == "approval" else (
            lambda b: b.ranking[:1] == (result.winner,))
        weight = (lambda b: 1.0) if weights is None else (lambda b: weights.get(b.voter, 1.0))
        total = sum(weight(b) for b in ballots)
        session.support = sum(weight(b) for b in ballots if backs(b)) / total if total > 0 else 0.0
    return result.winner
