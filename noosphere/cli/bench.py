"""`noosphere bench ...`: benchmark commands; each writes a resumable run folder with a report.

This module holds the global-workspace benchmarks (MUStARD, BFCL) and gathers the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel, ConfigDict, Field

from noosphere.bench import bfcl as bfcl_bench
from noosphere.bench import classification_report
from noosphere.bench import mustard as mustard_bench
from noosphere.bench.bfcl_data import CATEGORIES, BfclItem, load_bfcl
from noosphere.bench.runner import Solve
from noosphere.cli.ask import ModelOpener
from noosphere.cli.bench_embodied import add_embodied_benchmark
from noosphere.cli.bench_games import add_game_benchmarks
from noosphere.cli.bench_run import (
    Items,
    OffsetOption,
    RunOptions,
    benchmark_command,
    check_saved,
    select_items,
    with_option_group,
)
from noosphere.cli.bench_societies import add_society_benchmarks
from noosphere.cli.bench_web import add_web_benchmarks
from noosphere.errors import DataError, UnknownNameError, UsageError
from noosphere.llm import Model
from noosphere.llm.scoring import NO, YES
from noosphere.workspace import ABLATIONS, WorkspaceSettings
from noosphere.workspace.scores import SCORE_SOURCES
from noosphere.workspace.stm import STM_ALPHAS

SystemOption = Annotated[str, typer.Option(help="base or ctm")]
IterationsOption = Annotated[int, typer.Option(min=1, help="ctm: maximum iterations T")]
ThresholdOption = Annotated[float, typer.Option(
    min=0.0, help="ctm: STM confidence that stops the loop (above 1: never stops early)")]
ScoresOption = Annotated[str, typer.Option(
    help="where scores come from: verbal (the model's words), logprob (its token probabilities) or samples")]
CalibrateOption = Annotated[bool, typer.Option(
    help="ctm with probability scores: contextual calibration of the STM's labels")]


def _workspace_settings(config: dict[str, Any], parallel: int = 1) -> WorkspaceSettings:
    """Items scored in parallel already keep the machine busy: speculative link calls would only take
    compute from them (the answers are the same either way)."""
    return WorkspaceSettings(threshold=config["threshold"], max_iterations=config["iterations"],
                             ablations=frozenset(config.get("ablation", ())), seed=config["seed"],
                             speculative_links=parallel == 1, scores=config.get("scores", "verbal"),
                             calibrate=config.get("calibrate", False), stm_alpha=config.get("stm_alpha", "label"))


@dataclass(frozen=True)
class WorkspaceOptions:
    """The options of the benchmarks that run a global workspace against its base model (MUStARD, BFCL)."""

    system: SystemOption = "ctm"
    iterations: IterationsOption = 3
    threshold: ThresholdOption = 0.8
    scores: ScoresOption = "verbal"

    def config(self, *, calibrate: bool = False, base_scores: bool) -> dict[str, Any]:
        """What a new run saves of them, checked first. `base_scores`: whether the benchmark's base system has
        scores that may come from probabilities; `calibrate` (`--calibrate`) applies to the ctm's STM only."""
        if self.system not in ("base", "ctm"):
            raise UnknownNameError("system", self.system, ["base", "ctm"])
        if self.scores not in SCORE_SOURCES:
            raise UnknownNameError("score source", self.scores, SCORE_SOURCES)
        if self.scores != "verbal" and self.system == "base" and not base_scores:
            raise UsageError("this benchmark's base system has no scores to take from probabilities: use --system ctm")
        if calibrate and (self.system != "ctm" or self.scores != "logprob"):
            raise UsageError("--calibrate calibrates the ctm STM's label probabilities: give --system ctm --scores "
                             "logprob")
        return {"system": self.system, "iterations": self.iterations, "threshold": self.threshold,
                "scores": self.scores}


class SavedWorkspaceRun(BaseModel):
    """The type and bounds of each setting a MUStARD or BFCL run's config holds, as the options that set it take
    them: hand-edited, a missing `system` was a KeyError traceback, another one ran the ctm silently, and a
    threshold or an iteration count of the wrong type failed mid-run."""

    model_config = ConfigDict(extra="allow", strict=True)
    system: Literal["base", "ctm"]
    iterations: int = Field(3, ge=1)
    threshold: float = Field(0.8, ge=0.0, allow_inf_nan=False)
    scores: Literal[SCORE_SOURCES] = "verbal"  # type: ignore[valid-type]
    ablation: list[str] = []
    stm_samples: int = Field(1, ge=1)
    calibrate: bool = False
    stm_alpha: Literal[STM_ALPHAS] = "label"  # type: ignore[valid-type]
    categories: list[str] | None = Field(None, min_length=1)
    motor: str | None = None
    gate: float | None = Field(None, gt=0.0, lt=1.0)
    processors: str | None = None


