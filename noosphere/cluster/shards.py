"""A global workspace whose processors are partitioned across actors: one shard per actor.

`Workspace` holds its processors in one process; past a few thousand, their bids alone fill a core.
A `ShardedWorkspace` builds K processors on `shards` actors (each builds its own contiguous run of
them from a picklable `build(indices)`, so no processor crosses the network), and an iteration goes:

1. every shard has each of its processors bid (a function processor in a plain loop, a model-backed
   one as a concurrent turn, under the forfeit policy), keeps the chunks, and reports its count, its
   best weight and the chunks that reach it;
2. the competition is finished on the driver as a reduction over the shards (`cluster.reduction`):
   argmax from the shards' best chunks, the up-tree from the winners of the shards' own subtrees;
   the winner is the one `Workspace` would pick for the same seed;
3. the short-term memory (on the driver) answers from the winner; if the loop goes on, the winner is
   broadcast to every shard, which writes it into each of its processors' memory.

Links and fusion (pairwise questions between processors) are not played across shards: a sharded
workspace runs bid, compete, answer and broadcast. Its trace carries one event per phase (counts,
the shard-level competition), not one per processor.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np

from noosphere.cluster.carried import Carried, unwrap
from noosphere.cluster.connect import Cluster, kill_actors, placed, require_ray, share_of_cpus
from noosphere.cluster.reduction import Block, Tree, argmax_of, draw_all, finish_uptree, local_uptree
from noosphere.concurrent import Forfeit, forfeits, gather_turns
from noosphere.errors import RuntimeFault, UsageError
from noosphere.observation import Observation
from noosphere.trace import Trace
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.engine import WorkspaceResult, WorkspaceSettings
from noosphere.workspace.events import (
    CompetitionHeld,
    IterationEvent,
    IterationStarted,
    ProcessorForfeited,
    StmAnswered,
    WorkspaceFinished,
)
from noosphere.workspace.function_processor import Weighing
from noosphere.workspace.memory import ProcessorMemory
from noosphere.workspace.processor import Processor
from noosphere.workspace.stm import ShortTermMemory, StmAnswer

Build = Callable[[range], list[Processor]]
"""Makes the processors of the given global indices (on the shard: it is shipped there, so it must pickle)."""


class ShardsBid(IterationEvent):
    """One round of bids over every shard: how many chunks came back, how many processors forfeited, how long."""

    kind: str = "ws_shards_bid"
    tick: int
    shards: int
    chunks: int
    forfeits: int
    seconds: float


class ShardsBroadcast(IterationEvent):
    """The winner written into the memory of every processor of every shard."""

    kind: str = "ws_shards_broadcast"
    winner: str
    gist: str
    recipients: int
    """Processors whose memory received the winner, over every shard."""


@dataclass(frozen=True)
class ShardBids:
    """One shard's answer to a round of bids."""

    count: int
    best: float
    tied: tuple[Chunk, ...]
    """Its chunks of weight `best`, in order (what argmax needs of it)."""
    forfeits: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class TickResult:
    winner: Chunk | None
    """None when every processor forfeited (nothing is broadcast then)."""
    chunks: int
    forfeits: int
    recipients: int
    bid_s: float
    compete_s: float
    broadcast_s: float


