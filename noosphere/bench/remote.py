"""Benchmark items scored on a cluster's workers, with their rows written here, once each.

The driver (the `noosphere bench` process) keeps the run folder: it reads what is done, sends each
item left to a worker, and appends the row that comes back, exactly as `run_items` does for items it
scores itself (resuming, the progress bar, the report are the same code). A worker is set up once:
`open_solve` opens its model (over the replica of its node, where there is one) and prepares the
benchmark there. Per item it returns the row, the item's trace events and its model calls; the driver
writes the events into the run's trace and counts the calls in the run's ledger, so `trace.jsonl`
and `result.json` read as they would after a run in one process, plus one `cluster_item` event per
item saying where it ran.

A worker killed mid-item is restarted and the item scored again from its start (`cluster.pool`): its
first attempt left nothing behind, since nothing of an item reaches the run folder before its row
does. The run's budget is checked before each item is sent; items already out finish, so a cluster
run may overshoot a budget by what the items in flight spend. When the run stops (an item's usage error,
a spent budget, Ctrl-C), the items out are waited for (`DRAIN_S` at most): their calls and events are counted
as one process would have counted them, and their rows are not written (they are scored again on resume).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.progress import Progress

from noosphere.bench.runner import ItemEvent, Solve, run_items, score_one
from noosphere.cluster.carried import Carried
from noosphere.cluster.connect import Cluster
from noosphere.cluster.pool import Placement, Work, WorkerPool
from noosphere.llm import UsageLedger
from noosphere.llm.types import Usage
from noosphere.runs import Run
from noosphere.scope import current_scope
from noosphere.trace import Event, Trace

DRAIN_S = 60.0
"""How long a stopping run waits for each item still out, to count what it spent."""

OpenSolve = Callable[[Trace, UsageLedger], Solve]
"""Made on the driver, run once on each worker: the benchmark's `solve` there, its model reporting into the
worker's trace and ledger."""


class ItemPlaced(ItemEvent):
    """Where a benchmark item was scored on the cluster: the node and worker process that returned its row."""

    kind: str = "cluster_item"
    node: str
    pid: int
    restarted: bool
    """The worker had been restarted by Ray (it or an earlier one of its process died) before this row."""


class ItemUncounted(ItemEvent):
    """The run stopped with this item out, and its worker did not answer within `DRAIN_S`: what it spent is not in
    the run's ledger."""

    kind: str = "cluster_uncounted"
    reason: str


@dataclass(frozen=True)
class ItemJob:
    item_id: str
    item: Any
    gold: Any


@dataclass(frozen=True)
class Call:
    agent: str | None
    usage: Usage
    cached: bool


@dataclass(frozen=True)
class ItemOutcome:
    """What a worker returns for one item: its row (None when the item stopped the run), its events and calls."""

    row: dict[str, Any] | None
    events: tuple[dict[str, Any], ...]
    calls: tuple[Call, ...]
    stop: Carried | None = None
    """A spent budget, a usage error or a bug: raised on the driver, as it would have been in one process."""


class ItemLedger(UsageLedger):
    """A worker's ledger that also keeps each item's calls apart, to be counted again in the run's ledger."""

    def __init__(self) -> None:
        super().__init__()
        self._calls: defaultdict[str, list[Call]] = defaultdict(list)

    def record(self, agent: str | None, usage: Usage, *, cached: bool) -> None:
        super().record(agent, usage, cached=cached)
        scope = current_scope()
        if scope is not None:
            self._calls[scope.item_id].append(Call(agent, usage, cached))

    def take(self, item_id: str) -> tuple[Call, ...]:
        return tuple(self._calls.pop(item_id, ()))


def _take_events(trace: Trace, item_id: str) -> tuple[dict[str, Any], ...]:
    """The item's events, out of the worker's trace (events of no item, from setting up, are dropped)."""
    mine = tuple(e.model_dump(mode="json") for e in trace.events if getattr(e, "item_id", None) == item_id)
    trace.events = [e for e in trace.events if getattr(e, "item_id", None) not in (item_id, None)]
    return mine


