"""Conversations that outnumber the decode slots: prompt reuse and wall time against the cache pool size.

A society at four problems at once has about twenty conversations (members, organizer, leader) for
eight decode slots. This replays that shape: `--conversations` (default 12) growing conversations
that share a system prompt, `--turns` (default 3) turns each, all sent at once per turn, each turn
appending the reply and a paragraph of "what the others said". It runs once per `--caches-per-slot`
value (default 1 and 2), each in a fresh process, since a loaded model keeps its one batch engine,
and prints after each turn the wall time so far and that turn's prompt tokens, sent and reused.

    python benchmarks/cache_pool.py [--model local:qwen2.5-coder-1.5b] [--caches-per-slot 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import time

from noosphere.llm import Settings, batching, open_model

WORDS = ["apple", "river", "stone", "cloud", "number", "seven", "market", "train", "blue", "sum", "each",
         "total", "cost", "price", "week", "day"]


def paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


async def replay(model_id: str, conversations: int, turns: int) -> None:
    model = open_model(model_id)
    rng = random.Random(0)
    system = "You are a careful solver in a group. " + paragraph(rng, 250)
    texts = [f"{system}\nProblem {i}: {paragraph(rng, 350)}" for i in range(conversations)]

    async def turn(i: int, t: int) -> tuple[int, int]:
        reply = await model.complete(texts[i] + "\nAnswer briefly.",
                                     settings=Settings(max_tokens=80, temperature=0.7, seed=10 * i + t))
        texts[i] += f"\nAnswer: {reply.text}\nOthers said: {paragraph(rng, 150)}"
        return reply.usage.prompt_tokens, reply.usage.reused_prompt_tokens

    started = time.perf_counter()
    for t in range(turns):
        usage = await asyncio.gather(*(turn(i, t) for i in range(conversations)))
        sent, reused = sum(u[0] for u in usage), sum(u[1] for u in usage)
        print(f"caches_per_slot={batching.CACHES_PER_SLOT} turn={t} wall_s={time.perf_counter() - started:.1f} "
              f"prompt_tokens={sent} reused={reused} ({100 * reused / sent:.0f}%)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--caches-per-slot", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--conversations", type=int, default=12)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child process: one setting
    args = parser.parse_args()
    if args.one:
        batching.CACHES_PER_SLOT = args.caches_per_slot[0]
        asyncio.run(replay(args.model, args.conversations, args.turns))
        return
    for caches in args.caches_per_slot:
        subprocess.run([sys.executable, __file__, "--one", "--model", args.model, "--caches-per-slot", str(caches),
                        "--conversations", str(args.conversations), "--turns", str(args.turns)], check=True)


if __name__ == "__main__":
    main()
