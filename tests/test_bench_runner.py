"""The benchmark loop scoring items in parallel: per-item accounting, tagged events, order, resume."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

from noosphere.bench import averages
from noosphere.bench.runner import Scored, load_done, run_items, write_report
from noosphere.llm import Message, Model, ScriptedBackend
from noosphere.runs import Run
from noosphere.trace import read_trace


def test_parallel_items_are_counted_and_tagged_apart(tmp_path: Path) -> None:
    backend = ScriptedBackend(lambda request: "one two three", latency_s=0.02)
    run = Run.create(tmp_path, command="bench", config={"benchmark": "toy"})
    model = Model(backend, trace=run.trace, ledger=run.ledger)

    async def solve(calls: int) -> Scored:
        # item k makes k calls, two of them at once when it can, as a workspace would
        async def ask(n: int) -> None:
            await model.complete([Message.user(f"call {n}")], agent=f"agent{n % 2}")

        async with asyncio.TaskGroup() as group:
            for n in range(calls):
                group.create_task(ask(n))
        return Scored(calls, calls % 2 == 0, {})

    items = [(f"item{k}", k, None) for k in range(1, 7)]
    with run:
        rows = asyncio.run(run_items(run, items, solve, show_progress=False, parallel=3))
        run.finish({})

    assert [r["id"] for r in rows] == [f"item{k}" for k in range(1, 7)]  # item order, not finishing order
    assert [r["calls"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r["tokens"] for r in rows] == [5 * k for k in range(1, 7)]  # 2 prompt + 3 reply words a call
    spans = sorted((r["started"], r["finished"]) for r in rows)
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))  # they overlapped
    costs = averages(rows)
    assert 0 < costs["wall_seconds_per_item"] < costs["seconds_per_item"]

    calls_by_item: dict[str, int] = {}
    for event in read_trace(run.directory / "trace.jsonl"):
        if event.kind == "model_call":
            item_id = event.item_id
            calls_by_item[item_id] = calls_by_item.get(item_id, 0) + 1
    assert calls_by_item == {f"item{k}": k for k in range(1, 7)}


def test_a_resumed_parallel_run_scores_only_what_is_missing(tmp_path: Path) -> None:
    run = Run.create(tmp_path, command="bench", config={"benchmark": "toy"})
    seen: list[int] = []

    async def solve(value: int) -> Scored:
        seen.append(value)
        return Scored(value, True, {})

    (run.directory / "items.jsonl").write_text(
        json.dumps({"id": "a", "prediction": 1, "gold": None, "correct": True, "calls": 0, "tokens": 0,
                    "seconds": 0.0, "error": None}) + "\n" + '{"id": "b", "predic')  # b was torn by a kill
    with run:
        rows = asyncio.run(run_items(run, [("a", 1, None), ("b", 2, None), ("c", 3, None)], solve,
                                     show_progress=False, parallel=2))
        run.finish({})
    assert sorted(seen) == [2, 3]
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    assert sorted(load_done(run.directory / "items.jsonl")) == ["a", "b", "c"]  # the torn line spoils no new row


def test_reused_prompt_tokens_are_averaged_only_when_every_row_counted_them() -> None:
    def row(**counted: int) -> dict:
        return {"calls": 2, "tokens": 300, "seconds": 1.0, "error": None, **counted}

    counted = averages([row(prompt_tokens=250, reused_prompt_tokens=100),
                        row(prompt_tokens=150, reused_prompt_tokens=0)])
    assert (counted["prompt_tokens_per_item"], counted["reused_prompt_tokens_per_item"]) == (200.0, 50.0)
    resumed = averages([row(prompt_tokens=250, reused_prompt_tokens=100), row()])  # a row from before the count
    assert "reused_prompt_tokens_per_item" not in resumed and resumed["tokens_per_item"] == 300.0


def test_rows_are_redacted_as_the_trace_is_and_strict_json(tmp_path: Path) -> None:
    """A prediction that echoes a secret, a NaN confidence: items.jsonl holds neither (the viewer shows its rows,
    and a browser refuses NaN)."""
    from noosphere.trace import Redactor

    secret = "hunter2-super-secret-value"

    async def solve(item: str) -> Scored:
        return Scored(f"the key is {secret}", False, {"confidence": float("nan"), "spread": [1.0, float("inf")],
                                                      "note": f"echoed {secret}"})

    with Run.create(tmp_path, command="test", config={}, redactor=Redactor((secret,))) as run:
        rows = asyncio.run(run_items(run, [("a", "x", None)], solve, show_progress=False))
        text = (run.directory / "items.jsonl").read_text()
    assert secret not in text and "NaN" not in text and "Infinity" not in text
    [row] = [json.loads(line, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
             for line in text.splitlines()]
    assert row["confidence"] is None and row["spread"] == [1.0, None] and "[REDACTED]" in row["prediction"]
    assert rows == [row]
    with Run.create(tmp_path, command="test", config={"model": f"litellm:m@https://u:{secret}@h/v1"},
                    redactor=Redactor((secret,))) as run:
        write_report(run, "t", {"note": secret}, {})
    assert all(secret not in (run.directory / name).read_text() for name in ("report.json", "report.md"))


def test_a_forfeited_game_keeps_its_task_type_so_the_rates_per_type_count_it(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from noosphere.bench import games as games_bench
    from noosphere.errors import ModelError

    async def solve(game: SimpleNamespace) -> Scored:
        if game.name == "b":
            raise ModelError("m", "the model failed")
        return Scored("won", True, {"task_type": game.kind, "actions": 3})

    items = [(name, SimpleNamespace(name=name, kind="pick"), "won") for name in ("a", "b")]
    with Run.create(tmp_path, command="test", config={}) as run:
        rows = asyncio.run(run_items(run, items, solve, show_progress=False))
    assert [(r["task_type"], r["correct"], bool(r["error"])) for r in rows] == [("pick", True, False),
                                                                                 ("pick", False, True)]
    metrics = games_bench.summarise(rows)
    assert metrics["pick_success_rate"] == 50.0 and metrics["pick_games"] == 2 and "?_games" not in metrics
