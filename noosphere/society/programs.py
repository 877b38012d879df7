"""Members that answer with a program: a member brings a tool of its own, here a Python interpreter.

A member with `answers: program` is asked the turns any member is asked, with one line more: reply with a Python
program that prints the answer. The society runs the program in the bubblewrap sandbox (`noosphere.tools.sandbox`:
no network, no host files, limits on time and memory) and what it prints last is the member's answer; the program
and its output are what the others read as its reasoning. Its weight in a vote by reply probability is that of the
reply that holds the program.

Parse, repair, forfeit: the program is the reply's last fenced block labelled Python, else its last unlabelled one
(`program_of`); a reply without one is taken whole if it parses as Python. The answer is the last line on standard
output (a warning on standard error, written after it, is not). A program that fails (an error, a limit, an exit
status other than 0; `sys.exit(0)` ends it well) or prints nothing forfeits the turn, as any turn that fails at run
time does (`noosphere.concurrent`), and the reason (the last lines of its output) is in the trace's `soc_forfeit`.
With `repairs` (a member's spec, or best-of-N's), a failed program is first shown its failure and asked again
(`with_repairs`), one call each, before the turn is forfeited.
"""

from __future__ import annotations

import ast
import asyncio
import textwrap
import unicodedata
from collections.abc import Awaitable, Callable
from typing import TypeVar

from noosphere.errors import ModelError, RuntimeFault, UsageError
from noosphere.llm.messages import MediaPart
from noosphere.society import prompts
from noosphere.society.events import ProgramRepaired
from noosphere.society.member import Member
from noosphere.society.statement import ANSWER_CHARS, REASONING_CHARS, Statement
from noosphere.tools.sandbox import Sandbox, run_python_program

FENCE = "```"
FENCES = (FENCE, "~~~")
"""The markers a fenced block opens and closes with (Markdown's backticks or tildes); a block closes with its own."""
PYTHON = ("python", "python3", "py")
"""The languages a fenced block may be labelled with to be the program; an unlabelled block is taken when none is."""
SECONDS = 5.0
MEMORY_MB = 256
SHOWN = 300
"""Characters of a failed program's output kept in the forfeit's reason."""


class ProgramFailed(RuntimeFault):
    """A member's program could not be read from its reply, or failed, or printed no answer."""


def fenced_blocks(reply: str) -> list[tuple[str, str]]:
    """The (language, text) of each fenced block in a reply, read line by line: a block opens at a line holding ```
    (or ~~~) once (the word after it its language, lower-cased; "" for none) and closes at the next line that ends
    with the same marker. Its text is dedented (a block indented under a list item). A block left open is not one
    (`open_block` tells of it)."""
    return _scan(reply)[0]


def open_block(reply: str) -> str | None:
    """The language of a fenced block the reply opens and never closes ("" for none), or None: a reply cut off by
    the token limit in the middle of its program."""
    return _scan(reply)[1]


def _scan(reply: str) -> tuple[list[tuple[str, str]], str | None]:
    blocks: list[tuple[str, str]] = []
    language: str | None = None
    fence = FENCE
    body: list[str] = []
    for line in reply.splitlines():
        if language is None:
            found = [(line.find(marker), marker) for marker in FENCES if marker in line]
            if not found:
                continue
            opening, fence = min(found)
            if fence not in line[opening + len(fence):]:  # not a block on one line
                label = line[opening + len(fence):].split()
                language, body = (label[0].lower() if label else ""), []
        elif line.strip().endswith(fence):
            body.append(line.rstrip()[:-len(fence)])
            blocks.append((language, textwrap.dedent("\n".join(body)).strip("\n") + "\n"))
            language = None
        else:
            body.append(line)
    return blocks, language


def program_of(reply: str) -> str:
    """The program in a reply: its last fenced block labelled Python, else its last unlabelled one (not a block of
    its output shown after the program, nor one in another language), or the whole reply when that parses as
    Python."""
    blocks = [(language, text) for language, text in fenced_blocks(reply) if text.strip()]
    for wanted in (PYTHON, ("",)):
        chosen = [text for language, text in blocks if language in wanted]
        if chosen:
            return chosen[-1]
    left_open = open_block(reply)
    if left_open in (*PYTHON, ""):
        raise ProgramFailed(f"its reply opens a ```{left_open} block and never closes it (cut off before the "
                            "program's end?)")
    try:
        ast.parse(reply)
    except (SyntaxError, ValueError):
        raise ProgramFailed("its reply holds no ```python block and is not a Python program itself") from None
    if not reply.strip():
        raise ProgramFailed("its reply is empty")
    return reply


