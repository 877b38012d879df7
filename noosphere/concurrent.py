"""Concurrent turns, and the one rule for a turn that fails.

Every engine runs turns: a processor's bid, a member's statement, an agent's call, one of N samples.
What a failed turn means is decided here, once, for all of them:

- a runtime fault (`RuntimeFault`: a provider fault, output that never validated, a turn a participant
  cannot take) forfeits that turn alone: the caller gets a `Forfeit`, traces it and goes on;
- a spent budget (`BudgetExceededError`, a runtime fault too) stops the run: it is raised as itself;
- a usage error (`UsageError`, e.g. `CapabilityError`) is the caller's mistake, and anything else is a
  bug: both are raised, never forfeited.

`gather_turns` runs turns at once behind a gate (bounded concurrency) and returns their results in the
order given. A failure that propagates cancels the other turns and is raised as itself, not as the
`ExceptionGroup` that `asyncio.TaskGroup` would raise (no caller of ours catches one: a spent budget
would reach the command line as a traceback instead of its own error).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from noosphere.errors import BudgetExceededError, RuntimeFault

T = TypeVar("T")


@dataclass(frozen=True)
class Forfeit:
    """A turn that failed with a runtime fault: it gave nothing, and the run goes on without it."""

    error: RuntimeFault

    def __str__(self) -> str:
        return f"{type(self.error).__name__}: {self.error}"


def forfeits(error: BaseException) -> bool:
    """The policy: only a runtime fault that is not a spent budget costs just the turn it happened in."""
    return isinstance(error, RuntimeFault) and not isinstance(error, BudgetExceededError)


async def attempt(turn: Awaitable[T]) -> T | Forfeit:
    """One turn under the policy: its result, or a `Forfeit`; a usage error, a spent budget or a bug is raised."""
    try:
        return await turn
    except RuntimeFault as error:
        if not forfeits(error):
            raise
        return Forfeit(error)


async def gather_turns(turns: Iterable[Callable[[], Awaitable[T]]], *,
                       limit: int | asyncio.Semaphore | None = None) -> list[T | Forfeit]:
    """Start every turn at once, at most `limit` running together (a number, or a gate shared with other
    calls; None: no bound); return each turn's result or `Forfeit` in the order given.

    Turns are given as functions that start them, so a turn still waiting at the gate when the run stops
    was never begun."""
    gate = asyncio.Semaphore(limit) if isinstance(limit, int) else limit or contextlib.nullcontext()
    stopping = False

    async def one(turn: Callable[[], Awaitable[T]]) -> T | Forfeit:
        nonlocal stopping
        async with gate:
            if stopping:  # another turn raised while this one waited for its place: the group is being cancelled
                raise asyncio.CancelledError
            try:
                return await attempt(turn())
            except BaseException:
                stopping = True  # set before the gate lets the next turn in
                raise

    return await run_in_order(one(turn) for turn in turns)


async def run_in_order(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run every coroutine at once; return their results in the order given (not of completion). The first
    failure cancels the others and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(coroutine) for coroutine in coroutines]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]
