"""What one action of a game costs on the local model: calls, prompt tokens evaluated and reused, tokens
generated and seconds, for ReAct and the meta-agent (no memory) on the first ALFWorld games.

The local backend evaluates only the part of a prompt that no cached prompt shares, so how the
prompts are ordered decides most of the cost of a game; this reads the batch engine's counters
rather than the token counts of the calls. The call cache is off: every call is decoded.

    python benchmarks/game_step_cost.py [--system react|metaagent] [--games 1] [--actions 4] [--model ID]

The last line is JSON: per action and per call figures for the chosen system.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from noosphere.envs.alfworld import load_alfworld
from noosphere.llm.registry import DEFAULT_MODEL, open_model
from noosphere.metaagent.baselines import react
from noosphere.metaagent.engine import MetaAgent


async def play(system: str, model_id: str, games: int, actions: int) -> dict[str, float]:
    model = open_model(model_id)
    chosen = load_alfworld(per_type=1, demo=True)[:games]  # as `bench alfworld` plays them
    started = time.perf_counter()
    if system == "react":
        results = await asyncio.gather(*(react(model, game, max_actions=actions) for game in chosen))
    else:
        results = await asyncio.gather(*(MetaAgent(model, max_actions=actions).play(game) for game in chosen))
    seconds = time.perf_counter() - started
    stats = model.backend.engine.stats
    taken = sum(result.actions for result in results)
    calls = model.ledger.calls
    return {"system": system, "games": games, "actions": taken, "calls": calls, "seconds": round(seconds, 1),
            "calls_per_action": round(calls / taken, 2), "seconds_per_action": round(seconds / taken, 1),
            "evaluated_per_call": round(stats.evaluated_prompt_tokens / calls),
            "reused_per_call": round(stats.reused_prompt_tokens / calls),
            "generated_per_call": round(stats.generated_tokens / calls)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", choices=("react", "metaagent"), default="metaagent")
    parser.add_argument("--games", type=int, default=1, help="games played at once (the first of each task type)")
    parser.add_argument("--actions", type=int, default=4, help="actions per game")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(play(args.system, args.model, args.games, args.actions))))


if __name__ == "__main__":
    main()
