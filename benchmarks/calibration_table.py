"""Calibration of every committed benchmark run that has confidences, recomputed from its rows.

    python benchmarks/calibration_table.py [--results benchmarks/results] [--minimum 8]

For each run folder whose `items.jsonl` has at least `--minimum` rows with a `confidence`: the items, the
accuracy, ECE (10 bins), ECE after leave-one-out Platt scaling and after cross-fitted isotonic regression, and
the ECE a perfectly calibrated confidence would show on the same items (`ece_noise_floor`: mean and 95th
percentile), with AUROC and its DeLong interval. A recalibrated ECE inside the floor's range is what sampling
noise alone gives on that many items; an ECE target below the floor's mean cannot be shown on them. Printed as
a markdown table, one row per run, every run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from noosphere.bench.calibration import calibrate, isotonic_ece, row_confidences
from noosphere.bench.script_args import at_least_one
from noosphere.errors import UsageError
from noosphere.runs import load_done


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def rows_of(results: Path, minimum: int) -> list[str]:
    lines = []
    for items in sorted(results.rglob("items.jsonl")):  # a run sits at any depth (`mustard/parallel/p1/RUN/`)
        confidences, correct, _ = row_confidences(list(load_done(items).values()))
        if len(confidences) < minimum:
            continue
        try:
            result = calibrate(confidences, correct)
        except UsageError as exc:  # a row whose confidence is no probability ("high", 1.7, NaN)
            raise UsageError(f"{items}: {exc}") from None
        floor = result.ece_floor
        band = result.auroc_ci95
        run = items.parent.relative_to(results)
        inside = ("-" if floor is None or result.ece_recalibrated is None
                  else "yes" if result.ece_recalibrated <= floor[1] else "no")
        lines.append(
            f"| `{run}` | {result.n} | {_figure(result.accuracy)} | {_figure(result.ece)} | "
            f"{_figure(result.ece_recalibrated)} | {_figure(isotonic_ece(confidences, correct))} | "
            f"{'-' if floor is None else f'{floor[0]:.3f} ({floor[1]:.3f})'} | {inside} | "
            f"{_figure(result.auroc)}{'' if band is None else f' ({band[0]:.2f}-{band[1]:.2f})'} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--minimum", type=at_least_one, default=8,
                        help="rows with a confidence a run needs to be listed")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        print(f"calibration_table: no results folder at {args.results}", file=sys.stderr)
        return 2
    try:
        lines = rows_of(args.results, args.minimum)
    except UsageError as exc:
        print(f"calibration_table: {exc}", file=sys.stderr)
        return 2
    if not lines:
        print(f"calibration_table: no run under {args.results} has {args.minimum} rows with a confidence",
              file=sys.stderr)
        return 1
    print("| run | items | accuracy | ECE | ECE after Platt (leave-one-out) | ECE after isotonic (cross-fitted) "
          "| floor: mean (95th pct) | within floor | AUROC (95 %) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
