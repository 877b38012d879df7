"""The phases a mindstorm is built from; an organisation is a choice of four of them.

Mission initialisation (`SolveAlone`) and the task-oriented mindstorm (`OrganizerRounds` or
`DebateRounds`, R rounds) are here; opinion gathering and execution are in `decisions.py`. Each is
a small class over `Session`; a user replaces one by passing any object with `name` and `run`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from pydantic import BaseModel, Field

from noosphere.llm.messages import MediaPart
from noosphere.society import prompts
from noosphere.society.events import MemberSpoke
from noosphere.society.member import Member
from noosphere.society.session import Contribution, Session, Statement

OutputT = TypeVar("OutputT", bound=BaseModel)

SNIPPET = 600  # characters of a member's reasoning shown to others; keeps prompts from growing without bound


def excerpt(text: str, limit: int = SNIPPET) -> str:
    """The opening and, mostly, the end of a long reasoning: members begin by restating the task and end
    with the working that gives their answer, which is what the others need to check."""
    if len(text) <= limit:
        return text
    head = limit // 4
    return prompts.EXCERPT.format(head=text[:head].rstrip(), tail=text[len(text) - (limit - head):].lstrip())


class Phase(Protocol):
    """One step of a mindstorm. A phase that makes no model call and only settles accounts may say
    `settles = True`: it still runs after the society's budget cut the phases before it short."""

    name: str

    async def run(self, session: Session) -> None: ...


# A form of its own, not `Statement` (whose docstring and fields the model reads in its schema): with one
# form for both turns ("your answer to what you were asked") a member's conversation stayed a cached prefix,
# but on GSM8K its first answers to the task grew into sentences and fewer were right (7 of 24 against 11
# of 24 on the same 8 problems).
class Reply(BaseModel):
    """A member's reply to the organizer's question."""

    reasoning: str = Field(max_length=2000, description="your reply to the organizer's question, with its working")
    answer: str = Field(min_length=1, max_length=200, description="the short answer to the organizer's question")


class SubQuestion(BaseModel):
    question: str = Field(min_length=3, max_length=400, description="one question for the members, ending in '?'")


def said_line(record: Contribution) -> str:
    """One contribution as others read it: who, the excerpt of its reasoning, its answer to the task."""
    return prompts.SAID.format(member=record.member, reasoning=excerpt(record.text),
                               answer=record.answer or prompts.NO_ANSWER_YET)


def transcript(session: Session, start: int = 0, end: int | None = None) -> str:
    """Records `start` to `end`, each round under the organizer's question that opened it."""
    records = session.records[start:end]
    lines = []
    for round_ in sorted({r.round for r in records}):
        if 0 < round_ <= len(session.questions):
            lines.append(prompts.QUESTION_LINE.format(round=round_, question=session.questions[round_ - 1]))
        lines += [said_line(r) for r in records if r.round == round_]
    return "\n".join(lines) or prompts.NOTHING_YET


async def follow(session: Session, member: Member, instruction: str, output: type[OutputT]) -> OutputT:
    """Ask a member who follows the whole discussion (the organizer) as one conversation.

    Its first prompt has the task and the discussion so far; each later one only what was said since
    its last turn. So its conversation stays one growing prefix that the model keeps cached: on GSM8K
    the organizer re-read the whole discussion for each question and was half of a monarchy's prompt
    tokens, 6 % of them reused.
    """
    start, end = session.heard.get(member.name, 0), len(session.records)
    opening = prompts.FOLLOW_FIRST.format(task=session.task) if start == 0 else prompts.FOLLOW_NEXT
    reply = await member.ask(prompts.FOLLOW.format(opening=opening, transcript=transcript(session, start, end),
                                                   instruction=instruction), output)
    session.heard[member.name] = end
    return reply


def briefing(session: Session, member: Member) -> tuple[str, tuple[MediaPart, ...]]:
    """The task as this member perceives it: its views of the input, then the task."""
    text, media = member.perception(session.observation)
    return (prompts.BRIEFING.format(perceived=text, task=session.task) if text
            else prompts.TASK.format(task=session.task)), media


class Asked(Protocol):
    """A turn's output that holds a question (`SubQuestion`, the interviewer's `Question`)."""

    @property
    def question(self) -> str: ...


async def put_question(session: Session, asker: Member, phase: str, round_: int,
                       ask: Callable[[Member], Awaitable[Asked]], standing: str, to: str = "all") -> str:
    """A round's question: what `asker` asks, or `standing` when its turn is forfeited; kept in the session's
    questions and told in the trace."""
    asked = await session.each([asker], phase, round_, ask)
    question = asked[asker.name].question if asked else standing
    session.questions.append(question)
    session.trace.emit(MemberSpoke(phase=phase, round=round_, member=asker.name, to=to,
                                   text=question if asked else f"(standing question) {question}"))
    return question


def catch_up(session: Session, member: Member) -> tuple[str, tuple[MediaPart, ...]]:
    """A member whose mission turn was forfeited has no history: a later turn briefs it first, or it would
    answer a sub-question about a task it never saw."""
    if member.knows_task:
        return "", ()
    prompt, media = briefing(session, member)
    return f"{prompt}\n\n", media


