"""Usage accounting per run and per agent, with optional budgets that stop a run early."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from noosphere.errors import BudgetExceededError
from noosphere.llm.types import Usage
from noosphere.scope import current_scope


@dataclass(frozen=True)
class Budget:
    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None

    def check(self, calls: int, tokens: int, cost_usd: float, *, owner: object | None = None) -> None:
        """Raise for the first limit that what was spent has reached."""
        for name, limit, used in (("calls", self.max_calls, calls), ("tokens", self.max_tokens, tokens),
                                  ("cost_usd", self.max_cost_usd, cost_usd)):
            if limit is not None and used >= limit:
                raise BudgetExceededError(name, limit, used, owner=owner)


@dataclass
class _Tally:
    calls: int = 0
    cached_calls: int = 0
    usage: Usage = field(default_factory=Usage)


class UsageLedger:
    """Accumulates calls, tokens and cost; checks the budget before each call."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget or Budget()
        self._by_agent: dict[str, _Tally] = defaultdict(_Tally)
        self._total = _Tally()
        self._spent_before = _Tally()
        """What earlier sessions of a resumed run spent: it counts against the budget, not in `summary`."""
        self._started = 0
        """Calls that passed `check`: counted when they start, so calls started together cannot all pass a
        limit of calls only some of them fit in."""

    def carry_over(self, earlier_total: dict[str, Any]) -> None:
        """Count a resumed run's earlier sessions (a `summary()["total"]` row) against the budget, so a
        budget bounds the whole run, however many times it was killed and resumed."""
        self._spent_before = _Tally(
            calls=int(earlier_total.get("calls") or 0),
            usage=Usage(prompt_tokens=int(earlier_total.get("prompt_tokens") or 0),
                        completion_tokens=int(earlier_total.get("completion_tokens") or 0),
                        cost_usd=earlier_total.get("cost_usd")))

    def check(self) -> None:
        """Before a call: raise if a limit is reached (`start_call` then counts it, once every other
        budget around the call has let it through too)."""
        before, now = self._spent_before, self._total
        self.budget.check(before.calls + max(self._started, now.calls),
                          before.usage.total_tokens + now.usage.total_tokens,
                          (before.usage.cost_usd or 0.0) + (now.usage.cost_usd or 0.0))

    def start_call(self) -> None:
        self._started += 1

    def record(self, agent: str | None, usage: Usage, *, cached: bool) -> None:
        for tally in (self._total, self._by_agent[agent or "-"]):
            tally.calls += 1
            tally.cached_calls += int(cached)
            tally.usage = tally.usage + usage
        scope = current_scope()
        if scope is not None:
            scope.calls += 1
            scope.tokens += usage.total_tokens
            scope.prompt_tokens += usage.prompt_tokens
            scope.reused_prompt_tokens += usage.reused_prompt_tokens

    @property
    def total(self) -> Usage:
        return self._total.usage

    @property
    def calls(self) -> int:
        return self._total.calls

    def summary(self) -> dict[str, Any]:
        def row(tally: _Tally) -> dict[str, Any]:
            return {"calls": tally.calls, "cached_calls": tally.cached_calls,
                    "prompt_tokens": tally.usage.prompt_tokens,
                    "completion_tokens": tally.usage.completion_tokens,
                    "reused_prompt_tokens": tally.usage.reused_prompt_tokens, "cost_usd": tally.usage.cost_usd}

        return {"total": row(self._total), "by_agent": {k: row(v) for k, v in sorted(self._by_agent.items())}}
