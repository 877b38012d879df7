"""Recount a weighted best-of-N run (`bench gsm8k --system best-of-n --weighted`) at every budget.

Each row keeps every sample's number and P(True), so one run answers several questions at once:
the plain majority and the P(True)-weighted vote (CISC) over the first k samples, for every k. A
weighted vote over k samples costs 2k calls (k generations, k scoring calls), a plain vote k, so
the table also pairs them at equal calls. It prints a markdown table and the signal of P(True) on
the samples (AUROC of P(True) against the sample being right, with a 95 % DeLong interval).

    python benchmarks/cisc_table.py RUN_DIR [--json]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from noosphere.bench.calibration import auroc, auroc_interval
from noosphere.bench.gsm8k import majority, weighted_votes
from noosphere.runs import load_done


def recount(rows: list[dict[str, Any]], k: int, weighted: bool) -> float:
    right = 0
    for row in rows:
        samples = [(s["number"], s["p_true"]) for s in row["samples"][:k]]
        numbers = [number for number, _ in samples if number is not None]
        votes: dict[str, float] = (weighted_votes(samples) if weighted
                                   else {n: float(c) for n, c in Counter(numbers).items()})
        right += majority(votes, numbers) == row["gold"]
    return 100 * right / len(rows)


def table(run: Path) -> dict[str, Any]:
    rows = sorted((r for r in load_done(run / "items.jsonl").values() if r.get("samples")), key=lambda r: r["id"])
    if not rows:
        raise SystemExit(f"{run} has no weighted best-of-N rows with samples")
    n = len(rows[0]["samples"])
    results = [{"samples": k, "plain": round(recount(rows, k, False), 1), "plain_calls": k,
                "weighted": round(recount(rows, k, True), 1), "weighted_calls": 2 * k} for k in range(1, n + 1)]
    scored = [(s["p_true"], s["number"] == row["gold"]) for row in rows for s in row["samples"]
              if s["number"] is not None and s["p_true"] is not None]
    probs, truth = [p for p, _ in scored], [t for _, t in scored]
    interval = auroc_interval(probs, truth)
    return {"run": str(run), "problems": len(rows), "rows": results,
            "signal": {"samples": len(scored), "right": sum(truth), "auroc": auroc(probs, truth),
                       "ci95": list(interval) if interval else None}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = table(args.run)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['problems']} problems of {result['run']}\n")
    print("| samples k | plain majority (k calls) | weighted by P(True) (2k calls) |\n|---|---|---|")
    for row in result["rows"]:
        print(f"| {row['samples']} | {row['plain']} | {row['weighted']} |")
    signal = result["signal"]
    ci = f" (95 % CI {signal['ci95'][0]:.2f}-{signal['ci95'][1]:.2f})" if signal["ci95"] else ""
    area = f"{signal['auroc']:.3f}" if signal["auroc"] is not None else "undefined"
    print(f"\nP(True) against a sample being right: AUROC {area}{ci} over {signal['samples']} samples "
          f"({signal['right']} right)")


if __name__ == "__main__":
    main()
