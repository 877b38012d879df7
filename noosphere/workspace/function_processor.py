"""A processor that is a plain function: its bid is computed, not asked of a model.

Where a processor's judgement is a rule, a lookup or a small classifier, a model call per bid is
waste; a `FunctionProcessor` wraps a function of the query, the observation and the processor's
memory that returns a `Bid` (gist, scores, follow-up question). It takes part in a workspace like any
processor (it bids, wins, receives broadcasts, answers link and fusion questions) at a cost of
microseconds, which is what lets a sharded workspace (`noosphere.cluster.shards`) hold 10^5 of them.

For that it also serves a shard's fast path (`Weighing`): `weigh` bids and returns the weight only,
keeping the bid as its latest and in its own memory; `latest` makes the chunk of it when one is
needed (a winner); `hear` takes a broadcast winner. Memory is kept as the engine keeps it, but folded
into a `ProcessorMemory` only when read. A function that never looks at memory can say so
(`remembers=False`): the processor then keeps none, and is given an empty one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol, runtime_checkable

from noosphere.observation import Observation
from noosphere.workspace.chunk import Chunk, WeightRule
from noosphere.workspace.memory import ProcessorMemory

_EMPTY = ProcessorMemory()


class Bid(NamedTuple):
    """What a function processor puts up: its gist and the three scores its weight is made of (a named tuple:
    built once per processor per tick, so it costs what a tuple costs)."""

    gist: str
    relevance: float
    confidence: float
    surprise: float = 0.0
    question: str = ""


BidFunction = Callable[[str, Observation, ProcessorMemory], Bid]


@runtime_checkable
class Weighing(Protocol):
    """A processor a shard can run in a loop: no coroutine, no chunk until one is asked for."""

    name: str

    def weigh(self, query: str, observation: Observation, tick: int) -> float: ...

    def latest(self) -> Chunk: ...

    def hear(self, winner: Chunk) -> None: ...


class FunctionProcessor:
    """A processor whose every answer is `function(query, observation, memory)`."""

    def __init__(self, name: str, function: BidFunction, *, weights: WeightRule | None = None,
                 remembers: bool = True) -> None:
        self.name = name
        self.function = function
        self.weights = weights or WeightRule()
        self.remembers = remembers
        self._memory = ProcessorMemory()
        self._heard: list[Chunk] = []
        self._said: list[tuple[int, Bid]] = []
        self._latest: tuple[int, Bid] | None = None

    @property
    def memory(self) -> ProcessorMemory:
        return self.read()

    def read(self) -> ProcessorMemory:
        if self._heard or self._said:  # what `weigh` and `hear` kept since the last read
            memory = self._memory
            self._memory = ProcessorMemory(memory.winners + tuple(self._heard), memory.fusion,
                                           memory.own + tuple(self._chunk(tick, bid) for tick, bid in self._said))
            self._heard, self._said = [], []
        return self._memory

    def write(self, memory: ProcessorMemory) -> None:
        self._memory, self._heard, self._said = memory, [], []

    def _chunk(self, tick: int, bid: Bid) -> Chunk:
        return Chunk(self.name, tick, bid.gist, bid.question, self.weights(bid.relevance, bid.confidence, bid.surprise),
                     bid.relevance, bid.confidence, bid.surprise)

    def bid_now(self, query: str, observation: Observation, *, tick: int) -> Chunk:
        """The chunk for `query`; nothing is written to memory (the workspace does that)."""
        return self._chunk(tick, self.function(query, observation, self.read() if self.remembers else _EMPTY))

    async def execute(self, query: str, observation: Observation, *, tick: int) -> Chunk:
        return self.bid_now(query, observation, tick=tick)

    def weigh(self, query: str, observation: Observation, tick: int) -> float:
        """Bid, keep the bid as the latest and in its own memory, and return its weight."""
        bid = self.function(query, observation, self.read() if self.remembers else _EMPTY)
        self._latest = (tick, bid)
        if self.remembers:
            self._said.append(self._latest)
        return self.weights(bid.relevance, bid.confidence, bid.surprise)

    def latest(self) -> Chunk:
        if self._latest is None:
            raise ValueError(f"{self.name} has not bid yet")
        return self._chunk(*self._latest)

    def hear(self, winner: Chunk) -> None:
        if self.remembers:
            self._heard.append(winner)