def check_saved_workspace(saved: dict[str, Any], benchmark: str) -> None:
    """A MUStARD or BFCL run's config, as `SavedWorkspaceRun` reads it: one line before the model opens."""
    check_saved(SavedWorkspaceRun, saved, benchmark)


def _check_motor(workspace: WorkspaceOptions, motor: str, gate: float | None) -> None:
    """BFCL's `--motor` and `--gate`, before anything runs (a resumed run keeps its saved ones): the gate gates
    the base's calls or the ctm's call motor's."""
    if motor not in bfcl_bench.MOTORS:
        raise UnknownNameError("motor", motor, bfcl_bench.MOTORS)
    if motor != "select" and workspace.system != "ctm":
        raise UsageError("--motor is the ctm's last step: give --system ctm")
    if gate is None:
        return
    if workspace.system == "ctm" and motor != "call":
        raise UsageError("--gate gates the call motor's calls: give --motor call")
    if workspace.scores == "verbal":
        raise UsageError("--gate takes P(True) from probabilities: give --scores logprob or samples")
    if not 0.0 < gate < 1.0:
        raise UsageError(f"--gate must be in (0, 1), not {gate}")


def _check_processors(workspace: WorkspaceOptions, processors: str) -> None:
    """BFCL's `--processors`, before anything runs: the generalist is a ctm processor scored by P(True)."""
    if processors not in bfcl_bench.PROCESSORS:
        raise UnknownNameError("processors", processors, bfcl_bench.PROCESSORS)
    if processors == "functions":
        return
    if workspace.system != "ctm":
        raise UsageError("--processors chooses the ctm's processors: give --system ctm")
    if workspace.scores == "verbal":
        raise UsageError("--processors functions+generalist scores the generalist by P(True) of its calls: give "
                         "--scores logprob or samples")


