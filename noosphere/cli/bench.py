"""`noosphere bench ...`: benchmark commands; each writes a resumable run folder with a report."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from noosphere.bench import averages, classification_report, run_items, write_report
from noosphere.bench import bfcl as bfcl_bench
from noosphere.bench import mustard as mustard_bench
from noosphere.bench.bfcl_data import CATEGORIES, load_bfcl
from noosphere.cli.ask import ModelOpener, ModelOption, NoCacheOption, OutOption, SeedOption, open_cache
from noosphere.errors import UnknownNameError
from noosphere.llm import DEFAULT_MODEL, Settings
from noosphere.runs import Run
from noosphere.workspace import ABLATIONS, WorkspaceSettings

ResumeOption = Annotated[Path | None, typer.Option(help="resume a killed benchmark from its run folder")]


def _open_run(out: Path, resume: Path | None, config: dict[str, Any]) -> Run:
    if resume is not None:
        return Run.resume(resume)
    return Run.create(out, command="bench", config=config)


def add_bench(app: typer.Typer, opener: ModelOpener) -> None:
    bench_app = typer.Typer(help="Run benchmarks (resumable; a report lands in the run folder).",
                            no_args_is_help=True)
    app.add_typer(bench_app, name="bench")

    @bench_app.command("mustard")
    def mustard(
        system: Annotated[str, typer.Option(help="base or ctm")] = "ctm",
        ablation: Annotated[list[str] | None, typer.Option(help=f"ctm ablation: {', '.join(ABLATIONS)}")] = None,
        model: ModelOption = DEFAULT_MODEL,
        limit: Annotated[int | None, typer.Option(help="first N items of the seeded sample")] = None,
        data: Annotated[Path | None, typer.Option(help="MUStARD JSON file")] = None,
        iterations: Annotated[int, typer.Option(help="ctm: maximum iterations T")] = 3,
        threshold: Annotated[float, typer.Option(help="ctm: STM confidence that stops the loop")] = 0.8,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
    ) -> None:
        """Sarcasm detection on MUStARD's text: accuracy, weighted precision, recall and F1."""
        if system not in ("base", "ctm"):
            raise UnknownNameError("system", system, ["base", "ctm"])
        ablations = frozenset(ablation or ())
        settings = WorkspaceSettings(threshold=threshold, max_iterations=iterations, ablations=ablations, seed=seed)
        items = mustard_bench.load_mustard(data, limit=limit)
        config = {"benchmark": "mustard", "system": system, "model": model, "ablation": sorted(ablations),
                  "limit": limit, "data": str(data) if data else "shared", "iterations": iterations,
                  "threshold": threshold, "seed": seed}
        with _open_run(out, resume, config) as run:
            llm = opener(run.config.get("model", model), trace=run.trace, ledger=run.ledger,
                         cache=open_cache(no_cache), settings=Settings(seed=seed, max_tokens=400))
            solve = (partial(mustard_bench.solve_base, llm) if system == "base"
                     else partial(mustard_bench.solve_ctm, llm, settings))
            rows = asyncio.run(run_items(run, [(i.id, i, i.gold) for i in items], solve, show_progress=not quiet))
            metrics = classification_report([r["gold"] for r in rows], [r["prediction"] for r in rows],
                                            mustard_bench.LABELS)
            report = write_report(run, "MUStARD (text)", metrics, averages(rows))
            run.finish({"report": report})
        Console().print(json.dumps({k: v for k, v in metrics.items() if k != "confusion"}))
        Console().print(f"report: {run.directory / 'report.md'}", highlight=False)

    @bench_app.command("bfcl")
    def bfcl_command(
        system: Annotated[str, typer.Option(help="base or ctm")] = "ctm",
        category: Annotated[list[str] | None, typer.Option(help=f"one or more of {', '.join(CATEGORIES)}")] = None,
        model: ModelOption = DEFAULT_MODEL,
        limit: Annotated[int | None, typer.Option(help="first N items of each category")] = None,
        data: Annotated[Path | None, typer.Option(help="folder with BFCL_v4_*.json and possible_answer/")] = None,
        iterations: Annotated[int, typer.Option(help="ctm: maximum iterations T")] = 2,
        threshold: Annotated[float, typer.Option(help="ctm: STM confidence that stops the loop")] = 0.8,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
    ) -> None:
        """Function calling on BFCL, scored by our AST matcher; accuracy per category."""
        if system not in ("base", "ctm"):
            raise UnknownNameError("system", system, ["base", "ctm"])
        categories = category or list(CATEGORIES)
        items = [item for name in categories for item in load_bfcl(name, data, limit=limit)]
        settings = WorkspaceSettings(threshold=threshold, max_iterations=iterations, seed=seed)
        config = {"benchmark": "bfcl", "system": system, "model": model, "categories": categories, "limit": limit,
                  "iterations": iterations, "threshold": threshold, "seed": seed}
        with _open_run(out, resume, config) as run:
            llm = opener(run.config.get("model", model), trace=run.trace, ledger=run.ledger,
                         cache=open_cache(no_cache), settings=Settings(seed=seed, max_tokens=512))
            solve = (partial(bfcl_bench.solve_base, llm) if system == "base"
                     else partial(bfcl_bench.solve_ctm, llm, settings))
            rows = asyncio.run(run_items(run, [(i.id, i, None) for i in items], solve, show_progress=not quiet))
            metrics: dict[str, Any] = {}
            for name in categories:
                scored = [r for r in rows if r.get("category") == name]
                if scored:
                    metrics[f"{name}_accuracy"] = round(100 * sum(r["correct"] for r in scored) / len(scored), 2)
                    metrics[f"{name}_n"] = len(scored)
            metrics["overall_accuracy"] = round(100 * sum(r["correct"] for r in rows) / max(len(rows), 1), 2)
            report = write_report(run, "BFCL (AST match)", metrics, averages(rows))
            run.finish({"report": report})
        Console().print(json.dumps(metrics))
        Console().print(f"report: {run.directory / 'report.md'}", highlight=False)
