"""The speculative step of an iteration: the winner's broadcast and its link question, begun early.

Algorithm 1 writes the winner into every processor's memory, lets the STM answer, and, only if alpha
is below tau, asks every other processor the winner's follow-up question. The workspace starts the
broadcast and the question before the STM has answered (the question while the STM call runs), so an
iteration costs one model latency less. Once alpha is known, the step is either committed (the loop
goes on: the broadcast is traced and the link replies are collected) or rolled back (the loop stops:
the question is cancelled and every memory is as it was before the broadcast).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from noosphere.trace import Trace
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.events import Broadcast
from noosphere.workspace.memory import ProcessorMemory
from noosphere.workspace.processor import Processor

AskLinks = Callable[[], Awaitable[dict[str, Chunk]]]


@dataclass(frozen=True)
class LinkStep:
    """One iteration's broadcast and link question, pending the STM's alpha."""

    winner: Chunk
    processors: Mapping[str, Processor]
    before: Mapping[str, ProcessorMemory]
    """Every processor's memory before the broadcast: what `rollback` restores."""
    broadcast: bool
    ask: AskLinks | None
    """Asks the link question; None when there is none (the winner asked nothing, or it is the last iteration)."""
    asking: asyncio.Task[dict[str, Chunk]] | None
    """The question already under way (speculative), or None: `commit` asks it then."""
    trace: Trace
    iteration: int

    @classmethod
    def begin(cls, winner: Chunk, processors: Mapping[str, Processor], *, broadcast: bool, ask: AskLinks | None,
              speculative: bool, trace: Trace, iteration: int) -> LinkStep:
        """Write the winner into every memory (when `broadcast`) and, when `speculative`, start the question."""
        before = {name: processor.read() for name, processor in processors.items()}
        if broadcast:
            for processor in processors.values():
                processor.write(processor.read().with_winner(winner))
        asking = asyncio.create_task(ask()) if ask is not None and speculative else None
        return cls(winner, processors, before, broadcast, ask, asking, trace, iteration)

    async def commit(self) -> dict[str, Chunk] | None:
        """The loop goes on: trace the broadcast and return the link replies (None: no question was asked)."""
        if self.broadcast:
            self.trace.emit(Broadcast(iteration=self.iteration, winner=self.winner.processor, gist=self.winner.gist,
                                      recipients=list(self.processors)))
        if self.asking is not None:
            return await self.asking
        return await self.ask() if self.ask is not None else None

    async def rollback(self) -> None:
        """The loop stops (or fails): cancel the question and restore every memory as it was before the step."""
        try:
            if self.asking is not None:
                self.asking.cancel()
                # the step is abandoned: what its question met (cancelled, or a budget spent on a call the answer
                # did not need) is not the run's outcome
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self.asking
        finally:
            for name, memory in self.before.items():
                self.processors[name].write(memory)