def _check_scorer(saved: dict[str, Any], llm: Model, *labels: tuple[str, ...]) -> None:
    """A run that takes its scores from probabilities (`--scores logprob`) is refused a model that cannot give them,
    or cannot tell its options apart, while preparing: before its folder exists and before any call. Its options:
    P(True)'s Yes and No, and any label set it scores."""
    if saved.get("scores") == "logprob":
        for options in ((YES, NO), *labels):
            llm.check_scoring(options)


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

    @benchmark_command(bench_app, "mustard")
    @with_option_group(WorkspaceOptions, "workspace")
    def mustard(
        ablation: Annotated[list[str] | None, typer.Option(help=f"ctm ablation: {', '.join(ABLATIONS)}")] = None,
        limit: Annotated[int | None, typer.Option(min=1, help="first N items of the seeded sample")] = None,
        offset: OffsetOption = 0,
        data: Annotated[Path | None, typer.Option(help="MUStARD JSON file")] = None,
        stm_samples: Annotated[int, typer.Option(
            min=1, help="ctm: STM samples; alpha is their agreement (1: the model's own confidence)")] = 1,
        calibrate: CalibrateOption = False,
        stm_alpha: Annotated[str, typer.Option(
            help="ctm with probability scores: alpha is the label's probability (label) or the STM's P(True) that "
                 "its label is right (judged)")] = "label",
        *,
        workspace: WorkspaceOptions,
        options: RunOptions,
    ) -> None:
        """Sarcasm detection on MUStARD's text: accuracy, weighted precision, recall and F1."""
        config = {"benchmark": "mustard", **workspace.config(calibrate=calibrate, base_scores=True), **options.config(),
                  "ablation": sorted(ablation or ()), "limit": limit, "offset": offset,
                  "data": str(data.resolve()) if data else None, "stm_samples": stm_samples, "calibrate": calibrate}
        if stm_alpha != "label":  # saved only when set: the runs before it keep their configs as they were
            if workspace.system != "ctm" or workspace.scores == "verbal":
                raise UsageError("--stm-alpha is the ctm STM's, with probability scores: give --system ctm --scores "
                                 "logprob (or samples)")
            config["stm_alpha"] = stm_alpha
        _workspace_settings(config)  # unknown ablations fail here, before anything runs
        if stm_samples != 1 and (config.get("system") != "ctm" or config.get("scores", "verbal") != "verbal"):
            raise UsageError("--stm-samples is the verbal ctm STM's vote: give --system ctm --scores verbal, or "
                             "leave it at 1")

        def load(saved: dict[str, Any]) -> list[mustard_bench.MustardItem]:
            check_saved_workspace(saved, "mustard")
            return select_items(mustard_bench.load_mustard(Path(saved["data"]) if saved.get("data") else None), saved)

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            _check_scorer(saved, llm, mustard_bench.LABELS)
            items = load(saved)
            solve = (partial(mustard_bench.solve_base, llm, scores=saved.get("scores", "verbal"))
                     if saved["system"] == "base"
                     else partial(mustard_bench.solve_ctm, llm, _workspace_settings(saved, options.parallel),
                                  stm_samples=saved.get("stm_samples", 1)))
            return [(i.id, i, i.gold) for i in items], solve

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            return {**classification_report([r["gold"] for r in rows], [r["prediction"] for r in rows],
                                            mustard_bench.LABELS), **iterations_summary(rows)}

        options.run_benchmark(opener, "MUStARD (text)", config, max_tokens=400, prepare=prepare, summarise=summarise,
                              check=load)

    @benchmark_command(bench_app, "bfcl")
    @with_option_group(WorkspaceOptions, "workspace", iterations=2)
    def bfcl_command(
        category: Annotated[list[str] | None, typer.Option(help=f"one or more of {', '.join(CATEGORIES)}")] = None,
        limit: Annotated[int | None, typer.Option(min=1, help="first N items of each category")] = None,
        offset: Annotated[int, typer.Option(
            min=0, help="leave out each category's first N items (those a prompt was tuned on: the first 10); "
                        "--limit counts from there")] = 0,
        data: Annotated[Path | None, typer.Option(help="folder with BFCL_v4_*.json and possible_answer/")] = None,
        motor: Annotated[str, typer.Option(
            help="ctm: select (pick one proposed call per ask) or call (one function-calling request with every "
                 "function, the proposals as hints)")] = "select",
        gate: Annotated[float | None, typer.Option(
            help="base, or ctm --motor call, with --scores logprob|samples: make the calls only if P(True) that "
                 "they do exactly what the request asks is at least this (in (0, 1))")] = None,
        processors: Annotated[str, typer.Option(
            help="ctm: functions (one processor per function) or functions+generalist (with --scores logprob|"
                 "samples: also one processor that sees every function and bids the base's calls, scored by "
                 "P(True) that they do exactly what the request asks; the motor acts on the winner)")] = "functions",
        *,
        workspace: WorkspaceOptions,
        options: RunOptions,
    ) -> None:
        """Function calling on BFCL, scored by our AST matcher; accuracy per category."""
        checked = workspace.config(base_scores=gate is not None)  # the base's only scores: its gate's P(True)
        for name in category or ():
            if name not in CATEGORIES:
                raise UnknownNameError("BFCL category", name, CATEGORIES)
        _check_motor(workspace, motor, gate)
        _check_processors(workspace, processors)
        config = {"benchmark": "bfcl", **checked, **options.config(),
                  "categories": list(dict.fromkeys(category)) if category else list(CATEGORIES),  # each once
                  "limit": limit, "offset": offset, "data": str(data.resolve()) if data else None, "motor": motor,
                  "gate": gate, "processors": processors}

        def load(saved: dict[str, Any]) -> list[BfclItem]:
            check_saved_workspace(saved, "bfcl")
            folder = Path(saved["data"]) if saved.get("data") else None
            items = [item for name in saved["categories"]
                     for item in load_bfcl(name, folder, limit=saved.get("limit"), offset=saved.get("offset") or 0)]
            first: dict[str, str] = {}
            for item in items:  # rows are kept by id: one id in two categories would be scored once, counted twice
                if first.setdefault(item.id, item.category) != item.category:
                    raise DataError(f"BFCL id {item.id!r} is in both {first[item.id]} and {item.category}; ids must "
                                    "be unique across the categories of a run")
            return items

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            _check_scorer(saved, llm)
            items = load(saved)
            solve = (partial(bfcl_bench.solve_base, llm, scores=saved.get("scores", "verbal"), gate=saved.get("gate"))
                     if saved["system"] == "base"
                     else partial(bfcl_bench.solve_ctm, llm, _workspace_settings(saved, options.parallel),
                                  motor=saved.get("motor") or "select", gate=saved.get("gate"),
                                  processors=saved.get("processors") or "functions"))
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

        options.run_benchmark(opener, "BFCL (AST match)", config, max_tokens=512, prepare=prepare,
                              summarise=summarise, check=load)

    add_society_benchmarks(bench_app, opener)
    add_game_benchmarks(bench_app, opener)
    add_embodied_benchmark(bench_app, opener)
    add_web_benchmarks(bench_app, opener)
