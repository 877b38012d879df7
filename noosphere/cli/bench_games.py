"""`noosphere bench alfworld` and `bench textworld`: the meta-agent and its baselines in text games."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from noosphere.bench import games as games_bench
from noosphere.bench.runner import Solve
from noosphere.bench.transitions import write_transition_figures
from noosphere.cli.ask import BudgetOption, ModelOpener, ModelOption, NoCacheOption, OutOption, SeedOption
from noosphere.cli.bench_run import (
    Benchmark,
    Items,
    ParallelOption,
    QuietOption,
    ResumeOption,
    run_benchmark,
    run_together,
    with_budget,
)
from noosphere.errors import UsageError
from noosphere.llm import DEFAULT_MODEL, Model
from noosphere.runs import Run

GameSystemOption = Annotated[str, typer.Option(help="react, reflexion or metaagent")]
MemoryOption = Annotated[str, typer.Option(help="metaagent: none, episodic, conceptual or both")]
RetrieveOption = Annotated[str, typer.Option(help="metaagent: random (the paper) or relevant")]
KOption = Annotated[int, typer.Option(min=0, help="metaagent: past episodes recalled per game")]
MaxActionsOption = Annotated[int, typer.Option(min=1, help="step budget per game")]
GraphOption = Annotated[Path | None, typer.Option(
    help="metaagent: a transition graph in YAML or JSON (edges, defaults) instead of the paper's")]
CreateOnlyOption = Annotated[bool, typer.Option(
    help="write the run folder and stop: score it later with --resume, or beside others with `bench together`")]


def alfworld_games(saved: dict[str, Any]) -> list[Any]:
    from noosphere.envs import load_alfworld

    games = load_alfworld(Path(saved["data"]) if saved.get("data") else None, per_type=saved["per_type"],
                          max_steps=saved["max_actions"], demo=saved.get("demo", False))
    return games[: saved["limit"]] if saved.get("limit") else games


def textworld_games(saved: dict[str, Any]) -> list[Any]:
    from noosphere.envs import textworld_games as generate

    games = generate(Path(saved["games_dir"]), tier=saved["tier"], per_challenge=saved["per_challenge"],
                     seed=saved["seed"], max_steps=saved["max_actions"])
    return games[: saved["limit"]] if saved.get("limit") else games


def check_alfworld(saved: dict[str, Any]) -> None:
    """Every game file validated and ALFWorld installed, before a run folder is made."""
    from noosphere.envs.alfworld import game_files, require_alfworld

    game_files(Path(saved["data"]) if saved.get("data") else None)
    require_alfworld()


def check_textworld(saved: dict[str, Any]) -> None:
    """TextWorld installed and the games already compiled whole, before a run folder is made."""
    from noosphere.envs.textworld_games import check_games

    check_games(Path(saved["games_dir"]), tier=saved["tier"], per_challenge=saved["per_challenge"],
                seed=saved["seed"])


GAME_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {"alfworld": check_alfworld, "textworld": check_textworld}


def _prepare_games(games_for: Callable[[dict[str, Any]], list[Any]], saved: dict[str, Any],
                   llm: Model) -> tuple[Items, Solve]:
    memory_folder = Path(llm.trace.path).parent / "memory" if llm.trace.path else Path("memory")
    play = games_bench.player(llm, saved, memory_folder)
    return [(game.name, game, "won") for game in games_for(saved)], partial(games_bench.solve, play)


GAME_BENCHMARKS = {
    name: Benchmark(title, max_tokens=400, prepare=partial(_prepare_games, games_for),
                    summarise=lambda saved, rows: games_bench.summarise(rows), artefacts=write_transition_figures)
    for name, title, games_for in (
        ("alfworld", lambda saved: "ALFWorld", alfworld_games),
        ("textworld", lambda saved: f"TextWorld tier {saved['tier']}", textworld_games))
}


def add_game_benchmarks(bench_app: typer.Typer, opener: ModelOpener) -> None:
    def game_options(system: str, memory: str, retrieve: str, k: int, max_actions: int, model: str,
                     limit: int | None, seed: int, graph: Path | None) -> dict[str, Any]:
        games_bench.check_options(system, memory, retrieve)
        options = {"system": system, "memory": memory, "retrieve": retrieve, "k": k, "max_actions": max_actions,
                   "model": model, "limit": limit, "seed": seed}
        if graph is not None:  # saved whole in config.json, so a resumed run plays the same graph
            options["graph"] = games_bench.load_graph(graph).to_data()
        return options

    def run_games(config: dict[str, Any], benchmark: Benchmark, *, out: Path, resume: Path | None, budget: str | None,
                  no_cache: bool, quiet: bool, parallel: int, create_only: bool,
                  check: Callable[[dict[str, Any]], None]) -> None:
        def check_parallel(settings: dict[str, Any]) -> None:
            if parallel > 1 and settings["system"] == "metaagent" and settings["memory"] != "none":
                raise UsageError("the meta-agent's memory carries from one game to the next, in order: use "
                                 "--parallel 1 or --memory none")

        if config:  # a new run fails before its folder exists; a resumed one once its saved config is read
            check_parallel(config)
        if create_only:
            if resume is not None:
                raise UsageError("--create-only makes a new run folder; it cannot go with --resume")
            check(config)
            with Run.create(out, command="bench", config=with_budget(config, budget)) as run:
                run.finish({}, status="created")
            typer.echo(run.directory)
            return

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            check_parallel(saved)
            return benchmark.prepare(saved, llm)

        run_benchmark(opener, benchmark.title, config, out=out, resume=resume, budget=budget,
                      no_cache=no_cache, quiet=quiet, max_tokens=benchmark.max_tokens, prepare=prepare,
                      summarise=benchmark.summarise, parallel=parallel, artefacts=benchmark.artefacts, check=check)

    @bench_app.command("alfworld")
    def alfworld(
        system: GameSystemOption = "metaagent",
        memory: MemoryOption = "both",
        retrieve: RetrieveOption = "random",
        k: KOption = 4,
        per_type: Annotated[int | None, typer.Option(min=1, help="games of each of the six task types")] = 4,
        limit: Annotated[int | None, typer.Option(min=1, help="first N games of that balanced list")] = None,
        max_actions: MaxActionsOption = 50,
        graph: GraphOption = None,
        data: Annotated[Path | None, typer.Option(help="ALFWorld json_2.1.1 folder")] = None,
        demo: Annotated[bool, typer.Option(
            help="show every agent one solved game of the same task type (kept back from the games played)")] = True,
        model: ModelOption = DEFAULT_MODEL,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        budget: BudgetOption = None,
        quiet: QuietOption = False,
        parallel: ParallelOption = 1,
        create_only: CreateOnlyOption = False,
    ) -> None:
        """ALFWorld games: success per task type and actions per success."""
        config = {} if resume else {"benchmark": "alfworld", "per_type": per_type,
                                    "data": str(data) if data else None, "demo": demo,
                                    **game_options(system, memory, retrieve, k, max_actions, model, limit, seed, graph)}
        run_games(config, GAME_BENCHMARKS["alfworld"], out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                  budget=budget, parallel=parallel, create_only=create_only, check=check_alfworld)

    @bench_app.command("textworld")
    def textworld(
        system: GameSystemOption = "metaagent",
        memory: MemoryOption = "both",
        retrieve: RetrieveOption = "random",
        k: KOption = 4,
        tier: Annotated[int, typer.Option(min=1, max=3, help="difficulty tier")] = 1,
        per_challenge: Annotated[int, typer.Option(min=1, help="games of each challenge")] = 3,
        limit: Annotated[int | None, typer.Option(min=1, help="first N games")] = None,
        max_actions: MaxActionsOption = 50,
        graph: GraphOption = None,
        games_dir: Annotated[Path | None, typer.Option(
            help="where generated games are kept (default ~/.cache/noosphere/textworld)")] = None,
        model: ModelOption = DEFAULT_MODEL,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        resume: ResumeOption = None,
        no_cache: NoCacheOption = False,
        budget: BudgetOption = None,
        quiet: QuietOption = False,
        parallel: ParallelOption = 1,
        create_only: CreateOnlyOption = False,
    ) -> None:
        """TextWorld games generated from fixed seeds: coin collector, treasure hunter, cooking, custom quests."""
        from noosphere.llm.weights import default_cache_dir

        config = {} if resume else {"benchmark": "textworld", "tier": tier, "per_challenge": per_challenge,
                                    "games_dir": str(games_dir or default_cache_dir() / "textworld"),
                                    **game_options(system, memory, retrieve, k, max_actions, model, limit, seed, graph)}
        run_games(config, GAME_BENCHMARKS["textworld"], out=out, resume=resume, no_cache=no_cache, quiet=quiet,
                  budget=budget, parallel=parallel, create_only=create_only, check=check_textworld)

    @bench_app.command("together")
    def together(
        runs: Annotated[list[Path], typer.Argument(help="alfworld or textworld run folders (see --create-only)")],
        no_cache: NoCacheOption = False,
        quiet: QuietOption = False,
    ) -> None:
        """Resume several game runs side by side in one process, each playing its games in order; their calls
        are decoded together (the way to run the meta-agent's memory ablations, which cannot use --parallel)."""
        chosen = [(folder, game_benchmark(folder)) for folder in runs]
        for folder in runs:  # every run's games whole before any is played
            saved = Run.saved_config(folder)
            GAME_CHECKS[saved["benchmark"]](saved)
        run_together(opener, chosen, no_cache=no_cache, quiet=quiet)


def game_benchmark(folder: Path) -> Benchmark:
    """The game benchmark a run folder holds, or a usage error saying what it holds instead."""
    benchmark = Run.saved_config(folder).get("benchmark")
    if benchmark not in GAME_BENCHMARKS:
        raise UsageError(f"{folder} is a {benchmark or 'non-benchmark'} run; `bench together` resumes "
                         f"{' and '.join(GAME_BENCHMARKS)} runs")
    return GAME_BENCHMARKS[benchmark]