def item_worker(open_solve: OpenSolve) -> Work:
    """A pool worker's setup: open the model and prepare the benchmark, then score the items sent to it."""
    trace, ledger = Trace(None), ItemLedger()
    solve = open_solve(trace, ledger)

    async def score(job: ItemJob) -> ItemOutcome:
        try:
            row = await score_one(trace, job.item_id, job.item, job.gold, solve=solve)
        except Exception as exc:
            return ItemOutcome(None, _take_events(trace, job.item_id), ledger.take(job.item_id), Carried.of(exc))
        return ItemOutcome(row, _take_events(trace, job.item_id), ledger.take(job.item_id))

    return score


@dataclass(frozen=True)
class ClusterScorer:
    """`run_items`' scorer on a cluster: the item goes to a worker; its events and calls join the run here."""

    run: Run
    pool: WorkerPool
    cluster: Cluster

    async def __call__(self, item_id: str, item: Any, gold: Any) -> dict[str, Any]:
        self.run.ledger.check()  # a spent budget sends no more items out
        sent = asyncio.ensure_future(self.pool.submit(ItemJob(item_id, item, gold)))
        try:
            placement, outcome = await asyncio.shield(sent)
        except asyncio.CancelledError:  # the run is stopping: the worker cannot be called back mid-item
            await self._count_when_back(sent, item_id)
            raise
        if isinstance(outcome, Carried):  # the worker itself failed, not the item
            outcome.raise_on(self.cluster.node(placement.node_id))
        self._join(placement, item_id, outcome)
        if outcome.stop is not None:
            raise outcome.stop.rebuild()
        assert outcome.row is not None
        return outcome.row

    async def _count_when_back(self, sent: asyncio.Future[tuple[Placement, Any]], item_id: str) -> None:
        """Wait for an item out when the run stopped, and count its calls and events (its row is not written)."""
        try:
            placement, outcome = await asyncio.wait_for(asyncio.shield(sent), DRAIN_S)
        except asyncio.CancelledError:  # stopped again (a second Ctrl-C): no more waiting
            sent.cancel()
            self.run.trace.emit(ItemUncounted(item_id=item_id, reason="the run was stopped again meanwhile"))
            return
        except Exception as error:  # it did not come back in time, or its worker was lost
            sent.cancel()
            self.run.trace.emit(ItemUncounted(item_id=item_id, reason=f"{type(error).__name__}: {error}"))
            return
        if isinstance(outcome, ItemOutcome):
            self._join(placement, item_id, outcome)

    def _join(self, placement: Placement, item_id: str, outcome: ItemOutcome) -> None:
        for data in outcome.events:
            self.run.trace.emit(Event.parse(data))
        for call in outcome.calls:
            self.run.ledger.record(call.agent, call.usage, cached=call.cached)
        self.run.trace.emit(ItemPlaced(item_id=item_id, node=str(self.cluster.node(placement.node_id)),
                                       pid=placement.pid, restarted=placement.restarted))


async def run_items_on_cluster(run: Run, items: Sequence[tuple[str, Any, Any]], open_solve: OpenSolve,
                               cluster: Cluster, *, workers: int, per_worker: int = 1, show_progress: bool = True,
                               progress: Progress | None = None, label: str | None = None,
                               warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """`run_items` with the items scored by `workers` workers on the cluster, `per_worker` at a time each."""
    async with WorkerPool(cluster, partial(item_worker, open_solve), workers=workers, per_worker=per_worker) as pool:
        return await run_items(run, items, _unused, show_progress=show_progress, parallel=workers * per_worker,
                               progress=progress, label=label, warn=warn, scorer=ClusterScorer(run, pool, cluster))


async def _unused(item: Any) -> Any:
    raise AssertionError("items on a cluster are solved by its workers")
