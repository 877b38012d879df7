"""Social choice as pure functions: ballots in, a tally out; ties broken by a seeded draw.

A ballot is a voter's ranking of options, best first. Plurality counts only the first choice,
Borda gives an option `n - 1 - position` points on each ballot of a field of `n`, and approval
counts every option a ballot lists. The tie-break draws among the tied options with the caller's
`random.Random`, so a run is reproducible from its seed and no option wins by list position.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from noosphere.errors import UnknownNameError

VotingRule = Literal["plurality", "borda", "approval"]


@dataclass(frozen=True)
class Ballot:
    voter: str
    ranking: tuple[str, ...]
    """Options in the voter's order of preference; for approval, the options the voter approves."""


@dataclass(frozen=True)
class Tally:
    rule: str
    scores: dict[str, float]
    winner: str | None
    tied: tuple[str, ...]
    """Options that shared the top score (the winner was drawn among them when there are several)."""


def _scores_plurality(ballots: Sequence[Ballot], options: Sequence[str]) -> dict[str, float]:
    scores = dict.fromkeys(options, 0.0)
    for ballot in ballots:
        first = next((o for o in ballot.ranking if o in scores), None)
        if first is not None:
            scores[first] += 1
    return scores


def _scores_borda(ballots: Sequence[Ballot], options: Sequence[str]) -> dict[str, float]:
    scores = dict.fromkeys(options, 0.0)
    n = len(options)
    for ballot in ballots:
        ranked = list(dict.fromkeys(o for o in ballot.ranking if o in scores))
        for position, option in enumerate(ranked):
            scores[option] += n - 1 - position
    return scores


def _scores_approval(ballots: Sequence[Ballot], options: Sequence[str]) -> dict[str, float]:
    scores = dict.fromkeys(options, 0.0)
    for ballot in ballots:
        for option in set(ballot.ranking) & scores.keys():
            scores[option] += 1
    return scores


RULES: dict[str, Callable[[Sequence[Ballot], Sequence[str]], dict[str, float]]] = {
    "plurality": _scores_plurality,
    "borda": _scores_borda,
    "approval": _scores_approval,
}


def tally(ballots: Sequence[Ballot], options: Sequence[str], rule: str = "plurality", *,
          rng: random.Random, weights: Mapping[str, float] | None = None) -> Tally:
    """Count `ballots` over `options` (in their given order) under `rule`; with `weights`, each voter's
    ballot counts its weight instead of 1 (a voter without one counts 1)."""
    if rule not in RULES:
        raise UnknownNameError("voting rule", rule, RULES)
    options = list(dict.fromkeys(options))
    if weights is None:
        scores = RULES[rule](ballots, options)
    else:
        scores = dict.fromkeys(options, 0.0)
        for ballot in ballots:
            weight = weights.get(ballot.voter, 1.0)
            for option, points in RULES[rule]([ballot], options).items():
                scores[option] += weight * points
    if not options:
        return Tally(rule, scores, None, ())
    best = max(scores.values())
    tied = tuple(o for o in options if math.isclose(scores[o], best, rel_tol=1e-9, abs_tol=1e-12))  # sums of floats
    winner = tied[0] if len(tied) == 1 else rng.choice(sorted(tied))
    return Tally(rule, scores, winner, tied)
