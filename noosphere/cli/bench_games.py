"""`noosphere bench alfworld` and `bench textworld`: the meta-agent and its baselines in text games."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field

from noosphere.bench import games as games_bench
from noosphere.bench.game_figures import write_game_figures
from noosphere.bench.runner import Solve
from noosphere.cli.ask import ModelOpener, NoCacheOption
from noosphere.cli.bench_run import (
    Benchmark,
    Items,
    QuietOption,
    RunOptions,
    benchmark_command,
    check_saved,
    checked_config,
    run_together,
    warn,
    with_budget,
    with_option_group,
)
from noosphere.cli.otel_cmd import OtelContentOption, OtelOption, otel_export
from noosphere.envs.alfworld import DEFAULT_SPLIT, data_split
from noosphere.envs.textworld_games import CHALLENGES
from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm import Model
from noosphere.llm.registry import check_model
from noosphere.metaagent.agents import FOCUS_MODES, PLANNER_VIEWS
from noosphere.metaagent.recollection import RECALL_AT, RECALL_VIEWS
from noosphere.metaagent.scored import DEFAULT_MARGIN
from noosphere.runs import Run

GameSystemOption = Annotated[str, typer.Option(
    help="react, react-scored (ReAct choosing by P(True), issue 26), reflexion or metaagent")]
MemoryOption = Annotated[str, typer.Option(help="metaagent: none, episodic, conceptual or both")]
RetrieveOption = Annotated[str, typer.Option(
    help="metaagent: random (the paper), relevant, or kin (the latest won games of the same kind)")]
KOption = Annotated[int, typer.Option(min=0, help="metaagent: past episodes recalled per game")]
MaxActionsOption = Annotated[int, typer.Option(min=1, help="step budget per game")]
GraphOption = Annotated[Path | None, typer.Option(
    help="metaagent: a transition graph in YAML or JSON (edges, defaults) instead of the paper's")]
MarginOption = Annotated[float | None, typer.Option(
    min=0.0, max=0.99, help="react-scored, metaagent --judge: how much higher another candidate's P(True) must be "
                            f"than the written action's to be taken instead [default: {DEFAULT_MARGIN}]")]
JudgeOption = Annotated[bool, typer.Option(
    help="metaagent: the motor's action judged by P(True) among the likeliest admissible actions, as react-scored's "
         "is (a model that can score)")]
PlannerViewOption = Annotated[str | None, typer.Option(
    help="metaagent: what the planning agent reads: team (the belief state, its last plan and the percept, as the "
         "paper has it; the default) or percept (ReAct's step, with the team's memory, idea and focus note)")]
FocusOption = Annotated[str | None, typer.Option(
    help="metaagent: what the team may do after actions that did nothing: replay (the focus agent chooses from every "
         "admissible action, as the paper has it; the default), strike (the actions that just did nothing struck from "
         "the focus agent's choices, and named to it) or mask (struck from every choice of an action, the planner's "
         "too)")]
RecallViewOption = Annotated[str | None, typer.Option(
    help="metaagent with memory: who reads what is recalled: team (every agent, each episode with its belief "
         "states, as the paper has it; the default) or planner (the planner alone, each episode as the actions "
         "taken and what the game answered)")]
RecallAtOption = Annotated[str | None, typer.Option(
    help="metaagent with memory: when a game's memory is recalled: start (before the first action, as the paper has "
         "it; the default) or stuck (when the focus loop first opens: a game that never gets stuck is played with "
         "nothing recalled)")]
DEFAULT_K = 4
"""Past episodes the meta-agent recalls per game, unless `--k` says otherwise."""
CreateOnlyOption = Annotated[bool, typer.Option(
    help="write the run folder and stop: score it later with --resume, or beside others with `bench together`")]


@dataclass(frozen=True)
class GameOptions:
    """The options of the game benchmarks (ALFWorld, TextWorld): the system that plays, its memory, its graph."""

    system: GameSystemOption = "metaagent"
    memory: MemoryOption = "both"
    retrieve: RetrieveOption = "random"
    k: KOption = DEFAULT_K
    max_actions: MaxActionsOption = 50
    graph: GraphOption = None
    margin: MarginOption = None
    judge: JudgeOption = False
    planner_view: PlannerViewOption = None
    recall_view: RecallViewOption = None
    recall_at: RecallAtOption = None
    focus: FocusOption = None
    create_only: CreateOnlyOption = False

    def config(self, limit: int | None, run: RunOptions) -> dict[str, Any]:
        """What a new run saves of them (and of the run options), checked first; a graph file is read now and
        saved whole, so a resumed run plays the same graph."""
        games_bench.check_options(self.system, self.memory, self.retrieve)
        config = {"system": self.system, "memory": self.memory, "retrieve": self.retrieve, "k": self.k,
                  "max_actions": self.max_actions, **run.config(), "limit": limit}
        if self.retrieve != "random" and (self.system != "metaagent" or not games_bench.MEMORY_MODES[self.memory][0]):
            keeps = f"--memory {self.memory}" if self.system == "metaagent" else f"--system {self.system}"
            raise UsageError(f"--retrieve {self.retrieve} picks past episodes: {keeps} keeps none to pick from "
                             "(episodes are kept with --memory episodic or both)")
        if self.system != "metaagent" and self.memory not in ("none", "both"):  # both: the default, as for --retrieve
            raise UsageError(f"--memory {self.memory} is the meta-agent's; --system {self.system} keeps no memory "
                             "(use --system metaagent, or leave --memory out)")
        if self.k != DEFAULT_K and (self.system != "metaagent" or not games_bench.MEMORY_MODES[self.memory][0]):
            keeps = f"--memory {self.memory}" if self.system == "metaagent" else f"--system {self.system}"
            raise UsageError(f"--k {self.k} is how many past episodes the meta-agent recalls: {keeps} keeps none to "
                             "recall (episodes are kept with --memory episodic or both)")
        if self.judge and self.system != "metaagent":
            raise UsageError(f"--judge is the meta-agent's; --system {self.system} "
                             + ("always judges" if self.system == "react-scored" else "has no judge"))
        if self.judge:
            config["judge"] = True
        for key, value, title, known, lacks in (
                ("planner_view", self.planner_view, "planner view", PLANNER_VIEWS, "has no planner"),
                ("focus", self.focus, "focus mode", FOCUS_MODES, "has no focus loop"),
                ("recall_view", self.recall_view, "recall view", RECALL_VIEWS, "has no memory"),
                ("recall_at", self.recall_at, "recall time", RECALL_AT, "has no memory")):
            if value is None:
                continue
            if value not in known:
                raise UnknownNameError(title, value, known)
            if self.system != "metaagent":
                raise UsageError(f"--{key.replace('_', '-')} is the meta-agent's; --system {self.system} {lacks}")
            if key.startswith("recall") and self.memory == "none":
                raise UsageError(f"--{key.replace('_', '-')} needs memory to recall: --memory none recalls nothing")
            config[key] = value
        if self.system == "react-scored" or self.judge:
            config["margin"] = DEFAULT_MARGIN if self.margin is None else self.margin
        elif self.margin is not None:
            raise UsageError(f"--margin is the judge's (react-scored, or metaagent --judge); --system {self.system} "
                             "has no judge here")
        if self.graph is not None:
            if self.system != "metaagent":
                raise UsageError(f"--graph is the meta-agent's transition graph; --system {self.system} has none")
            graph = games_bench.load_graph(self.graph, self.memory, config.get("recall_at", "start"))
            config["graph"] = graph.to_data()
        if games_bench.in_order(config):  # the memory's embeddings: a resume must embed as this session does
            config["embedder"] = games_bench.default_embedder().name
        return config


def alfworld_games(saved: dict[str, Any]) -> list[Any]:
    from noosphere.envs import load_alfworld

    games = load_alfworld(Path(saved["data"]) if saved.get("data") else None, per_type=saved["per_type"],
                          max_steps=saved["max_actions"], demo=saved.get("demo", False), split=_split(saved))
    return games[: saved["limit"]] if saved.get("limit") else games


def textworld_games(saved: dict[str, Any]) -> list[Any]:
    from noosphere.envs import textworld_games as generate

    return generate(Path(saved["games_dir"]), tier=saved["tier"], per_challenge=saved["per_challenge"],
                    seed=saved["seed"], max_steps=saved["max_actions"], challenges=_challenges(saved),
                    limit=saved.get("limit") or None)


SAVED_KEYS = {"alfworld": ("per_type",), "textworld": ("tier", "per_challenge", "games_dir")}
"""What a game run's config must hold beside `GameOptions`' keys, by benchmark: every one a new run saves."""


class SavedGameRun(BaseModel):
    """The type and bounds of each setting a game run's config may hold, as the options that set it take them (a
    missing one is `check_keys`' to tell). A hand-edited value of another type was a traceback, some only mid-run;
    one out of bounds played a run no option makes (`per_challenge` 0: no game, and the run ended ok)."""

    model_config = ConfigDict(extra="allow", strict=True)
    system: str = "metaagent"
    memory: str = "none"
    retrieve: str = "random"
    k: int = Field(DEFAULT_K, ge=0)
    max_actions: int = Field(50, ge=1)
    limit: int | None = Field(None, ge=1)
    graph: dict[str, Any] | None = Field(None, min_length=1)  # {} played the paper's graph, silently
    judge: bool = False
    margin: float | None = Field(None, ge=0.0, lt=1.0)
    candidates: int = Field(3, ge=1)
    trials: int = Field(3, ge=1)
    planner_view: str | None = None
    focus: str | None = None
    recall_view: str | None = None
    recall_at: str | None = None
    embedder: str | None = None
    tier: int = Field(1, ge=1, le=3)
    per_challenge: int = Field(1, ge=1)
    challenges: list[str] | None = None
    games_dir: str = ""
    per_type: int | None = Field(None, ge=1)
    data: str | None = None
    demo: bool = False
    split: str | None = None


def check_keys(saved: dict[str, Any], benchmark: str) -> None:
    """A saved config (hand-edited, or from an older noosphere) that holds a setting of the wrong type or out of
    its option's bounds, or lacks a key the run reads, is one line (the missing keys all named), before the model
    opens; a new run's config has them all, as its options made them."""
    check_saved(SavedGameRun, saved, benchmark)
    needed = ["system", "max_actions", *SAVED_KEYS[benchmark]]
    if saved.get("system", "metaagent") == "metaagent":
        needed.append("memory")
        if saved.get("memory", "none") != "none":
            needed += ["retrieve", "k"]
    if saved.get("judge"):
        needed.append("margin")
    missing = [key for key in needed if key not in saved]
    if missing:
        raise UsageError(f"the run's config.json lacks {', '.join(missing)} (edited by hand, or written by another "
                         f"version of noosphere): add {'them' if len(missing) > 1 else 'it'}, or make a new run with "
                         f"`noosphere bench {benchmark}`")


