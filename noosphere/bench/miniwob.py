"""MiniWoB++ as a benchmark: episodes (task x seed), their rows, and the report's figures.

An item is one episode, `<task>-<seed>`; its row says whether it was won, its MiniWoB reward (the raw one,
-1 to 1), its steps and lost steps, why it ended, and its actions. The report gives the success rate with its
95 % Wilson interval (won: a positive raw reward, MiniWoB's and BrowserGym's rule; some tasks give partial
credit, so `full_reward_rate` counts the episodes of reward 1), the mean reward, steps and calls per episode, and
the same per task.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

SYSTEMS = ("base", "react", "ctm")
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Episode:
    """One item of the benchmark: a task at a seed."""

    task: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.task}-{self.seed}"


def episodes(tasks: list[str] | tuple[str, ...], seeds: int) -> list[Episode]:
    """Seeds 0..seeds-1 of every task, seed by seed, so that any prefix of the list covers the tasks evenly."""
    return [Episode(task, seed) for seed in range(seeds) for task in tasks]


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a success rate, in percent (for small n it stays inside 0-100)."""
    if n == 0:
        return (0.0, 100.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (round(100 * max(0.0, centre - half), 2), round(100 * min(1.0, centre + half), 2))


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's figures, and under `tasks` one entry per task (success rate, its interval, mean reward)."""
    won = sum(bool(r["correct"]) for r in rows)
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_task[row.get("task") or row["id"].rsplit("-", 1)[0]].append(row)
    tasks = {}
    for task, group in sorted(by_task.items()):
        task_won = sum(bool(r["correct"]) for r in group)
        tasks[task] = {"episodes": len(group), "success_rate": round(100 * task_won / len(group), 2),
                       "ci95": list(wilson(task_won, len(group))),
                       "mean_reward": _mean([float(r.get("reward") or 0.0) for r in group])}
    ended: dict[str, int] = defaultdict(int)
    for row in rows:
        ended[row.get("reason") or ("error" if row.get("error") else "?")] += 1
    return {
        "episodes": len(rows), "success_rate": round(100 * won / max(len(rows), 1), 2),
        "success_ci95": list(wilson(won, len(rows))),
        "mean_reward": _mean([float(r.get("reward") or 0.0) for r in rows]),
        "full_reward_rate": round(100 * sum(float(r.get("reward") or 0.0) >= 1.0 for r in rows) / max(len(rows), 1),
                                  2),
        "steps_per_episode": _mean([float(r.get("steps") or 0) for r in rows]),
        "lost_steps_per_episode": _mean([float(r.get("lost_steps") or 0) for r in rows]),
        "calls_per_episode": _mean([float(r["calls"]) for r in rows]),
        "ended": dict(sorted(ended.items())),
        "scores": sorted({str(r["scores"]) for r in rows if r.get("scores")}),  # where `auto` was resolved
        "tasks": tasks,
    }


def tasks_markdown(metrics: dict[str, Any]) -> list[str]:
    """The per-task table of a report."""
    lines = ["", "| task | episodes | success % | 95 % interval | mean reward |", "|---|---|---|---|---|"]
    for task, figures in metrics.get("tasks", {}).items():
        low, high = figures["ci95"]
        lines.append(f"| {task} | {figures['episodes']} | {figures['success_rate']} | {low}-{high} | "
                     f"{figures['mean_reward']} |")
    return lines
