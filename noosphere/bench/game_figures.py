"""What a games run shows at a glance: success rate with its 95 % interval and actions per success, as a figure.

The Episodex paper's two claims are about these two figures: memory cuts the actions a won game takes, and
conceptual memory raises the success rate. On a dozen games one game moves a success rate by eight points, so the
rate is drawn with its interval: the Wilson score interval (`scipy.stats.binomtest`), which stays inside 0-100 %
and keeps a width at 0 of 12 or 12 of 12 where the normal approximation collapses to a point.

One figure serves a run (a row for all its games, then one per task type) and a suite (a row per configuration):
`outcomes.png`, success on the left, actions per success on the right with every won game's count as a dot.
`write_transition_pair` draws two runs' transition probabilities side by side on one agent order and one scale:
the meta-agent without memory against the meta-agent with it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from noosphere.bench.transitions import probabilities, write_transition_figures
from noosphere.errors import MissingDependencyError
from noosphere.runs import write_atomically

LEVEL = 0.95
FIGURE = "outcomes.png"
ALL_GAMES = "all games"


def success_interval(won: int, games: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of `won` out of `games`, in percent; (0, 100) for no games."""
    if games <= 0:
        return 0.0, 100.0
    from scipy.stats import binomtest

    band = binomtest(won, games).proportion_ci(confidence_level=level, method="wilson")
    return round(100 * float(band.low), 1), round(100 * float(band.high), 1)


@dataclass(frozen=True)
class Outcome:
    """How one group of games went: a configuration's run, or one task type of a run."""

    label: str
    games: int
    won: int
    success_actions: tuple[int, ...] = ()
    """The actions each won game took, in the order the games were played."""

    @property
    def success_rate(self) -> float:
        return round(100 * self.won / self.games, 2) if self.games else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return success_interval(self.won, self.games)

    @property
    def actions_per_success(self) -> float | None:
        return round(sum(self.success_actions) / len(self.success_actions), 2) if self.success_actions else None

    def as_dict(self) -> dict[str, Any]:
        return {"games": self.games, "won": self.won, "success_rate": self.success_rate,
                "ci95": list(self.interval), "actions_per_success": self.actions_per_success}


def outcome(label: str, rows: Sequence[dict[str, Any]]) -> Outcome:
    """The outcome of the rows (items of a games run: `correct`, `actions`)."""
    won = [row for row in rows if row.get("correct")]
    return Outcome(label, len(rows), len(won), tuple(int(row.get("actions") or 0) for row in won))


def outcomes_by_type(rows: Sequence[dict[str, Any]]) -> list[Outcome]:
    """All the games first, then each task type (sorted) when there are several."""
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_type[str(row.get("task_type", "?"))].append(row)
    whole = [outcome(ALL_GAMES, rows)] if rows else []
    return whole + ([outcome(kind, group) for kind, group in sorted(by_type.items())] if len(by_type) > 1 else [])


def _pyplot(purpose: str) -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display on a benchmark machine
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "envs", purpose) from exc
    return plt


def _mean_label(value: float | None) -> str:
    """A mean as the figure prints it: two decimals at most, no trailing zeros ("3.86", "6", "no win")."""
    if value is None:
        return "no win"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def write_outcome_figure(path: Path, outcomes: Sequence[Outcome], title: str) -> Path:
    """Success rate with its 95 % interval (left) and actions per success with each won game (right), a row per
    outcome, the first at the top."""
    plt = _pyplot("success figures")
    rows = list(outcomes)
    height = 1.4 + 0.42 * max(1, len(rows))
    figure, (left, right) = plt.subplots(1, 2, figsize=(10.5, height), sharey=True,
                                         gridspec_kw={"width_ratios": [3, 2.3]})
    ys = np.arange(len(rows))
    rates = [o.success_rate for o in rows]
    bands = np.array([o.interval for o in rows]).reshape(-1, 2)
    errors = np.vstack([np.subtract(rates, bands[:, 0]), np.subtract(bands[:, 1], rates)]).clip(min=0)
    left.barh(ys, rates, color="#93c5fd", edgecolor="#1d4ed8", linewidth=0.8)
    left.errorbar(rates, ys, xerr=errors, fmt="none", ecolor="#1e3a8a", capsize=3, linewidth=1)
    for y, o in zip(ys, rows, strict=True):
        left.text(101, y, f"{o.won}/{o.games}", va="center", fontsize=8, color="#374151")
    left.set_xlim(0, 112)
    left.set_xticks([0, 25, 50, 75, 100])
    left.set_xlabel(f"success rate, %\n(bar: {int(LEVEL * 100)} % Wilson interval)")
    left.set_yticks(ys, [o.label for o in rows])
    left.invert_yaxis()
    means = [o.actions_per_success or 0.0 for o in rows]
    right.barh(ys, means, color="#fde68a", edgecolor="#b45309", linewidth=0.8)
    top = max([a for o in rows for a in o.success_actions] + means + [1.0])
    for y, o in zip(ys, rows, strict=True):
        if o.success_actions:
            right.scatter(o.success_actions, [y] * len(o.success_actions), s=10, color="#7c2d12", zorder=3)
        # the mean in a column of its own past the dots, as the left panel's counts are
        right.text(top * 1.06, y, _mean_label(o.actions_per_success), va="center", fontsize=8, color="#374151")
    right.set_xlim(0, top * 1.4)
    right.set_xlabel("actions per success\n(bar: mean; dot: a won game)")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _counts(rows: Sequence[dict[str, Any]], agents: list[str]) -> np.ndarray:
    counts = np.zeros((len(agents), len(agents)), dtype=int)
    for row in rows:
        for source, target in row.get("moves", ()):
            counts[agents.index(source), agents.index(target)] += 1
    return counts