def check_alfworld(saved: dict[str, Any]) -> None:
    """Every game file validated, ALFWorld installed and the games to be played parsed, before a run folder is
    made."""
    from noosphere.envs.alfworld import check_games, shortfall

    check_keys(saved, "alfworld")
    played = check_games(Path(saved["data"]) if saved.get("data") else None, per_type=saved.get("per_type"),
                         demo=saved.get("demo", False), split=_split(saved))
    if (short := shortfall(played, saved.get("per_type"))) is not None:
        warn(short)


def _split(saved: dict[str, Any]) -> str:
    """The run's ALFWorld split (valid_seen for runs made before it could be chosen)."""
    return str(saved.get("split") or DEFAULT_SPLIT)


def check_textworld(saved: dict[str, Any]) -> None:
    """TextWorld installed and the games already compiled whole, before a run folder is made."""
    from noosphere.envs.textworld_games import check_games

    check_keys(saved, "textworld")
    check_games(Path(saved["games_dir"]), tier=saved["tier"], per_challenge=saved["per_challenge"],
                seed=saved["seed"], challenges=_challenges(saved), limit=saved.get("limit") or None)


def _challenges(saved: dict[str, Any]) -> tuple[str, ...]:
    """The run's TextWorld challenges (every one for runs made before they could be chosen)."""
    return tuple(saved.get("challenges") or CHALLENGES)


