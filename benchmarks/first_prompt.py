"""Is a run's first planning prompt in a game the one the meta-agent without memory sends? Rebuilt on the scripted
model from the run's own first belief, and compared message by message with the call in the run's trace.

Where they are the same and the actions differ, the difference is not the prompt's: it is the numbers (another
llama.cpp build, another batch shape), which can flip a greedy step where two continuations are nearly tied.

    python benchmarks/first_prompt.py benchmarks/results/textworld/metaagent-both-percept-stuck/RUN \
        --game tier1/treasure_hunter-0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from noosphere.bench.game_traces import games_in_trace
from noosphere.envs import Environment
from noosphere.errors import UsageError
from noosphere.llm import Model, ScriptedBackend
from noosphere.metaagent import MetaAgent


class _Stop(Exception):
    """Raised by the script once the planner has been asked: the rest of the game is not needed."""


def recorded_calls(run: Path, game: str) -> list[dict[str, Any]]:
    """The model calls of the last attempt at `game` in the run's trace, in order."""
    return [event for event in games_in_trace(run).get(game, []) if event.get("kind") == "model_call"]


def same_first_prompt(calls: list[dict[str, Any]], env: Environment, config: dict[str, Any]) -> list[bool]:
    """For each message of the run's first planning call: is it the one a meta-agent without memory sends, with
    the run's planner view and focus mode, given the run's first belief?"""
    conscious = next((c for c in calls if c["agent"].startswith("conscious")), None)
    planner = next((c for c in calls if c["agent"].startswith("planning")), None)
    if conscious is None or planner is None:
        raise UsageError("the run's trace has no planning call in this game yet")
    asked: list[Any] = []

    def answer(request: Any) -> str:
        asked.append(request)
        if (request.agent or "").startswith("conscious"):
            return str(conscious["response"])
        raise _Stop

    agent = MetaAgent(Model(ScriptedBackend(answer)), planner_view=config.get("planner_view", "team"),
                      focus=config.get("focus", "replay"), max_actions=1)
    with contextlib.suppress(_Stop):
        asyncio.run(agent.play(env))
    rebuilt = next(r for r in asked if (r.agent or "").startswith("planning"))
    recorded = [m["content"] for m in planner["messages"]]
    return [len(recorded) == len(rebuilt.messages)] + [
        mine.content == theirs for mine, theirs in zip(rebuilt.messages, recorded, strict=False)]


def game_of(config: dict[str, Any], name: str) -> Environment:
    """The run's game called `name`, made again from its config."""
    from noosphere.cli.bench_games import alfworld_games, textworld_games

    games = textworld_games(config) if config["benchmark"] == "textworld" else alfworld_games(config)
    env = next((g for g in games if g.name == name), None)
    if env is None:
        raise UsageError(f"no game {name!r} in this run")
    return env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--game", required=True)
    args = parser.parse_args(argv)
    try:
        calls = recorded_calls(args.run, args.game)  # a folder without its trace is refused before any game is made
        config = json.loads((args.run / "config.json").read_text())
        same = same_first_prompt(calls, game_of(config, args.game), config)
    except UsageError as exc:
        raise SystemExit(f"first_prompt: {exc}") from None
    planner = next(c for c in calls if c["agent"].startswith("planning"))
    print(f"same first planning prompt as without memory: {all(same)} ({sum(same[1:])} of {len(same) - 1} messages)")
    print(f"the run's reply: {planner['response']}")


if __name__ == "__main__":
    main()
