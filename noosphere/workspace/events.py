"""Trace events of the global workspace: one per step, enough to replay an iteration."""

from __future__ import annotations

from pydantic import Field

from noosphere.trace import Event


class IterationEvent(Event):
    """Fields shared by the events of one iteration of the loop (not a kind of its own: subclasses name theirs)."""

    iteration: int


class IterationStarted(IterationEvent):
    kind: str = "ws_iteration"
    tick: int


class ChunkProduced(IterationEvent):
    kind: str = "ws_chunk"
    phase: str  # "chunk" (the query), "link" (the winner's question) or "fusion" (a neighbour's question)
    processor: str
    tick: int
    gist: str
    question: str
    relevance: float
    confidence: float
    surprise: float
    weight: float


class ProcessorForfeited(IterationEvent):
    kind: str = "ws_forfeit"
    phase: str
    processor: str
    error: str


class CompetitionHeld(IterationEvent):
    kind: str = "ws_competition"
    method: str
    weights: dict[str, float]
    winner: str
    matches: list[dict[str, object]] = Field(default_factory=list)


class StmAnswered(IterationEvent):
    kind: str = "ws_stm"
    winner: str
    answer: str
    label: str | None = None
    confidence: float
    threshold: float
    stop: bool


class Broadcast(IterationEvent):
    kind: str = "ws_broadcast"
    winner: str
    gist: str
    recipients: list[str]


class LinkChanged(IterationEvent):
    kind: str = "ws_link"
    a: str
    b: str
    change: str  # created, removed, strengthened, weakened, decayed
    relevance: float | None = None
    weight: float


class FusionExchanged(IterationEvent):
    kind: str = "ws_fusion"
    asker: str
    answerer: str
    question: str
    answer: str


class WorkspaceFinished(Event):
    kind: str = "ws_finished"
    answer: str
    label: str | None = None
    confidence: float
    iterations: int
    stopped_by: str
    links: list[list[str]] = Field(default_factory=list)


class ToolUsed(Event):
    kind: str = "ws_tool"
    processor: str
    tool: str
    arguments: dict[str, object]
    ok: bool
    output: str