def parse_challenges(text: str) -> list[str]:
    """`--challenges coin_collector,cooking`: each one known, none twice, in the order given."""
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    if not chosen:
        raise UsageError(f"--challenges names none; choose among {', '.join(CHALLENGES)}")
    for name in chosen:
        if name not in CHALLENGES:
            raise UnknownNameError("TextWorld challenge", name, CHALLENGES)
    return list(dict.fromkeys(chosen))


GAME_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {"alfworld": check_alfworld, "textworld": check_textworld}


def _prepare_games(games_for: Callable[[dict[str, Any]], list[Any]], saved: dict[str, Any],
                   llm: Model) -> tuple[Items, Solve]:
    memory_folder = games_bench.memory_folder(Path(llm.trace.path).parent) if llm.trace.path else None
    play = games_bench.player(llm, saved, memory_folder)
    return [(game.name, game, "won") for game in games_for(saved)], partial(games_bench.solve, play)


GAME_BENCHMARKS = {
    name: Benchmark(title, max_tokens=400, prepare=partial(_prepare_games, games_for),
                    summarise=lambda saved, rows: games_bench.summarise(rows), artefacts=write_game_figures)
    for name, title, games_for in (
        ("alfworld", lambda saved: "ALFWorld", alfworld_games),
        ("textworld", lambda saved: f"TextWorld tier {saved['tier']}", textworld_games))
}


