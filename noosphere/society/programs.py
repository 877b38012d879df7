"""Members that answer with a program: a member brings a tool of its own, here a Python interpreter.

A member with `answers: program` is asked the turns any member is asked, with one line more: reply with a Python
program that prints the answer. The society runs the program in the bubblewrap sandbox (`noosphere.tools.sandbox`:
no network, no host files, limits on time and memory) and what it prints last is the member's answer; the program
and its output are what the others read as its reasoning. Its weight in a vote by reply probability is that of the
reply that holds the program.

Parse, repair, forfeit: a reply without a fenced block is taken whole if it parses as Python. The answer is the last
line on standard output (a warning on standard error, written after it, is not). A program that does not run to its end
or prints nothing forfeits the turn, as any turn that fails at run time does (`noosphere.concurrent`), and the reason
(the last lines of its output) is in the trace's `soc_forfeit`.
"""

from __future__ import annotations

import ast
import asyncio
import re

from noosphere.errors import ModelError, RuntimeFault
from noosphere.llm.messages import MediaPart
from noosphere.society import prompts
from noosphere.society.member import Member
from noosphere.society.statement import ANSWER_CHARS, REASONING_CHARS, Statement
from noosphere.tools.sandbox import Sandbox, run_python_program

FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)```", re.S | re.IGNORECASE)
SECONDS = 5.0
MEMORY_MB = 256
SHOWN = 300
"""Characters of a failed program's output kept in the forfeit's reason."""


class ProgramFailed(RuntimeFault):
    """A member's program could not be read from its reply, or did not run to its end and print an answer."""


def program_of(reply: str) -> str:
    """The program in a reply: its last fenced block, or the whole reply when that parses as Python."""
    blocks = [block for block in FENCE.findall(reply) if block.strip()]
    if blocks:
        return blocks[-1]
    try:
        ast.parse(reply)
    except (SyntaxError, ValueError):
        raise ProgramFailed("its reply holds no ```python block and is not a Python program itself") from None
    if not reply.strip():
        raise ProgramFailed("its reply is empty")
    return reply


def printed_answer(printed: str, output: str = "") -> str:
    """The last line the program printed to standard output (a program that shows its working prints the answer
    last); never a line of standard error (`output`: both), where a warning comes after what was printed."""
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    if not lines:
        errors = output.strip()
        raise ProgramFailed("its program ran but printed nothing" + (
            f" to standard output; it wrote: {errors[-SHOWN:]}" if errors else ""))
    return lines[-1][:ANSWER_CHARS]


async def program_statement(member: Member, prompt: str, sandbox: Sandbox, *, media: tuple[MediaPart, ...] = (),
                            logprobs: bool = False) -> tuple[Statement, float | None]:
    """One answering turn of a program member: its program, run; the statement it makes, and its reply's
    probability where `logprobs` asks for it."""
    reply, probability = await member.write(prompts.PROGRAM_FORM.format(prompt=prompt), media=media,
                                            logprobs=logprobs)
    if logprobs and probability is None:
        raise ModelError(member.model.id, f"{member.name}'s reply came without a probability to weigh it by")
    source = program_of(reply)
    ran = await asyncio.to_thread(run_python_program, source, timeout_s=SECONDS, memory_mb=MEMORY_MB, sandbox=sandbox)
    if not ran.passed:
        raise ProgramFailed(f"its program failed: {ran.output[-SHOWN:] or 'no output'}")
    printed = printed_answer(ran.printed, ran.output)
    said = prompts.PROGRAM_SAID.format(program=source.strip(), printed=printed)
    return Statement(reasoning=said[-REASONING_CHARS:], answer=printed), probability
