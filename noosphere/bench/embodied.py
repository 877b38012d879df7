"""The embodied benchmark: explore MiniGrid and BabyAI houses for S actions, then answer questions about them.

An item is one episode: a world laid out by one seed (`MiniGrid-MultiRoom-N4-S5-v1#3`). Each system drives the robot
on the same episodes: `random` (uniform over the movement actions, seeded by the run's seed, the world and the
episode), `frontier` (breadth-first to the nearest unseen cell, in code), `single` (one model reads the view and
acts, one call a step; beside it `single-scored` and `single-scored-raw`, which take the action the model's option
probabilities favour, with and without contextual calibration) and `society` (the interview society of a society
file: observer, first mate, captain; beside it `society-scored`, whose captain's action is taken from its calibrated
option probabilities, `noosphere.embodied.crew`). After the episode the questions of `noosphere.embodied.eqa` are
answered by the system's own memory (the captain's log; the single agent's log) and by the `seen-text` baseline,
which reads the text of everything the robot saw and answers in one call.

A row records the coverage after every action (its curve), the actions the system invented (done as nothing),
the calls and tokens of the exploration apart from those of the questions, and every question with each
answerer's answer. An episode counts as `correct` when the robot saw at least half the house: the benchmark's
figures are the coverage (mean and 95 % interval), its curve and the EQA accuracy, not that count.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from noosphere.bench.runner import Scored
from noosphere.embodied import (
    Crew,
    FrontierExplorer,
    Policy,
    RandomExplorer,
    SingleAgent,
    ask_all,
    explore,
    make_questions,
    seen_text,
)
from noosphere.embodied.eqa import Answer, Question, memory_answerer
from noosphere.embodied.scored import ScoredSingleAgent
from noosphere.embodied.single import ROLE as SINGLE_ROLE
from noosphere.envs.gridworld import GridWorld
from noosphere.errors import UnknownNameError
from noosphere.llm import Model
from noosphere.scope import current_scope
from noosphere.society import Member, Society
from noosphere.trace import Trace

SYSTEMS = ("random", "single", "society", "frontier", "single-scored", "single-scored-raw", "society-scored")
MODEL_SYSTEMS = ("single", "society", "single-scored", "single-scored-raw", "society-scored")
SCORED = ("single-scored", "single-scored-raw", "society-scored")
SOCIETIES = ("society", "society-scored")
"""Beside the paper's systems: the single agent's prompt, the action taken by the model's option probabilities
(calibrated by a content-free prior, or raw); see `noosphere.embodied.scored`."""
EXPLORED = 0.5
"""An episode whose robot saw at least this share of the house counts as `correct` (the progress bar's figure)."""
SEEN_ROLE = "You answer questions about a house from the record of what a robot saw in it, and from nothing else."
LOG_OPENING = "Your log of the exploration:"
SEEN_OPENING = "What the robot saw while it explored the house:"


def check_system(system: str) -> str:
    if system not in SYSTEMS:
        raise UnknownNameError("system", system, SYSTEMS)
    return system


@dataclass(frozen=True)
class Episode:
    world: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.world}#{self.seed}"


def episodes(worlds: list[str], first_seed: int, count: int) -> list[Episode]:
    """`count` seeds of each world, world after world."""
    return [Episode(world, seed) for world in worlds for seed in range(first_seed, first_seed + count)]


BuildSociety = Callable[[], tuple[Society, Member]]
"""A fresh society for one episode (its members keep histories) and its captain (the member who decides)."""


@dataclass(frozen=True)
class Setup:
    """What one run's episodes share: the system, its settings, the run's trace, the model (None for a system in
    code without questions: it is never loaded) and, for `society`, the society."""

    system: str
    max_steps: int
    seed: int
    trace: Trace
    model: Model | None
    eqa: bool = True
    society: BuildSociety | None = None


def _policy(setup: Setup, episode: Episode) -> tuple[Policy, dict[str, Answer]]:
    """The system for one episode, and who answers its questions besides the seen-text baseline."""
    if setup.system == "random":
        return RandomExplorer(random.Random(f"{setup.seed}:{episode.id}")), {}
    if setup.system == "frontier":
        return FrontierExplorer(), {}
    assert setup.model is not None
    if setup.system == "single":
        agent = SingleAgent(setup.model, max_steps=setup.max_steps)
        return agent, {"single": memory_answerer(setup.model, "single", SINGLE_ROLE, agent.memory, LOG_OPENING)}
    if setup.system in ("single-scored", "single-scored-raw"):
        scored = ScoredSingleAgent(setup.model, max_steps=setup.max_steps, calibrate=setup.system == "single-scored")
        return scored, {"single": memory_answerer(setup.model, "single", SINGLE_ROLE, scored.memory, LOG_OPENING)}
    assert setup.society is not None
    society, captain = setup.society()
    crew = Crew(society, captain=captain, max_steps=setup.max_steps, scored=setup.system == "society-scored")

    async def captain_answers(question: Question) -> str:  # its model as the last step's society run bound it
        return await memory_answerer(captain.model, captain.name, captain.role, crew.memory, LOG_OPENING)(question)

    return crew, {"captain": captain_answers}


