"""A games run's trace read back game by game, for the scripts that study how games were played
(`benchmarks/focus_loops.py`, `first_prompt.py`, `pair_divergence.py`), and the trace of a run folder, which the
scripts that read one ask for first (a run committed under `benchmarks/results` has none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from noosphere.datafiles import scan_json_lines
from noosphere.trace import run_trace


def games_in_trace(run: Path) -> dict[str, list[dict[str, Any]]]:
    """Each game's events in the run's trace, in order, of its last attempt only: a resumed game starts again at its
    `ma_episode` event, and the trace keeps every attempt. Games in the order they were first played; lines that are
    not JSON objects (a line torn by a kill) are skipped, and events of no game left out."""
    games: dict[str, list[dict[str, Any]]] = {}
    for _, event in scan_json_lines(run_trace(run))[0]:
        game = event.get("item_id")
        if not isinstance(game, str):
            continue
        if event.get("kind") == "ma_episode":
            games[game] = []
        games.setdefault(game, []).append(event)
    return games


def game_rows(run: Path) -> dict[str, dict[str, Any]]:
    """The run's scored games (`items.jsonl`) by id; none yet if it has none."""
    return {str(row["id"]): row for _, row in scan_json_lines(run / "items.jsonl")[0] if "id" in row}
