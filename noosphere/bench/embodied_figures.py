"""The coverage-vs-steps figure of embodied runs: the mean share of the house seen after each action, with its
95 % band, one line per run (a system), one panel per world."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from noosphere.bench.embodied import interval
from noosphere.errors import MissingDependencyError


def curves_by_world(rows: list[dict[str, Any]]) -> dict[str, list[tuple[float, float, float]]]:
    """Per world: (mean, low, high) coverage after 0..S actions over its episodes."""
    found: dict[str, list[tuple[float, float, float]]] = {}
    for world in dict.fromkeys(row["world"] for row in rows if row.get("curve")):
        curves = [row["curve"] for row in rows if row.get("world") == world and row.get("curve")]
        length = min(len(curve) for curve in curves)
        points = []
        for i in range(length):
            values = [curve[i] for curve in curves]
            band = interval(values) or (values[0], values[0])
            points.append((statistics.fmean(values), *band))
        found[world] = points
    return found


def write_coverage_plot(path: Path, runs: dict[str, list[dict[str, Any]]], title: str = "Coverage") -> Path:
    """One panel per world, one line per named run (`{"random": rows, "society": rows}`), written to `path`."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display on a benchmark machine
        import matplotlib.pyplot as plt
    except ModuleNotFoundError as exc:
        raise MissingDependencyError("matplotlib", "envs", "coverage curves") from exc
    by_run = {name: curves_by_world(rows) for name, rows in runs.items()}
    worlds = list(dict.fromkeys(world for curves in by_run.values() for world in curves))
    figure, axes = plt.subplots(1, max(1, len(worlds)), figsize=(5.5 * max(1, len(worlds)), 4), squeeze=False)
    for axis, world in zip(axes[0], worlds, strict=False):
        for name, curves in by_run.items():
            if world not in curves:
                continue
            points = curves[world]
            steps = range(len(points))
            [line] = axis.plot(steps, [p[0] for p in points], label=name)
            axis.fill_between(steps, [p[1] for p in points], [p[2] for p in points], color=line.get_color(), alpha=0.15)
        axis.set_title(world, fontsize=9)
        axis.set_xlabel("actions")
        axis.set_ylabel("share of the house seen")
        axis.set_ylim(0, 1.02)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8, loc="lower right")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def write_run_figures(folder: Path, rows: list[dict[str, Any]]) -> list[Path]:
    """coverage.png in the run folder, and a line in report.md that shows it."""
    rows = [row for row in rows if row.get("curve")]
    if not rows:
        return []
    system = rows[0].get("system") or "this run"
    path = write_coverage_plot(folder / "coverage.png", {system: rows}, "Coverage after each action (95 % band)")
    report = folder / "report.md"
    if report.exists():
        with report.open("a", encoding="utf-8") as out:
            out.write("\n![coverage after each action](coverage.png)\n")
    return [path]
