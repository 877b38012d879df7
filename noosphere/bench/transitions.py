"""Transition statistics of a games run: how often control passed from one agent to another.

The paper's figures 5 and 6: the matrix of transition counts summed over all games, and the same
matrix normalised per row into the probability of each successor. Both are saved as JSON and drawn
as PNG heatmaps in the run folder.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from noosphere.errors import MissingDependencyError


def transition_counts(rows: list[dict[str, Any]]) -> tuple[list[str], np.ndarray]:
    """Agents in order of first appearance, and counts[i, j] of transitions from agent i to agent j."""
    pairs: Counter[tuple[str, str]] = Counter()
    for row in rows:
        pairs.update(tuple(move) for move in row.get("moves", ()))
    agents: list[str] = []
    for source, target in pairs:
        agents += [name for name in (source, target) if name not in agents]
    counts = np.zeros((len(agents), len(agents)), dtype=int)
    for (source, target), n in pairs.items():
        counts[agents.index(source), agents.index(target)] = n
    return agents, counts


def probabilities(counts: np.ndarray) -> np.ndarray:
    """Each row divided by its total; an agent that never handed over control keeps a row of zeros."""
    totals = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)


def write_transition_figures(folder: Path, rows: list[dict[str, Any]]) -> list[Path]:
    """transitions.json and two heatmaps; nothing when no game recorded transitions (the baselines)."""
    agents, counts = transition_counts(rows)
    if not agents:
        return []
    normalised = probabilities(counts)
    data = {"agents": agents, "counts": counts.tolist(), "probabilities": np.round(normalised, 4).tolist()}
    written = [folder / "transitions.json"]
    written[0].write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    written.append(_heatmap(folder / "transition_counts.png", agents, counts, "Transition counts", "d"))
    written.append(_heatmap(folder / "transition_probabilities.png", agents, normalised,
                            "Transition probabilities (per row)", ".2f"))
    return written


def _heatmap(path: Path, agents: list[str], values: np.ndarray, title: str, number_format: str) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display on a benchmark machine
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "envs", "transition heatmaps") from exc
    size = max(4.0, 0.6 * len(agents) + 2)
    figure, axes = plt.subplots(figsize=(size + 1, size))
    image = axes.imshow(values, cmap="viridis")
    axes.set_xticks(range(len(agents)), agents, rotation=45, ha="right")
    axes.set_yticks(range(len(agents)), agents)
    axes.set_xlabel("to")
    axes.set_ylabel("from")
    axes.set_title(title)
    top = values.max() if values.size else 0
    for i in range(len(agents)):
        for j in range(len(agents)):
            if values[i, j]:
                axes.text(j, i, format(values[i, j], number_format), ha="center", va="center", fontsize=7,
                          color="black" if values[i, j] > top / 2 else "white")
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
