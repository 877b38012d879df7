"""An interview: a questioner draws out what the members perceive and reports it to a decider who perceives
nothing of the input itself.

This is the organisation of NLSOM's embodied society (appendix J): an observer (a member) perceives the
robot's camera, a first mate (the interviewer) never sees it and asks the observer about it for R rounds,
each question following the whole conversation so far, then summarises for the captain (the decider),
who reads only those summaries and its own log, and decides. Its four phases are the mindstorm's:

1. mission (`Report`): each member meets the task through its own perception and reports what it perceives;
2. mindstorm (`InterviewRounds`): R rounds of one question from the interviewer and every member's answer;
3. opinion gathering (`Debrief`): the interviewer summarises the conversation for the decider;
4. execution (`DecideOnReport`): the decider reads its own views (a log, say), the task and the summary, and
   decides. `ChooseOnReport` is the same step for a decision among fixed options taken from the decider's token
   probabilities instead of its words (issue 26's scores; a small model's written choice can be a habit).

Nothing here is about robots: the wording of each turn's instruction is the society file's to give
(`instructions:`), with neutral defaults. A member that is a whole society cannot give a free report and
forfeits those turns; it can decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from noosphere.errors import UsageError
from noosphere.llm.scoring import contextual_calibration
from noosphere.society.events import MemberSpoke
from noosphere.society.member import Member
from noosphere.society.phases import OutputT, briefing, catch_up, put_question
from noosphere.society.session import Session
from noosphere.society.society import Society

OPENING = "Report what you perceive that bears on the task, plainly; say only what you perceive."
QUESTION = ("Ask the members one question about what they perceive that would help with the task and that their "
            "answers so far leave open. Do not ask again what they already answered.")
SUMMARY = ("Summarise for the one who decides, in a few sentences, what the members perceive that matters for the "
           "task. Leave out what they were unsure of or contradicted.")
DECISION = "Decide, and give your answer to the task."
NO_REPORT = "(no report this step)"
"""The report in the content-free prompt `ChooseOnReport` calibrates with."""
STANDING_QUESTION = "What else do you perceive that you have not mentioned yet?"
"""Asked in a round whose interviewer forfeited its question."""


@dataclass(frozen=True)
class Instructions:
    """What each turn of an interview asks for (the society file's `instructions:`)."""

    opening: str = OPENING
    question: str = QUESTION
    summary: str = SUMMARY
    decision: str = DECISION


class Account(BaseModel):
    """A member's report or answer. The length caps are the interview's pace: on the 1.5B model the reports ran into
    repetition up to a 600-character cap, and a society call took 7.6 s instead of 2.8."""

    answer: str = Field(min_length=1, max_length=300, description="what you perceive, in your own words, in one or "
                                                                 "two sentences")


class Question(BaseModel):
    question: str = Field(min_length=3, max_length=400, description="one question, ending in '?'")


class Debriefing(BaseModel):
    summary: str = Field(min_length=1, max_length=400, description="what the one who decides needs to know, in two "
                                                                  "or three short sentences")


class Decision(BaseModel):
    reasoning: str = Field(max_length=240, description="why, in a sentence")
    answer: str = Field(min_length=1, max_length=300, description="your decision: the answer to the task, short")


async def told(session: Session, member: Member, instruction: str, output: type[OutputT]) -> OutputT:
    """Ask `member`, who follows the conversation as one growing conversation of its own, with what it has not
    heard yet (`news`) and `instruction`. What it was told counts as heard only once its turn succeeded: a turn
    forfeited never joined its conversation, so the next one tells it again (the task first, the first time)."""
    end = len(session.records)
    reply = await member.ask(f"{news(session, member)}\n\n{instruction}", output)
    session.heard[member.name] = end
    return reply


def news(session: Session, member: Member) -> str:
    """What the members said since `member` last heard them, each round under the question that opened it; the
    first time, the task first. The interviewer follows the conversation as one growing conversation of its own,
    so each of its prompts carries only this."""
    start, end = session.heard.get(member.name, 0), len(session.records)
    lines = []
    for record in session.records[start:end]:
        if record.member == member.name:
            continue
        if 0 < record.round <= len(session.questions) and record.phase != "mission":
            record_line = f"{record.member} answers question {record.round}: {record.text}"
        else:
            record_line = f"{record.member} reports: {record.text}"
        lines.append(record_line)
    said = "\n".join(lines) or "(nobody said anything)"
    return f"Task: {session.task}\n\n{said}" if start == 0 else said


@dataclass(frozen=True)
class Report:
    """Mission initialisation: each member meets the task with its own perception and reports what it perceives."""

    instruction: str = OPENING
    name: str = "mission"

    async def run(self, session: Session) -> None:
        session.phase(self.name)

        async def turn(member: Member) -> Account:
            prompt, media = briefing(session, member)
            return await member.ask(f"{prompt}\n\n{self.instruction}", Account, media=media)

        for name, report in (await session.each(session.members, self.name, 0, turn)).items():
            session.record(name, self.name, 0, report.answer, "")


@dataclass(frozen=True)
class InterviewRounds:
    """R rounds: the interviewer asks one question, conditioned on the whole conversation so far, and every
    member answers it from its own perception."""

    interviewer: Member
    instruction: str = QUESTION
    name: str = "mindstorm"

    async def run(self, session: Session) -> None:
        for round_ in session.phase_rounds(self.name):
            question = await put_question(session, self.interviewer, self.name, round_, lambda m: told(
                session, m, self.instruction, Question), STANDING_QUESTION,
                to=", ".join(m.name for m in session.members))

            async def turn(member: Member, question: str = question) -> Account:
                brief, media = catch_up(session, member)
                return await member.ask(f"{brief}{self.interviewer.name} asks: {question}", Account, media=media)

            for name, answer in (await session.each(session.members, self.name, round_, turn)).items():
                session.record(name, self.name, round_, answer.answer, "")


@dataclass(frozen=True)
class Debrief:
    """Opinion gathering: the interviewer summarises the conversation for the decider. If it forfeits, the
    members' own words go to the decider instead."""

    interviewer: Member
    instruction: str = SUMMARY
    name: str = "opinion"

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 1)
        done = await session.each([self.interviewer], self.name, round_, lambda m: told(
            session, m, self.instruction, Debriefing))
        if done:
            session.summary = done[self.interviewer.name].summary
            session.record(self.interviewer.name, self.name, round_, session.summary, "")
        else:
            session.summary = " ".join(f"{r.member}: {r.text}" for r in session.records
                                       if r.member != self.interviewer.name)


