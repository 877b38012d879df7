"""Role-play in the CAMEL style: a user agent instructs, an assistant agent solves, turn by turn.

An optional task specifier first turns a short task into a precise one. The user agent gives one
instruction at a time and says the done signal when the task is complete; the assistant answers
each instruction with its solution. The conversation stops on the done signal, when an exchange
repeats the one before it word for word (a loop), on a message cap (the paper's 50, counting the
user's and the assistant's messages) or when the conversation has used its token budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from noosphere.concurrent import Forfeit, attempt
from noosphere.errors import BudgetExceededError
from noosphere.society import prompts
from noosphere.society.events import MemberForfeited, MemberSpoke, PhaseStarted, SocietyFinished
from noosphere.society.member import Member
from noosphere.society.session import Session
from noosphere.society.society import Society
from noosphere.trace import Trace

DONE = prompts.DONE
SAID_DONE = re.compile(r"\bTASK_DONE\b")
"""How the done signal is recognised: a 1.5B user agent told to say `<TASK_DONE>` wrote `TASK_DONE` without
the brackets in 10 of its 12 signals (role-play benchmark), and a conversation that misses it runs to the
message cap. Case-sensitive, so that an instruction to "get the task done" does not end the conversation."""


@dataclass(frozen=True)
class RolePlayResult:
    task: str
    transcript: tuple[tuple[str, str], ...]
    """(speaker, text) in order, the specifier's task first when there is one."""
    stopped_by: str  # "done", "repeated", "message_cap", "token_budget", "budget" or "forfeit"
    tokens: int
    spent: BudgetExceededError | None = None
    """The budget around the conversation (a society's, a run's) that ended it, if one did."""

    @property
    def solutions(self) -> list[str]:
        return [text for speaker, text in self.transcript if speaker == "assistant"]


@dataclass(frozen=True)
class RolePlay:
    """Two members in a conversation (CAMEL style): an optional specifier sharpens the task, then the user
    instructs and the assistant solves, until the user says the task is done or a cap ends it."""

    user: Member
    assistant: Member
    specifier: Member | None = None
    max_messages: int = 50
    token_budget: int | None = None

    async def run(self, task: str, *, trace: Trace | None = None, report_end: bool = True) -> RolePlayResult:
        """The conversation on `task`; `report_end` False when a society around it reports the end itself."""
        trace = trace if trace is not None else self.user.model.trace
        for member in (self.user, self.assistant, self.specifier):
            if member is not None:
                member.join(trace)
                # each member keeps the whole conversation; past a small context window its oldest turns
                # are dropped (and traced) rather than the conversation failing
                member.model = member.model.bind(settings=replace(member.model.settings, overflow="truncate"))
        transcript: list[tuple[str, str]] = []
        tokens = 0
        spent: list[BudgetExceededError] = []

        async def speak(member: Member, kind: str, prompt: str, turn: int) -> str | None:
            """One message of the conversation, traced and counted; None when the turn failed (forfeited, traced)
            or a budget around the conversation ended it (what was said is kept)."""
            nonlocal tokens
            try:
                said = await _turn(member, prompt, trace, turn)
            except BudgetExceededError as exc:
                spent.append(exc)
                return None
            if said is None:
                return None
            text, used = said
            tokens += used
            transcript.append((kind, text))
            trace.emit(MemberSpoke(phase="roleplay", round=turn, member=member.name, text=text))
            return text

        trace.emit(PhaseStarted(phase="roleplay"))
        if self.specifier is not None:  # a specifier that fails leaves the task as it was given
            said = await speak(self.specifier, "specifier", prompts.SPECIFY.format(task=task), 0)
            task = task if said is None else said
        prompt = prompts.FIRST_INSTRUCTION.format(task=task, duty=prompts.USER_DUTY)
        stopped_by = "message_cap"
        turn = 0
        specified = len(transcript)  # the specifier's task is not a message of the conversation the cap bounds
        while len(transcript) - specified < self.max_messages:
            turn += 1
            if self._spent(tokens):
                stopped_by = "token_budget"
                break
            instruction = await speak(self.user, "user", prompt, turn)
            if instruction is None:
                stopped_by = "budget" if spent else "forfeit"
                break
            if SAID_DONE.search(instruction):
                stopped_by = "done"
                break
            if len(transcript) - specified >= self.max_messages:
                break
            if self._spent(tokens):  # checked before each turn, so one turn overshoots the budget at most
                stopped_by = "token_budget"
                break
            solution = await speak(self.assistant, "assistant",
                                   prompts.CARRY_OUT.format(task=task, instruction=instruction), turn)
            if solution is None:
                stopped_by = "budget" if spent else "forfeit"
                break
            if transcript[-4:-2] == transcript[-2:]:  # the same instruction got the same reply: a loop
                stopped_by = "repeated"
                break
            prompt = prompts.NEXT_INSTRUCTION.format(solution=solution, done=DONE)
        if report_end:
            trace.emit(SocietyFinished(answer=transcript[-1][1] if transcript else "", decided_by=stopped_by))
        return RolePlayResult(task, tuple(transcript), stopped_by, tokens, spent[0] if spent else None)

    def _spent(self, tokens: int) -> bool:
        return self.token_budget is not None and tokens >= self.token_budget


@dataclass(frozen=True)
class Converse:
    """Role-play as the one phase of a society (so society files and `ask --system society` run it):
    the answer is the assistant's last solution."""

    roleplay: RolePlay
    name: str = "roleplay"

    async def run(self, session: Session) -> None:
        result = await self.roleplay.run(session.task, trace=session.trace, report_end=False)
        solutions = result.solutions
        if solutions:
            session.answer, session.decided_by = solutions[-1], f"{self.roleplay.assistant.name} ({result.stopped_by})"
            session.support = 1.0 if result.stopped_by == "done" else 0.5  # the user agent accepted it, or not
        if result.spent is not None:  # the society decides whether it stops here or its owner's run does
            session.spent.append(result.spent)


def role_play(user: Member, assistant: Member, *, specifier: Member | None = None, max_messages: int = 50,
              token_budget: int | None = None, seed: int = 0) -> Society:
    """A user agent that instructs and an assistant that solves, with an optional task specifier."""
    conversation = RolePlay(user, assistant, specifier, max_messages, token_budget)
    return Society("roleplay", [user, assistant], [Converse(conversation)], rounds=0,
                   staff=[specifier] if specifier is not None else [], seed=seed)


async def _turn(member: Member, prompt: str, trace: Trace, turn: int) -> tuple[str, int] | None:
    """A failed turn (model fault, empty reply) ends the conversation, never the caller's run."""
    said = await attempt(member.reply(prompt))
    if isinstance(said, Forfeit):
        trace.emit(MemberForfeited(phase="roleplay", round=turn, member=member.name, error=str(said.error)))
        return None
    return said