def printed_answer(printed: str, output: str = "") -> str:
    """The last line the program printed to standard output (a program that shows its working prints the answer
    last); never a line of standard error (`output`: both), where a warning comes after what was printed. A last line
    longer than a statement's answer may be (`ANSWER_CHARS`) fails, as a statement with such an answer does. Control
    and format characters (an escape sequence, a right-to-left override) are left out of the answer: it is shown in
    the viewer, a report and the other members' prompts, and they would change how it reads there (the program's
    output keeps them)."""
    lines = [shown for line in printed.splitlines() if (shown := _visible(line).strip())]
    if not lines:
        errors = output.strip()
        raise ProgramFailed("its program ran but printed nothing" + (
            f" to standard output; it wrote: {errors[-SHOWN:]}" if errors else ""))
    if len(lines[-1]) > ANSWER_CHARS:  # cut, it would be another answer than the one printed
        raise ProgramFailed(f"its program printed an answer of {len(lines[-1])} characters; an answer has at most "
                            f"{ANSWER_CHARS}: {lines[-1][:SHOWN // 2]}...")
    return lines[-1]


def _visible(line: str) -> str:
    return "".join(char for char in line if unicodedata.category(char) not in ("Cc", "Cf") or char == "\t")


async def run_reply(reply: str, sandbox: Sandbox) -> tuple[str, str]:
    """The program in a model's reply, run in the sandbox: the program and its answer (the last line it printed).
    Raises `ProgramFailed` for a reply with no program, a program that fails, or one that prints no answer."""
    source = program_of(reply)
    ran = await asyncio.to_thread(run_python_program, source, timeout_s=SECONDS, memory_mb=MEMORY_MB, sandbox=sandbox,
                                  early_exit_passes=True)  # sys.exit(main()) ends a program well
    if not ran.passed:
        raise ProgramFailed(f"its program failed: {ran.output[-SHOWN:] or 'no output'}")
    return source, printed_answer(ran.printed, ran.output)


Written = TypeVar("Written")
Attempt = Callable[[ProgramFailed | None], Awaitable[tuple[str, Written]]]
"""One try at a program: given the failure of the try before (None for the first), the reply and what else the
caller keeps of it (its completion, its probability)."""


async def with_repairs(write: Attempt[Written], sandbox: Sandbox, repairs: int, *,
                       failed: Callable[[ProgramFailed, int], None] = lambda _failure, _attempt: None,
                       ) -> tuple[str, str, Written, int]:
    """Write a program and run it; while it fails and repairs are left, write again with the failure shown. The
    program, its answer, what the successful try kept, and how many repairs it took; `failed` hears of each failure
    (with the number of the try that failed, 0 for the first). The last failure is raised."""
    if isinstance(repairs, bool) or not isinstance(repairs, int) or repairs < 0:
        raise UsageError(f"repairs are a count of second tries, 0 or more, not {repairs!r}")
    failure: ProgramFailed | None = None
    for attempt in range(repairs + 1):
        reply, kept = await write(failure)
        try:
            source, printed = await run_reply(reply, sandbox)
        except ProgramFailed as caught:
            failed(caught, attempt)
            if attempt == repairs:
                raise
            failure = caught
            continue
        return source, printed, kept, attempt
    raise AssertionError("unreachable: the loop returns or raises")


async def program_statement(member: Member, prompt: str, sandbox: Sandbox, *, media: tuple[MediaPart, ...] = (),
                            logprobs: bool = False) -> tuple[Statement, float | None]:
    """One answering turn of a program member: its program, run (and repaired, up to the member's `repairs`); the
    statement it makes, and its reply's probability where `logprobs` asks for it (the reply that held the program
    that ran). The member's own history keeps each reply with what came of it (what it printed, or why it gave no
    answer), so that it knows its answer in later turns."""

    async def write(failure: ProgramFailed | None) -> tuple[str, float | None]:
        asked = (prompts.PROGRAM_FORM.format(prompt=prompt) if failure is None
                 else prompts.PROGRAM_REPAIR.format(reason=failure))
        reply, probability = await member.write(asked, media=media if failure is None else (), logprobs=logprobs)
        if logprobs and probability is None:
            raise ModelError(member.model.id, f"{member.name}'s reply came without a probability to weigh it by")
        return reply, probability

    def failed(failure: ProgramFailed, attempt: int) -> None:
        if attempt < member.repairs:  # the repair prompt tells it, the next turn of its history
            member.model.trace.emit(ProgramRepaired(member=member.name, attempt=attempt + 1, reason=str(failure)))
        else:  # its last try: kept beside the reply, for its later turns to read
            member.note(prompts.PROGRAM_FAILED.format(reason=failure))

    source, printed, probability, _ = await with_repairs(write, sandbox, member.repairs, failed=failed)
    member.note(prompts.PROGRAM_PRINTED.format(printed=printed))
    said = prompts.PROGRAM_SAID.format(program=source.strip(), printed=printed)
    return Statement(reasoning=said[-REASONING_CHARS:], answer=printed), probability
