"""Where two runs of the meta-agent on the same games part, game by game: how many model calls they shared (the same
agent, prompt and reply), the action and the call they first differ at, and where the first run first recalled
memory. Read from both runs' traces.

Two runs played side by side in one process (`suite.py --together --parallel 1`) send identical calls until
something in their prompts differs, and an identical call is generated once for both, so up to that point they are
one game, whatever the batch or the build. For `metaagent-both-percept-stuck` against `metaagent-none-percept-paired`
the first difference should be the recall, when the team first gets stuck; a game that parts before it parts for
another reason, which this names.

    python benchmarks/pair_divergence.py benchmarks/results/textworld/metaagent-both-percept-stuck/RUN \
        benchmarks/results/textworld/metaagent-none-percept-paired/RUN
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noosphere.bench.game_traces import game_rows, games_in_trace
from noosphere.errors import UsageError


@dataclass
class Game:
    """One game's last attempt in a run's trace, up to its end: the model calls, the step each was made at, and the
    step memory was first recalled at. A memory run's last calls, after the game's last action, store it."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    recalled_at: int | None = None
    ended: bool = False


def games(run: Path) -> dict[str, Game]:
    """Every game in the run's trace; a resumed game keeps its last attempt, a torn last line is skipped."""
    found: dict[str, Game] = {}
    for name, events in games_in_trace(run).items():
        game = found[name] = Game()
        for event in events:
            kind = event.get("kind")
            if kind == "model_call":
                game.calls.append(event)
                game.steps.append(len(game.actions))
            elif kind == "ma_action":
                game.actions.append(str(event.get("action", "")))
            elif kind == "ma_retrieval" and game.recalled_at is None:
                game.recalled_at = int(event.get("step", len(game.actions)))
            elif kind == "ma_episode_end":
                game.ended = True
    return found


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a.get(key) == b.get(key) for key in ("agent", "messages", "response"))


def parted(a: Game, b: Game) -> int:
    """How many calls the two games share before they differ (all of the shorter game's, if neither differs)."""
    shared = 0
    for call_a, call_b in zip(a.calls, b.calls, strict=False):
        if not _same(call_a, call_b):
            break
        shared += 1
    return shared


def why(a: Game, b: Game, shared: int) -> str:
    """What the first differing call differs in."""
    if shared == min(len(a.calls), len(b.calls)):
        if not (a.ended and b.ended):
            return "the same so far"
        # a memory run writes the last belief (and, after a win, a lesson) once the game is over
        return "the same game" if len(a.calls) == len(b.calls) else "the same game, then the calls that store it"
    call_a, call_b = a.calls[shared], b.calls[shared]
    if call_a.get("agent") != call_b.get("agent"):
        return f"another agent: {call_a.get('agent')} / {call_b.get('agent')}"
    if call_a.get("messages") != call_b.get("messages"):
        return f"the {call_a.get('agent')} prompt"
    return f"the {call_a.get('agent')} reply to the same prompt"


def table(run_a: Path, run_b: Path) -> list[str]:
    a_games, b_games = games(run_a), games(run_b)
    a_out, b_out = ({game: f"{'won' if row.get('correct') else 'lost'} {row.get('actions', '?')}"
                     for game, row in game_rows(run).items()} for run in (run_a, run_b))
    lines = [f"| game | {run_a.parent.name} | {run_b.parent.name} | calls shared | parted at action | memory first "
             "recalled at action | what differs first |", "|---|---|---|---|---|---|---|"]
    order = sorted(a_games.keys() & b_games.keys(), key=lambda n: (n not in a_out, list(a_games).index(n)))
    return lines + [_row(name, a_games[name], b_games[name], a_out.get(name, "in play"), b_out.get(name, "in play"))
                    for name in order]


def _row(name: str, a: Game, b: Game, a_result: str, b_result: str) -> str:
    shared = parted(a, b)
    at = "-" if shared == min(len(a.calls), len(b.calls)) else str(a.steps[shared])
    recalled = "-" if a.recalled_at is None else str(a.recalled_at)
    return f"| {name} | {a_result} | {b_result} | {shared} | {at} | {recalled} | {why(a, b, shared)} |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    args = parser.parse_args(argv)
    try:
        print("\n".join(table(args.run_a, args.run_b)))
    except UsageError as exc:
        raise SystemExit(f"pair_divergence: {exc}") from None


if __name__ == "__main__":
    main()
