"""The phases a mindstorm is built from; an organisation is a choice of four of them.

Mission initialisation (`SolveAlone`), the task-oriented mindstorm (`OrganizerRounds` or
`DebateRounds`, R rounds), opinion gathering (`GatherOpinions`, with or without the right to
change) and execution (`LeaderDecides`, or `MembersVote` under the right to execute). Each is a
small class over `Session`; a user replaces one by passing any object with `name` and `run`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, create_model

from noosphere.llm.forms import choice_form
from noosphere.society.events import BallotCast, MemberSpoke, Tallied
from noosphere.society.member import Member
from noosphere.society.session import Contribution, Session, Statement
from noosphere.society.voting import Ballot, tally

SNIPPET = 400  # characters of a member's reasoning shown to others; keeps prompts from growing without bound


class Phase(Protocol):
    name: str

    async def run(self, session: Session) -> None: ...


class SubQuestion(BaseModel):
    question: str = Field(min_length=3, max_length=400, description="one question for the members, ending in '?'")


class RoundStatement(Statement):
    """A member's turn in an organizer's round: the reply to the sub-question, and the answer to the task
    apart from it. Small models otherwise put the number that answers the sub-question where the task's
    answer belongs (seen on GSM8K: a monthly figure replaced the yearly answer the member had right)."""

    reasoning: str = Field(max_length=2000, description="your reply to the organizer's question, with its working")
    answer: str = Field(min_length=1, max_length=300,
                        description="your answer to the whole task (not to the question), short")


class Summary(BaseModel):
    summary: str = Field(max_length=1500, description="what the discussion established, wrong claims left out")
    answer: str = Field(min_length=1, max_length=300, description="the answer the discussion supports best")


def _said(record: Contribution) -> str:
    return f"{record.member}: {record.text[:SNIPPET]} (answer: {record.answer})"


def _transcript(session: Session) -> str:
    lines = []
    for round_ in sorted({r.round for r in session.records}):
        if 0 < round_ <= len(session.questions):
            lines.append(f"Question {round_}: {session.questions[round_ - 1]}")
        lines += [_said(r) for r in session.records if r.round == round_]
    return "\n".join(lines) or "(nothing yet)"


def option_labels(count: int) -> tuple[str, ...]:
    """A, B, ..., Z, then AA, AB, ...: short labels however many distinct answers a large society has."""
    labels = []
    for number in range(1, count + 1):
        label = ""
        while number:
            number, rest = divmod(number - 1, 26)
            label = string.ascii_uppercase[rest] + label
        labels.append(label)
    return tuple(labels)


def _picked(options: list[str], label: str) -> str:
    return options[option_labels(len(options)).index(label)]


def _choice_model(count: int) -> type[BaseModel]:
    return choice_form("Choice", "choice", option_labels(count), "the letter of the option",
                       reason="reasoning", reason_chars=800)


def _ranking_model(count: int) -> type[BaseModel]:
    letters = option_labels(count)
    return create_model("Ranking", reasoning=(str, Field(max_length=800)),
                        ranking=(list[Literal[letters]], Field(min_length=1, max_length=count,  # type: ignore[valid-type]
                                                               description="option letters, best first")))


def _lettered(options: list[str]) -> str:
    return "\n".join(f"({label}) {option}" for label, option in zip(option_labels(len(options)), options, strict=True))


@dataclass(frozen=True)
class SolveAlone:
    """Mission initialisation: every member meets the task with its own perception and answers alone."""

    name: str = "mission"

    async def run(self, session: Session) -> None:
        session.phase(self.name)

        async def turn(member: Member) -> Statement:
            text, media = member.perception(session.observation)
            prompt = f"{text}\n\nTask: {session.task}" if text else f"Task: {session.task}"
            return await member.ask(prompt, Statement, media=media)

        for name, statement in (await session.each(session.members, self.name, 0, turn)).items():
            session.say(name, self.name, 0, statement)


@dataclass(frozen=True)
class OrganizerRounds:
    """R rounds: the organizer asks one sub-question, every member answers it and restates its answer.

    With the right to know, a member also sees what every member answered in the previous round.
    """

    organizer: Member
    right_to_know: bool = False
    name: str = "mindstorm"

    async def run(self, session: Session) -> None:
        for round_ in range(1, session.rounds + 1):
            session.phase(self.name, round_)
            asked = await session.each([self.organizer], self.name, round_, lambda m: m.ask(
                f"Task: {session.task}\n\nDiscussion so far:\n{_transcript(session)}\n\nAsk the members the one "
                "question that would most help them get the task right.", SubQuestion))
            question = asked[self.organizer.name].question if asked else "Check your answer: is every step right?"
            session.questions.append(question)
            session.trace.emit(MemberSpoke(phase=self.name, round=round_, member=self.organizer.name,
                                           text=question if asked else f"(standing question) {question}"))
            previous = [r for r in session.records if r.round == round_ - 1]

            async def turn(member: Member, question: str = question, previous: list = previous) -> Statement:
                peers = ""
                if self.right_to_know and previous:
                    peers = "Last round's answers:\n" + "\n".join(
                        f"Answer{i + 1} ({r.member}): {r.text[:SNIPPET]} (answer: {r.answer})"
                        for i, r in enumerate(previous)) + "\n\n"
                own = session.latest([member]).get(member.name)
                keep = (f"Your answer to the task so far is {own.answer}; keep it unless your reply shows it is "
                        "wrong." if own else "")
                return await member.ask(f"{peers}The organizer asks: {question}\nReply to the question. Then give "
                                        f"your answer to the whole task, not to the question: {session.task} {keep}",
                                        RoundStatement)

            for name, statement in (await session.each(session.members, self.name, round_, turn)).items():
                session.say(name, self.name, round_, statement)


@dataclass(frozen=True)
class DebateRounds:
    """R rounds: each member reads the others' latest statements (they saw other parts) and answers again."""

    name: str = "debate"

    async def run(self, session: Session) -> None:
        for round_ in range(1, session.rounds + 1):
            session.phase(self.name, round_)
            latest = session.latest()

            async def turn(member: Member, latest: dict[str, Contribution] = latest) -> Statement:
                others = "\n".join(_said(r) for name, r in latest.items() if name != member.name)
                return await member.ask(
                    f"The others may have seen parts of the input you did not; trust them as far as their reasons "
                    f"hold.\n{others or '(no statements)'}\n\nSay where you agree or disagree and give your "
                    f"answer to the task again: {session.task}", Statement)

            for name, statement in (await session.each(session.members, self.name, round_, turn)).items():
                session.say(name, self.name, round_, statement)