def add_game_benchmarks(bench_app: typer.Typer, opener: ModelOpener) -> None:
    def run_games(config: dict[str, Any], benchmark: Benchmark, options: RunOptions, *, create_only: bool,
                  check: Callable[[dict[str, Any]], None]) -> None:
        def check_parallel(settings: dict[str, Any]) -> None:
            if not games_bench.in_order(settings):
                return
            if options.cluster is not None:
                raise UsageError("the meta-agent's memory is kept in the run folder on this machine: play a run with "
                                 "memory without --cluster, or use --memory none")
            if options.items_at_once > 1:
                raise UsageError("the meta-agent's memory carries from one game to the next, in order: use "
                                 "--parallel 1 or --memory none")

        if options.resume is None:  # a new run fails before its folder exists; a resumed one once its config is read
            check_parallel(config)
        if create_only:
            if options.resume is not None:
                raise UsageError("--create-only makes a new run folder; it cannot go with --resume")
            check_model(config["model"])  # as opening it would, before the folder that would be played with it
            checked_config(config, None, check)
            with Run.create(options.out, command="bench", config=with_budget(config, options.budget)) as run:
                run.finish({}, status="created")
            typer.echo(run.directory)
            return

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            check_parallel(saved)
            return benchmark.prepare(saved, llm)

        def check_all(saved: dict[str, Any]) -> None:  # a resumed run's memory too, before it is reopened
            check(saved)
            games_bench.check_saved(saved)
            check_parallel(saved)
            if options.resume is not None:
                games_bench.check_run_memory(options.resume, saved)

        options.run_benchmark(opener, benchmark.title, config, max_tokens=benchmark.max_tokens, prepare=prepare,
                              summarise=benchmark.summarise, artefacts=benchmark.artefacts, check=check_all)

    @benchmark_command(bench_app, "alfworld")
    @with_option_group(GameOptions, "game")
    def alfworld(
        per_type: Annotated[int | None, typer.Option(min=1, help="games of each of the six task types")] = 4,
        limit: Annotated[int | None, typer.Option(min=1, help="first N games of that balanced list")] = None,
        data: Annotated[Path | None, typer.Option(
            help="ALFWorld json_2.1.1 folder, or one of its split folders")] = None,
        split: Annotated[str | None, typer.Option(
            help="the split played: valid_seen, valid_unseen, train or valid_train (default: the split folder "
                 "--data names, else valid_seen)")] = None,
        demo: Annotated[bool, typer.Option(
            help="show every agent one solved game of the same task type (kept back from the games played)")] = True,
        *,
        game: GameOptions,
        options: RunOptions,
    ) -> None:
        """ALFWorld games: success per task type and actions per success."""
        # a folder is saved absolute: a run resumed from another directory reads the same games
        config = {"benchmark": "alfworld", "limit": limit} if options.resume else {
            "benchmark": "alfworld", "per_type": per_type, "data": str(data.resolve()) if data else None, "demo": demo,
            "split": data_split(data, split), **game.config(limit, options)}
        run_games(config, GAME_BENCHMARKS["alfworld"], options, create_only=game.create_only, check=check_alfworld)

    @benchmark_command(bench_app, "textworld")
    @with_option_group(GameOptions, "game")
    def textworld(
        tier: Annotated[int, typer.Option(min=1, max=3, help="difficulty tier")] = 1,
        per_challenge: Annotated[int, typer.Option(min=1, help="games of each challenge")] = 3,
        challenges: Annotated[str, typer.Option(
            help="the challenges played, comma-separated (games interleave in this order)")] = ",".join(CHALLENGES),
        limit: Annotated[int | None, typer.Option(min=1, help="first N games")] = None,
        games_dir: Annotated[Path | None, typer.Option(
            help="where generated games are kept (default ~/.cache/noosphere/textworld)")] = None,
        *,
        game: GameOptions,
        options: RunOptions,
    ) -> None:
        """TextWorld games generated from fixed seeds: coin collector, treasure hunter, cooking, custom quests."""
        from noosphere.llm.weights import default_cache_dir

        config = {"benchmark": "textworld", "limit": limit} if options.resume else {
            "benchmark": "textworld", "tier": tier, "per_challenge": per_challenge,
            "challenges": parse_challenges(challenges),
            "games_dir": str((games_dir or default_cache_dir() / "textworld").resolve()),
            **game.config(limit, options)}
        run_games(config, GAME_BENCHMARKS["textworld"], options, create_only=game.create_only, check=check_textworld)

    @bench_app.command("together")
    def together(
        runs: Annotated[list[Path], typer.Argument(help="alfworld or textworld run folders (see --create-only)")],
        no_cache: NoCacheOption = False,
        quiet: QuietOption = False,
        otel: OtelOption = None,
        otel_content: OtelContentOption = False,
        parallel: Annotated[int, typer.Option(min=1, help=(
            "games at once of each run that need not go in order (a meta-agent with memory plays one at a time)"))] = 1,
    ) -> None:
        """Resume several game runs side by side in one process, each playing its games in order, or up to
        --parallel at once where no memory carries between them; their calls are decoded together (the way to run
        the meta-agent's memory ablations, which cannot use --parallel, beside the runs that can)."""
        chosen = [(folder, game_benchmark(folder)) for folder in runs]
        at_once = []
        for folder in runs:  # every run's config, games and memory whole before any is played
            saved = checked_config({}, folder, None)
            GAME_CHECKS[saved["benchmark"]](saved)
            games_bench.check_saved(saved)
            games_bench.check_run_memory(folder, saved)
            at_once.append(1 if games_bench.in_order(saved) else parallel)
        run_together(opener, chosen, no_cache=no_cache, quiet=quiet, otel=otel_export(otel, otel_content),
                     parallel=at_once)


def game_benchmark(folder: Path) -> Benchmark:
    """The game benchmark a run folder holds, or a usage error saying what it holds instead."""
    benchmark = Run.saved_config(folder).get("benchmark")
    if benchmark not in GAME_BENCHMARKS:
        raise UsageError(f"{folder} is a {benchmark or 'non-benchmark'} run; `bench together` resumes "
                         f"{' and '.join(GAME_BENCHMARKS)} runs")
    return GAME_BENCHMARKS[benchmark]
