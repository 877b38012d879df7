"""Add each member's standing answer to the rows of a GSM8K society run scored before rows recorded it.

`noosphere bench gsm8k --system society` now writes `standing` (member -> last number) into every
row, which `answer_spread` turns into the second table of `suite.py gsm8k --summary-only`. Rows
scored earlier lack it; the run's own trace has it: the messages to the top society on that item
from its last start (a resumed item started again), by members who were not staff and had not left
(an economy's bankrupt members), paid services left out. Rows that already have it, or whose item
the trace does not show, stay as they are. Run it on a run that is not being scored: the rows file
is rewritten whole (through a temporary file, so a kill leaves the old one).

    python benchmarks/standing_answers.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from noosphere.bench.gsm8k import normalise_number
from noosphere.bench.runner import load_done
from noosphere.trace import read_trace


def standing_from_trace(trace: Path) -> dict[str, dict[str, str | None]]:
    """item id -> member -> the number of its last answer, for the items the trace shows a society on."""
    staff: dict[str, set[str]] = {}
    standing: dict[str, dict[str, str | None]] = {}
    for event in read_trace(trace):
        item = getattr(event, "item_id", None)
        if item is None or getattr(event, "society", None) is not None:
            continue
        if event.kind == "soc_started":  # this item's society starts (again): what came before is void
            staff[item], standing[item] = set(event.staff), {}
        elif event.kind == "econ_departure" and item in standing:
            standing[item].pop(event.agent, None)
        elif (event.kind == "soc_message" and item in standing and event.member not in staff[item]
              and event.phase != "service"):
            standing[item][event.member] = normalise_number(event.answer or "")
    return standing


def backfill(run: Path) -> int:
    """Rewrite the run's items.jsonl with `standing` where it was missing; returns how many rows gained it."""
    items = run / "items.jsonl"
    rows = list(load_done(items).values())
    found = standing_from_trace(run / "trace.jsonl")
    added = 0
    for row in rows:
        if "standing" not in row and found.get(row["id"]):
            row["standing"] = found[row["id"]]
            added += 1
    if added:
        fresh = items.with_suffix(".jsonl.new")
        fresh.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        fresh.replace(items)
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    for run in parser.parse_args().runs:
        print(f"{run}: {backfill(run)} rows gained their members' standing answers")


if __name__ == "__main__":
    main()