@dataclass(frozen=True)
class GatherOpinions:
    """Opinion gathering: under the right to change, each member keeps its answer or adopts another's;
    then the organizer (if any) summarises the discussion, leaving out what it judges wrong."""

    organizer: Member | None = None
    right_to_change: bool = False
    name: str = "opinion"

    async def run(self, session: Session) -> None:
        session.phase(self.name)
        round_ = session.rounds + 1
        options = session.options()
        if self.right_to_change and len(options) > 1:
            choice = _choice_model(len(options))

            async def turn(member: Member) -> Any:
                return await member.ask(f"The members' answers to the task ({session.task}):\n{_lettered(options)}\n"
                                        "Keep your answer or change to the one you now find best.", choice)

            for name, picked in (await session.each(session.members, self.name, round_, turn)).items():
                answer = _picked(options, picked.choice)
                session.say(name, self.name, round_, Statement(reasoning=picked.reasoning, answer=answer))
        if self.organizer is not None:
            done = await session.each([self.organizer], self.name, round_, lambda m: m.ask(
                f"Task: {session.task}\n\nDiscussion:\n{_transcript(session)}\n\nSummarise what the discussion "
                "established in a few sentences. Use your own knowledge to leave out wrong or doubtful claims.",
                Summary))
            if done:
                session.summary = done[self.organizer.name].summary
                session.say(self.organizer.name, self.name, round_,
                            Statement(reasoning=session.summary, answer=done[self.organizer.name].answer))


@dataclass(frozen=True)
class LeaderDecides:
    """Execution by one member: the leader reads the task, the summary and the options, and decides."""

    leader: Member
    name: str = "execution"

    async def run(self, session: Session) -> None:
        session.phase(self.name)
        context = session.summary or _transcript(session)
        decided = await session.each([self.leader], self.name, session.rounds + 2, lambda m: m.ask(
            f"Task: {session.task}\n\nWhat the society found:\n{context}\n\nAnswers proposed:\n"
            f"{_lettered(session.options())}\n\nDecide the final answer.", Statement))
        if decided:
            session.answer, session.decided_by = decided[self.leader.name].answer, self.leader.name
        else:  # the leader forfeited: the society's majority stands in
            MembersVote.count(session, [Ballot(r.member, (r.answer,)) for r in session.latest().values()])


@dataclass(frozen=True)
class MembersVote:
    """Execution under the right to execute: every member votes on the options; code counts."""

    name: str = "execution"

    async def run(self, session: Session) -> None:
        session.phase(self.name)
        options = session.options()
        if len(options) <= 1:
            MembersVote.count(session, [Ballot(r.member, (r.answer,)) for r in session.latest().values()])
            return
        context = f"Summary: {session.summary}\n\n" if session.summary else ""
        lettered = _lettered(options)
        if session.voting_rule == "plurality":
            form, ask = _choice_model(len(options)), "Vote for the final answer"
        else:
            verb = "List the options you approve of" if session.voting_rule == "approval" else "Rank all the options"
            form, ask = _ranking_model(len(options)), f"{verb}, best first, as the final answer"

        async def turn(member: Member) -> Any:
            return await member.ask(f"{context}{ask} to the task ({session.task}):\n{lettered}", form)

        votes = await session.each(session.members, self.name, session.rounds + 2, turn)
        MembersVote.count(session, [Ballot(name, tuple(_picked(options, label)
                                                       for label in getattr(v, "ranking", None) or [v.choice]))
                                    for name, v in votes.items()])

    @staticmethod
    def count(session: Session, ballots: list[Ballot]) -> None:
        key = session.answer_key
        wording: dict[str, str] = {}
        for ballot in ballots:
            for option in ballot.ranking:
                wording.setdefault(key(option), option)
        keyed = [Ballot(b.voter, tuple(key(o) for o in b.ranking)) for b in ballots]
        session.answer = wording.get(hold_vote(session, keyed, list(wording)) or "")
        session.decided_by = "vote"


def hold_vote(session: Session, ballots: list[Ballot], options: list[str]) -> str | None:
    """Count `ballots` over `options` under the session's rule, tracing every ballot and the tally."""
    for ballot in ballots:
        session.trace.emit(BallotCast(voter=ballot.voter, ranking=list(ballot.ranking)))
    result = tally(ballots, options, session.voting_rule, rng=session.rng)
    session.trace.emit(Tallied(rule=result.rule, scores=result.scores, winner=result.winner, tied=list(result.tied)))
    return result.winner
