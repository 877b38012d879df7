"""What every benchmark command shares: its options, and opening, scoring and reporting a run."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.console import Console

from noosphere.bench import averages, run_items, write_report
from noosphere.bench.calibration import calibrate_run
from noosphere.bench.remote import run_items_on_cluster
from noosphere.bench.runner import ScoredRow, Solve, load_done, progress_bars
from noosphere.bench.saved import played
from noosphere.cli.ask import (
    BudgetOption,
    ModelOpener,
    ModelOption,
    NoCacheOption,
    OutOption,
    SeedOption,
    open_cache,
    parse_budget,
)
from noosphere.cli.cluster_options import (
    ClusterChoice,
    ClusterOption,
    ReplicasOption,
    WorkersOption,
    items_at_once,
    on_cluster,
)
from noosphere.cli.otel_cmd import OtelContentOption, OtelExport, OtelOption, otel_export
from noosphere.cli.signals import terminate_as_interrupt
from noosphere.datafiles import describe
from noosphere.errors import BudgetExceededError, UsageError
from noosphere.llm import DEFAULT_MODEL, Budget, Capabilities, Model, Settings, UsageLedger
from noosphere.llm.cache import CallCache, CarriedCache
from noosphere.llm.messages import Message
from noosphere.llm.registry import check_deterministic
from noosphere.llm.types import Reply, Request
from noosphere.printable import markup_safe
from noosphere.replay import RUN_CACHE
from noosphere.runs import Run
from noosphere.trace import Trace

ResumeOption = Annotated[Path | None, typer.Option(help="resume a killed benchmark from its run folder")]
QuietOption = Annotated[bool, typer.Option(help="no progress bar")]
ParallelOption = Annotated[int, typer.Option(
    min=1, help="items scored at once; the batched local backend decodes their calls together")]
OffsetOption = Annotated[int, typer.Option(
    min=0, help="leave out the first N items (those a prompt was tuned on); --limit counts from there")]
DeterministicOption = Annotated[bool, typer.Option(
    help="decode every call alone, from an empty cache, so that answers do not depend on --parallel (the embedded "
         "backend batches calls by default, which moves greedy outputs in their last digits); slower, saved with "
         "the run")]


T = TypeVar("T")
Items = list[tuple[str, Any, Any]]
Prepare = Callable[[dict[str, Any], Model], tuple[Items, Solve]]
Summarise = Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any]]
Artefacts = Callable[[Path, list[dict[str, Any]]], list[Path]]
Check = Callable[[dict[str, Any]], object]
"""Reads and validates a run's data from its config, before the run folder is made (or reopened)."""
UsesModel = Callable[[dict[str, Any]], bool]
"""Whether a run, by its config, calls its model at all (`bench embodied --system random --no-eqa` does not)."""


class SavedBenchmark(BaseModel):
    """What reopening a benchmark run needs of its `config.json`: without it, the folder is not a benchmark run."""

    model_config = ConfigDict(extra="allow", strict=True)
    benchmark: str
    model: str
    seed: int


class SavedSelection(BaseModel):
    """The item selection that benchmarks share, as their options take it (`select_items`, the data loaders):
    hand-edited to another type, it was a traceback while the items were loaded; a limit below 1 scored and reported
    fewer items, silently."""

    model_config = ConfigDict(extra="allow", strict=True)
    limit: int | None = Field(None, ge=1)
    offset: int | None = Field(None, ge=0)
    data: str | None = None


def check_saved(schema: type[BaseModel], saved: dict[str, Any], benchmark: str) -> BaseModel:
    """A run's saved config as `schema` (its settings' types and bounds, as the options take them) reads it: a
    hand-edited one, or one written by another version, is one line before the model opens."""
    try:
        return schema.model_validate(saved)
    except ValidationError as exc:
        raise UsageError(f"the run's config.json: {describe(exc, 'a benchmark config')} (edited by hand, or written "
                         f"by another version of noosphere): correct it, or make a new run with `noosphere bench "
                         f"{benchmark}`") from None


