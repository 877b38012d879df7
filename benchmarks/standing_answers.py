"""Add each member's standing answer to the rows of a GSM8K society run scored before rows recorded it.

`noosphere bench gsm8k --system society` now writes `standing` (member -> last number) into every
row, which `answer_spread` turns into the second table of `suite.py gsm8k --summary-only`. Rows
scored earlier lack it; the run's own trace has it: the members' messages to the top society on
that item, from the item's last start (a resumed item started again), staff and paid services left
out. Rows that already have it, or whose item the trace does not show, stay as they are.

    python benchmarks/standing_answers.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from noosphere.bench.gsm8k import normalise_number


def standing_from_trace(trace: Path) -> dict[str, dict[str, str | None]]:
    """item id -> member -> the number of its last answer, for the items the trace shows a society on."""
    members: dict[str, set[str]] = {}
    standing: dict[str, dict[str, str | None]] = {}
    with trace.open(encoding="utf-8") as lines:
        for line in lines:
            event: dict[str, Any] = json.loads(line)
            item, kind = event.get("item_id"), event.get("kind")
            if item is None or event.get("society") is not None:
                continue
            if kind == "soc_started":  # this item's society starts (again): what came before is void
                members[item] = set(event["members"]) - set(event.get("staff", ()))
                standing[item] = {}
            elif kind == "soc_message" and event["member"] in members.get(item, ()) and event["phase"] != "service":
                standing[item][event["member"]] = normalise_number(event.get("answer") or "")
    return standing


def backfill(run: Path) -> int:
    """Rewrite the run's items.jsonl with `standing` where it was missing; returns how many rows gained it."""
    items = run / "items.jsonl"
    rows = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines() if line.strip()]
    found = standing_from_trace(run / "trace.jsonl")
    added = 0
    for row in rows:
        if "standing" not in row and found.get(row["id"]):
            row["standing"] = found[row["id"]]
            added += 1
    if added:
        items.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    for run in parser.parse_args().runs:
        print(f"{run}: {backfill(run)} rows gained their members' standing answers")


if __name__ == "__main__":
    main()
