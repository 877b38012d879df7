"""Budgets for a stretch of work inside a run: one society's run on one task, say.

A run's ledger bounds everything its models do. An allowance bounds what the current asyncio task
and the tasks it starts spend (a `ContextVar`, as the item scope is), so three societies solving
three problems at once on one shared model each keep to a budget of their own. Allowances nest: what
a sub-society spends counts against its own allowance and every one around it. The error names the
allowance that ran out, so that the society that set it can stop and decide with what it has while
an outer limit goes on up to whoever set that one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from noosphere.llm.types import Usage
from noosphere.llm.usage import Budget


@dataclass(eq=False)
class Allowance:
    budget: Budget
    parent: Allowance | None = None
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def chain(self) -> Iterator[Allowance]:
        allowance: Allowance | None = self
        while allowance is not None:
            yield allowance
            allowance = allowance.parent

    def reserve_call(self) -> None:
        """Before a call: raise for the innermost allowance already spent, else count the call at once, so
        that calls started together cannot all pass a limit of calls that only some of them fit in. Tokens
        and money are known only afterwards (`add`): concurrent calls may overshoot those limits by one
        round of calls."""
        for allowance in self.chain():
            allowance.budget.check(allowance.calls, allowance.tokens, allowance.cost_usd, owner=allowance)
        for allowance in self.chain():
            allowance.calls += 1

    def add(self, usage: Usage) -> None:
        """After a call: what it spent."""
        for allowance in self.chain():
            allowance.tokens += usage.total_tokens
            allowance.cost_usd += usage.cost_usd or 0.0


_current: ContextVar[Allowance | None] = ContextVar("noosphere_allowance", default=None)


def current_allowance() -> Allowance | None:
    return _current.get()


@contextlib.contextmanager
def spending_limit(budget: Budget) -> Iterator[Allowance]:
    """Bound what the current task and the tasks it starts spend from here on by `budget`."""
    allowance = Allowance(budget, parent=_current.get())
    token = _current.set(allowance)
    try:
        yield allowance
    finally:
        _current.reset(token)


@contextlib.contextmanager
def spending_from(allowance: Allowance) -> Iterator[Allowance]:
    """Count what the current task and the tasks it starts spend against an allowance made earlier, one that
    outlives this stretch of work: `noosphere serve` keeps one for all the requests it answers."""
    token = _current.set(allowance)
    try:
        yield allowance
    finally:
        _current.reset(token)
