"""`noosphere serve` under load: N concurrent streaming clients against calling the system in process.

The model is the scripted one with a fixed delay per call (`--latency`), so what is measured is what serving adds:
HTTP, a run folder per request, the trace watched and streamed, the reply composed. Both sides run the same system
on one shared `Model` (one backend), N requests at once, `--rounds` times:

- in process: N tasks each `await`ing the system, with a trace of its own (in memory, as a run's);
- served: uvicorn in a thread of this process, N clients streaming `/v1/chat/completions` over httpx at once.

Reported per side: time to first event (served: the first SSE chunk, which carries the run id; the first phase of
the run; in process: the first trace event), time to the answer, and throughput (requests answered per second of
wall time). The clients share this process (and its GIL) with the server, as they would not in use; the numbers
are an upper bound on what serving costs. Never run it on a real model: it is a measure of the serving layer.

    python benchmarks/serve_load.py [--clients 8] [--rounds 3] [--latency 0.05] [--system ctm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request
from noosphere.serve.app import make_api
from noosphere.serve.server import serving_in_thread
from noosphere.serve.service import ServeSettings, Service
from noosphere.serve.systems import ModelPool, served_systems
from noosphere.trace import Event, Trace

QUESTION = "What is six times seven?"


def reply(request: Request) -> Any:
    """Any workspace or base form: the STM and the base system are sure at once, so a workspace runs one iteration
    (three bids at once, then the STM: two call latencies); the base system is one call."""
    if request.agent in ("stm", "base"):
        return {"answer": "42", "confidence": 0.9}
    return {"response": "42", "additional_question": "", "relevance": 0.8, "confidence": 0.8, "surprise": 0.0}


class FirstEvent(Trace):
    def __init__(self) -> None:
        super().__init__(None)
        self.first: float | None = None

    def emit(self, event: Event) -> None:
        self.first = self.first or time.perf_counter()
        super().emit(event)


async def in_process(model: Model, system: Any, clients: int) -> list[dict[str, float]]:
    async def one() -> dict[str, float]:
        trace = FirstEvent()
        started = time.perf_counter()
        await system.answer(lambda _: model.bind(trace=trace), "scripted", QUESTION, Path("paintings"))
        done = time.perf_counter()
        return {"first_event": (trace.first or done) - started, "answer": done - started}

    return await asyncio.gather(*(one() for _ in range(clients)))


async def served(url: str, name: str, clients: int) -> list[dict[str, float]]:
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=clients)) as http:
        async def one() -> dict[str, float]:
            started = time.perf_counter()
            times: dict[str, float] = {}
            body = {"model": name, "messages": [{"role": "user", "content": QUESTION}], "stream": True}
            async with http.stream("POST", "/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    at = time.perf_counter() - started
                    piece = json.loads(line[6:])
                    times.setdefault("first_event", at)
                    if "phase" in piece.get("noosphere", {}):
                        times.setdefault("first_phase", at)
                    if piece["choices"] and piece["choices"][0]["delta"].get("content"):
                        times["answer"] = at
            assert "answer" in times, "a client got no answer"
            return times

        return await asyncio.gather(*(one() for _ in range(clients)))


def summary(side: str, rounds: list[tuple[float, list[dict[str, float]]]]) -> dict[str, Any]:
    every = [row for _, rows in rounds for row in rows]
    row: dict[str, Any] = {"side": side, "requests": len(every),
                           "throughput_rps": round(len(every) / sum(wall for wall, _ in rounds), 2)}
    for key in ("first_event", "first_phase", "answer"):
        values = [r[key] for r in every if key in r]
        if values:
            row[f"{key}_median_ms"] = round(1000 * statistics.median(values), 1)
            row[f"{key}_max_ms"] = round(1000 * max(values), 1)
    return row


async def measure(args: argparse.Namespace, url: str, service: Service) -> list[dict[str, Any]]:
    model = service.pool.get("scripted")
    [system] = service.systems.values()
    sides: dict[str, list[tuple[float, list[dict[str, float]]]]] = {"in process": [], "served": []}
    for _ in range(args.rounds):
        for side in sides:
            started = time.perf_counter()
            rows = (await in_process(model, system, args.clients) if side == "in process"
                    else await served(url, system.name, args.clients))
            sides[side].append((time.perf_counter() - started, rows))
    return [summary(side, rounds) for side, rounds in sides.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--system", choices=("base", "ctm"), default="ctm")
    args = parser.parse_args()

    backend = ScriptedBackend(reply, latency_s=args.latency)
    with tempfile.TemporaryDirectory(prefix="serve-load-") as out:
        service = Service(served_systems([args.system], []), ModelPool(lambda _: Model(backend)),
                          ServeSettings(default_model="scripted", out=Path(out)))
        service.open_models()
        with serving_in_thread(make_api(service)) as url:
            rows = asyncio.run(measure(args, url, service))
    print(f"system={args.system} clients={args.clients} rounds={args.rounds} latency_s={args.latency} "
          f"(ideal answer: {2 if args.system == 'ctm' else 1} x latency)")
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
