"""Up-tree competition: which chunk reaches short-term memory.

- `argmax` is what CTM-AI uses with few processors: the highest weight wins; ties are broken by a
  seeded random choice, so a run is reproducible and no processor is favoured by its position.
- `uptree` is the original CTM's binary tree of height ceil(log2 K): at each node two siblings
  compete, the left one winning with probability W_left / (W_left + W_right), where W is the total
  weight of the subtree, and the node carries that total upward (the additive rule). A chunk then
  reaches the root with probability weight / total weight, whatever its leaf position (and, when every weight
  is zero, with probability 1 / K).
- `random` ignores weights (the "no up-tree competition" ablation).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from noosphere.workspace.chunk import Chunk

CompetitionMethod = Literal["argmax", "uptree", "random"]


@dataclass(frozen=True)
class CompetitionResult:
    winner: Chunk
    method: str
    matches: tuple[dict[str, object], ...] = field(default=())


def argmax(chunks: list[Chunk], rng: random.Random) -> CompetitionResult:
    best = max(chunk.weight for chunk in chunks)
    tied = [chunk for chunk in chunks if chunk.weight == best]
    return CompetitionResult(rng.choice(tied) if len(tied) > 1 else tied[0], "argmax")


def uptree(chunks: list[Chunk], rng: random.Random) -> CompetitionResult:
    level: list[tuple[Chunk, float, int]] = [(chunk, max(chunk.weight, 0.0), 1) for chunk in chunks]
    matches: list[dict[str, object]] = []
    depth = 0
    while len(level) > 1:
        depth += 1
        next_level = []
        for index in range(0, len(level), 2):
            if index + 1 == len(level):  # odd one out moves up unopposed
                next_level.append(level[index])
                continue
            (left, left_total, left_leaves), (right, right_total, right_leaves) = level[index], level[index + 1]
            total, leaves = left_total + right_total, left_leaves + right_leaves
            # weightless subtrees compete by their number of chunks, so each chunk still wins 1 / K of the time
            p_left = left_leaves / leaves if total == 0 else left_total / total
            winner = left if rng.random() < p_left else right
            matches.append({"depth": depth, "left": left.processor, "right": right.processor,
                            "p_left": round(p_left, 4), "winner": winner.processor})
            next_level.append((winner, total, leaves))
        level = next_level
    return CompetitionResult(level[0][0], "uptree", tuple(matches))


def uniform(chunks: list[Chunk], rng: random.Random) -> CompetitionResult:
    return CompetitionResult(rng.choice(chunks), "random")


COMPETITIONS = {"argmax": argmax, "uptree": uptree, "random": uniform}


def compete(chunks: list[Chunk], method: CompetitionMethod, rng: random.Random) -> CompetitionResult:
    if not chunks:
        raise ValueError("a competition needs at least one chunk")
    return COMPETITIONS[method](chunks, rng)
