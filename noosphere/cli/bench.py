"""`noosphere bench ...`: benchmark commands; each writes a resumable run folder with a report."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console

from noosphere.bench import averages, classification_report, run_items, write_report
from noosphere.bench import bfcl as bfcl_bench
from noosphere.bench import games as games_bench
from noosphere.bench import gsm8k as gsm8k_bench
from noosphere.bench import mustard as mustard_bench
from noosphere.bench import roleplay as roleplay_bench
from noosphere.bench.bfcl_data import CATEGORIES, load_bfcl
from noosphere.bench.roleplay_tasks import TASKS as CODING_TASKS
from noosphere.bench.runner import Solve, load_done
from noosphere.cli.ask import ModelOpener, ModelOption, NoCacheOption, OutOption, SeedOption, open_cache
from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm import DEFAULT_MODEL, Model, Settings
from noosphere.runs import Run
from noosphere.society.config import SocietySpec, build_society, load_society_spec
from noosphere.workspace import ABLATIONS, WorkspaceSettings

ResumeOption = Annotated[Path | None, typer.Option(help="resume a killed benchmark from its run folder")]
SystemOption = Annotated[str, typer.Option(help="base or ctm")]
IterationsOption = Annotated[int, typer.Option(help="ctm: maximum iterations T")]
ThresholdOption = Annotated[float, typer.Option(help="ctm: STM confidence that stops the loop")]
QuietOption = Annotated[bool, typer.Option(help="no progress bar")]


Items = list[tuple[str, Any, Any]]
Prepare = Callable[[dict[str, Any], Model], tuple[Items, Solve]]
Summarise = Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any]]


def _check_system(system: str) -> None:
    if system not in ("base", "ctm"):
        raise UnknownNameError("system", system, ["base", "ctm"])


def _run_benchmark(opener: ModelOpener, title: str, config: dict[str, Any], *, out: Path, resume: Path | None,
                   no_cache: bool, quiet: bool, max_tokens: int, prepare: Prepare, summarise: Summarise) -> None:
    """Open (or resume) the run, score the items, write the report. A resumed run keeps its saved config."""
    run = Run.resume(resume) if resume is not None else Run.create(out, command="bench", config=config)
    with run, _terminate_as_interrupt():
        saved = run.config
        llm = opener(saved["model"], trace=run.trace, ledger=run.ledger, cache=open_cache(no_cache),
                     settings=Settings(seed=saved["seed"], max_tokens=max_tokens))
        items, solve = prepare(saved, llm)
        try:
            rows = asyncio.run(run_items(run, items, solve, show_progress=not quiet))
            interrupted = False
        except KeyboardInterrupt:  # Ctrl-C or a time limit: report what is done; --resume goes on later
            done = load_done(run.directory / "items.jsonl")
            rows = [done[item_id] for item_id, _, _ in items if item_id in done]
            interrupted = True
        metrics = summarise(saved, rows)
        report = write_report(run, title + (" (partial: interrupted)" if interrupted else ""), metrics,
                              averages(rows))
        run.finish({"report": report}, status="interrupted" if interrupted else "ok")
    Console().print(json.dumps({k: v for k, v in metrics.items() if k != "confusion"}))
    Console().print(f"report: {run.directory / 'report.md'}", highlight=False)
    if interrupted:
        raise typer.Exit(130)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (a `timeout`, a job scheduler) like Ctrl-C, so an interrupted benchmark still reports."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _workspace_settings(config: dict[str, Any]) -> WorkspaceSettings:
    return WorkspaceSettings(threshold=config["threshold"], max_iterations=config["iterations"],
                             ablations=frozenset(config.get("ablation", ())), seed=config["seed"])


def _gsm8k_config(system: str, society: Path | None, rounds: int | None, rights: str | None, n: int | None,
                  model: str, limit: int | None, data: Path | None, seed: int) -> dict[str, Any]:
    """Check the options of a new GSM8K run; the society file is read now and saved whole with the run."""
    systems = ("base", "best-of-n", "society")
    if system not in systems:
        raise UnknownNameError("system", system, systems)
    spec = load_society_spec(society) if society is not None else None
    overrides: dict[str, Any] = {}
    if rounds is not None:
        overrides["rounds"] = rounds
    if rights is not None:
        overrides["rights"] = [r.strip() for r in rights.split(",") if r.strip()]
    if overrides:
        if spec is None:
            raise UsageError("--rounds and --rights change a society: give --society FILE")
        try:
            spec = SocietySpec.model_validate({**spec.model_dump(), **overrides})
        except ValidationError as exc:
            error = exc.errors()[0]
            raise UsageError(f"invalid --{error['loc'][0]}: {error['msg']}") from exc
    if system == "society" and spec is None:
        raise UsageError("--system society needs --society FILE (see examples/societies)")
    if system == "best-of-n" and n is None:
        if spec is None:
            raise UsageError("best-of-n needs --n N, or --society FILE to match that society's calls")
        n = gsm8k_bench.planned_calls(spec)
    return {"benchmark": "gsm8k", "system": system, "model": model, "limit": limit,
            "data": str(data) if data else None, "seed": seed, "n": n,
            "society": spec.model_dump() if spec is not None else None,
            "society_file": str(society) if society else None}


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
        quiet: QuietOption = False,
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
                     else partial(mustard_bench.solve_ctm, llm, _workspace_settings(saved),
                                  stm_samples=saved.get("stm_samples", 1)))
            return [(i.id, i, i.gold) for i in items], solve

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            return classification_report([r["gold"] for r in rows], [r["prediction"] for r in rows],
                                         mustard_bench.LABELS)

        _run_benchmark(opener, "MUStARD (text)", config, out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                       max_tokens=400, prepare=prepare, summarise=summarise)

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
        quiet: QuietOption = False,
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
                     else partial(bfcl_bench.solve_ctm, llm, _workspace_settings(saved)))
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

        _run_benchmark(opener, "BFCL (AST match)", config, out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                       max_tokens=512, prepare=prepare, summarise=summarise)

    @bench_app.command("gsm8k")
    def gsm8k(
        system: Annotated[str, typer.Option(help="base, best-of-n or society")] = "society",
        society: Annotated[Path | None, typer.Option(
            help="society file (society; and for best-of-n, the society whose call count sets N)")] = None,
        rounds: Annotated[int | None, typer.Option(min=0, max=50,
                                                   help="mindstorm rounds R, overriding the society file")] = None,
        rights: Annotated[str | None, typer.Option(
            help="democracy rights, comma-separated (know,change,execute), overriding the society file")] = None,
        n: Annotated[int | None, typer.Option(
            min=1, help="best-of-n: samples per problem (default: the society's calls)")] = None,
        model: ModelOption = DEFAULT_MODEL,
        limit: Annotated[int | None, typer.Option(help="first N problems of the file")] = None,
        data: Annotated[Path | None, typer.Option(help="a GSM8K JSONL file")] = None,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        quiet: QuietOption = False,
    ) -> None:
        """Grade-school maths: exact match on the final number, with calls, tokens and seconds per problem."""
        config = {} if resume is not None else _gsm8k_config(system, society, rounds, rights, n, model, limit,
                                                                         data, seed)

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            items = gsm8k_bench.load_gsm8k(Path(saved["data"]) if saved.get("data") else None, limit=saved["limit"])
            if saved["system"] == "base":
                solve: Solve = partial(gsm8k_bench.solve_base, llm)
            elif saved["system"] == "best-of-n":
                solve = partial(gsm8k_bench.solve_best_of_n, llm, saved["n"])
            else:
                built = build_society(SocietySpec.model_validate(saved["society"]),
                                      lambda model_id: llm if model_id == saved["model"] else opener(
                                          model_id, trace=llm.trace, ledger=llm.ledger, cache=llm.cache,
                                          settings=llm.settings), saved["model"])
                solve = partial(gsm8k_bench.solve_society, built)
            return [(i.id, i, i.gold) for i in items], solve

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            return {"accuracy": round(100 * sum(r["correct"] for r in rows) / max(len(rows), 1), 2), "n": len(rows)}

        _run_benchmark(opener, "GSM8K (exact match)", config, out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                       max_tokens=800, prepare=prepare, summarise=summarise)

    @bench_app.command("roleplay")
    def roleplay(
        model: ModelOption = DEFAULT_MODEL,
        max_messages: Annotated[int, typer.Option(min=2, help="message cap of each conversation")] = 12,
        limit: Annotated[int | None, typer.Option(help=f"first N of the {len(CODING_TASKS)} tasks")] = None,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        quiet: QuietOption = False,
    ) -> None:
        """CAMEL-style user/assistant pairs write code; hidden unit tests run in the sandbox."""
        config = {"benchmark": "roleplay", "system": "roleplay", "model": model, "limit": limit,
                  "max_messages": max_messages, "seed": seed}

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            tasks = CODING_TASKS[: saved["limit"]] if saved["limit"] else CODING_TASKS
            return [(t.id, t, "pass") for t in tasks], partial(roleplay_bench.solve, llm, saved["max_messages"])

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            return {"pass_rate": round(100 * sum(r["correct"] for r in rows) / max(len(rows), 1), 2), "n": len(rows)}

        _run_benchmark(opener, "Role-play coding (hidden tests)", config, out=out, resume=resume, no_cache=no_cache,
                       quiet=quiet, max_tokens=700, prepare=prepare, summarise=summarise)

    def game_options(system: str, memory: str, retrieve: str, k: int, max_actions: int, model: str,
                     limit: int | None, seed: int) -> dict[str, Any]:
        games_bench.check_options(system, memory, retrieve)
        return {"system": system, "memory": memory, "retrieve": retrieve, "k": k, "max_actions": max_actions,
                "model": model, "limit": limit, "seed": seed}

    def run_games(config: dict[str, Any], title: str, games_for: Callable[[dict[str, Any]], list[Any]], *,
                  out: Path, resume: Path | None, no_cache: bool, quiet: bool) -> None:
        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            memory_folder = Path(llm.trace.path).parent / "memory" if llm.trace.path else Path("memory")
            play = games_bench.player(llm, saved, memory_folder)
            return [(game.name, game, "won") for game in games_for(saved)], partial(games_bench.solve, play)

        _run_benchmark(opener, title, config, out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                       max_tokens=400, prepare=prepare, summarise=lambda saved, rows: games_bench.summarise(rows))

    @bench_app.command("alfworld")
    def alfworld(
        system: Annotated[str, typer.Option(help="react, reflexion or metaagent")] = "metaagent",
        memory: Annotated[str, typer.Option(help="metaagent: none, episodic, conceptual or both")] = "both",
        retrieve: Annotated[str, typer.Option(help="metaagent: random (the paper) or relevant")] = "random",
        k: Annotated[int, typer.Option(min=0, help="metaagent: past episodes recalled per game")] = 4,
        per_type: Annotated[int | None, typer.Option(help="games of each of the six task types")] = 4,
        limit: Annotated[int | None, typer.Option(help="first N games of that balanced list")] = None,
        max_actions: Annotated[int, typer.Option(min=1, help="step budget per game")] = 50,
        data: Annotated[Path | None, typer.Option(help="ALFWorld json_2.1.1 folder")] = None,
        model: ModelOption = DEFAULT_MODEL,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        quiet: QuietOption = False,
    ) -> None:
        """ALFWorld games: success per task type and actions per success."""
        from noosphere.envs import load_alfworld

        config = {} if resume else {"benchmark": "alfworld", "per_type": per_type,
                                    "data": str(data) if data else None,
                                    **game_options(system, memory, retrieve, k, max_actions, model, limit, seed)}

        def games_for(saved: dict[str, Any]) -> list[Any]:
            games = load_alfworld(Path(saved["data"]) if saved.get("data") else None, per_type=saved["per_type"],
                                  max_steps=saved["max_actions"])
            return games[: saved["limit"]] if saved.get("limit") else games

        run_games(config, "ALFWorld", games_for, out=out, resume=resume, no_cache=no_cache, quiet=quiet)

    @bench_app.command("textworld")
    def textworld(
        system: Annotated[str, typer.Option(help="react, reflexion or metaagent")] = "metaagent",
        memory: Annotated[str, typer.Option(help="metaagent: none, episodic, conceptual or both")] = "both",
        retrieve: Annotated[str, typer.Option(help="metaagent: random (the paper) or relevant")] = "random",
        k: Annotated[int, typer.Option(min=0, help="metaagent: past episodes recalled per game")] = 4,
        tier: Annotated[int, typer.Option(min=1, max=3, help="difficulty tier")] = 1,
        per_challenge: Annotated[int, typer.Option(min=1, help="games of each challenge")] = 3,
        limit: Annotated[int | None, typer.Option(help="first N games")] = None,
        max_actions: Annotated[int, typer.Option(min=1, help="step budget per game")] = 50,
        games_dir: Annotated[Path | None, typer.Option(
            help="where generated games are kept (default ~/.cache/noosphere/textworld)")] = None,
        model: ModelOption = DEFAULT_MODEL,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        quiet: QuietOption = False,
    ) -> None:
        """TextWorld games generated from fixed seeds: coin collector, treasure hunter, cooking, custom quests."""
        from noosphere.envs import textworld_games
        from noosphere.llm.weights import default_cache_dir

        config = {} if resume else {"benchmark": "textworld", "tier": tier, "per_challenge": per_challenge,
                                    "games_dir": str(games_dir or default_cache_dir() / "textworld"),
                                    **game_options(system, memory, retrieve, k, max_actions, model, limit, seed)}

        def games_for(saved: dict[str, Any]) -> list[Any]:
            games = textworld_games(Path(saved["games_dir"]), tier=saved["tier"],
                                    per_challenge=saved["per_challenge"], seed=saved["seed"],
                                    max_steps=saved["max_actions"])
            return games[: saved["limit"]] if saved.get("limit") else games

        run_games(config, f"TextWorld tier {tier}", games_for, out=out, resume=resume, no_cache=no_cache,
                  quiet=quiet)
