"""`noosphere bench embodied`: explore MiniGrid and BabyAI houses, then answer questions about what was seen."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from noosphere.bench import embodied as embodied_bench
from noosphere.bench.embodied_figures import write_run_figures
from noosphere.bench.runner import Solve
from noosphere.cli.ask import ModelOpener
from noosphere.cli.bench_run import Items, RunOptions, benchmark_command, member_models, select_items
from noosphere.embodied.crew import Crew
from noosphere.envs.gridworld import MOVES, check_world, require_minigrid
from noosphere.errors import CapabilityError, UsageError
from noosphere.llm import Model
from noosphere.society import Member, Society
from noosphere.society.config import build_society, load_society_spec, saved_society_spec
from noosphere.society.spec import SocietySpec

WORLDS = ("MiniGrid-MultiRoom-N4-S5-v1", "BabyAI-GoToSeqS5R2-v0")
"""The default worlds: four rooms behind closed doors; four rooms of a 2 x 2 grid with objects in them."""
MAX_STEPS = 36
SOCIETY_FILE = Path(__file__).resolve().parents[2] / "examples" / "societies" / "embodied.yaml"
"""The embodied society of a clone (`--society` names another)."""


def embodied_config(system: str, worlds: list[str] | None, episodes: int, first_seed: int, max_steps: int,
                    rounds: int | None, society: Path | None, eqa: bool, limit: int | None,
                    run: dict[str, Any]) -> dict[str, Any]:
    """A new run's settings (`run`: the shared run options' part, model and seed), checked before any folder is
    made: the society file is read now and saved whole."""
    embodied_bench.check_system(system)
    require_minigrid()
    chosen = [check_world(world) for world in (worlds or WORLDS)]
    if len(set(chosen)) != len(chosen):
        raise UsageError("--env names a world twice")
    spec = None
    if system in embodied_bench.SOCIETIES:
        spec = load_society_spec(society or SOCIETY_FILE)
        if rounds is not None:
            try:
                spec = SocietySpec.model_validate({**spec.model_dump(), "rounds": rounds}).check_staff()
            except ValidationError as exc:
                raise UsageError(f"invalid --rounds: {exc.errors()[0]['msg']}") from exc
        if spec.organisation != "interview":
            raise UsageError(f"the embodied society is an interview (observer, first mate, captain); "
                             f"{society or SOCIETY_FILE} declares a {spec.organisation}")
    elif society is not None or rounds is not None:
        raise UsageError("--society and --rounds are for --system society (or society-scored)")
    return {"benchmark": "embodied", "system": system, **run, "worlds": chosen, "episodes": episodes,
            "first_seed": first_seed, "max_steps": max_steps, "eqa": eqa, "limit": limit,
            "rounds": spec.rounds if spec is not None else None,
            "society": spec.model_dump() if spec is not None else None,
            "society_file": str((society or SOCIETY_FILE).resolve()) if spec is not None else None}


def uses_model(saved: dict[str, Any]) -> bool:
    """Whether a run calls its model: a system that decides by it, or questions after each episode (a random or
    frontier explorer with --no-eqa calls none, and its model is not opened)."""
    return saved["system"] in embodied_bench.MODEL_SYSTEMS or bool(saved.get("eqa", True))


def _society_builder(saved: dict[str, Any], llm: Model, opener: ModelOpener) -> embodied_bench.BuildSociety:
    spec = saved_society_spec(saved["society"], "config.json")

    def build() -> tuple[Society, Member]:
        society = build_society(spec, member_models(opener, saved, llm), saved["model"])
        assert spec.leader is not None  # an interview has one (checked when the file was read)
        captain = next(m for m in society.staff if m.name == spec.leader.name)
        return society, captain

    return build


def add_embodied_benchmark(bench_app: typer.Typer, opener: ModelOpener) -> None:
    @benchmark_command(bench_app, "embodied")
    def embodied(
        system: Annotated[str, typer.Option(
            help="random, single, society or frontier; or single-scored / single-scored-raw / society-scored (the "
                 "action by option probabilities: calibrated or not; the captain's, calibrated)")] = "society",
        env: Annotated[list[str] | None, typer.Option(
            help=f"a MiniGrid-* or BabyAI-* world, repeatable (default: {' and '.join(WORLDS)})")] = None,
        episodes: Annotated[int, typer.Option(min=1, help="seeds of each world (episodes per world)")] = 10,
        first_seed: Annotated[int, typer.Option(min=0, help="the first world seed (seeds first..first+N-1)")] = 0,
        max_steps: Annotated[int, typer.Option(min=1, help="actions per episode (S)")] = MAX_STEPS,
        rounds: Annotated[int | None, typer.Option(
            min=0, max=50, help="society: question rounds R, overriding the society file")] = None,
        society: Annotated[Path | None, typer.Option(
            help="society: the society file (default examples/societies/embodied.yaml)")] = None,
        eqa: Annotated[bool, typer.Option(help="answer questions about the house after each episode")] = True,
        limit: Annotated[int | None, typer.Option(min=1, help="first N episodes of the list")] = None,
        *,
        options: RunOptions,
    ) -> None:
        """Embodied exploration and question answering (NLSOM appendix J) in MiniGrid/BabyAI houses: coverage
        after S actions, its curve, EQA accuracy, calls and tokens per action."""
        config = {"benchmark": "embodied", "limit": limit} if options.resume is not None else embodied_config(
            system, env, episodes, first_seed, max_steps, rounds, society, eqa, limit, options.config())

        def load(saved: dict[str, Any]) -> list[embodied_bench.Episode]:
            if saved.get("system") in embodied_bench.SOCIETIES and options.resume is not None:  # before it reopens
                saved_society_spec(saved.get("society"), str(options.resume / "config.json"))
            require_minigrid()
            for world in saved["worlds"]:
                check_world(world)
            return select_items(embodied_bench.episodes(saved["worlds"], saved.get("first_seed", 0),
                                                        saved["episodes"]), saved)

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            scorer = llm  # the model that must score: the run's, or the captain's (the society file names it)
            builder = _society_builder(saved, llm, opener) if saved["system"] in embodied_bench.SOCIETIES else None
            society: Society | None = None
            captain: Member | None = None
            if builder is not None and saved["system"] == "society-scored":
                society, captain = builder()
                scorer = captain.model
            if saved["system"] in embodied_bench.SCORED and not scorer.capabilities.logprobs:
                plain = "society" if saved["system"] in embodied_bench.SOCIETIES else "single"
                raise CapabilityError(scorer.id, f"logprobs (--system {saved['system']} takes the action the model's "
                                                 f"option probabilities favour); use --system {plain}")
            if saved["system"] in embodied_bench.SCORED and scorer.capabilities.first_token_scores:
                plain = "society" if saved["system"] in embodied_bench.SOCIETIES else "single"
                raise CapabilityError(scorer.id, f"scoring the grid's moves (a provider scores only a reply's first "
                                                 f"token, and {' and '.join(repr(m) for m in MOVES[:2])} begin with "
                                                 f"the same word); use a local model, or --system {plain}")
            if saved["system"] in embodied_bench.SCORED:  # every step scores the grid's moves: refused before a run
                scorer.check_scoring(MOVES)
            if society is not None and captain is not None:  # its captain decides last: checked before any episode
                Crew(society, captain=captain, max_steps=saved["max_steps"], scored=True)
            setup = embodied_bench.Setup(
                saved["system"], saved["max_steps"], saved["seed"], llm.trace, llm if uses_model(saved) else None,
                eqa=saved.get("eqa", True), society=builder)
            return [(e.id, e, None) for e in load(saved)], partial(embodied_bench.solve, setup)

        def title(saved: dict[str, Any]) -> str:
            return f"Embodied exploration and EQA ({saved['max_steps']} actions)"

        options.run_benchmark(opener, title, config, max_tokens=300, prepare=prepare,
                              summarise=embodied_bench.summarise, artefacts=write_run_figures, check=load,
                              uses_model=uses_model)