def select_items(items: list[T], saved: dict[str, Any]) -> list[T]:
    """The items a run scores: after its `offset` (items measured before, a prompt tuned on them), its `limit`."""
    offset, limit = saved.get("offset") or 0, saved.get("limit")
    if offset and offset >= len(items):
        raise UsageError(f"--offset {offset} leaves none of the {len(items)} items")
    return items[offset:offset + limit] if limit else items[offset:]


def checked_config(config: dict[str, Any], resume: Path | None, check: Check | None) -> dict[str, Any]:
    """The config a run will have (a resumed run's saved one), with its data validated by `check`: a malformed
    data file fails here, before any folder is made or any result rewritten."""
    saved = Run.saved_config(resume) if resume is not None else config
    if resume is not None:
        saved = {**saved, **grown_limit(config, saved)}  # its data checked for the items the run will have
        try:
            SavedBenchmark.model_validate(saved)
        except ValidationError as exc:
            raise UsageError(f"{resume} is not a benchmark run that can be resumed (config.json: "
                             f"{describe(exc, 'a benchmark config')})") from None
        asked = config.get("benchmark")
        if asked is not None and saved["benchmark"] != asked:  # its items would join another benchmark's rows
            raise UsageError(f"{resume} is a run of {saved['benchmark']}, not {asked}: resume it with "
                             f"`noosphere bench {saved['benchmark']} --resume {resume}`")
        check_saved(SavedSelection, saved, saved["benchmark"])
    if saved.get("deterministic"):
        check_deterministic(saved["model"])
    if check is not None:
        check(saved)
    return saved


