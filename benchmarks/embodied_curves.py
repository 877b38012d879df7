"""The embodied suite's figure and table: every system's coverage curve in one plot, and coverage with its 95 %
interval, EQA accuracy and cost per action, one row per system.

    python benchmarks/embodied_curves.py [--out benchmarks/results/embodied]

Reads the newest run folder (with at least one episode) of each configuration (`random`, `frontier`, `single`,
`society`, and any other) under `--out`, writes `coverage.png` there and prints the table in Markdown; then, for the
runs whose trace is on this machine (traces are not committed), what each system did: its actions by kind, and how
many changed nothing.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from noosphere.bench.embodied import interval, summarise
from noosphere.bench.embodied_figures import write_coverage_plot
from noosphere.runs import load_done

ORDER = ("random", "single", "single-scored", "single-scored-raw", "society", "society-scored", "frontier")
COLUMNS = ("n", "coverage", "coverage_ci95", "eqa_captain", "eqa_single", "eqa_seen-text", "eqa_seen-text_not_seen",
           "invented_actions", "calls_per_action", "tokens_per_action")


def newest_run(folder: Path) -> Path | None:
    """The newest run folder with at least one scored episode (a run just begun is passed over)."""
    runs = sorted(p for p in folder.glob("*")
                  if (p / "items.jsonl").exists() and (p / "items.jsonl").stat().st_size)
    return runs[-1] if runs else None


def newest_rows(folder: Path) -> list[dict]:
    run = newest_run(folder)
    return list(load_done(run / "items.jsonl").values()) if run is not None else []


KINDS = ("move forward", "turn left", "turn right", "open door", "stop")


def behaviour(name: str, run: Path) -> str | None:
    """A table row from the run's trace (None without one): its steps, the share of each action, of invented or
    failed turns, and of actions that changed nothing (`emb_step.effect`)."""
    trace = run / "trace.jsonl"
    if not trace.exists():
        return None
    steps = [event for line in trace.open() if '"emb_step"' in line
             and (event := json.loads(line)).get("kind") == "emb_step"]
    if not steps:
        return None
    done = Counter(step.get("action") for step in steps)
    idle = sum(1 for step in steps if step.get("effect"))
    share = [f"{done[kind] / len(steps):.0%}" for kind in KINDS]
    return (f"| {name} | {len(steps)} | {' | '.join(share)} | {done[None] / len(steps):.0%} | "
            f"{idle / len(steps):.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/embodied"))
    args = parser.parse_args()
    names = sorted((p.name for p in args.out.glob("*") if p.is_dir()),
                   key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name))
    runs = {name: rows for name in names if (rows := newest_rows(args.out / name))}
    if not runs:
        raise SystemExit(f"embodied_curves: no embodied runs under {args.out}")
    figure = write_coverage_plot(args.out / "coverage.png", runs, "Coverage after each action (mean, 95 % band)")
    print(f"| system | {' | '.join(COLUMNS)} |\n" + "|---" * (len(COLUMNS) + 1) + "|")
    for name, rows in runs.items():
        metrics = summarise({"max_steps": len(rows[0].get("curve", [None])) - 1}, rows)
        print(f"| {name} | {' | '.join(str(metrics.get(column, '-')) for column in COLUMNS)} |")
    print(f"\n![coverage after each action]({figure.name})")
    common = min(len(rows[0]["curve"]) - 1 for rows in runs.values())
    print(f"\nAt {common} actions, the fewest any system played (each run records its coverage after every action):\n")
    print("| system | episodes | coverage | 95 % interval | vs random, episode by episode | vs single |\n"
          "|---|---|---|---|---|---|")
    for name, rows in runs.items():
        print(at_step(name, rows, common, runs.get("random"), runs.get("single")))
    traced = [row for name in runs if (run := newest_run(args.out / name)) and (row := behaviour(name, run))]
    if traced:
        print("\nWhat each system did, every step of the newest run (from its trace, where this machine has it):\n")
        print(f"| system | steps | {' | '.join(KINDS)} | invented or failed | changed nothing |\n"
              + "|---" * (len(KINDS) + 4) + "|")
        print("\n".join(traced))


def at_step(name: str, rows: list[dict], step: int, *baselines: list[dict] | None) -> str:
    """A table row: the mean coverage after `step` actions, its interval and wins / losses against each baseline on
    the same worlds and seeds."""
    values = [row["curve"][step] for row in rows]
    band = interval(values)
    shown = f"{band[0]:.3f}-{band[1]:.3f}" if band else "-"
    return (f"| {name} | {len(rows)} | {sum(values) / len(values):.3f} | {shown} | "
            f"{' | '.join(versus(rows, baseline, step) for baseline in baselines)} |")


def versus(rows: list[dict], baseline: list[dict] | None, step: int) -> str:
    """`+W / -L of N`: the episodes above and below `baseline`'s same episode after `step` actions (ties apart)."""
    if baseline is None or baseline is rows:
        return "-"
    theirs = {row["id"]: row["curve"][step] for row in baseline}
    pairs = [(row["curve"][step], theirs[row["id"]]) for row in rows if row["id"] in theirs]
    return f"+{sum(a > b for a, b in pairs)} / -{sum(a < b for a, b in pairs)} of {len(pairs)}"


if __name__ == "__main__":
    main()
