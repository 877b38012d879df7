"""What every benchmark command shares: its options, and opening, scoring and reporting a run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from noosphere.bench import averages, run_items, write_report
from noosphere.bench.runner import Solve, load_done
from noosphere.cli.ask import ModelOpener, open_cache
from noosphere.llm import Model, Settings
from noosphere.runs import Run

ResumeOption = Annotated[Path | None, typer.Option(help="resume a killed benchmark from its run folder")]
QuietOption = Annotated[bool, typer.Option(help="no progress bar")]
ParallelOption = Annotated[int, typer.Option(
    min=1, help="items scored at once; the batched local backend decodes their calls together")]


Items = list[tuple[str, Any, Any]]
Prepare = Callable[[dict[str, Any], Model], tuple[Items, Solve]]
Summarise = Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any]]
Artefacts = Callable[[Path, list[dict[str, Any]]], list[Path]]


def run_benchmark(opener: ModelOpener, title: str, config: dict[str, Any], *, out: Path, resume: Path | None,
                  no_cache: bool, quiet: bool, max_tokens: int, prepare: Prepare, summarise: Summarise,
                  parallel: int = 1, artefacts: Artefacts | None = None) -> None:
    """Open (or resume) the run, score the items, write the report and any `artefacts` (figures, say) into
    the run folder. A resumed run keeps its saved config."""
    run = Run.resume(resume) if resume is not None else Run.create(out, command="bench", config=config)
    with run, terminate_as_interrupt():
        saved = run.config
        llm = opener(saved["model"], trace=run.trace, ledger=run.ledger, cache=open_cache(no_cache),
                     settings=Settings(seed=saved["seed"], max_tokens=max_tokens))
        items, solve = prepare(saved, llm)
        try:
            rows = asyncio.run(run_items(run, items, solve, show_progress=not quiet, parallel=parallel))
            interrupted = False
        except KeyboardInterrupt:  # Ctrl-C or a time limit: report what is done; --resume goes on later
            done = load_done(run.directory / "items.jsonl")
            rows = [done[item_id] for item_id, _, _ in items if item_id in done]
            interrupted = True
        metrics = summarise(saved, rows)
        report = write_report(run, title + (" (partial: interrupted)" if interrupted else ""), metrics,
                              averages(rows))
        written = artefacts(run.directory, rows) if artefacts is not None else []
        run.finish({"report": report}, status="interrupted" if interrupted else "ok")
    Console().print(json.dumps({k: v for k, v in metrics.items() if k != "confusion"}))
    Console().print(f"report: {run.directory / 'report.md'}", highlight=False)
    for path in written:
        Console().print(f"wrote: {path}", highlight=False)
    if interrupted:
        raise typer.Exit(130)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (a `timeout`, a job scheduler) like Ctrl-C, so an interrupted benchmark still reports."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