class _Shard:
    """The actor: a run of processors, what they bid in the last round, and the shard's side of each phase.

    Processors that can be weighed (`Weighing`: function processors) are run in a plain loop and make a chunk
    only when theirs is needed; the others bid as concurrent turns."""

    def __init__(self, build: Build, indices: range) -> None:
        self.processors: list[Processor] = build(indices)
        self.fast = [isinstance(p, Weighing) for p in self.processors]
        self.present: list[int] = []
        """Positions of the processors that bid in the last round, in order (a forfeit is left out)."""
        self.weights: list[float] = []
        self.chunks: dict[int, Chunk] = {}
        """The last round's chunks of the processors that are not weighed."""

    def names(self) -> list[str]:
        return [p.name for p in self.processors]

    def forget(self) -> int:
        """Empty every processor's memory (a new run, or `no_ltm` before each bid), as `Workspace` does."""
        for processor in self.processors:
            processor.write(ProcessorMemory())
        return len(self.processors)

    def chunk(self, position: int) -> Chunk:
        """The last round's chunk of the processor at `position`."""
        processor = self.processors[position]
        return self.chunks[position] if position in self.chunks else processor.latest()  # type: ignore[attr-defined]

    async def bid(self, query: str, observation: Observation, tick: int, limit: int) -> ShardBids | Carried:
        try:
            return await self._bid(query, observation, tick, limit)
        except Exception as exc:  # a usage error, a spent budget or a bug: raised on the driver
            return Carried.of(exc)

    async def _bid(self, query: str, observation: Observation, tick: int, limit: int) -> ShardBids:
        weights: list[float | None] = [None] * len(self.processors)
        lost: list[tuple[str, str]] = []
        waiting = []
        for position, (processor, fast) in enumerate(zip(self.processors, self.fast, strict=True)):
            if not fast:
                waiting.append(position)
                continue
            try:  # a function processor: no coroutine, no task, no chunk
                weights[position] = processor.weigh(query, observation, tick)  # type: ignore[attr-defined]
            except RuntimeFault as error:
                if not forfeits(error):
                    raise
                lost.append((processor.name, str(Forfeit(error))))
        turns = [_turn(self.processors[position], query, observation, tick) for position in waiting]
        self.chunks = {}
        for position, result in zip(waiting, await gather_turns(turns, limit=limit), strict=True):
            processor = self.processors[position]
            if isinstance(result, Forfeit):
                lost.append((processor.name, str(result)))
                continue
            processor.write(processor.read().with_own(result))
            self.chunks[position] = result
            weights[position] = result.weight
        self.present = [position for position, weight in enumerate(weights) if weight is not None]
        self.weights = [weights[position] for position in self.present]  # type: ignore[misc]
        best = max(self.weights, default=float("-inf"))
        tied = tuple(self.chunk(p) for p, w in zip(self.present, self.weights, strict=True) if w == best)
        return ShardBids(len(self.present), best, tied, tuple(lost))

    def reduce(self, offset: int, n: int, draws: dict[int, np.ndarray]) -> list[Block]:
        return local_uptree(self.weights, offset, n, draws, lambda index: self.chunk(self.present[index]))

    def chunk_at(self, index: int) -> Chunk:
        return self.chunk(self.present[index])

    def memories(self) -> dict[str, ProcessorMemory]:
        return {processor.name: processor.read() for processor in self.processors}

    def broadcast(self, winner: Chunk) -> int:
        for processor, fast in zip(self.processors, self.fast, strict=True):
            if fast:
                processor.hear(winner)  # type: ignore[attr-defined]
            else:
                processor.write(processor.read().with_winner(winner))
        return len(self.processors)


def _turn(processor: Processor, query: str, observation: Observation, tick: int) -> Any:
    return lambda: processor.execute(query, observation, tick=tick)


