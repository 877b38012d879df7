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
from noosphere.bench.bfcl_data import CATEGORIES, BfclItem, load_bfcl
from noosphere.bench.runner import Solve
from noosphere.cli.ask import BudgetOption, ModelOpener, ModelOption, NoCacheOption, OutOption, SeedOption
from noosphere.cli.bench_games import add_game_benchmarks
from noosphere.cli.bench_run import (
    Items,
    OffsetOption,
    ParallelOption,
    QuietOption,
    ResumeOption,
    run_benchmark,
    select_items,
)
from noosphere.cli.bench_societies import add_society_benchmarks
from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm import DEFAULT_MODEL, Model
from noosphere.workspace import ABLATIONS, WorkspaceSettings
from noosphere.workspace.scores import SCORE_SOURCES

SystemOption = Annotated[str, typer.Option(help="base or ctm")]
IterationsOption = Annotated[int, typer.Option(help="ctm: maximum iterations T")]
ThresholdOption = Annotated[float, typer.Option(help="ctm: STM confidence that stops the loop")]
ScoresOption = Annotated[str, typer.Option(
    help="where scores come from: verbal (the model's words), logprob (its token probabilities) or samples")]
CalibrateOption = Annotated[bool, typer.Option(
    help="ctm with probability scores: contextual calibration of the STM's labels")]


def _check_system(system: str) -> None:
    if system not in ("base", "ctm"):
        raise UnknownNameError("system", system, ["base", "ctm"])


def _workspace_settings(config: dict[str, Any], parallel: int = 1) -> WorkspaceSettings:
    """Items scored in parallel already keep the machine busy: speculative link calls would only take
    compute from them (the answers are the same either way)."""
    return WorkspaceSettings(threshold=config["threshold"], max_iterations=config["iterations"],
                             ablations=frozenset(config.get("ablation", ())), seed=config["seed"],
                             speculative_links=parallel == 1, scores=config.get("scores", "verbal"),
                             calibrate=config.get("calibrate", False))


def _check_scores(system: str, scores: str, calibrate: bool, *, base_scores: bool) -> None:
    if scores not in SCORE_SOURCES:
        raise UnknownNameError("score source", scores, SCORE_SOURCES)
    if scores != "verbal" and system == "base" and not base_scores:
        raise UsageError("this benchmark's base system has no scores to take from probabilities: use --system ctm")
    if calibrate and (system != "ctm" or scores == "verbal"):
        raise UsageError("--calibrate calibrates the ctm STM's label probabilities: give --system ctm --scores logprob")


def iterations_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How often the workspace went past its first iteration (the threshold acting), where rows say."""
    counts = [r["iterations"] for r in rows if isinstance(r.get("iterations"), int)]
    if not counts:
        return {}
    return {"past_first_iteration": round(sum(1 for c in counts if c > 1) / len(counts), 4),
            "mean_iterations": round(sum(counts) / len(counts), 3)}


def add_bench(app: typer.Typer, opener: ModelOpener) -> None:
    bench_app = typer.Typer(help="Run benchmarks (resumable; a report lands in the run folder).",
                            no_args_is_help=True)
    app.add_typer(bench_app, name="bench")

    @bench_app.command("mustard")
    def mustard(
        system: SystemOption = "ctm",
        ablation: Annotated[list[str] | None, typer.Option(help=f"ctm ablation: {', '.join(ABLATIONS)}")] = None,
        model: ModelOption = DEFAULT_MODEL,
        limit: Annotated[int | None, typer.Option(min=1, help="first N items of the seeded sample")] = None,
        offset: OffsetOption = 0,
        data: Annotated[Path | None, typer.Option(help="MUStARD JSON file")] = None,
        iterations: IterationsOption = 3,
        threshold: ThresholdOption = 0.8,
        stm_samples: Annotated[int, typer.Option(
            min=1, help="ctm: STM samples; alpha is their agreement (1: the model's own confidence)")] = 1,
        scores: ScoresOption = "verbal",
        calibrate: CalibrateOption = False,
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
        _check_scores(system, scores, calibrate, base_scores=True)
        config = {"benchmark": "mustard", "system": system, "model": model, "ablation": sorted(ablation or ()),
                  "limit": limit, "offset": offset, "data": str(data) if data else None, "iterations": iterations,
                  "threshold": threshold, "stm_samples": stm_samples, "seed": seed, "scores": scores,
                  "calibrate": calibrate}
        _workspace_settings(config)  # unknown ablations fail here, before anything runs

        def load(saved: dict[str, Any]) -> list[mustard_bench.MustardItem]:
            return select_items(mustard_bench.load_mustard(Path(saved["data"]) if saved.get("data") else None), saved)

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            items = load(saved)
            solve = (partial(mustard_bench.solve_base, llm, scores=saved.get("scores", "verbal"))
                     if saved["system"] == "base"
                     else partial(mustard_bench.solve_ctm, llm, _workspace_settings(saved, parallel),
                                  stm_samples=saved.get("stm_samples", 1)))
            return [(i.id, i, i.gold) for i in items], solve

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            return {**classification_report([r["gold"] for r in rows], [r["prediction"] for r in rows],
                                            mustard_bench.LABELS), **iterations_summary(rows)}

        run_benchmark(opener, "MUStARD (text)", config, out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                      budget=budget, max_tokens=400, prepare=prepare, summarise=summarise, parallel=parallel,
                      check=load)

    @bench_app.command("bfcl")
    def bfcl_command(
        system: SystemOption = "ctm",
        category: Annotated[list[str] | None, typer.Option(help=f"one or more of {', '.join(CATEGORIES)}")] = None,
        model: ModelOption = DEFAULT_MODEL,
        limit: Annotated[int | None, typer.Option(min=1, help="first N items of each category")] = None,
        data: Annotated[Path | None, typer.Option(help="folder with BFCL_v4_*.json and possible_answer/")] = None,
        iterations: IterationsOption = 2,
        threshold: ThresholdOption = 0.8,
        scores: ScoresOption = "verbal",
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
        _check_scores(system, scores, False, base_scores=False)
        for name in category or ():
            if name not in CATEGORIES:
                raise UnknownNameError("BFCL category", name, CATEGORIES)
        config = {"benchmark": "bfcl", "system": system, "model": model, "categories": category or list(CATEGORIES),
                  "limit": limit, "data": str(data) if data else None, "iterations": iterations,
                  "threshold": threshold, "seed": seed, "scores": scores}

        def load(saved: dict[str, Any]) -> list[BfclItem]:
            folder = Path(saved["data"]) if saved.get("data") else None
            return [item for name in saved["categories"] for item in load_bfcl(name, folder, limit=saved.get("limit"))]

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            items = load(saved)
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
                      budget=budget, max_tokens=512, prepare=prepare, summarise=summarise, parallel=parallel,
                      check=load)

    add_society_benchmarks(bench_app, opener)
    add_game_benchmarks(bench_app, opener)