def warn(text: str) -> None:
    """A line on stderr that does not stop the command (a line of results skipped, say)."""
    Console(stderr=True, emoji=False).print(f"warning: {markup_safe(text)}", highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class RunOptions:
    """The options every benchmark command takes, as one value: `with_run_options` adds them to a command."""

    model: str = DEFAULT_MODEL
    seed: int = 0
    out: Path = Path("runs")
    resume: Path | None = None
    no_cache: bool = False
    budget: str | None = None
    quiet: bool = False
    parallel: int = 1
    deterministic: bool = False
    cluster: str | None = None
    workers: int | None = None
    replicas: str = "auto"
    otel: str | None = None
    otel_content: bool = False

    @property
    def items_at_once(self) -> int:
        """Items that may be scored together: `--parallel`, times the workers on a cluster."""
        return items_at_once(self.parallel, ClusterChoice.of(self.cluster, self.workers, self.replicas))

    def config(self) -> dict[str, Any]:
        """What a new run saves of them in its config (a resumed run keeps its own): the model, the seed, and
        whether decoding is deterministic (saved only when it is, so older runs' configs read the same)."""
        return {"model": self.model, "seed": self.seed, **({"deterministic": True} if self.deterministic else {})}

    def run_benchmark(self, opener: ModelOpener, title: str | Callable[[dict[str, Any]], str],
                      config: dict[str, Any], *, max_tokens: int, prepare: Prepare, summarise: Summarise,
                      artefacts: Artefacts | None = None, check: Check | None = None,
                      uses_model: UsesModel | None = None) -> None:
        """`run_benchmark` with these options."""
        cluster = ClusterChoice.of(self.cluster, self.workers, self.replicas)
        run_benchmark(opener, title, config, out=self.out, resume=self.resume, no_cache=self.no_cache,
                      quiet=self.quiet, max_tokens=max_tokens, prepare=prepare, summarise=summarise,
                      parallel=self.parallel, artefacts=artefacts, budget=self.budget, check=check, cluster=cluster,
                      otel=otel_export(self.otel, self.otel_content), uses_model=uses_model)


RUN_OPTION_TYPES: dict[str, Any] = {
    "model": ModelOption, "seed": SeedOption, "out": OutOption, "resume": ResumeOption, "no_cache": NoCacheOption,
    "budget": BudgetOption, "quiet": QuietOption, "parallel": ParallelOption, "deterministic": DeterministicOption,
    "cluster": ClusterOption, "workers": WorkersOption, "replicas": ReplicasOption, "otel": OtelOption,
    "otel_content": OtelContentOption,
}
"""The command-line option of each field of `RunOptions`."""

Command = TypeVar("Command", bound=Callable[..., Any])


RESUME_TAKES = frozenset({"resume", "no_cache", "quiet", "budget", "parallel", "cluster", "workers", "replicas",
                          "otel", "otel_content"})
"""The options that may change how a resumed run goes on; every other keeps the value the run was made with, but
`--limit`, which may grow (`grown_limit`)."""
SAVED_AS: dict[str, str] = {"env": "worlds", "category": "categories", "match_run": "matched_run"}
"""Options a run's config holds under another name (`bench embodied --env`: its `worlds`; `bench bfcl --category`:
its `categories`; `bench gsm8k --match-run`: its `matched_run`)."""
SOCIETY_SETTINGS = ("rounds", "rights", "vote")
"""`bench gsm8k`'s options that override the society file's settings: the run saves the society they made, whole,
and not the options (`bench embodied` saves its `rounds` beside the society too)."""


def with_run_options(command: Command) -> Command:
    """A benchmark command with the shared run options: `command` takes its own options and `options: RunOptions`;
    the command typer sees takes its own options followed by every run option (`--model`, `--seed`, `--out`,
    `--resume`, `--no-cache`, `--budget`, `--quiet`, `--parallel`, `--deterministic`, `--cluster`, `--workers`,
    `--replicas`), gathered into `options`. `benchmark_command` registers a command with them. With `--resume`,
    an option given on the command line with another value than the run's own is refused (`RESUME_TAKES` aside; a
    larger `--limit` grows the run)."""
    grouped = with_option_group(RunOptions, "options", RUN_OPTION_TYPES)(command)

    @functools.wraps(grouped)
    def checked(context: typer.Context, **given: Any) -> Any:
        if given.get("resume") is not None:
            _refuse_other_settings(context, given["resume"], given)
        return grouped(**given)

    own = inspect.signature(grouped)
    checked.__signature__ = own.replace(parameters=[  # type: ignore[attr-defined]
        inspect.Parameter("context", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        *own.parameters.values()])
    checked.__annotations__ = {"context": typer.Context, **grouped.__annotations__}
    return checked  # type: ignore[return-value]


def _refuse_other_settings(context: typer.Context, resume: Path, given: dict[str, Any]) -> None:
    """A resumed run keeps its settings: `--system society` on a base run would be ignored, silently. `--limit`
    may grow the run (`_limit_difference`): its first items are scored already, and the rest join them."""
    try:
        saved = Run.saved_config(resume)
    except Exception:  # told by the resume itself, in its own words
        return

    def typed(name: str) -> bool:
        source = context.get_parameter_source(name)
        return source is not None and source.name == "COMMANDLINE"

    kept = played(saved)  # with what each key it lacks stands for
    differing = [difference for name, value in given.items() if name not in RESUME_TAKES and typed(name)
                 for difference in _differences(name, value, kept, resume)]
    if differing:
        raise UsageError(f"{resume} keeps the settings it was made with, and {'; '.join(differing)}: resume it "
                         "without them, or start a new run")


def _differences(name: str, given: Any, kept: dict[str, Any], resume: Path) -> list[str]:
    """How the option `name`, given `given` on the command line, differs from the run's own setting in its config
    `kept` (with the values an absent key stands for): a line for each difference, none where it is the same, or
    where the config holds nothing the option sets."""
    flag = f"--{name.replace('_', '-')}"
    if name == "out":  # not saved: the run's folder is where it is, and its results stay there
        here = resume.resolve().parent
        return [] if Path(given).resolve() == here else [f"--out {given} (the run's folder is in {here})"]
    if name == "set_":
        return _society_differences(given, kept)
    if name == "limit" and given is not None:
        return _limit_difference(given, kept.get("limit"))
    if name in SOCIETY_SETTINGS and name not in kept and "society" in kept:
        society = kept["society"]
        if not isinstance(society, dict):
            return [f"{flag} {_given(given)} (the run has no society)"]
        return [] if _same_setting(name, given, society.get(name)) else [
            f"{flag} {_given(given)} (the run has {_shown(name, society.get(name))})"]
    if name == "weighted" and "weights" in kept:  # `--weighted` is `--weights p-true`; without it, says nothing
        weights = kept["weights"]
        return [] if not given or weights == "p-true" else [f"--weighted (the run has --weights {weights})"]
    if name == "category" and isinstance(given, list | tuple):  # each category once, in the order first given
        given = list(dict.fromkeys(given))
    if name == "ablation" and isinstance(given, list | tuple):  # saved sorted: the ablations are a set
        given = sorted(given)
    key = _saved_as(name, kept)
    if key not in kept or _same_setting(name, given, kept[key]):
        return []
    return [f"{flag} {_given(given)} (the run has {_shown(name, kept[key])})"]


def _limit_difference(given: int, saved: Any) -> list[str]:
    """`--limit N` on a resume may grow the run (`grown_limit`): the items are the first N of a fixed selection, so
    the run's rows stay its first items and the new ones come after them. A smaller limit would leave scored rows
    outside the run, and a run made without a limit scores every item already."""
    if saved is None:
        return [f"--limit {given} (the run has no limit: it scores every item)"]
    if not isinstance(saved, int) or given < saved:
        return [f"--limit {given} (the run has {saved}; a resume may grow a run's limit, never shrink it)"]
    return []


def grown_limit(config: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """The settings a resume changes: `limit`, where the command line gives a larger one than the run's own
    (refused before, when it is smaller or the run has none)."""
    given, own = config.get("limit"), saved.get("limit")
    if isinstance(given, int) and isinstance(own, int) and given > own:
        return {"limit": given}
    return {}


def _society_differences(pairs: list[str], kept: dict[str, Any]) -> list[str]:
    """`--set KEY=VALUE` on a resume: each against the setting of the society the run saved, read as a new run
    reads it (`--set rounds=2` is the run's `rounds: 2`)."""
    from noosphere.society.config import society_settings
    from noosphere.society.spec import SocietySpec

    society = kept.get("society")
    differing = []
    for pair in pairs:
        [(key, value)] = society_settings([pair]).items()
        if not isinstance(society, dict):
            differing.append(f"--set {pair} (the run has no society)")
            continue
        # the value as the run would have saved it (a member's defaults filled in); one the run could not have
        # is compared as it was given, and differs from the run's
        with contextlib.suppress(ValidationError, ValueError, TypeError):
            value = SocietySpec.model_validate({**society, key: value}).model_dump()[key]
        if key not in society or not _same_setting(key, value, society[key]):
            differing.append(f"--set {pair} (the run has {key}={_shown(key, society.get(key))})")
    return differing


def _same_setting(name: str, given: Any, saved: Any) -> bool:
    if name == "graph" and isinstance(given, Path):  # the run saved the graph the file held, whole
        from noosphere.bench.games import KNOWN_AGENTS
        from noosphere.metaagent import TransitionGraph

        # read as a new run reads it: a misspelt agent is told as one, not as an agent without edges
        return isinstance(saved, dict) and TransitionGraph.from_file(given, known=KNOWN_AGENTS).to_data() == saved
    if isinstance(given, Path):
        return isinstance(saved, str) and given.resolve() == Path(saved).resolve()
    if isinstance(given, str) and isinstance(saved, list | tuple):  # `--challenges a,b`, saved as a list
        given = [part.strip() for part in given.split(",") if part.strip()]
    if isinstance(given, list | tuple) and isinstance(saved, list | tuple):
        return [str(v) for v in given] == [str(v) for v in saved]
    return bool(given == saved or str(given) == str(saved))


def _saved_as(name: str, saved: dict[str, Any]) -> str:
    """The key of a run's config that holds the option `name`: `--society` is the file a run read (`society_file`),
    where its `society` is the society that file declared, saved whole."""
    if name == "society" and isinstance(saved.get("society"), dict) and "society_file" in saved:
        return "society_file"
    return SAVED_AS.get(name, name)


def _given(value: Any) -> str:
    """An option's value as the refusal shows it: a repeated option's values joined by commas."""
    return ",".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)


def _shown(name: str, saved: Any) -> str:
    """A saved setting as the refusal shows it: in one line, as the option would give it."""
    if name == "graph":
        return "the graph saved in its config.json" if saved else "the default graph"
    if isinstance(saved, list | tuple):
        return ",".join(str(v) for v in saved)
    return "none" if saved is None else str(saved)


def benchmark_command(bench_app: typer.Typer, name: str) -> Callable[[Command], Command]:
    """Registers a benchmark command as `bench_app`'s `name`, with the shared run options (`with_run_options`):

        @benchmark_command(bench_app, "mine")
        def mine(limit: LimitOption = None, *, options: RunOptions) -> None:
            options.run_benchmark(opener, "Mine", {"benchmark": "mine", **options.config()}, ...)

    Further option groups (`with_option_group`) go below it."""
    def register(command: Command) -> Command:
        return bench_app.command(name)(with_run_options(command))

    return register


def with_option_group(group: type, parameter: str, types: dict[str, Any] | None = None,
                      **defaults: Any) -> Callable[[Command], Command]:
    """Options that several commands share, as one frozen dataclass `group`: the decorated command takes its own
    options and `parameter: group`; the command typer sees takes its own options followed by one option per
    field of `group`, typed by `types[field]` or else by the field's own annotation (an `Annotated[...,
    typer.Option(...)]`), each defaulting to the field's default unless `defaults` gives this command another.
    Groups stack: `with_run_options` is the group every benchmark command takes."""
    group_hints = get_type_hints(group, include_extras=True)
    names = [field.name for field in fields(group)]
    shared = [inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY,
                                default=defaults.get(field.name, field.default),
                                annotation=(types or {}).get(field.name, group_hints[field.name]))
              for field in fields(group)]

    def decorate(command: Command) -> Command:
        hints = get_type_hints(command, include_extras=True)
        own = [given.replace(annotation=hints.get(given.name, given.annotation))
               for given in inspect.signature(command).parameters.values() if given.name != parameter]

        @functools.wraps(command)
        def with_group(**given: Any) -> Any:
            value = group(**{name: given.pop(name) for name in names})
            return command(**given, **{parameter: value})

        parameters = [*own, *shared]
        with_group.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        with_group.__annotations__ = {given.name: given.annotation for given in parameters}
        return with_group  # type: ignore[return-value]

    return decorate


def model_options(saved: dict[str, Any]) -> dict[str, Any]:
    """What a run's saved config asks of the backends it opens, beyond the id and the settings."""
    return {"deterministic": True} if saved.get("deterministic") else {}


def member_models(opener: ModelOpener, saved: dict[str, Any], llm: Model) -> Callable[[str], Model]:
    """The model of each member of a run's society, by id: the run's own model `llm` where a member names the run's
    model, another opened beside it, reporting into the same trace, ledger and cache, with the same settings and
    the run's backend options (`--deterministic` reaches every member)."""
    def open_member(model_id: str) -> Model:
        if model_id == saved["model"]:
            return llm
        return opener(model_id, trace=llm.trace, ledger=llm.ledger, cache=llm.cache, settings=llm.settings,
                      **model_options(saved))

    return open_member


def solve_on_worker(opener: ModelOpener, prepare: Prepare, saved: dict[str, Any], max_tokens: int, no_cache: bool,
                    options: dict[str, Any], trace: Trace, ledger: UsageLedger, *, uses_model: bool = True) -> Solve:
    """A benchmark's `solve` on a cluster's worker: its model opened there (or over the replica of its node),
    reporting into the worker's trace and ledger as the driver's model would into the run's; none is opened for a
    run that calls none (`uses_model`)."""
    settings = Settings(seed=saved["seed"], max_tokens=max_tokens)
    llm = (opener(saved["model"], trace=trace, ledger=ledger, cache=open_cache(no_cache), settings=settings, **options)
           if uses_model else unopened_model(saved["model"], trace=trace, ledger=ledger, settings=settings))
    return prepare(saved, llm)[1]


class UnopenedBackend:
    """The backend of a run's model that the run never calls (a random explorer that answers no questions): its
    id, for the trace and the report, and no weights found, verified or loaded, no provider asked. A call is a bug
    in the benchmark's `uses_model`, said as such."""

    native_tools = False
    max_concurrency = 1
    context_window: int | None = None
    in_process = True

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.capabilities = Capabilities()

    @property
    def fingerprint(self) -> str:
        return f"unopened:{self.model_id}"

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        return None

    async def generate(self, request: Request) -> Reply:
        raise RuntimeError(f"{self.model_id} was not opened: this run's system calls no model")


def unopened_model(model_id: str, *, trace: Trace, ledger: UsageLedger, settings: Settings) -> Model:
    """The run's model, not opened (`UnopenedBackend`), reporting into its trace and ledger."""
    return Model(UnopenedBackend(model_id), trace=trace, ledger=ledger, settings=settings)


def run_benchmark(opener: ModelOpener, title: str | Callable[[dict[str, Any]], str], config: dict[str, Any], *,
                  out: Path, resume: Path | None,
                  no_cache: bool, quiet: bool, max_tokens: int, prepare: Prepare, summarise: Summarise,
                  parallel: int = 1, artefacts: Artefacts | None = None, budget: str | None = None,
                  check: Check | None = None, cluster: ClusterChoice | None = None,
                  otel: OtelExport | None = None, uses_model: UsesModel | None = None) -> None:
    """Open (or resume) the run, score the items, write the report and any `artefacts` (figures, say) into
    the run folder. A resumed run keeps its saved config, which a callable `title` is made from, and its
    budget unless `budget` (`--budget`) gives it a new one. `check` validates the data first. On a `cluster`,
    the items are scored by its workers, `parallel` at a time each; the cluster is joined before the folder
    is made (an address where none answers leaves no folder). A run that calls no model (`uses_model` of its
    config false) opens none: no weights are found or verified, no replica started."""
    benchmark = Benchmark(title if callable(title) else lambda saved: title, max_tokens, prepare, summarise, artefacts,
                          uses_model)
    limits = parse_budget(budget)
    changes = grown_limit(config, Run.saved_config(resume)) if resume is not None else {}
    saved = checked_config(config, resume, check)
    models = [saved["model"]] if benchmark.calls_model(saved) else []
    with on_cluster(cluster, opener, models, model_options(saved)) as session:
        run = (Run.resume(resume, budget=Budget(**limits) if limits else None, changes=changes)
               if resume is not None
               else Run.create(out, command="bench", config=with_budget(config, budget)))
        with run, terminate_as_interrupt():
            if otel is not None:  # the run's spans, as it goes (`--otel`)
                otel.attach(run)
            try:
                items, solve = _prepare(session.opener if session else opener, run, benchmark, open_cache(no_cache))
            except UsageError:  # refused before any item: no new folder is left behind, a resumed one is as it was
                run.withdraw()
                raise
            spent: BudgetExceededError | None = None
            try:
                if session is None:
                    asyncio.run(run_items(run, items, solve, show_progress=not quiet, parallel=parallel, warn=warn))
                else:
                    session.announce(run.trace)
                    # shipped to each worker and run there once: everything it holds must pickle
                    open_solve = partial(solve_on_worker, session.opener, benchmark.prepare, run.config, max_tokens,
                                         no_cache, model_options(run.config),
                                         uses_model=benchmark.calls_model(run.config))
                    asyncio.run(run_items_on_cluster(run, items, open_solve, session.cluster, workers=session.workers,
                                                     per_worker=parallel, show_progress=not quiet, warn=warn))
                stopped = None
            except KeyboardInterrupt:  # Ctrl-C or a time limit: report what is done; --resume goes on later
                stopped = "interrupted"
            except BudgetExceededError as exc:  # the items left stay unscored: --resume --budget goes on with more
                stopped, spent = "budget spent", exc
            _report(run, benchmark, items, stopped)
    if spent is not None:
        raise spent
    if stopped is not None:
        raise typer.Exit(130)


def with_budget(config: dict[str, Any], budget: str | None) -> dict[str, Any]:
    """A new run's config with the `--budget` it was given (saved, so that a resume keeps to it)."""
    limits = parse_budget(budget)
    return {**config, "budget": limits} if limits else config


@dataclass(frozen=True)
class Benchmark:
    """How a run of one benchmark is scored and reported, from its saved config alone: what it takes to
    resume it, on its own or side by side with other runs."""

    title: Callable[[dict[str, Any]], str]
    max_tokens: int
    prepare: Prepare
    summarise: Summarise
    artefacts: Artefacts | None = None
    uses_model: UsesModel | None = None
    """Whether a run calls its model, by its config (None: every run does); one that does not opens none."""

    def calls_model(self, saved: dict[str, Any]) -> bool:
        return self.uses_model is None or self.uses_model(saved)


def run_together(opener: ModelOpener, runs: list[tuple[Path, Benchmark]], *, no_cache: bool, quiet: bool,
                 otel: OtelExport | None = None, parallel: Sequence[int] | None = None) -> None:
    """Resume several runs in one event loop, each scoring its items one at a time and in order, or
    `parallel[i]` at a time for run i. Their
    calls share the process's model and so its batch engine: runs whose items must go in order (a
    meta-agent whose memory carries from game to game) keep its slots busy together, where run one
    after another each would leave most of them idle. A run that fails (to prepare, to score, to
    report) is finished as failed without stopping the others; the first such error is raised last."""
    folders = [folder.resolve() for folder, _ in runs]
    at_once = list(parallel) if parallel is not None else [1] * len(runs)
    if len(at_once) != len(runs) or min(at_once, default=1) < 1:
        raise UsageError(f"parallel: one count of at least 1 per run ({len(runs)}), not {at_once}")
    repeated = sorted({str(folder) for folder in folders if folders.count(folder) > 1})
    if repeated:
        raise UsageError(f"a run can be played only once at a time; given twice: {', '.join(repeated)}")
    errors: list[Exception] = []
    cache = open_cache(no_cache)  # one for every run: identical calls in flight at once are generated once
    with terminate_as_interrupt():
        prepared = []
        opened: list[Run] = []
        reached = 0  # the runs whose preparing began
        try:
            for folder, _ in runs:  # every run reopened (and so held) before any model loads or any is played
                try:
                    opened.append(Run.resume(folder))
                    own_cache = opened[-1].directory / RUN_CACHE
                    if cache is not None and own_cache.exists():  # a damaged one refused here, as `--resume` does
                        CallCache(own_cache).close()
                except BaseException:  # one in use, say: those opened already are left as they were
                    for run in opened:
                        run.withdraw()
                    raise
            for run, (_, benchmark), count in zip(opened, runs, at_once, strict=True):
                reached += 1
                if otel is not None:
                    otel.attach(run)
                try:
                    prepared.append((run, benchmark, *_prepare(opener, run, benchmark, cache), count))
                except UsageError as exc:  # refused before any item, as `--resume` is: the folder is left as it was
                    run.withdraw()
                    errors.append(exc)
                except Exception as exc:
                    _fail(run, exc, errors)
        except KeyboardInterrupt:  # stopped while models load: the runs reached say so, the others are as they were
            for index, run in enumerate(opened):
                if run.result is None:
                    if index < reached:
                        run.finish({}, status="interrupted")
                    else:
                        run.withdraw()
            raise typer.Exit(130) from None

        bars = progress_bars(not quiet)

        ended: dict[int, Exception | None] = {}
        """Each run's outcome as it ends (None: scored whole), kept through an interruption of the others."""

        async def score(index: int, run: Run, items: Items, solve: Solve, count: int) -> None:
            try:  # each bar is named by the run's folder and the one it is in (a suite's configuration)
                await run_items(run, items, solve, progress=bars, label=f"{run.directory.parent.name}/{run.run_id}",
                                warn=warn, parallel=count)
            except Exception as exc:  # this run fails; the others play on
                ended[index] = exc
                return
            ended[index] = None

        async def score_all() -> None:
            await asyncio.gather(*(score(index, run, items, solve, count)
                                   for index, (run, _, items, solve, count) in enumerate(prepared)))

        try:
            with bars:
                asyncio.run(score_all())
            interrupted = False
        except KeyboardInterrupt:
            interrupted = True
        outcomes = [ended.get(index) for index in range(len(prepared))]
        try:
            for (run, benchmark, items, _, _), error in zip(prepared, outcomes, strict=True):
                try:
                    if isinstance(error, BudgetExceededError):  # its budget stopped this run: a partial report
                        _report(run, benchmark, items, "budget spent")
                        errors.append(error)
                        continue
                    if error is not None:
                        raise error
                    # a run whose items were all scored before the interruption is complete, not partial
                    _report(run, benchmark, items,
                            "interrupted" if interrupted and not _all_scored(run, items) else None)
                except Exception as exc:
                    _fail(run, exc, errors)
        except KeyboardInterrupt:  # stopped while the reports are written: the runs not reported yet say so
            for run, *_ in prepared:
                if run.result is None:
                    run.finish({}, status="interrupted")
            raise typer.Exit(130) from None
    if interrupted:
        raise typer.Exit(130)
    if errors:
        raise errors[0]


def _all_scored(run: Run, items: Items) -> bool:
    done = load_done(run.directory / "items.jsonl", row=ScoredRow)
    return all(item_id in done for item_id, _, _ in items)


def _fail(run: Run, error: Exception, errors: list[Exception]) -> None:
    run.finish({}, status="failed", error=f"{type(error).__name__}: {error}")
    errors.append(error)


def _prepare(opener: ModelOpener, run: Run, benchmark: Benchmark, cache: CallCache | None) -> tuple[Items, Solve]:
    saved = run.config
    if cache is not None:
        # the run folder's own copy of its calls: kept with the results, a resume on another machine replays them
        cache = CarriedCache(run.directory / RUN_CACHE, cache)
    settings = Settings(seed=saved["seed"], max_tokens=benchmark.max_tokens)
    llm = (opener(saved["model"], trace=run.trace, ledger=run.ledger, cache=cache, settings=settings,
                  **model_options(saved))
           if benchmark.calls_model(saved) else unopened_model(saved["model"], trace=run.trace, ledger=run.ledger,
                                                               settings=settings))
    return benchmark.prepare(saved, llm)


def _report(run: Run, benchmark: Benchmark, items: Items, stopped: str | None) -> None:
    """Write the report of the items scored so far (all of them, unless the run `stopped` early: "interrupted"
    or "budget spent") and finish the run."""
    done = load_done(run.directory / "items.jsonl", row=ScoredRow)  # a bad line was told when the session began
    rows = [done[item_id] for item_id, _, _ in items if item_id in done]
    title = benchmark.title(run.config) + (f" (partial: {stopped})" if stopped else "")
    system = run.config.get("system")
    # where items carry a confidence: ECE, Brier, AUROC and reliability.png next to report.md
    calibration = calibrate_run(run.directory, rows, f"{title} · {system}" if system else title)
    metrics = {**benchmark.summarise(run.config, rows), **calibration.metrics}
    report = write_report(run, title, metrics, averages(rows), rows=len(rows))
    written = [*calibration.written,
               *(benchmark.artefacts(run.directory, rows) if benchmark.artefacts is not None else [])]
    run.finish({"report": report}, status=stopped.split()[0] if stopped else "ok")
    console = Console(emoji=False)  # the metrics may name labels of the data: shown as text, not markup
    console.print(markup_safe(json.dumps({k: v for k, v in metrics.items() if k not in ("confusion", "calibration")})))
    console.print(f"report: {markup_safe(run.directory / 'report.md')}", highlight=False)
    if calibration.warning:
        console.print(f"note: {markup_safe(calibration.warning)}", highlight=False, soft_wrap=True)
    for path in written:
        console.print(f"wrote: {markup_safe(path)}", highlight=False)

