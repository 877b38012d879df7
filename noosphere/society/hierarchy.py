"""Hierarchies: a whole society taking part in a larger one as a single member.

`SubSociety` stands where a `Member` would: asked a question, it runs its own society on it and
answers with that society's decision (and summary as its reasoning). It can only answer in the
`Statement` form; asked for anything else (a ballot, a hiring decision) it forfeits that turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from noosphere.errors import UsageError
from noosphere.llm.messages import MediaPart
from noosphere.scope import society_scope
from noosphere.society.member import Member
from noosphere.society.session import Statement
from noosphere.society.society import Society
from noosphere.trace import Trace

OutputT = TypeVar("OutputT", bound=BaseModel)


@dataclass
class SubSociety(Member):
    society: Society = field(default=None)  # type: ignore[assignment]
    _trace: Trace | None = None

    @classmethod
    def of(cls, name: str, society: Society, role: str = "") -> SubSociety:
        return cls(name, society.members[0].model, role or f"a {society.organisation} of "
                   f"{len(society.members) + len(society.staff)} members", society=society)

    def join(self, trace: Trace) -> None:
        self.history.clear()
        self._trace = trace

    async def ask(self, prompt: str, output: type[OutputT], *, media: tuple[MediaPart, ...] = ()) -> OutputT:
        if not issubclass(Statement, output) and not issubclass(output, Statement):
            raise UsageError(f"{self.name} is a society and answers with a statement, not a {output.__name__}")
        with society_scope(self.name):  # its events carry its path, so interleaved societies stay apart
            result = await self.society.run(prompt, trace=self._trace)
        try:
            return output.model_validate({"reasoning": (result.summary or result.decided_by)[:2000],
                                          "answer": (result.answer or "(no answer)")[:300]})
        except ValidationError as exc:
            raise UsageError(f"{self.name} could not put its society's answer in the form asked: {exc}") from exc
