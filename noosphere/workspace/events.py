"""Trace events of the global workspace: one per step, enough to replay an iteration."""

from __future__ import annotations

from pydantic import Field

from noosphere.trace import Event


class IterationEvent(Event):
    """Fields shared by the events of one iteration of the loop (not a kind of its own: subclasses name theirs)."""

    iteration: int


class IterationStarted(IterationEvent):
    """An iteration of the workspace loop begins (`Workspace.run`, `ShardedWorkspace.run`): its number, from 1, and the
    tick of its bids (2 x iteration - 1; the link and fusion steps after them use the next)."""

    kind: str = "ws_iteration"
    tick: int


class ChunkProduced(IterationEvent):
    """A chunk a processor produced (`Workspace._execute_all`), traced once it joins the processor's memory: its bid for
    the query (`phase` chunk) or its answer to the winner's question (`phase` link). Answers in fusion are traced as
    `ws_fusion`."""

    kind: str = "ws_chunk"
    phase: str  # "chunk" (the query) or "link" (the winner's question)
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
    """A processor's turn (or the STM's) failed at run time and was forfeited; the run goes on without it. `phase` is
    the step (`chunk`, `link`, `fusion` or `stm`) and `error` says why."""

    kind: str = "ws_forfeit"
    phase: str
    processor: str
    error: str


class CompetitionHeld(IterationEvent):
    """The competition of an iteration (`Workspace._compete`; a `ShardedWorkspace` finishes it over its shards): the
    method (`random` under the `no_uptree` ablation), the weight of each chunk that competed, the winner, and each match
    of an up-tree competition."""

    kind: str = "ws_competition"
    method: str
    weights: dict[str, float]
    winner: str
    matches: list[dict[str, object]] = Field(default_factory=list)


class StmAnswered(IterationEvent):
    """The short-term memory's answer from the iteration's winning chunk (`Workspace._stm_answer`): the answer, its
    label and confidence (alpha), the threshold (tau) and whether alpha reached it, which stops the loop. A forfeited
    STM call keeps the previous answer (or the winner's gist, at confidence 0)."""

    kind: str = "ws_stm"
    winner: str
    answer: str
    label: str | None = None
    confidence: float
    threshold: float
    stop: bool


class Broadcast(IterationEvent):
    """The winner's chunk was written into every processor's memory (`LinkStep.commit`): traced only when the loop goes
    on, since a broadcast is rolled back when the STM's answer stops it."""

    kind: str = "ws_broadcast"
    winner: str
    gist: str
    recipients: list[str]


class LinkChanged(IterationEvent):
    """A change to the link graph after the link step (`Workspace._form_links`): weighted links decay first, then each
    processor's answer to the winner's question creates, strengthens, weakens or removes its link to the winner."""

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
    """One question and answer of the fusion step (`Workspace._fuse`): a processor's latest follow-up question, answered
    by a processor linked to it, and written into the asker's memory."""

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
    """The workspace's run is over (`Workspace.run`, `ShardedWorkspace.run`): the last STM answer with its label and
    confidence, the iterations run, why it stopped (`confidence`, `max_iterations` or `no_chunks`) and the links at the
    end (pairs of processors)."""

    kind: str = "ws_finished"
    answer: str
    label: str | None = None
    confidence: float
    iterations: int
    stopped_by: str
    links: list[list[str]] = Field(default_factory=list)


class ToolUsed(Event):
    """A tool processor called its tool while working out its chunk (`ToolProcessor.execute`, up to `max_calls` calls a
    turn): the tool and its arguments, whether the call succeeded, and its output (the first 2,000 characters)."""

    kind: str = "ws_tool"
    processor: str
    tool: str
    arguments: dict[str, object]
    ok: bool
    output: str