def shared_agents(*runs: Sequence[dict[str, Any]]) -> list[str]:
    """Every agent of the runs' moves, in order of first appearance, the first run's first."""
    agents: list[str] = []
    for rows in runs:
        for row in rows:
            for move in row.get("moves", ()):
                agents += [name for name in move if name not in agents]
    return agents


def write_transition_pair(path: Path, left: tuple[str, Sequence[dict[str, Any]]],
                          right: tuple[str, Sequence[dict[str, Any]]], title: str) -> Path | None:
    """Two runs' transition probabilities (per row) side by side, on one agent order and one colour scale, each
    cell also giving its count; None when neither run recorded a transition (the baselines)."""
    agents = shared_agents(left[1], right[1])
    if not agents:
        return None
    plt = _pyplot("transition heatmaps")
    size = max(4.0, 0.55 * len(agents) + 2)
    figure, axes = plt.subplots(1, 2, figsize=(2 * size + 1, size))
    image = None
    for ax, (label, rows) in zip(axes, (left, right), strict=True):
        counts = _counts(rows, agents)
        shares = probabilities(counts)
        image = ax.imshow(shares, cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(agents)), agents, rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(agents)), agents, fontsize=8)
        ax.set_xlabel("to")
        ax.set_ylabel("from")
        ax.set_title(f"{label}\n{int(counts.sum())} transitions, {len(rows)} games", fontsize=9)
        for i in range(len(agents)):
            for j in range(len(agents)):
                if counts[i, j]:
                    ax.text(j, i, f"{shares[i, j]:.2f}\n({counts[i, j]})", ha="center", va="center", fontsize=6,
                            color="black" if shares[i, j] > 0.5 else "white")
    figure.colorbar(image, ax=list(axes), shrink=0.8, label="probability of the successor (per row)")
    figure.suptitle(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def run_title(config: dict[str, Any]) -> str:
    """What a games run measured, in a line: benchmark, system, memory, actions per game, model."""
    system = str(config.get("system", "?"))
    if system == "metaagent":
        system += f", memory {config.get('memory', '?')}"
    where = f"TextWorld tier {config['tier']}" if config.get("benchmark") == "textworld" else "ALFWorld"
    return f"{where} · {system} · at most {config.get('max_actions', '?')} actions · {config.get('model', '?')}"


def write_game_figures(folder: Path, rows: list[dict[str, Any]]) -> list[Path]:
    """A games run's figures: the transition matrices and heatmaps, and `outcomes.png`; both are linked from the
    run's report.md, written just before."""
    written = write_transition_figures(folder, rows)
    outcomes = outcomes_by_type(rows)
    if outcomes:
        config = _config(folder)
        written.append(write_outcome_figure(folder / FIGURE, outcomes, run_title(config)))
    report = folder / "report.md"
    images = [path.name for path in written if path.suffix == ".png" and path.name != "transition_counts.png"]
    if images and report.exists():
        lines = ["", "## Figures", ""] + [f"![{Path(name).stem.replace('_', ' ')}]({name})" for name in images]
        write_atomically(report, report.read_text(encoding="utf-8").rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    return written


def _config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}
