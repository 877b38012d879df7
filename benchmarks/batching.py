"""Batched local decoding against the serial backend, on the same loaded weights, in one run.

For each model: 1, 2, 4 and 8 concurrent requests of up to 128 output tokens (temperature 0),
once through the serial path (`slots=None`: one llama-cpp-python completion after another) and once
through the batch engine; aggregate tokens per second and wall time for each, and how far the
batched outputs diverge from the serial ones (batched matrix products round differently, so greedy
decoding can take another branch). Each measurement is repeated (`--repeats`, default 2, serial
and batched interleaved) and the best of each is kept, because other load on a shared 2-core machine
only ever slows a run down. Then one full workspace iteration with K = 4 sensory processors (bids,
STM with link formation alongside, fusion, broadcast; the threshold is set above 1 so the loop goes
on, and the first iteration is timed from the trace), serial against batched. The last line is
`speedup_4=<batched / serial aggregate throughput at 4>` for the last model given (the default model).

`--mode deterministic` measures what `--deterministic` (`open_model(..., deterministic=True)`: each request
decoded alone, from an empty cache) costs against the default batching, the same way: throughput at each
level, batched and deterministic interleaved; how many deterministic outputs are identical to the same
prompt decoded with nothing beside it (all of them, if the mode does its job), and how many batched ones
are; and the K = 4 workspace iteration. The last line is then `deterministic_cost_4=<batched / deterministic
aggregate throughput at 4>` (2.0: the deterministic mode takes twice as long at 4 concurrent requests).

    python benchmarks/batching.py [--models local:qwen2.5-coder-0.5b local:qwen2.5-coder-1.5b] [--repeats 2]
    python benchmarks/batching.py --mode deterministic --models local:qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from difflib import SequenceMatcher

from noosphere.llm import Model, Settings, open_model
from noosphere.trace import Trace
from noosphere.workspace import Observation, ShortTermMemory, Workspace, WorkspaceSettings, sensory

TOPICS = ["a lighthouse keeper", "a lost robot", "a city under the sea", "the last train home",
          "a dragon who hates fire", "a clockmaker's apprentice", "a garden on Mars", "a silent orchestra"]

SCENE = {
    "utterance": "SHELDON: Oh, wonderful. Another evening of watching you two argue about thermostat settings.",
    "context": "LEONARD: It's freezing in here. PENNY: It's seventy-two degrees. LEONARD: Exactly, freezing.",
    "speaker": "Sheldon Cooper, a physicist who takes rules literally and rarely jokes on purpose.",
    "setting": "The apartment living room, late evening; the three have just finished dinner.",
}


async def timed_batch(model: Model, prompts: list[str], tokens: int) -> tuple[float, int, list[str]]:
    """Wall time, completion tokens and texts of `prompts` sent at once."""
    settings = Settings(max_tokens=tokens, temperature=0.0)
    started = time.perf_counter()
    replies = await asyncio.gather(*[model.complete(p, settings=settings) for p in prompts])
    wall = time.perf_counter() - started
    return wall, sum(r.usage.completion_tokens for r in replies), [r.text for r in replies]


async def interleaved(serial: Model, batched: Model, prompts: list[str], tokens: int, repeats: int
                      ) -> tuple[tuple[float, int, list[str]], tuple[float, int, list[str]]]:
    """The best run of each path out of `repeats`, serial and batched taking turns."""
    runs: tuple[list, list] = ([], [])
    for _ in range(repeats):
        for model, kept in zip((serial, batched), runs, strict=True):
            kept.append(await timed_batch(model, prompts, tokens))
    serial_best, batched_best = (max(kept, key=lambda run: run[1] / run[0]) for kept in runs)
    return serial_best, batched_best


def similarity(a: list[str], b: list[str]) -> tuple[int, float]:
    """How many outputs are identical, and the mean length of the common prefix as a share of the longer."""
    same = sum(x == y for x, y in zip(a, b, strict=True))
    prefix = [SequenceMatcher(None, x, y).find_longest_match(0, len(x), 0, len(y)).size / max(len(x), len(y), 1)
              if x != y else 1.0 for x, y in zip(a, b, strict=True)]
    return same, sum(prefix) / len(prefix)


async def workspace_iteration(model: Model) -> tuple[float, int]:
    """Seconds and model calls of the first iteration of a workspace that does not stop after it."""
    trace = Trace(None)
    bound = model.bind(trace=trace)
    processors = [sensory(name, bound, name) for name in SCENE]
    workspace = Workspace(processors, ShortTermMemory(bound), WorkspaceSettings(max_iterations=2, threshold=1.01))
    await workspace.run("Is the speaker being sarcastic?", Observation.of(SCENE))
    first, second = [event.ts for event in trace.of_kind("ws_iteration")][:2]
    return second - first, sum(1 for event in trace.of_kind("model_call") if event.ts < second)


async def warmed(model_id: str, **options: object) -> Model:
    """The model opened and its weights loaded by one short call, so that loading is never timed."""
    model = open_model(model_id, **options)
    await model.complete("Say hi.", settings=Settings(max_tokens=4))
    return model


async def iterations(first: Model, second: Model) -> str:
    """The first workspace iteration on each model: its calls and each model's seconds, as a line's opening."""
    first_s, calls = await workspace_iteration(first)
    second_s, _ = await workspace_iteration(second)
    return f"workspace K=4, first iteration ({calls} calls): {first_s:.2f} s against {second_s:.2f} s, ratio " \
           f"{second_s / first_s:.2f}"


async def measure(model_id: str, levels: list[int], tokens: int, repeats: int) -> float:
    serial = await warmed(model_id, slots=None)
    batched = await warmed(model_id)
    speedup_4 = 0.0
    print(f"## {model_id} (threads={os.cpu_count()})")
    print("| concurrent | serial s | serial tok/s | batched s | batched tok/s | speedup | identical | prefix |")
    print("|---|---|---|---|---|---|---|---|")
    for n in levels:
        prompts = [f"Write a long story about {TOPICS[i % len(TOPICS)]}." for i in range(n)]
        (serial_s, serial_tokens, serial_texts), (batched_s, batched_tokens, batched_texts) = await interleaved(
            serial, batched, prompts, tokens, repeats)
        speedup = (batched_tokens / batched_s) / (serial_tokens / serial_s)
        same, prefix = similarity(serial_texts, batched_texts)
        if n == 4:
            speedup_4 = speedup
        print(f"| {n} | {serial_s:.2f} | {serial_tokens / serial_s:.1f} | {batched_s:.2f} | "
              f"{batched_tokens / batched_s:.1f} | {speedup:.2f} | {same}/{n} | {prefix:.2f} |", flush=True)
    print(f"{await iterations(batched, serial)} (serial / batched: the batching's speed-up)")
    stats = batched.backend.engine.stats  # type: ignore[attr-defined]
    print(f"batch engine: {stats.steps} steps, {stats.generated_tokens} tokens generated, "
          f"{stats.evaluated_prompt_tokens} prompt tokens evaluated, {stats.reused_prompt_tokens} reused from cache")
    return speedup_4


async def measure_deterministic(model_id: str, levels: list[int], tokens: int, repeats: int) -> float:
    """The deterministic mode against the default batching; returns the throughput ratio at 4 concurrent."""
    batched = await warmed(model_id)
    alone = await warmed(model_id, deterministic=True)
    prompts = [f"Write a long story about {TOPICS[i % len(TOPICS)]}." for i in range(max(levels))]
    reference = [(await timed_batch(alone, [prompt], tokens))[2][0] for prompt in prompts]  # each with nothing beside
    cost_4 = 0.0
    print(f"## {model_id} (threads={os.cpu_count()}): --deterministic against batching")
    print("| concurrent | batched s | batched tok/s | deterministic s | deterministic tok/s | cost | "
          "deterministic = alone | batched = alone |")
    print("|---|---|---|---|---|---|---|---|")
    for n in levels:
        (batched_s, batched_tokens, batched_texts), (alone_s, alone_tokens, alone_texts) = await interleaved(
            batched, alone, prompts[:n], tokens, repeats)
        cost = (batched_tokens / batched_s) / (alone_tokens / alone_s)
        if n == 4:
            cost_4 = cost
        same_alone, _ = similarity(alone_texts, reference[:n])
        same_batched, _ = similarity(batched_texts, reference[:n])
        print(f"| {n} | {batched_s:.2f} | {batched_tokens / batched_s:.1f} | {alone_s:.2f} | "
              f"{alone_tokens / alone_s:.1f} | {cost:.2f} | {same_alone}/{n} | {same_batched}/{n} |", flush=True)
    print(f"{await iterations(batched, alone)} (deterministic / batched: the mode's cost)")
    return cost_4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b"])
    parser.add_argument("--levels", nargs="+", type=int, default=[1, 2, 4, 8])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--mode", choices=["batching", "deterministic"], default="batching",
                        help="batching: batched against serial decoding; deterministic: --deterministic's cost")
    args = parser.parse_args()
    if args.mode == "deterministic":
        costs = [asyncio.run(measure_deterministic(model_id, args.levels, args.tokens, args.repeats))
                 for model_id in args.models]
        print(f"deterministic_cost_4={costs[-1]:.2f}")
        return
    speedups = [asyncio.run(measure(model_id, args.levels, args.tokens, args.repeats)) for model_id in args.models]
    print(f"speedup_4={speedups[-1]:.2f}")


if __name__ == "__main__":
    main()
