"""What one action of a game costs on a model: calls, tokens and seconds per action, for the meta-agent
(no memory) or ReAct, on the first ALFWorld games (one per task type, as `bench alfworld` plays them)
or on generated TextWorld games.

The call cache is off: every call is decoded. On the local backend the batch engine's counters say
how many prompt tokens were evaluated and how many were reused from a cached prefix (how the prompts
are ordered decides most of the cost of a game).

    python benchmarks/game_step_cost.py [--system metaagent|react] [--env alfworld|textworld]
                                        [--games 1] [--actions 4] [--model ID] [--memory none|...|both]
                                        [--picks usual|random] [--planner-view team|percept] [--data PATH]

`--data` is ALFWorld's json_2.1.1 folder (default: `../shared/data/alfworld/json_2.1.1`, as `bench alfworld`).
The model is opened before the games are made: a wrong `--model` is told first, as one `error:` line (exit 2).

`--model scripted` plays a stand-in for a model instead (no weights, seconds): every call is answered in form,
the next agent is the usual one (`--picks random`: any offered one, which sends the team round the focus and
memory loops) and the action a random admissible one, so the calls per action are the engine's own count on
those choices, without the repairs and retries a real model's replies cost. Its tokens and seconds mean nothing.

It prints one JSON line (the figures, and the calls per agent: a shared call is named by every role
it serves, e.g. `planning+motor`), then as its last line
`calls_per_action=X tokens_per_action=Y seconds_per_action=Z`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from noosphere.bench.games import MEMORY_MODES
from noosphere.bench.script_args import at_least_one
from noosphere.envs import Environment
from noosphere.errors import NoosphereError, UsageError
from noosphere.llm import Model
from noosphere.llm.registry import DEFAULT_MODEL, open_model
from noosphere.llm.types import Request
from noosphere.memory import HashingEmbedder, MemoryStore, default_embedder
from noosphere.metaagent import MemorySettings
from noosphere.metaagent.agents import PLANNER_VIEWS, PlannerView
from noosphere.metaagent.baselines import react
from noosphere.metaagent.cost import StepCost
from noosphere.metaagent.engine import MetaAgent


def games(env: str, count: int, folder: Path, data: Path | None = None) -> list[Any]:
    if env == "textworld":
        from noosphere.envs import textworld_games

        return textworld_games(folder, tier=1, per_challenge=max(1, -(-count // 4)))[:count]
    from noosphere.envs.alfworld import load_alfworld

    return load_alfworld(data, per_type=1, demo=True)[:count]


def stand_in(picks: str, seed: int = 0) -> Callable[[Request], dict[str, Any]]:
    """`--model scripted`: a reply in form to any call. Enumerated fields get an offered value (the first for the
    next agent, the graph's usual one, unless `picks` is random), free text a short sentence."""
    rng = random.Random(seed)

    def reply(request: Request) -> dict[str, Any]:
        answer: dict[str, Any] = {}
        for name, field in ((request.json_schema or {}).get("properties") or {}).items():
            offered = field.get("enum")
            if offered:
                usual = name in ("next", "next_agent") and picks == "usual"
                answer[name] = offered[0] if usual else rng.choice(offered)
            else:
                answer[name] = "Keep to the task and try the next place."[: field.get("maxLength", 200)]
        return answer

    return reply


def memory_settings(mode: str, folder: Path, scripted: bool) -> MemorySettings | None:
    episodic, conceptual = MEMORY_MODES[mode]
    if not (episodic or conceptual):
        return None
    return MemorySettings(MemoryStore(folder / "memory"), episodic=episodic, conceptual=conceptual,
                          embedder=HashingEmbedder() if scripted else default_embedder())


async def play(system: str, model: Model, chosen: list[Environment], actions: int,
               memory: MemorySettings | None = None, planner_view: PlannerView = "team"
               ) -> tuple[StepCost, dict[str, Any]]:
    started = time.perf_counter()
    if system == "react":
        results = await asyncio.gather(*(react(model, game, max_actions=actions) for game in chosen))
    elif memory is not None:  # a memory carries from game to game: played in order, as the benchmarks play them
        agent = MetaAgent(model, memory=memory, max_actions=actions, planner_view=planner_view)
        results = [await agent.play(game) for game in chosen]
    else:
        agent = MetaAgent(model, max_actions=actions, planner_view=planner_view)
        results = await asyncio.gather(*(agent.play(game) for game in chosen))
    cost = StepCost.of(model, results, time.perf_counter() - started)
    figures: dict[str, Any] = {
        "system": system, **({"planner_view": planner_view} if system == "metaagent" else {}),
        "model": model.id, "games": len(chosen), "won": sum(result.won for result in results),
        "actions": cost.actions, "calls": cost.calls, "tokens": cost.tokens, "seconds": round(cost.seconds, 1),
        "calls_per_action": round(cost.calls_per_action, 2), "tokens_per_action": round(cost.tokens_per_action),
        "seconds_per_action": round(cost.seconds_per_action, 2),
        "calls_by_agent": {agent: row["calls"] for agent, row in model.ledger.summary()["by_agent"].items()},
        "focus_loops": sum(getattr(result, "focus_loops", 0) for result in results)}
    stats = getattr(getattr(model.backend, "engine", None), "stats", None)
    if stats is not None and cost.calls:  # the local batch engine: what the prompt prefixes saved
        figures |= {"evaluated_per_call": round(stats.evaluated_prompt_tokens / cost.calls),
                    "reused_per_call": round(stats.reused_prompt_tokens / cost.calls),
                    "generated_per_call": round(stats.generated_tokens / cost.calls)}
    return cost, figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("react", "metaagent"), default="metaagent")
    parser.add_argument("--env", choices=("alfworld", "textworld"), default="alfworld")
    parser.add_argument("--games", type=at_least_one, default=1,
                        help="games played at once (the first of each task type)")
    parser.add_argument("--actions", type=at_least_one, default=4, help="actions per game at most")
    parser.add_argument("--data", type=Path, help="alfworld: the json_2.1.1 folder (default: ../shared/data)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--memory", choices=tuple(MEMORY_MODES), default="none",
                        help="metaagent: its memory (the games are then played in order)")
    parser.add_argument("--picks", choices=("usual", "random"), default="usual",
                        help="--model scripted: how the stand-in picks the next agent")
    parser.add_argument("--planner-view", choices=PLANNER_VIEWS, default="team",
                        help="metaagent: what its planner reads (percept: ReAct's step, with the team's notes)")
    args = parser.parse_args(argv)
    if args.data is not None and args.env != "alfworld":
        parser.error("--data is ALFWorld's folder; --env textworld generates its games")
    if (unused := unused_options(args)) is not None:
        parser.error(unused)
    try:
        measure(args)
    except NoosphereError as exc:  # a usage error (exit 2) or a fault while the games play (exit 1), as the CLI
        print(f"game_step_cost: error: {exc}", file=sys.stderr)
        raise SystemExit(2 if isinstance(exc, UsageError) else 1) from None


