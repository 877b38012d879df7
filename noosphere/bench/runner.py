"""A resumable benchmark loop: one line per item in `items.jsonl`, appended as soon as it is scored.

A killed run resumes from its folder and skips the items already there. Items may be scored several
at a time (`parallel`), which keeps the batched local backend's slots busy; each item runs in its own
scope (`noosphere.scope`), so its calls and tokens are counted apart and its trace events carry its id.
Per item we record the prediction, the gold answer, calls, tokens, seconds and when it started and
finished; an item whose system fails records the error and counts as wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import Field
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from noosphere.bench.calibration import calibration_markdown
from noosphere.concurrent import Forfeit, attempt, run_in_order
from noosphere.datafiles import BadLine, end_torn_line, finite
from noosphere.printable import markup_safe
from noosphere.runs import ResultRow, Run, load_done, write_atomically
from noosphere.scope import item_scope
from noosphere.trace import Event, Trace


class BenchLineSkipped(Event):
    """A line of `items.jsonl` that could not be read (torn by a kill, damaged): its item is scored again."""

    kind: str = "bench_line_skipped"
    line: int
    reason: str


class ItemEvent(Event):
    """Fields shared by the events of one benchmark item (not a kind of its own: subclasses name theirs)."""

    item_id: str


class BenchItemStarted(ItemEvent):
    """A benchmark item begins to be scored (`score_one`); every event of this item, up to its `bench_item_finished`,
    carries its `item_id` (items scored at once interleave their events)."""

    kind: str = "bench_item_started"


class BenchItemFinished(ItemEvent):
    """A benchmark item has been scored (`score_one`): the system's prediction, the gold answer, whether it was right,
    and the model calls, tokens and seconds it took; `error` says why the system's turn failed at run time (the item
    then counts as wrong)."""

    kind: str = "bench_item_finished"
    prediction: Any = None
    gold: Any = None
    correct: bool
    calls: int
    tokens: int
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class Scored:
    """What a system returns for one item; `detail` is free-form and kept in items.jsonl. `confidence` is the
    system's own probability that its answer is right, where it has one (a report's calibration is drawn from it)."""

    prediction: Any
    correct: bool
    detail: dict[str, Any]
    confidence: float | None = None


Solve = Callable[[Any], Awaitable[Scored]]
ItemScorer = Callable[[str, Any, Any], Awaitable[dict[str, Any]]]
"""Scores one `(id, item, gold)` and returns its row: `score_one` in this process, or a cluster's workers."""


class ScoredRow(ResultRow):
    """A row as the loop writes it: what resuming and reporting read. A row without these is scored again."""

    correct: bool
    calls: int
    tokens: int
    seconds: float = Field(strict=False)
    error: str | None


