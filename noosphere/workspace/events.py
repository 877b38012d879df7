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
    """The processor's answer to the question it was asked: what it puts up for the competition, or what it
    tells the asker."""
    question: str
    """Its follow-up question: one another processor could answer to improve the answer (empty: none). A winner's
    question is asked of every other processor (the link step); a processor's latest one is asked of its
    neighbours in fusion."""
    relevance: float
    """How directly the gist answers the question, in [0, 1]: the processor's own rating, or from the model's
    token probabilities (`scores` of the processor). In the link step it decides the link to the winner."""
    confidence: float
    """How sure the gist is, in [0, 1], from the same source as `relevance`."""
    surprise: float
    """How unexpected or novel the gist is, in [0, 1], from the same source as `relevance`."""
    weight: float
    """What the chunk weighs in the competition: relevance x 1 + confidence x 1 + surprise x 0.2 under the default
    `WeightRule` (the paper's ratios)."""


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
    """One end of the link: the winner whose question was answered (for `decayed` and a decay's `removed`, either
    end)."""
    b: str
    """The other end: the processor whose answer to the winner's question changed the link."""
    change: str  # created, removed, strengthened, weakened, decayed
    relevance: float | None = None
    """The relevance of `b`'s answer to the winner's question that made the change; None for a decay."""
    weight: float
    """The link's weight after the change, in [0, 1]: 1.0 for a binary link, 0.0 once removed."""


class FusionExchanged(IterationEvent):
    kind: str = "ws_fusion"
    asker: str
    """The processor that asked: its latest follow-up question goes to each processor linked to it."""
    answerer: str
    """The linked neighbour that answered."""
    question: str
    """The asker's question, as asked."""
    answer: str
    """The neighbour's answer (the gist of its chunk), written into the asker's memory as a fusion note."""


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
