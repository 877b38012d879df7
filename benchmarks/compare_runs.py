"""Compare two benchmark run folders item by item: predictions and answer texts that differ.

    python benchmarks/compare_runs.py RUN_A RUN_B

A run folder is one `noosphere bench` output (holding `items.jsonl`) or a folder with exactly one such run
inside. Only items both runs scored without an error are compared. The last line is
`common=N predictions_differ=P texts_differ=T correct_a=A correct_b=B`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def items(folder: Path) -> dict[str, dict[str, Any]]:
    found = [folder / "items.jsonl"] if (folder / "items.jsonl").is_file() else sorted(folder.glob("*/items.jsonl"))
    if len(found) != 1:
        raise SystemExit(f"compare_runs: {folder}: expected one run folder with items.jsonl, found {len(found)}")
    rows: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(found[0].read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            print(f"{found[0]}:{number}: not JSON, skipped")
            continue
        if isinstance(row, dict) and row.get("error") is None and "id" in row:
            rows[str(row["id"])] = row
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args()
    a, b = items(args.a), items(args.b)
    common = sorted(set(a) & set(b))
    predictions = [i for i in common if a[i].get("prediction") != b[i].get("prediction")]
    texts = [i for i in common if a[i].get("answer") != b[i].get("answer")]
    for i in predictions:
        print(f"{i}: {a[i].get('prediction')!r} vs {b[i].get('prediction')!r} (gold {a[i].get('gold')!r})")
    print(f"common={len(common)} predictions_differ={len(predictions)} texts_differ={len(texts)} "
          f"correct_a={sum(bool(a[i].get('correct')) for i in common)} "
          f"correct_b={sum(bool(b[i].get('correct')) for i in common)}")


if __name__ == "__main__":
    main()