def progress_bars(show: bool = True) -> Progress:
    """The progress display of benchmark runs: one bar per run, with its accuracy so far."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("acc {task.fields[acc]}"), TimeRemainingColumn(), disable=not show, transient=False)


async def run_items(run: Run, items: Sequence[tuple[str, Any, Any]], solve: Solve, *, show_progress: bool = True,
                    parallel: int = 1, progress: Progress | None = None, label: str | None = None,
                    warn: Callable[[str], None] | None = None, scorer: ItemScorer | None = None
                    ) -> list[dict[str, Any]]:
    """Score `(id, item, gold)` triples with `solve`, `parallel` at a time; returns all rows in item order,
    resumed ones included. Rows are appended in the order items finish, each flushed to disk before the next
    is counted. The run's bar goes on `progress` when given (several runs side by side), else on a display of
    its own. A line of an earlier session that cannot be read is traced, told to `warn`, and its item redone.
    `scorer` scores items elsewhere (on a cluster's workers, `noosphere.bench.remote`); rows are still written here,
    once each, by this process alone."""
    path = run.directory / "items.jsonl"
    run.checkpoint()  # this session counts from its start, even if it is killed before an item finishes

    def skipped(bad: BadLine) -> None:
        run.trace.emit(BenchLineSkipped(line=bad.line, reason=bad.reason))
        if warn is not None:
            warn(f"{bad} (the item is scored again)")

    done = load_done(path, row=ScoredRow, on_bad_line=skipped)
    todo = [entry for entry in items if entry[0] not in done]
    end_torn_line(path)
    tally = {"correct": sum(1 for row in done.values() if row["correct"])}
    score_item = scorer or partial(score_one, run.trace, solve=solve)
    gate = asyncio.Semaphore(max(1, parallel))
    own = progress_bars(show_progress) if progress is None else contextlib.nullcontext(progress)
    with own as progress, path.open("a", encoding="utf-8") as out:
        # the bar's label is markup: a folder's or a saved config's name, shown as written
        task = progress.add_task(markup_safe(label or run.config.get("benchmark", "bench")), total=len(items),
                                 completed=len(done), acc=_accuracy(tally["correct"], len(done)))

        async def score(item_id: str, item: Any, gold: Any) -> None:
            async with gate:
                row = await score_item(item_id, item, gold)
            # as the trace's lines: secrets redacted; and strict JSON (NaN or inf, which browsers refuse, as null)
            line = run.redactor(json.dumps(finite(row), default=str, allow_nan=False))
            row = json.loads(line)
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())  # on disk before the run counts it: a crash of the machine loses no row
            run.checkpoint()  # what was spent so far survives a kill that leaves no result
            done[item_id] = row
            tally["correct"] += int(row["correct"])
            progress.update(task, advance=1, acc=_accuracy(tally["correct"], len(done)))

        await run_in_order(score(*entry) for entry in todo)  # what stops the run is raised as one item raised it
    return [done[item_id] for item_id, _, _ in items if item_id in done]


async def score_one(trace: Trace, item_id: str, item: Any, gold: Any, *, solve: Solve) -> dict[str, Any]:
    """Score one item in its own scope, tracing its start and end into `trace`; returns its row."""
    with item_scope(item_id) as scope:
        trace.emit(BenchItemStarted(item_id=item_id))
        started_at, started = time.time(), time.perf_counter()
        error = None
        scored = await attempt(solve(item))  # a spent budget stops the run: the item stays to be scored
        if isinstance(scored, Forfeit):  # a game keeps its task type, so that the rates per type count it too
            kind = getattr(item, "kind", None)
            error, scored = str(scored), Scored(None, False, {"task_type": kind} if isinstance(kind, str) else {})
        row = {"id": item_id, "prediction": scored.prediction, "gold": gold, "correct": scored.correct,
               "calls": scope.calls, "tokens": scope.tokens, "prompt_tokens": scope.prompt_tokens,
               "reused_prompt_tokens": scope.reused_prompt_tokens, "seconds": round(time.perf_counter() - started, 3),
               "started": round(started_at, 3), "finished": round(time.time(), 3), "error": error,
               "confidence": scored.confidence, **scored.detail}
        trace.emit(BenchItemFinished(item_id=item_id, prediction=scored.prediction, gold=gold,
                                         correct=scored.correct, calls=row["calls"], tokens=row["tokens"],
                                         seconds=row["seconds"], error=error))
    return row


def _accuracy(correct: int, total: int) -> str:
    return f"{100 * correct / total:.1f}%" if total else "-"


def averages(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean cost per item. `seconds_per_item` is an item's own latency; with items scored in parallel,
    `wall_seconds_per_item` (time the run was busy, divided by the items) is the throughput figure."""
    if not rows:
        return {}
    n = len(rows)
    costs = {"calls_per_item": round(sum(r["calls"] for r in rows) / n, 2),
             "tokens_per_item": round(sum(r["tokens"] for r in rows) / n, 1),
             "seconds_per_item": round(sum(r["seconds"] for r in rows) / n, 2),
             "errors": sum(1 for r in rows if r["error"])}
    if all("reused_prompt_tokens" in r for r in rows):  # rows written before this was counted lack it
        costs["prompt_tokens_per_item"] = round(sum(r["prompt_tokens"] for r in rows) / n, 1)
        costs["reused_prompt_tokens_per_item"] = round(sum(r["reused_prompt_tokens"] for r in rows) / n, 1)
    spans = sorted((r["started"], r["finished"]) for r in rows if "started" in r and "finished" in r)
    if len(spans) == n:
        costs["wall_seconds_per_item"] = round(_covered(spans) / n, 2)
    return costs


def _covered(spans: list[tuple[float, float]]) -> float:
    """Length of the union of sorted time intervals (a resumed run's pause between sessions is not counted)."""
    total, end = 0.0, float("-inf")
    for start, finish in spans:
        if finish > end:
            total += finish - max(start, end)
            end = finish
    return total


def write_report(run: Run, title: str, metrics: dict[str, Any], costs: dict[str, float], *,
                 rows: int | None = None) -> dict[str, Any]:
    """Write report.json and report.md into the run folder and return the report. `rows`: how many result rows it
    covers (a later session's rows make it stale, whatever its metrics are called)."""
    report = {"benchmark": title, **{k: run.config.get(k) for k in ("system", "model", "ablation", "limit")},
              **({"rows": rows} if rows is not None else {}), "metrics": metrics, "costs": costs}
    write_atomically(run.directory / "report.json", run.redactor(json.dumps(report, indent=2)) + "\n")
    lines = [f"# {title}", "", f"- system: {report['system']}", f"- model: {report['model']}"]
    if report.get("ablation"):
        lines.append(f"- ablation: {report['ablation']}")
    lines += ["", "| metric | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in metrics.items() if not isinstance(value, dict)]
    lines += [f"| {name} | {value} |" for name, value in costs.items()]
    confusion = metrics.get("confusion")
    if confusion:
        predicted = confusion["predicted"]
        lines += ["", "Confusion matrix (rows: gold, columns: predicted)", "",
                  "| gold \\ predicted | " + " | ".join(predicted) + " |", "|---" * (len(predicted) + 1) + "|"]
        lines += [f"| {label} | " + " | ".join(str(v) for v in row) + " |"
                  for label, row in zip(confusion["gold"], confusion["matrix"], strict=True)]
    if metrics.get("calibration"):
        lines += calibration_markdown(metrics["calibration"])
    write_atomically(run.directory / "report.md", run.redactor("\n".join(lines)) + "\n")
    return report
