"""`noosphere bench ...`: benchmark commands; each writes a resumable run folder with a report.

This module holds the global-workspace benchmarks (MUStARD, BFCL) and gathers the others.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from noosphere.bench import bfcl as bfcl_bench
from noosphere.bench import classification_report
from noosphere.bench import mustard as mustard_bench
from noosphere.bench.bfcl_data import CATEGORIES, load_bfcl
from noosphere.bench.runner import Solve
from noosphere.cli.ask import BudgetOption, ModelOpener, ModelOption, NoCacheOption, OutOption, SeedOption
from noosphere.cli.bench_games import add_game_benchmarks
from noosphere.cli.bench_run import Items, ParallelOption, QuietOption, ResumeOption, run_benchmark
from noosphere.cli.bench_societies import add_society_benchmarks
from noosphere.errors import UnknownNameError
from noosphere.llm import DEFAULT_MODEL, Model
from noosphere.workspace import ABLATIONS, WorkspaceSettings

SystemOption = Annotated[str, typer.Option(help="base or ctm")]
IterationsOption = Annotated[int, typer.Option(help="ctm: maximum iterations T")]
ThresholdOption = Annotated[float, typer.Option(help="ctm: STM confidence that stops the loop")]


def _check_system(system: str) -> None:
    if system not in ("base", "ctm"):
        raise UnknownNameError("system", system, ["base", "ctm"])


def _workspace_settings(config: dict[str, Any], parallel: int = 1) -> WorkspaceSettings:
    """Items scored in parallel already keep the machine busy: speculative link calls would only take
    compute from them (the answers are the same either way)."""
    return WorkspaceSettings(threshold=config["threshold"], max_iterations=config["iterations"],
                             ablations=frozenset(config.get("ablation", ())), seed=config["seed"],
                             speculative_links=parallel == 1)


def add_bench(app: typer.Typer, opener: ModelOpener) -> None:
    bench_app = typer.Typer(help="Run benchmarks (resumable; a report lands in the run folder).",
                            no_args_is_help=True)
    app.add_typer(bench_app, name="bench")

    @bench_app.command("mustard")
    def mustard(
        system: SystemOption = "ctm",
        ablation: Annotated[list[str] | None, typer.Option(help=f"ctm ablation: {', '.join(ABLATIONS)}")] = None,
        model: ModelOption = DEFAULT_MODEL,
        limit: Annotated[int | None, typer.Option(help="first N items of the seeded sample")] = None,
        data: Annotated[Path | None, typer.Option(help="MUStARD JSON file")] = None,
        iterations: IterationsOption = 3,
        threshold: ThresholdOption = 0.8,
        stm_samples: Annotated[int, typer.Option(
            min=1, help="ctm: STM samples; alpha is their agreement (1: the model's own confidence)")] = 1,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        budget: BudgetOption = None,
        quiet: QuietOption = False,
        parallel: ParallelOption = 1,
    ) -> None:
        """Sarcasm detection on MUStARD's text: accuracy, weighted precision, recall and F1."""
        _check_system(system)
        config = {"benchmark": "mustard", "system": system, "model": model, "ablation": sorted(ablation or ()),
                  "limit": limit, "data": str(data) if data else None, "iterations": iterations,
                  "threshold": threshold, "stm_samples": stm_samples, "seed": seed}
        _workspace_settings(config)  # unknown ablations fail here, before anything runs

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            items = mustard_bench.load_mustard(Path(saved["data"]) if saved.get("data") else None,
                                               limit=saved["limit"])
            solve = (partial(mustard_bench.solve_base, llm) if saved["system"] == "base"
                     else partial(mustard_bench.solve_ctm, llm, _workspace_settings(saved, parallel),
                                  stm_samples=saved.get("stm_samples", 1)))
            return [(i.id, i, i.gold) for i in items], solve

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            return classification_report([r["gold"] for r in rows], [r["prediction"] for r in rows],
                                         mustard_bench.LABELS)

        run_benchmark(opener, "MUStARD (text)", config, out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                      budget=budget, max_tokens=400, prepare=prepare, summarise=summarise, parallel=parallel)

    @bench_app.command("bfcl")
    def bfcl_command(
        system: SystemOption = "ctm",
        category: Annotated[list[str] | None, typer.Option(help=f"one or more of {', '.join(CATEGORIES)}")] = None,
        model: ModelOption = DEFAULT_MODEL,
        limit: Annotated[int | None, typer.Option(help="first N items of each category")] = None,
        data: Annotated[Path | None, typer.Option(help="folder with BFCL_v4_*.json and possible_answer/")] = None,
        iterations: IterationsOption = 2,
        threshold: ThresholdOption = 0.8,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        budget: BudgetOption = None,
        quiet: QuietOption = False,
        parallel: ParallelOption = 1,
    ) -> None:
        """Function calling on BFCL, scored by our AST matcher; accuracy per category."""
        _check_system(system)
        for name in category or ():
            if name not in CATEGORIES:
                raise UnknownNameError("BFCL category", name, CATEGORIES)
        config = {"benchmark": "bfcl", "system": system, "model": model, "categories": category or list(CATEGORIES),
                  "limit": limit, "data": str(data) if data else None, "iterations": iterations,
                  "threshold": threshold, "seed": seed}

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            folder = Path(saved["data"]) if saved.get("data") else None
            items = [item for name in saved["categories"] for item in load_bfcl(name, folder, limit=saved["limit"])]
            solve = (partial(bfcl_bench.solve_base, llm) if saved["system"] == "base"
                     else partial(bfcl_bench.solve_ctm, llm, _workspace_settings(saved, parallel)))
            return [(i.id, i, None) for i in items], solve

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            metrics: dict[str, Any] = {}
            for name in saved["categories"]:
                scored = [r for r in rows if r.get("category") == name]
                if scored:
                    metrics[f"{name}_accuracy"] = round(100 * sum(r["correct"] for r in scored) / len(scored), 2)
                    metrics[f"{name}_n"] = len(scored)
            metrics["overall_accuracy"] = round(100 * sum(r["correct"] for r in rows) / max(len(rows), 1), 2)
            return metrics

        run_benchmark(opener, "BFCL (AST match)", config, out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                      budget=budget, max_tokens=512, prepare=prepare, summarise=summarise, parallel=parallel)

    add_society_benchmarks(bench_app, opener)
    add_game_benchmarks(bench_app, opener)