def unused_options(args: argparse.Namespace) -> str | None:
    """An option given that the run would not use (its figures would be measured without it, silently), said as
    the bench commands say it; None when every option given is used."""
    if args.system != "metaagent":
        for option, value, default, lacks in (("--memory", args.memory, "none", "keeps no memory"),
                                              ("--planner-view", args.planner_view, "team", "has no planner")):
            if value != default:
                return f"{option} {value} is the meta-agent's; --system {args.system} {lacks}"
    if args.picks != "usual" and args.model != "scripted":
        return f"--picks {args.picks} is how the scripted stand-in picks; --model {args.model} picks for itself"
    return None


def measure(args: argparse.Namespace) -> None:
    scripted = args.model == "scripted"
    model = open_model(args.model, script=stand_in(args.picks) if scripted else None)  # before the games are made
    with tempfile.TemporaryDirectory() as folder:
        chosen = games(args.env, args.games, Path(folder), args.data)
        try:
            memory = memory_settings(args.memory, Path(folder), scripted) if args.system == "metaagent" else None
            cost, figures = asyncio.run(play(args.system, model, chosen, args.actions, memory, args.planner_view))
        finally:
            for game in chosen:
                game.close()
    print(json.dumps(figures))
    print(cost.line())


if __name__ == "__main__":
    main()
