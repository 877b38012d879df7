"""Add each member's standing answer and ballot to the rows of a GSM8K society run scored before rows
recorded them.

`noosphere bench gsm8k --system society` now writes `standing` (member -> last number) and, where the
members voted, `ballots` (voter -> the number of its first choice) into every row, which `answer_spread`
turns into the second table of `suite.py gsm8k --summary-only`. Rows scored earlier lack them; the run's
own trace has them: the messages and cast ballots of the top society on that item from its last start (a
resumed item started again), by members who were not staff and had not left (an economy's bankrupt
members), paid services and standing answers counted as votes left out. Rows that already have a field,
or whose item the trace does not show, keep it as it is. Run it on a run that is not being scored: the
rows file is rewritten whole (through a temporary file, so a kill leaves the old one).

    python benchmarks/standing_answers.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from noosphere.bench.gsm8k import normalise_number
from noosphere.bench.runner import load_done
from noosphere.errors import UsageError
from noosphere.trace import read_trace, run_trace

Answers = dict[str, dict[str, str | None]]
"""item id -> member -> a number."""


def answers_from_trace(trace: Path) -> tuple[Answers, Answers]:
    """For the items the trace shows a society on: each member's last number, and each voter's first choice."""
    staff: dict[str, set[str]] = {}
    standing: Answers = {}
    ballots: Answers = {}
    for event in read_trace(trace):
        item = getattr(event, "item_id", None)
        if item is None or getattr(event, "society", None) is not None:
            continue
        if event.kind == "soc_started":  # this item's society starts (again): what came before is void
            staff[item], standing[item], ballots[item] = set(event.staff), {}, {}
        elif event.kind == "econ_departure" and item in standing:
            standing[item].pop(event.agent, None)
        elif (event.kind == "soc_message" and item in standing and event.member not in staff[item]
              and event.phase != "service"):
            standing[item][event.member] = normalise_number(event.answer or "")
        elif event.kind == "soc_ballot" and item in ballots and not event.standing:
            ballots[item][event.voter] = normalise_number(event.ranking[0]) if event.ranking else None
    return standing, ballots


def backfill(run: Path) -> int:
    """Rewrite the run's items.jsonl with `standing` and `ballots` where they were missing; returns how many
    rows gained either."""
    items = run / "items.jsonl"
    rows = list(load_done(items).values())
    found = dict(zip(("standing", "ballots"), answers_from_trace(run_trace(run)), strict=True))
    added = 0
    for row in rows:
        gained = [field for field, answers in found.items() if field not in row and answers.get(row["id"])]
        for field in gained:
            row[field] = found[field][row["id"]]
        added += bool(gained)
    if added:
        fresh = items.with_suffix(".jsonl.new")
        fresh.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        fresh.replace(items)
    return added


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    runs = parser.parse_args(argv).runs
    try:
        for run in runs:  # every folder's trace first: none is rewritten if one is missing
            run_trace(run)
        for run in runs:
            print(f"{run}: {backfill(run)} rows gained their members' standing answers or ballots")
    except UsageError as exc:
        raise SystemExit(f"standing_answers: {exc}") from None


if __name__ == "__main__":
    main()
