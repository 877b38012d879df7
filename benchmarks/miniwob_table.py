"""The MiniWoB++ table per task: each system's wins out of its episodes, side by side, from run folders.

    python benchmarks/miniwob_table.py [RUN_DIR ...] [--suite benchmarks/results/miniwob]

With no run folder, the newest run of each system under `--suite` (`base/`, `react/`, `ctm/`). A task's cell is
`won/episodes` (won: a positive MiniWoB reward); the last rows give each run's total with its 95 % Wilson
interval, its mean steps and calls per episode. Episodes a run has not played yet are left out of its cells,
and the header says how many it has.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from noosphere.bench.miniwob import SYSTEMS, wilson
from noosphere.runs import load_done


def newest_runs(suite: Path) -> list[Path]:
    """The newest run folder of each system that has one, in `SYSTEMS` order."""
    found = []
    for system in SYSTEMS:
        runs = sorted(p for p in (suite / system).glob("*") if (p / "items.jsonl").exists())
        if runs:
            found.append(runs[-1])
    return found


def table(runs: list[Path]) -> str:
    """The per-task markdown table of `runs`."""
    rows: list[dict[str, Any]] = [load_done(run / "items.jsonl") for run in runs]
    tasks: dict[str, None] = {}
    cells: list[dict[str, list[bool]]] = []
    for done in rows:
        by_task: dict[str, list[bool]] = defaultdict(list)
        for row in done.values():
            task = row.get("task") or row["id"].rsplit("-", 1)[0]
            tasks.setdefault(task, None)
            by_task[task].append(bool(row.get("correct")))
        cells.append(by_task)
    names = [f"{run.parent.name} ({run.name}, {len(done)} episodes)" for run, done in zip(runs, rows, strict=True)]
    lines = ["| task | " + " | ".join(names) + " |", "|---|" + "---|" * len(runs)]
    order = _config_tasks(runs[0]) if runs else []
    for task in sorted(tasks, key=lambda t: (order.index(t) if t in order else len(order), t)):
        lines.append(f"| {task} | " + " | ".join(
            f"{sum(c[task])}/{len(c[task])}" if c.get(task) else "-" for c in cells) + " |")
    totals, intervals, steps, calls = [], [], [], []
    for done in rows:
        won, n = sum(bool(r.get("correct")) for r in done.values()), len(done)
        low, high = wilson(won, n)
        totals.append(f"**{won}/{n} = {100 * won / max(n, 1):.1f} %**")
        intervals.append(f"{low:.1f} - {high:.1f}")
        steps.append(f"{sum(float(r.get('steps') or 0) for r in done.values()) / max(n, 1):.2f}")
        calls.append(f"{sum(float(r.get('calls') or 0) for r in done.values()) / max(n, 1):.2f}")
    for label, values in (("won", totals), ("95 % interval", intervals), ("steps / episode", steps),
                          ("calls / episode", calls)):
        lines.append(f"| {label} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def _config_tasks(run: Path) -> list[str]:
    """The task list of a run, in its order (`config.json`), or none if it cannot be read."""
    try:
        return list(json.loads((run / "config.json").read_text()).get("tasks") or [])
    except (OSError, ValueError, AttributeError):
        return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path, help="run folders (default: the newest of each system)")
    parser.add_argument("--suite", type=Path, default=Path(__file__).parent / "results" / "miniwob")
    args = parser.parse_args(argv)
    runs = args.runs or newest_runs(args.suite)
    missing = [run for run in runs if not (run / "items.jsonl").exists()]
    if not runs or missing:
        print(f"miniwob_table: no run folder with items.jsonl: {', '.join(map(str, missing)) or args.suite}",
              file=sys.stderr)
        return 2
    print(table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
