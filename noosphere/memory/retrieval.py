"""Recall for a new task: k past episodes (random, as the paper; the most relevant; or the latest won ones of the
same kind of task) and the concepts."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

import numpy as np

from noosphere.errors import UnknownNameError, UsageError
from noosphere.memory.embedder import Embedder
from noosphere.memory.records import ConceptCluster, Episode
from noosphere.memory.store import MemoryStore

Method = Literal["random", "relevant", "kin"]
METHODS = ("random", "relevant", "kin")
"""`random`: k episodes drawn at random (the paper). `relevant`: the k whose task is nearest the new one (embedding
cosine). `kin`: the k latest episodes of the same kind of task that were won, latest first, and none when there is
none: a solved example of the same kind, as a demonstration is, where a lost game or another kind's moves are not
shown at all."""


@dataclass(frozen=True)
class Recall:
    episodes: tuple[Episode, ...]
    concepts: tuple[ConceptCluster, ...]

    def render(self, max_chars: int = 6000, *, beliefs: bool = True, episodes_title: str = "Earlier episodes") -> str:
        """Rules first (short, most supported first), then the episodes sharing what room is left, under
        `episodes_title`, each at least `MIN_EPISODE_CHARS`: those that do not fit (a large k) are left out, in
        recall order, and said to be; without `beliefs`, an episode is what was done and what the world answered."""
        parts = []
        if self.concepts:
            parts.append("Rules learned from earlier tasks (most supported first):\n" + "\n".join(
                f"- {c.representative[:300]} (from {c.size} lessons)" for c in self.concepts[:12]))
        if self.episodes:
            room = max_chars - sum(map(len, parts))
            shown = self.episodes[:max(1, room // MIN_EPISODE_CHARS)]  # k x 200 characters grew past any context
            share = max(MIN_EPISODE_CHARS, room // len(shown))
            left = len(self.episodes) - len(shown)
            left_out = f"\n\n({left} more recalled episode{'s' * (left > 1)} left out: no room)" if left else ""
            parts.append(f"{episodes_title}:\n" + "\n\n".join(e.render(share, beliefs) for e in shown) + left_out)
        return "\n\n".join(parts)


MIN_EPISODE_CHARS = 200
"""The least room a recalled episode is rendered in (its header and a step or two)."""


def recall_episodes(episodes: list[Episode], task: str, k: int, method: str, *, rng: random.Random,
                    embedder: Embedder | None = None, kind: str | None = None) -> tuple[Episode, ...]:
    """Up to `k` of `episodes` (stored order, oldest first) for `task` by `method`; `kin` needs the task's `kind`."""
    if method not in METHODS:
        raise UnknownNameError("retrieval method", method, METHODS)
    if method == "kin" and not kind:
        raise UsageError("kin retrieval needs the kind of the task (the game's task type)")
    if k <= 0 or not episodes:
        return ()
    if method == "kin":
        return tuple([e for e in reversed(episodes) if e.won and e.kind == kind][:k])
    if method == "random":
        return tuple(rng.sample(episodes, min(k, len(episodes))))
    if embedder is None:
        raise UnknownNameError("embedder", "(none)", ["an embedder for relevance retrieval"])
    vectors = embedder.embed([f"{e.task} ({e.kind})" for e in episodes])
    scores = vectors @ embedder.embed([task])[0]
    order = np.argsort(-scores, kind="stable")[:k]
    return tuple(episodes[int(i)] for i in order)


def recall(store: MemoryStore, task: str, *, k: int, method: str, rng: random.Random,
           embedder: Embedder | None = None, episodic: bool = True, conceptual: bool = True,
           kind: str | None = None) -> Recall:
    episodes = recall_episodes(store.episodes(), task, k, method, rng=rng, embedder=embedder,
                               kind=kind) if episodic else ()
    return Recall(episodes, tuple(store.clusters()) if conceptual else ())