async def solve(setup: Setup, episode: Episode) -> Scored:
    world = GridWorld(episode.world, episode.seed)
    policy, answerers = _policy(setup, episode)
    try:
        trajectory = await explore(world, policy, max_steps=setup.max_steps, trace=setup.trace)
        scope = current_scope()
        spent = (scope.calls, scope.tokens) if scope is not None else (0, 0)
        questions, graded = [], []
        if setup.eqa and setup.model is not None:
            questions = make_questions(world, random.Random(f"{setup.seed}:{episode.id}:eqa"))
            answerers["seen-text"] = memory_answerer(setup.model, "seen-text", SEEN_ROLE, lambda: seen_text(world),
                                                     SEEN_OPENING)
            graded = await ask_all(answerers, questions, setup.trace)
    finally:
        world.close()
    actions = len(trajectory.moves)
    asked = [{"id": q.id, "kind": q.kind, "question": q.text, "gold": q.gold,
              "answers": {g.answerer: {"answer": g.answer, "canonical": g.canonical, "correct": g.correct}
                          for g in graded if g.question.id == q.id}} for q in questions]
    eqa = {name: round(sum(g.correct for g in graded if g.answerer == name) / len(questions), 4)
           for name in dict.fromkeys(g.answerer for g in graded)} if questions else {}
    return Scored(round(trajectory.coverage, 4), trajectory.coverage >= EXPLORED, {
        "system": setup.system, "world": episode.world, "seed": episode.seed, "coverage": round(trajectory.coverage, 4),
        "curve": [round(c, 4) for c in trajectory.curve], "actions": actions, "stopped": trajectory.stopped,
        "invented": trajectory.invented, "forfeited": trajectory.forfeited, "explore_calls": spent[0],
        "explore_tokens": spent[1], "questions": asked, "eqa": eqa})


# the report ----------------------------------------------------------------------------------------------------
def interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The `level` t-interval of the mean (None below two values)."""
    if len(values) < 2:
        return None
    from scipy.stats import t

    mean, sd = statistics.fmean(values), statistics.stdev(values)
    half = float(t.ppf((1 + level) / 2, len(values) - 1)) * sd / math.sqrt(len(values))
    return round(max(0.0, mean - half), 4), round(min(1.0, mean + half), 4)


def mean_curve(rows: list[dict[str, Any]]) -> list[float]:
    """Mean coverage after 0..S actions over the rows (all curves have S + 1 points)."""
    curves = [row["curve"] for row in rows if row.get("curve")]
    if not curves:
        return []
    length = min(len(curve) for curve in curves)
    return [round(statistics.fmean(curve[i] for curve in curves), 4) for i in range(length)]


def _coverage(rows: list[dict[str, Any]]) -> dict[str, Any]:
    values = [row["coverage"] for row in rows]
    return {"coverage": round(statistics.fmean(values), 4) if values else None, "coverage_ci95": interval(values)}


def eqa_accuracy(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per answerer: exact-match accuracy over every question, and over the questions whose answer is `not seen`."""
    metrics: dict[str, Any] = {}
    graded = [(q, name, a) for row in rows for q in row.get("questions", ()) for name, a in q["answers"].items()]
    for name in dict.fromkeys(name for _, name, _ in graded):
        mine = [(q, a) for q, who, a in graded if who == name]
        unseen = [(q, a) for q, a in mine if q["gold"] == "not seen"]
        metrics[f"eqa_{name}"] = round(100 * sum(a["correct"] for _, a in mine) / len(mine), 2)
        metrics[f"eqa_{name}_n"] = len(mine)
        if unseen:
            metrics[f"eqa_{name}_not_seen"] = round(100 * sum(a["correct"] for _, a in unseen) / len(unseen), 2)
    return metrics


def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`n` counts every episode scored; the figures are over those that ran (an episode whose system failed outright
    has no curve, and is counted in the report's `errors`)."""
    scored = len(rows)
    rows = [row for row in rows if not row.get("error") and "curve" in row]
    actions = sum(row["actions"] for row in rows)
    metrics: dict[str, Any] = {"n": scored, "max_steps": saved["max_steps"], **_coverage(rows),
                               "explored_half": round(100 * sum(row["correct"] for row in rows) / max(len(rows), 1), 2)}
    for world in dict.fromkeys(row["world"] for row in rows):
        mine = [row for row in rows if row["world"] == world]
        metrics[f"coverage[{world}]"] = _coverage(mine)["coverage"]
        metrics[f"coverage_ci95[{world}]"] = _coverage(mine)["coverage_ci95"]
    metrics.update(eqa_accuracy(rows))
    metrics.update({
        "actions": actions, "invented_actions": sum(row["invented"] for row in rows),
        "forfeited_actions": sum(row["forfeited"] for row in rows),
        "calls_per_action": round(sum(row["explore_calls"] for row in rows) / actions, 3) if actions else None,
        "tokens_per_action": round(sum(row["explore_tokens"] for row in rows) / actions, 1) if actions else None,
        "curve": mean_curve(rows)})
    return metrics
