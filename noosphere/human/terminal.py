"""Asking a person on the terminal (`noosphere ask`): the prompt, then one line per field of the form.

A line that does not fit its field is explained and asked again. The end of the input (Ctrl-D, a pipe that
ran dry) means the person has stopped: the run stops there, and `noosphere ask --resume RUN` goes on later.

Lines are read in a daemon thread, one at a time and only when a field waits for one, so nothing typed ahead
is swallowed and a person who never answers cannot keep the process from exiting. A turn whose time ran out
leaves its read behind: a line that arrives for it after the next question was shown is taken as an answer
to that question, one that arrived before is dropped as late.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from typing import Any, TextIO

from rich.console import Console

from noosphere.human.channel import HumanStopped, Question
from noosphere.human.forms import Field, FormError, read_value
from noosphere.printable import markup_safe


class LineReader:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._pending: asyncio.Future[str] | None = None

    def _start(self) -> asyncio.Future[str]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()

        def read() -> None:
            try:
                line = self.stream.readline()
            except (OSError, ValueError):  # the stream was closed under us: the same as its end
                line = ""

            def deliver() -> None:
                if not future.done():
                    future.set_result(line)

            with contextlib.suppress(RuntimeError):  # the run is over and its loop closed: nobody wants the line
                loop.call_soon_threadsafe(deliver)

        threading.Thread(target=read, name="noosphere-terminal-input", daemon=True).start()
        return future

    def drop_late(self) -> bool:
        """Forget a line that was typed for a question whose time is up; True when there was one."""
        if self._pending is not None and self._pending.done():
            self._pending = None
            return True
        return False

    async def line(self) -> str | None:
        """The next line without its newline, or None at the end of the input."""
        if self._pending is None:
            self._pending = self._start()
        text = await asyncio.shield(self._pending)  # a timed-out turn leaves the read running, for the next
        self._pending = None
        return None if text == "" else text.rstrip("\r\n")


class TerminalChannel:
    name = "terminal"

    def __init__(self, stream: TextIO | None = None, console: Console | None = None) -> None:
        self.reader = LineReader(stream if stream is not None else sys.stdin)
        self.console = console or Console(highlight=False, soft_wrap=True, emoji=False)

    async def ask(self, question: Question) -> dict[str, Any]:
        """The question and then its fields, one line each. The prompt, role and fields were written by other
        members (models) and the society's file: shown as text, a control character as its escape, never acted on."""
        if self.reader.drop_late():
            self.console.print("[dim](a line typed after the last turn's time ran out was left out)[/]")
        self.console.rule(f"[bold]{markup_safe(question.member)}[/], your turn")
        if question.role:
            self.console.print(f"[dim]{markup_safe(question.role)}[/]")
        self.console.print(markup_safe(question.prompt))
        if question.timeout_s is not None:
            self.console.print(f"[dim](answer within {question.timeout_s:g} s, or the turn is forfeited)[/]")
        return {field.name: await self._field(question, field) for field in question.fields}

    async def _field(self, question: Question, field: Field) -> Any:
        about = f" — {field.description}" if field.description else ""
        while True:
            self.console.print(f"[bold]{markup_safe(field.name)}[/]{markup_safe(about)} "
                               f"[dim]({markup_safe(field.hint())})[/]")
            self.console.print("> ", end="")
            line = await self.reader.line()
            if line is None:
                self.console.print()
                raise HumanStopped(question.member, "the terminal's input ended")
            try:
                return read_value(field, line)
            except FormError as wrong:
                self.console.print(f"[yellow]{markup_safe(wrong)}[/]")
