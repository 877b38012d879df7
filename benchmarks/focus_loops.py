"""What each focus loop of a meta-agent run did, game by game: why it opened, what the focus agent advised, what
was struck from its choices (`--focus strike`) and the action that followed. Read from the run's trace; with
`--against RUN`, each game's loops beside another run's (the same games with the paper's focus loop, say).

A loop "recovered" (the run's count) if the next action did something; this also says whether that action led
somewhere new: to an observation the game had not shown before. Moving the cookbook into the fridge and out again
does something each time, and after the first round shows nothing new.

    python benchmarks/focus_loops.py benchmarks/results/textworld/metaagent-none-percept-strike/RUN \
        --against benchmarks/results/textworld/metaagent-none-percept/RUN [--game tier1/cooking-1]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from noosphere.bench.game_traces import game_rows, games_in_trace
from noosphere.errors import UsageError

STRUCK = re.compile(r"Actions that just did nothing \(not to be taken again now\): (.*)\n")
"""How `prompts.focus_messages` names the struck actions: read where an older trace's `ma_focus` lacks them."""


def loops_by_game(run: Path) -> dict[str, list[dict[str, Any]]]:
    """Each game's focus loops in order: step, reason, struck, advice, the next action and whether it recovered.
    A torn last line (a killed run) is skipped; the last attempt at a game is the one kept."""
    return {game: _loops(events) for game, events in games_in_trace(run).items()}


def _loops(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    loops: list[dict[str, Any]] = []
    seen: set[str] = set()  # the game's observations so far
    last_new = False  # whether the last action led to an observation not seen before
    for event in events:
        kind = event.get("kind")
        if kind == "ma_action":
            observation = event.get("observation", "")
            last_new = observation not in seen
            seen.add(observation)
        elif kind == "ma_focus":
            loops.append({"step": event["step"], "reason": event.get("reason", ""), "struck": event.get("struck", []),
                          "advice": "", "action": None, "recovered": None, "new": None})
        elif kind == "model_call" and event.get("agent") == "focus" and loops and not loops[-1]["struck"]:
            told = STRUCK.search(event["messages"][-1]["content"]) if event.get("messages") else None
            loops[-1]["struck"] = told.group(1).split(", ") if told else []
        elif kind == "ma_step" and event.get("agent") == "focus" and loops:
            loops[-1]["advice"] = event.get("output", "")
        elif kind == "ma_focus_outcome" and loops:
            loops[-1].update(action=event.get("action"), recovered=event.get("recovered"), new=last_new)
    return loops


def describe(run: Path, game: str, loops: list[dict[str, Any]]) -> list[str]:
    row = game_rows(run).get(game)
    result = f"{row['prediction']} in {row['actions']}" if row else "not finished"
    recovered = sum(1 for loop in loops if loop["recovered"])
    new = sum(1 for loop in loops if loop["recovered"] and loop["new"])
    lines = [f"  {run.parent.name}: {result}; {len(loops)} focus loops, {recovered} recovered, {new} to something new"]
    for loop in loops:
        advice = loop["advice"].rsplit("Next action:", 1)[-1].strip(" .") if loop["advice"] else "(no advice)"
        struck = f" struck [{', '.join(loop['struck'])}];" if loop["struck"] else ""
        outcome = {True: "did something", False: "did nothing", None: "-"}[loop["recovered"]]
        if loop["recovered"] and loop["new"] is not None:
            outcome += ", new" if loop["new"] else ", seen before"
        lines.append(f"    step {loop['step']}: {loop['reason']};{struck} advised `{advice}`, took `{loop['action']}`"
                     f" ({outcome})")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--against", type=Path, help="another run of the same games, shown beside it")
    parser.add_argument("--game", action="append", help="only these games (repeatable)")
    args = parser.parse_args(argv)
    runs = [args.run, *([args.against] if args.against else [])]
    try:
        found = [loops_by_game(run) for run in runs]
    except UsageError as exc:
        raise SystemExit(f"focus_loops: {exc}") from None
    games = args.game or sorted(set().union(*found), key=lambda g: (g.rsplit("-", 1)[-1], g))
    for game in games:
        print(game)
        for run, loops in zip(runs, found, strict=True):
            print("\n".join(describe(run, game, loops.get(game, []))))


if __name__ == "__main__":
    main()
