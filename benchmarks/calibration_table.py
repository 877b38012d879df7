"""Calibration of every committed benchmark run that has confidences, recomputed from its rows.

    python benchmarks/calibration_table.py [--results benchmarks/results] [--minimum 8] [--heldout]

For each run folder whose `items.jsonl` has at least `--minimum` rows with a `confidence`: the items, the
accuracy, ECE (10 bins), ECE after leave-one-out Platt scaling and after cross-fitted isotonic regression, and
the ECE a perfectly calibrated confidence would show on the same items (`ece_noise_floor`: mean and 95th
percentile), with AUROC and its DeLong interval. A recalibrated ECE inside the floor's range is what sampling
noise alone gives on that many items; an ECE target below the floor's mean cannot be shown on them. Printed as
a markdown table, one row per run, every run.

`--heldout` prints instead, for every run that has other runs of its engine on other items (the same config.json
but for the seed, `offset` and `limit`: `noosphere.bench.calibration_map`), its ECE through a map of each of the
module's `METHODS` (Platt, isotonic, Platt with a penalty chosen by cross-validation) fitted on those runs
(`noosphere calibration fit`), as a deployed engine's
confidence would be mapped, each with the 95th percentile of the ECE a perfectly calibrated confidence of the mapped
values shows on these items (starred when the ECE is above it). Below it, a row for each engine with two or more
runs on different items: each run mapped by a map fitted on the others and every mapped item measured together
(`noosphere calibration cross`), on all the engine's items at once, where one run alone leaves a floor too high,
each ECE with the Brier score of the same confidences.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from noosphere.bench.calibration import calibrate, isotonic_ece, row_confidences
from noosphere.bench.calibration_map import (
    METHODS,
    HeldOut,
    NoConfidence,
    RunRows,
    apply_map,
    cross_fitted,
    engine_folds,
    fit_map,
    held_out_fits,
    read_run,
)
from noosphere.bench.script_args import at_least_one
from noosphere.errors import UsageError
from noosphere.runs import load_done


def _article(method: str) -> str:
    return "an" if method[0] in "aeiou" else "a"


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


def _through(held: HeldOut, brier: bool = False) -> str:
    """ECE through a map, and the 95th percentile of its floor, starred when above it; with `brier`, the mapped
    confidences' Brier score after it (a map that gives every item nearly the accuracy has an ECE near 0 whatever it
    does to the Brier score)."""
    after = f" · Brier {_figure(held.mapped.brier)}" if brier else ""
    if held.floor is None:
        return _figure(held.mapped.ece) + after
    return f"{_figure(held.mapped.ece)} ({held.floor[1]:.3f}{'' if held.within_floor else ' *'}){after}"


def _runs(results: Path, minimum: int) -> list[RunRows]:
    runs = []
    for items in sorted(results.rglob("items.jsonl")):
        try:
            run = read_run(items.parent)
        except NoConfidence:  # not a run to calibrate
            continue
        if len(run.ids) >= minimum:
            runs.append(run)
    return runs


def pooled_rows(results: Path, minimum: int) -> list[str]:
    """A row per engine with two or more runs on different items: every run mapped by the others' map, pooled."""
    lines = []
    for folds in engine_folds(_runs(results, minimum)):
        try:
            held = [cross_fitted(folds, method) for method in METHODS]
        except UsageError as exc:  # some fold's other runs are all right or all wrong
            print(f"calibration_table: {folds[0].folder.relative_to(results)} and its engine's other runs are not "
                  f"cross-fitted: {exc}", file=sys.stderr)
            continue
        names = ", ".join(f"`{f.folder.relative_to(results)}` ({len(f.ids)})" for f in folds)
        lines.append(f"| {names} | {held[0].raw.n} | {_figure(held[0].raw.accuracy)} | {_figure(held[0].raw.ece)} · "
                     f"Brier {_figure(held[0].raw.brier)} | "
                     + " | ".join(_through(h, brier=True) for h in held) + " |")
    return lines


def heldout_rows(results: Path, minimum: int) -> list[str]:
    runs = _runs(results, minimum)
    lines = []
    for folder, fitted in held_out_fits(runs).items():
        run = next(r for r in runs if r.folder == folder)
        try:
            held = [apply_map(fit_map(fitted, method), run) for method in METHODS]
        except UsageError:  # the runs it would be fitted on are all right or all wrong
            continue
        names = ", ".join(f"`{f.folder.relative_to(results)}`" for f in fitted)
        fitted_items = sum(len(f.ids) for f in fitted)
        lines.append(f"| `{folder.relative_to(results)}` | {held[0].raw.n} | {names} ({fitted_items}) "
                     f"| {_figure(held[0].raw.ece)} | " + " | ".join(_through(h) for h in held) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--minimum", type=at_least_one, default=8,
                        help="rows with a confidence a run needs to be listed")
    parser.add_argument("--heldout", action="store_true",
                        help="ECE through a map fitted on the engine's other runs, on other items")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        print(f"calibration_table: no results folder at {args.results}", file=sys.stderr)
        return 2
    try:
        lines = (heldout_rows if args.heldout else rows_of)(args.results, args.minimum)
    except UsageError as exc:
        print(f"calibration_table: {exc}", file=sys.stderr)
        return 2
    if not lines:
        print(f"calibration_table: no run under {args.results} has {args.minimum} rows with a confidence",
              file=sys.stderr)
        return 1
    if args.heldout:
        print("| run | items | maps fitted on (items) | ECE | "
              + " | ".join(f"ECE through {_article(m)} {m} map (floor's 95th pct)" for m in METHODS) + " |")
        print("|---" * (4 + len(METHODS)) + "|")
        for line in lines:
            print(line)
        if pooled := pooled_rows(args.results, args.minimum):
            print("\n| runs of one engine, on different items (items) | items | accuracy | ECE · Brier | "
                  + " | ".join(f"ECE pooled, each run through {_article(m)} {m} map fitted on the others "
                               "(floor's 95th pct)" for m in METHODS) + " |")
            print("|---" * (4 + len(METHODS)) + "|")
            for line in pooled:
                print(line)
        return 0
    print("| run | items | accuracy | ECE | ECE after Platt (leave-one-out) | ECE after isotonic (cross-fitted) "
          "| floor: mean (95th pct) | within floor | AUROC (95 %) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