@dataclass(frozen=True)
class SolveAlone:
    """Mission initialisation: every member meets the task with its own perception and answers alone.

    `quorum`: the members are asked in their order, the first `quorum` at once and then one at a time, until
    `quorum` of them give the same answer (`soc_quorum`); the members after that are not asked and no round is
    held. A jury that stops once enough of it agrees: the calls go to the tasks its members split on, as adaptive
    self-consistency stops sampling once the samples agree, and every member still answers alone."""

    quorum: int | None = None
    name: str = "mission"

    async def run(self, session: Session) -> None:
        session.phase(self.name)

        async def turn(member: Member) -> tuple[Statement, float | None]:
            prompt, media = briefing(session, member)
            return await session.answering(member, prompt, Statement, media=media)

        waves = ([session.members] if self.quorum is None else
                 [session.members[:self.quorum], *([m] for m in session.members[self.quorum:])])
        asked = 0
        for wave in waves:
            asked += len(wave)
            for name, (statement, probability) in (await session.each(wave, self.name, 0, turn)).items():
                session.say(name, self.name, 0, statement, probability)
            if self.quorum is not None and session.settle_by_quorum(self.name, self.quorum, asked):
                return


@dataclass(frozen=True)
class OrganizerRounds:
    """R rounds: the organizer asks one sub-question and every member answers it.

    Only the question: a member's answer to the task stands from its first statement. Asked for it in
    every round as well, members put the sub-question's answer there (GSM8K: three members who had 260
    sheep right each answered "the relationship is ..."), and over 29 problems the rounds turned 12
    right answers wrong and 2 wrong ones right. The rounds reach the decision through the organizer's
    summary, and under the right to change through the members' own choice. A member whose first turn
    forfeited has no answer to the task ("none yet") but still replies. With the right to know, a
    member also sees what every member answered in the previous round.
    """

    organizer: Member
    right_to_know: bool = False
    name: str = "mindstorm"

    async def run(self, session: Session) -> None:
        for round_ in session.phase_rounds(self.name):
            # measured on GSM8K (29 problems): told only not to repeat the task's question, the organizer asked
            # round 2 what it had asked in round 1 in 27, and its questions often gave away a value it believed
            earlier = "".join(prompts.ASKED_ITEM.format(question=asked) for asked in session.questions)
            again = prompts.ASKED_BEFORE.format(earlier=earlier) if earlier else ""
            question = await put_question(session, self.organizer, self.name, round_, lambda m, again=again: follow(
                session, m, prompts.ASK_SUB_QUESTION.format(again=again), SubQuestion), prompts.STANDING_QUESTION)
            previous = [r for r in session.records if r.round == round_ - 1]

            async def turn(member: Member, question: str = question, previous: list = previous) -> Reply:
                peers = ""
                if self.right_to_know and previous:
                    peers = prompts.LAST_ROUND.format(answers="\n".join(prompts.LAST_ROUND_ANSWER.format(
                        number=i + 1, member=r.member, reasoning=excerpt(r.text),
                        answer=r.answer or prompts.NO_ANSWER_YET) for i, r in enumerate(previous)))
                brief, media = catch_up(session, member)
                return await member.ask(prompts.ORGANIZER_ASKS.format(brief=brief, peers=peers, question=question),
                                        Reply, media=media)

            for name, reply in (await session.each(session.members, self.name, round_, turn)).items():
                standing = session.latest().get(name)
                session.record(name, self.name, round_, prompts.ROUND_REPLY.format(reasoning=reply.reasoning,
                                                                                  answer=reply.answer),
                               standing.answer if standing else "", standing.probability if standing else None)


@dataclass(frozen=True)
class DebateRounds:
    """R rounds: each member reads the others' latest statements and answers again.

    Members who perceive different views of the input are told the others may know what they do not;
    members who all read the same problem (a GSM8K debate) are asked to check the others' reasoning.

    `until_consensus`: a round is held only while the members disagree, so a problem they all answer alike
    costs the mission's calls alone and the calls go to the problems they split on (as adaptive
    self-consistency stops sampling once the samples agree)."""

    until_consensus: bool = False
    name: str = "debate"

    async def run(self, session: Session) -> None:
        split = session.observation is not None and any(m.sees is not None for m in session.members)
        lead = prompts.DEBATE_SPLIT if split else prompts.DEBATE_SAME
        for round_ in session.phase_rounds(self.name, until_consensus=self.until_consensus):
            latest = session.latest()

            async def turn(member: Member, latest: dict[str, Contribution] = latest) -> tuple[Statement, float | None]:
                others = "\n".join(said_line(r) for name, r in latest.items() if name != member.name)
                brief, media = catch_up(session, member)
                return await session.answering(member, prompts.DEBATE_TURN.format(
                    brief=brief, lead=lead, others=others or prompts.NO_STATEMENTS, task=session.task),
                    Statement, media=media)

            for name, (statement, probability) in (await session.each(session.members, self.name, round_,
                                                                      turn)).items():
                session.say(name, self.name, round_, statement, probability)
