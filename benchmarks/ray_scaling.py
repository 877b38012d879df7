"""Throughput of benchmark items on a local Ray cluster, and one tick of a workspace of 10^5 processors.

Items: GSM8K's base system (one model call per problem) against the scripted model at 200 ms per call,
scored by 1, 2, 4 and 8 workers through the cluster path of `noosphere bench` (`noosphere.bench.remote`:
a worker pool, each row written by the driver into a run folder). The model's latency, not the
machine's 2 cores, is what a worker waits on, so throughput should grow with the workers; each pool is
started before its clock starts (starting a worker imports noosphere, a few seconds that a long run pays
once). Ray is given 8 logical CPUs, so that 8 workers can be placed; they spend their time asleep.

Workspace: 10^5 function processors (no model, `remembers=False`: each bids a fixed pseudo-random weight
and keeps no memory) over as many shards as the machine has cores; one tick is every processor bidding,
the up-tree competition reduced over the shards, and the winner broadcast to every shard. A first tick
warms the shards up; the second is the one reported.

The last line is `scaling_8=<items/s with 8 workers / items/s with 1> tick_100k_s=<seconds of one tick>`.

    python benchmarks/ray_scaling.py [--latency 0.2] [--per-worker-items 16] [--processors 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from noosphere.bench import gsm8k
from noosphere.bench.remote import ClusterScorer, item_worker
from noosphere.bench.runner import Solve, run_items
from noosphere.cluster import WorkerPool, joined
from noosphere.cluster.shards import ShardedWorkspace
from noosphere.llm import Model, ScriptedBackend, UsageLedger
from noosphere.llm.types import Request
from noosphere.runs import Run
from noosphere.trace import Trace
from noosphere.workspace import WorkspaceSettings
from noosphere.workspace.function_processor import Bid, FunctionProcessor
from noosphere.workspace.memory import ProcessorMemory


def answer(request: Request) -> str:
    return json.dumps({"reasoning": "3 + 4 = 7", "answer": "7"})


def open_solve(latency: float, trace: Trace, ledger: UsageLedger) -> Solve:
    """Each worker's model: the scripted one, at `latency` seconds per call."""
    model = Model(ScriptedBackend(answer, latency_s=latency), trace=trace, ledger=ledger)
    return partial(gsm8k.solve_base, model)


async def items_per_second(cluster: Any, workers: int, items: int, latency: float, folder: Path) -> float:
    problems = [gsm8k.GsmItem(f"gsm8k-{i:04d}", "Tom has 3 apples and buys 4 more. How many now?", "7")
                for i in range(items)]
    with Run.create(folder, command="bench", config={"benchmark": "gsm8k", "model": "scripted", "seed": 0}) as run:
        async with WorkerPool(cluster, partial(item_worker, partial(open_solve, latency)), workers=workers) as pool:
            started = time.perf_counter()
            rows = await run_items(run, [(p.id, p, p.gold) for p in problems], _unused, show_progress=False,
                                   parallel=workers, scorer=ClusterScorer(run, pool, cluster))
            seconds = time.perf_counter() - started
    assert len(rows) == items and all(row["correct"] for row in rows), "every item scored once, right"
    return items / seconds


async def _unused(item: Any) -> Any:
    raise AssertionError("scored on the workers")


def weight(index: int, query: str, observation: Any, memory: ProcessorMemory) -> Bid:
    return Bid(f"processor {index}", ((index * 2654435761) % 1000) / 1000, 0.5)


def processors(indices: range) -> list[FunctionProcessor]:
    return [FunctionProcessor(f"p{i}", partial(weight, i), remembers=False) for i in indices]


async def tick_seconds(cluster: Any, count: int, shards: int) -> tuple[float, Any]:
    settings = WorkspaceSettings(competition="uptree", seed=0)
    async with ShardedWorkspace(cluster, processors, count, shards=shards, settings=settings) as workspace:
        await workspace.tick("which processor fits best?")
        started = time.perf_counter()
        result = await workspace.tick("which processor fits best?")
        return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--per-worker-items", type=int, default=16)
    parser.add_argument("--processors", type=int, default=100_000)
    args = parser.parse_args()

    rates: dict[int, float] = {}
    with joined("local", num_cpus=8) as cluster, tempfile.TemporaryDirectory() as folder:
        for workers in (1, 2, 4, 8):
            rates[workers] = asyncio.run(items_per_second(cluster, workers, args.per_worker_items * workers,
                                                          args.latency, Path(folder)))
            print(f"workers={workers} items_per_s={rates[workers]:.2f} "
                  f"(ideal {workers / args.latency:.1f})", flush=True)
        seconds, result = asyncio.run(tick_seconds(cluster, args.processors, os.cpu_count() or 2))
        print(f"tick of {result.chunks} processors: bid {result.bid_s:.3f} s, compete {result.compete_s:.3f} s, "
              f"broadcast {result.broadcast_s:.3f} s to {result.recipients}; winner {result.winner.processor}")
    print(f"scaling_8={rates[8] / rates[1]:.2f} tick_100k_s={seconds:.3f}")


if __name__ == "__main__":
    main()
