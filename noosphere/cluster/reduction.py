"""The up-tree competition over shards: each finishes its own subtrees, the driver the tree above them.

`workspace.competition.uptree` plays a binary tree over the K chunks in order: level by level, left
to right, one seeded draw per match. Sharded, the K chunks are split into contiguous runs, one per
shard, and the tree is the same tree. A node of it whose leaves all lie on one shard is played on
that shard; the shard returns the winners of its largest such subtrees (`Block`s: one when its run is
an aligned power of two, a few otherwise), each with the subtree's total weight (the additive rule),
and the driver plays the matches above them. The driver draws the K - 1 numbers the one-process tree
would (in the same order, from the same `random.Random`) and hands each shard those of its own
matches; every match is decided by the same draw over the same totals as in one process, so the
winner is the same for the same seed, whatever the split.

Argmax needs no tree: each shard returns its best weight and the chunks that reach it, and the
driver breaks a tie over those of the global best, in processor order, with the same draw.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from noosphere.workspace.chunk import Chunk


@dataclass(frozen=True)
class Block:
    """The winner of a complete subtree: the node at `depth` and `index` of the global tree, and its total."""

    depth: int
    index: int
    winner: Chunk
    total: float


@dataclass(frozen=True)
class Tree:
    """The shape of the up-tree over `n` chunks: the width of each level and where its draws start."""

    n: int

    @property
    def widths(self) -> list[int]:
        widths = [self.n]
        while widths[-1] > 1:
            widths.append((widths[-1] + 1) // 2)
        return widths

    @property
    def first_draw(self) -> list[int]:
        """Index of the first draw of each depth (depth 0 has none): the matches of every level below come first."""
        starts, total = [0], 0
        for width in self.widths[:-1]:
            starts.append(total)
            total += width // 2
        return starts

    def local_span(self, offset: int, count: int, depth: int) -> range:
        """The nodes at `depth` whose leaves all lie in [offset, offset + count)."""
        size, end = 1 << depth, offset + count
        first = -(-offset // size)
        last = self.widths[depth] if end == self.n else end // size
        return range(first, max(first, last))

    def shard_draws(self, offset: int, count: int, draws: np.ndarray) -> dict[int, np.ndarray]:
        """The draws of the matches a shard plays, by depth, from the first of its nodes there."""
        widths, starts, out = self.widths, self.first_draw, {}
        for depth in range(1, len(widths)):
            span = self.local_span(offset, count, depth)
            if not span:
                break
            matched = min(span.stop, widths[depth - 1] // 2)
            out[depth] = draws[starts[depth] + span.start: starts[depth] + max(span.start, matched)]
        return out


def _match(left_total: float, right_total: float, draw: float) -> tuple[bool, float, float]:
    """One match as `competition.uptree` plays it: (left wins, carried total, p_left)."""
    total = left_total + right_total
    p_left = 0.5 if total == 0 else left_total / total
    return draw < p_left, total, p_left


def local_uptree(weights: Sequence[float], offset: int, n: int, draws: Mapping[int, Sequence[float] | np.ndarray],
                 chunk_of: Callable[[int], Chunk]) -> list[Block]:
    """A shard's part of the tree: its chunks (by `weights`, and `chunk_of` their position on the shard) are
    leaves offset..offset+len-1 of `n`; returns the winners of its largest subtrees. Only those become chunks.

    A level is played at once with numpy: the same IEEE sums, quotients and comparisons as `_match`, so the
    same winners."""
    tree = Tree(n)
    widths = tree.widths
    first, who = offset, np.arange(len(weights))
    totals = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    blocks: list[Block] = []
    depth = 0
    while len(who):
        span = tree.local_span(offset, len(weights), depth + 1) if depth + 1 < len(widths) else range(0)
        # the children of the span's nodes, as positions in this level; the rest of the level has no parent here
        low, high = 2 * span.start - first, min(2 * span.stop, widths[depth]) - first
        if not span:
            low = high = len(who)
        kept = [*range(0, low), *range(high, len(who))]
        blocks += [Block(depth, first + k, chunk_of(int(who[k])), float(totals[k])) for k in kept]
        pairs = (high - low) // 2
        left, right = slice(low, low + 2 * pairs, 2), slice(low + 1, low + 2 * pairs, 2)
        total = totals[left] + totals[right]
        with np.errstate(invalid="ignore", divide="ignore"):
            p_left = np.where(total == 0, 0.5, totals[left] / total)
        left_wins = np.asarray(draws.get(depth + 1, ()), dtype=np.float64)[:pairs] < p_left
        next_who = np.where(left_wins, who[left], who[right])
        next_totals = total
        if (high - low) % 2:  # the odd one out moves up unopposed
            next_who = np.append(next_who, who[high - 1])
            next_totals = np.append(next_totals, totals[high - 1])
        first, who, totals, depth = span.start, next_who, next_totals, depth + 1
    return blocks


def finish_uptree(blocks: list[Block], n: int,
                  draws: Sequence[float] | np.ndarray) -> tuple[Chunk, list[dict[str, object]]]:
    """The tree above the shards' blocks: the overall winner and the matches played here."""
    tree = Tree(n)
    widths, starts = tree.widths, tree.first_draw
    known: list[dict[int, tuple[Chunk, float]]] = [{} for _ in widths]
    for block in blocks:
        known[block.depth][block.index] = (block.winner, block.total)
    matches: list[dict[str, object]] = []
    for depth in range(1, len(widths)):
        for parent in sorted({index // 2 for index in known[depth - 1]} - set(known[depth])):
            left = known[depth - 1][2 * parent]
            if 2 * parent + 1 >= widths[depth - 1]:
                known[depth][parent] = left
                continue
            right = known[depth - 1][2 * parent + 1]
            left_wins, total, p_left = _match(left[1], right[1], float(draws[starts[depth] + parent]))
            winner = left[0] if left_wins else right[0]
            known[depth][parent] = (winner, total)
            matches.append({"depth": depth, "left": left[0].processor, "right": right[0].processor,
                            "p_left": round(p_left, 4), "winner": winner.processor})
    return known[-1][0][0], matches


def draw_all(n: int, rng: random.Random) -> np.ndarray:
    """The draws of a tree over `n` chunks, in the order `competition.uptree` takes them from `rng`."""
    return np.fromiter((rng.random() for _ in range(max(n - 1, 0))), dtype=np.float64, count=max(n - 1, 0))


def argmax_of(best: list[tuple[float, list[Chunk]]], rng: random.Random) -> Chunk:
    """Each shard's best weight and its chunks of that weight (in shard order): the winner `argmax` picks."""
    top = max(weight for weight, tied in best if tied)
    tied = [chunk for weight, chunks in best if weight == top for chunk in chunks]
    return rng.choice(tied) if len(tied) > 1 else tied[0]
