"""Concurrent work with results in the given order and errors raised as themselves.

`asyncio.TaskGroup` cancels the other tasks when one fails, which is what a run wants, but then
raises an `ExceptionGroup` that no caller of ours catches: a spent budget would reach the command
line as a traceback instead of its own error. `run_in_order` raises the first failure as itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_in_order(coroutines: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run every coroutine at once; return their results in the order given (not of completion)."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(coroutine) for coroutine in coroutines]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]
