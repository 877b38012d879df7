"""The meta-agent's long-term memory in use: what a run keeps, recalls at the start of a task, and stores.

At the start of each task the rules are consolidated ("sleep") and k past episodes are recalled, at
random (the paper), by relevance, or as the latest won games of the same kind (`kin`); or, with `RecallAt`
`stuck`, not until the focus loop first opens. The retrieve-memory agent recalls again mid-game for the current
belief. When the game ends the episode is stored (episodic) and, after a win, its rules (conceptual).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from noosphere.errors import UnknownNameError
from noosphere.memory import Embedder, Episode, MemoryStore, default_embedder, recall, sleep
from noosphere.metaagent.events import MemoryRetrieved
from noosphere.metaagent.state import EpisodeState
from noosphere.trace import Trace

RecallView = Literal["team", "planner"]
RECALL_VIEWS: tuple[RecallView, ...] = ("team", "planner")
RecallAt = Literal["start", "stuck"]
RECALL_AT: tuple[RecallAt, ...] = ("start", "stuck")
OTHER_GAMES = ("Earlier games, each in another world: their rooms and objects are not in this one. What was done, "
               "and what the game answered")


@dataclass(frozen=True)
class MemorySettings:
    store: MemoryStore
    episodic: bool = True
    conceptual: bool = True
    method: str = "random"
    k: int = 4
    embedder: Embedder = field(default_factory=default_embedder)
    """Clusters the rules at each sleep and ranks episodes for relevance retrieval."""
    view: RecallView = "team"
    """Who reads what is recalled. `team` (the paper): every agent's context, each episode with the belief states
    written during it. `planner`: the planner alone, each episode as the actions taken and what the game answered.
    With `team`, the 1.5B's belief writer copied a recalled episode's ending into the new game's belief ("You
    scored 1 out of 1") before any action, and its planner took the recalled game's moves (TextWorld, stop 47).
    With `planner`, the other agents see the planned action without the planner's reasons, and a belief naming an
    object only a recalled game showed is a hallucination; a graph offering a choice after planning still has the
    orchestrator's pick asked in the planner's call, memory and all."""

    at: RecallAt = "start"
    """When a game's memory is recalled. `start` (the paper): before the first action. `stuck`: when the focus loop
    first opens, and not before; until then the memory agents are not offered either, so the team plays the game the
    team without memory plays, prompt for prompt (stop 52's first version offered them, and the orchestrator's
    question alone made coin_collector-0 another game), and a game never stuck is played as without memory. On the
    1.5B any recalled text before its first greedy step moved that step, more often away from the expert's action than
    toward it, even a won game of the same kind (TextWorld, stops 48 and 50); where the team is stuck, moving its
    next step is what is wanted."""

    def __post_init__(self) -> None:
        if self.view not in RECALL_VIEWS:
            raise UnknownNameError("recall view", self.view, RECALL_VIEWS)
        if self.at not in RECALL_AT:
            raise UnknownNameError("recall time", self.at, RECALL_AT)

    @property
    def active(self) -> bool:
        return self.episodic or self.conceptual

    def begin(self, state: EpisodeState, game: str, trace: Trace, *, seed: int, kind: str) -> None:
        """A new task: consolidate the rules ("sleep"), then recall for the task if memory is recalled at the start."""
        if not self.active:
            return
        if self.conceptual:
            sleep(self.store, self.embedder, seed=seed)
        if self.at == "start":
            self.recall_into(state, game, trace, seed=seed, kind=kind)

    def stuck(self, state: EpisodeState, game: str, trace: Trace, *, seed: int, kind: str) -> None:
        """The focus loop opened: recall for the task, the first time, if memory waits for that (`stuck`)."""
        if self.active and self.at == "stuck" and not state.recalled:
            self.recall_into(state, game, trace, seed=seed, kind=kind)

    def recall_into(self, state: EpisodeState, game: str, trace: Trace, *, seed: int, kind: str,
                    query: str | None = None) -> None:
        """Put what memory holds for `query` (the task, when none is given) into the state's context; `kind` is
        the game's kind of task, which `kin` retrieval recalls by."""
        if not self.active:
            return
        state.recalled = True
        # seeded by game and timestep, not by how many recalls came before: a resumed run recalls the same
        rng = random.Random(f"{seed}:{game}:{state.t}:{query is not None}")
        found = recall(self.store, query or state.task, k=self.k, method=self.method, rng=rng,
                       embedder=self.embedder, episodic=self.episodic, conceptual=self.conceptual, kind=kind)
        shared = self.view == "team"
        state.recall = found.render() if shared else found.render(beliefs=False, episodes_title=OTHER_GAMES)
        state.recall_shared = shared
        if self.episodic:
            trace.emit(MemoryRetrieved(step=state.t, memory="episodic", method=self.method,
                                       items=[e.task for e in found.episodes]))
        if self.conceptual:
            trace.emit(MemoryRetrieved(step=state.t, memory="conceptual", method="all",
                                       items=[c.representative for c in found.concepts]))

    def keep(self, state: EpisodeState, game: str, kind: str) -> None:
        """Store the finished episode (episodic) and, if it was won, its rules (conceptual)."""
        episode = Episode(state.task, kind, game, (state.opening, *state.steps), state.won) if self.episodic else None
        self.store.add_game(episode, state.rules if self.conceptual and state.won else (), game)