class ShardedWorkspace:
    """`count` processors made by `build` over `shards` actors (default: one per CPU of the cluster); use as an
    async context manager. `stm` answers on the driver (needed by `run`, not by `tick`)."""

    def __init__(self, cluster: Cluster, build: Build, count: int, *, shards: int | None = None,
                 stm: ShortTermMemory | None = None, settings: WorkspaceSettings | None = None,
                 trace: Trace | None = None) -> None:
        shards = shards or max(1, int(cluster.cpus))
        if count < 1 or shards < 1:
            raise UsageError(f"a sharded workspace needs processors and shards, not {count} over {shards}")
        self.cluster = cluster
        self.build = build
        self.count = count
        self.ranges = [range(count * i // shards, count * (i + 1) // shards) for i in range(min(shards, count))]
        self.stm = stm
        self.settings = settings or WorkspaceSettings()
        self.trace = trace if trace is not None else (stm.model.trace if stm is not None else Trace(None))
        self.actors: list[Any] = []

    async def __aenter__(self) -> ShardedWorkspace:
        ray = require_ray()
        cpus = share_of_cpus(self.cluster, len(self.ranges))
        actor = ray.remote(_Shard).options(num_cpus=cpus, max_concurrency=1, scheduling_strategy="SPREAD")
        self.actors = [actor.remote(self.build, indices) for indices in self.ranges]
        try:
            names = [name for part in await placed(asyncio.gather(*(a.names.remote() for a in self.actors)),
                                                   len(self.actors), "shards", self.cluster) for name in part]
        except BaseException:
            kill_actors(self.actors)
            raise
        if len(names) != self.count:
            kill_actors(self.actors)
            raise UsageError(f"build made {len(names)} processors for {self.count} indices")
        if len(set(names)) != len(names):  # over every shard, as one workspace would refuse them
            kill_actors(self.actors)
            repeated = sorted({name for name in names if names.count(name) > 1} if len(names) < 10_000 else set())
            raise UsageError("a workspace needs processors with distinct names"
                             + (f"; repeated: {', '.join(repeated[:5])}" if repeated else ""))
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        kill_actors(self.actors)

    async def tick(self, query: str, observation: Observation | None = None, *, tick: int = 1, iteration: int = 1,
                   rng: random.Random | None = None) -> TickResult:
        """One tick: every processor bids, the competition picks one, the winner is broadcast to every shard."""
        rng = rng or random.Random(self.settings.seed)
        started = time.perf_counter()
        winner, chunks, lost, bid_s = await self._bid_and_compete(query, observation or Observation(), tick,
                                                                  iteration, rng)
        competed = time.perf_counter()
        recipients = await self._broadcast(winner, iteration) if winner is not None else 0
        return TickResult(winner, chunks, lost, recipients, bid_s, competed - started - bid_s,
                          time.perf_counter() - competed)

    async def memories(self) -> dict[str, ProcessorMemory]:
        """Every processor's memory, by name (each shard sends all of its own: for tests and small workspaces)."""
        parts = await asyncio.gather(*(actor.memories.remote() for actor in self.actors))
        return {name: memory for part in parts for name, memory in part.items()}

    async def run(self, query: str, observation: Observation | None = None) -> WorkspaceResult:
        """Up to T iterations of bid, compete, answer (the STM) and broadcast; links and fusion are not played."""
        if self.stm is None:
            raise UsageError("a sharded workspace answers through a short-term memory: give it stm=")
        observation, settings = observation or Observation(), self.settings
        rng = random.Random(settings.seed)
        if not settings.carry_over:  # a run's own memories, as in `Workspace` (links are not played here)
            await self._forget()
        answer: StmAnswer | None = None
        winners: list[str] = []
        stopped_by, iteration = "max_iterations", 0
        for iteration in range(1, settings.max_iterations + 1):
            tick = 2 * iteration - 1
            self.trace.emit(IterationStarted(iteration=iteration, tick=tick))
            winner, _, _, _ = await self._bid_and_compete(query, observation, tick, iteration, rng)
            if winner is None:
                stopped_by = "no_chunks"
                break
            winners.append(winner.processor)
            answer = await self._answer(query, winner, iteration, answer)
            if answer.confidence >= settings.threshold or iteration == settings.max_iterations:
                stopped_by = "confidence" if answer.confidence >= settings.threshold else "max_iterations"
                break
            await self._broadcast(winner, iteration)
        final = answer or StmAnswer("", 0.0)
        self.trace.emit(WorkspaceFinished(answer=final.answer, label=final.label, confidence=final.confidence,
                                          iterations=iteration, stopped_by=stopped_by, links=[]))
        return WorkspaceResult(final.answer, final.confidence, final.label, iteration, stopped_by, tuple(winners), [])

    async def _bid_and_compete(self, query: str, observation: Observation, tick: int, iteration: int,
                               rng: random.Random) -> tuple[Any, int, int, float]:
        if "no_ltm" in self.settings.ablations:
            await self._forget()
        started = time.perf_counter()
        limit = self.settings.max_concurrency
        bids: list[ShardBids] = [unwrap(b) for b in await asyncio.gather(
            *(a.bid.remote(query, observation, tick, limit) for a in self.actors))]
        seconds = time.perf_counter() - started
        lost = [pair for bid in bids for pair in bid.forfeits]
        for name, error in lost:
            self.trace.emit(ProcessorForfeited(iteration=iteration, phase="chunk", processor=name, error=error))
        n = sum(bid.count for bid in bids)
        self.trace.emit(ShardsBid(iteration=iteration, tick=tick, shards=len(bids), chunks=n, forfeits=len(lost),
                                  seconds=round(seconds, 4)))
        if n == 0:
            return None, 0, len(lost), seconds
        return await self._compete(bids, n, iteration, rng), n, len(lost), seconds

    async def _compete(self, bids: list[ShardBids], n: int, iteration: int, rng: random.Random) -> Chunk:
        """The competition `Workspace` would hold, finished here over what the shards return."""
        method = "random" if "no_uptree" in self.settings.ablations else self.settings.competition
        holding = [(actor, bid) for actor, bid in zip(self.actors, bids, strict=True) if bid.count]
        offsets = [sum(bid.count for _, bid in holding[:i]) for i in range(len(holding))]
        matches: list[dict[str, object]] = []
        if method == "argmax":
            candidates = [chunk for _, bid in holding for chunk in bid.tied]
            winner = argmax_of([(bid.best, list(bid.tied)) for _, bid in holding], rng)
        elif method == "uptree":
            tree, draws = Tree(n), draw_all(n, rng)
            blocks = [block for part in await asyncio.gather(*(
                actor.reduce.remote(offset, n, tree.shard_draws(offset, bid.count, draws))
                for (actor, bid), offset in zip(holding, offsets, strict=True))) for block in part]
            candidates = [block.winner for block in blocks]
            winner, matches = finish_uptree(blocks, n, draws)
        else:
            index = rng.choice(range(n))
            shard = max(i for i, offset in enumerate(offsets) if offset <= index)
            winner = await holding[shard][0].chunk_at.remote(index - offsets[shard])
            candidates = [winner]
        self.trace.emit(CompetitionHeld(iteration=iteration, method=method, winner=winner.processor,
                                        weights={c.processor: round(c.weight, 4) for c in candidates},
                                        matches=matches))
        return winner

    async def _forget(self) -> None:
        await asyncio.gather(*(actor.forget.remote() for actor in self.actors))

    async def _answer(self, query: str, winner: Chunk, iteration: int, previous: StmAnswer | None) -> StmAnswer:
        assert self.stm is not None
        try:
            answer = await self.stm.answer(query, winner)
        except RuntimeFault as error:
            if not forfeits(error):
                raise
            self.trace.emit(ProcessorForfeited(iteration=iteration, phase="stm", processor=self.stm.name,
                                               error=str(Forfeit(error))))
            answer = previous or StmAnswer(winner.gist, 0.0)
        threshold = self.settings.threshold
        self.trace.emit(StmAnswered(iteration=iteration, winner=winner.processor, answer=answer.answer,
                                    label=answer.label, confidence=answer.confidence, threshold=threshold,
                                    stop=answer.confidence >= threshold))
        return answer

    async def _broadcast(self, winner: Chunk, iteration: int) -> int:
        if "no_broadcast" in self.settings.ablations:
            return 0
        recipients = sum(await asyncio.gather(*(actor.broadcast.remote(winner) for actor in self.actors)))
        self.trace.emit(ShardsBroadcast(iteration=iteration, winner=winner.processor, gist=winner.gist,
                                        recipients=recipients))
        return recipients