@dataclass(frozen=True)
class DecideOnReport:
    """Execution: the decider reads its own views of the input (none of the members'), the task and the summary,
    and decides alone."""

    decider: Member
    instruction: str = DECISION
    name: str = "execution"

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 2)
        prompt, media = briefing(session, self.decider)
        prompt = f"{prompt}\n\nReport: {session.summary or '(no report)'}\n\n{self.instruction}"
        decided = await session.each([self.decider], self.name, round_, lambda m: m.ask(
            prompt, Decision, media=media))
        if decided:
            decision = decided[self.decider.name]
            session.answer, session.decided_by = decision.answer, self.decider.name
            session.support = 1.0  # the decider alone holds an answer to the task: the members only report
            session.trace.emit(MemberSpoke(phase=self.name, round=round_, member=self.decider.name,
                                           text=decision.reasoning, answer=decision.answer))


@dataclass(frozen=True)
class ChooseOnReport:
    """Execution by probabilities: the decider writes nothing. It is given what `DecideOnReport` gives (its own
    views, the task, the summary, the instruction) and each of `options` is scored as its reply
    (`Member.score`). With `calibrate`, the same prompt with the report replaced by `NO_REPORT` is scored too and
    divided out (contextual calibration, Zhao et al. 2021): what counts is what the report adds to the decider's
    habit. With no report at all (the interviewer and every member forfeited) there is nothing to calibrate
    against, and the raw probabilities decide. The likeliest option is the answer and its probability the support;
    the probabilities are the decider's traced words. Two scoring calls with calibration, one without. A decider
    whose model cannot score raises `CapabilityError` (a usage error: never a forfeited turn)."""

    decider: Member
    options: tuple[str, ...]
    instruction: str = DECISION
    calibrate: bool = True
    name: str = "execution"

    def __post_init__(self) -> None:
        if len(self.options) < 2 or len(set(self.options)) != len(self.options) or not all(self.options):
            raise UsageError(f"a choice needs two or more distinct, non-empty options, not {list(self.options)}")

    async def run(self, session: Session) -> None:
        round_ = session.phase(self.name, session.rounds + 2)
        prompt, media = briefing(session, self.decider)

        def asked(report: str) -> str:
            return f"{prompt}\n\nReport: {report}\n\n{self.instruction}"

        async def choose(member: Member) -> tuple[float, ...]:
            probs = (await member.score(asked(session.summary or NO_REPORT), self.options, media=media)).probs
            if self.calibrate and session.summary:  # with no report the prior is the same prompt: nothing to divide
                prior = await member.score(asked(NO_REPORT), self.options, media=media)
                probs = contextual_calibration(probs, prior.probs)
            return probs

        decided = await session.each([self.decider], self.name, round_, choose)
        if decided:
            probs = decided[self.decider.name]
            best = max(range(len(self.options)), key=lambda i: (probs[i], -i))
            session.answer, session.decided_by = self.options[best], self.decider.name
            session.support = probs[best]
            said = ", ".join(f"{option} {p:.3f}" for option, p in zip(self.options, probs, strict=True))
            calibrated = " (calibrated)" if self.calibrate and session.summary else ""
            session.trace.emit(MemberSpoke(phase=self.name, round=round_, member=self.decider.name,
                                           text=f"probabilities{calibrated}: {said}",
                                           answer=self.options[best]))


def interview(members: list[Member], interviewer: Member, decider: Member, *, rounds: int = 2,
              instructions: Instructions | None = None, seed: int = 0) -> Society:
    """Members who perceive, an interviewer who asks them for `rounds` rounds and reports, a decider who decides."""
    said = instructions or Instructions()
    return Society("interview", members, [Report(said.opening), InterviewRounds(interviewer, said.question),
                                          Debrief(interviewer, said.summary), DecideOnReport(decider, said.decision)],
                   rounds=rounds, staff=[interviewer, decider], seed=seed)
