"""Trace events of the global workspace: one per step, enough to replay an iteration."""

from __future__ import annotations

from pydantic import Field

from noosphere.trace import Event


class IterationStarted(Event):
    kind: str = "ws_iteration"
    iteration: int
    tick: int


class ChunkProduced(Event):
    kind: str = "ws_chunk"
    iteration: int
    phase: str  # "chunk" (the query), "link" (the winner's question) or "fusion" (a neighbour's question)
    processor: str
    tick: int
    gist: str
    question: str
    relevance: float
    confidence: float
    surprise: float
    weight: float


class ProcessorForfeited(Event):
    kind: str = "ws_forfeit"
    iteration: int
    phase: str
    processor: str
    error: str


class CompetitionHeld(Event):
    kind: str = "ws_competition"
    iteration: int
    method: str
    weights: dict[str, float]
    winner: str
    matches: list[dict[str, object]] = Field(default_factory=list)


class StmAnswered(Event):
    kind: str = "ws_stm"
    iteration: int
    winner: str
    answer: str
    label: str | None = None
    confidence: float
    threshold: float
    stop: bool


class Broadcast(Event):
    kind: str = "ws_broadcast"
    iteration: int
    winner: str
    gist: str
    recipients: list[str]


class LinkChanged(Event):
    kind: str = "ws_link"
    iteration: int
    a: str
    b: str
    change: str  # created, removed, strengthened, weakened, decayed
    relevance: float | None = None
    weight: float


class FusionExchanged(Event):
    kind: str = "ws_fusion"
    iteration: int
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
