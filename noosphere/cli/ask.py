"""`noosphere ask`: run one query through a system and print the answer, confidence and run folder."""

from __future__ import annotations

import asyncio
import contextlib
import math
import mimetypes
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer
from rich.console import Console

from noosphere.cli.cluster_options import ClusterChoice, ClusterOption, ReplicasOption, on_cluster
from noosphere.cli.otel_cmd import OtelContentOption, OtelOption, otel_export
from noosphere.cli.people import (
    HumanOption,
    ResumeAskOption,
    check_channel,
    open_session,
    saved_society_run,
    tell_stopped,
)
from noosphere.cli.signals import terminate_as_interrupt
from noosphere.errors import CapabilityError, UnknownNameError, UsageError
from noosphere.human import HumanStopped
from noosphere.llm import DEFAULT_MODEL, Budget, CallCache, Model, Settings
from noosphere.llm.usage import UsageLedger
from noosphere.llm.weights import default_cache_dir
from noosphere.observation import Observation
from noosphere.printable import markup_safe
from noosphere.runs import Run
from noosphere.society.config import load_society_spec
from noosphere.systems import SYSTEMS, get_system
from noosphere.systems.ctm import ask_ctm
from noosphere.systems.society import ask_society
from noosphere.tools import builtin_tools
from noosphere.trace import Trace
from noosphere.workspace.scores import SCORE_SOURCES


class ModelOpener(Protocol):
    """`open_model`, or a stand-in for it (tests); `options` go to the backend (`deterministic=True`)."""

    def __call__(self, model_id: str, *, trace: Trace | None = ..., cache: CallCache | None = ...,
                 ledger: UsageLedger | None = ..., settings: Settings | None = ..., **options: Any) -> Model: ...


ModelOption = Annotated[str, typer.Option("--model", "-m", help="model id; see `noosphere models`")]
SeedOption = Annotated[int, typer.Option(help="seed for sampling and every random choice")]
OutOption = Annotated[Path, typer.Option("--out", help="folder that receives the run folder")]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="bypass the persistent call cache")]
BudgetOption = Annotated[str | None, typer.Option(
    help="what the whole run may spend, e.g. calls=500,tokens=200000,cost=1.5 (saved with the run; on a resume, "
         "limits given here replace those saved)")]
BUDGET_LIMITS = {"calls": "max_calls", "tokens": "max_tokens", "cost": "max_cost_usd"}


def parse_budget(text: str | None) -> dict[str, float] | None:
    """`--budget calls=500,cost=1.5` as the run's config saves it (the fields of `Budget`)."""
    if not text:
        return None
    limits: dict[str, float] = {}
    for part in text.split(","):
        name, value = _named(part, "--budget")
        if name not in BUDGET_LIMITS:
            raise UnknownNameError("budget limit", name, BUDGET_LIMITS)
        if BUDGET_LIMITS[name] in limits:
            raise UsageError(f"--budget names {name} twice")
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"--budget {name} must be a number, not {value!r}") from None
        if not math.isfinite(number) or number <= 0 or (name != "cost" and not number.is_integer()):
            raise UsageError(f"--budget {name} must be a positive {'number' if name == 'cost' else 'whole number'}")
        limits[BUDGET_LIMITS[name]] = number if name == "cost" else int(number)
    return limits


def open_cache(no_cache: bool) -> CallCache | None:
    return None if no_cache else CallCache(default_cache_dir() / "calls.sqlite")


def _named(spec: str, option: str) -> tuple[str, str]:
    name, sep, value = spec.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"{option} expects NAME=VALUE, got {spec!r}")
    return name.strip(), value


def parse_observation(texts: list[str], media: list[str], kinds: list[str | None] | None = None) -> Observation:
    """`--text NAME=TEXT` and `--image/--audio [NAME=]PATH` into named views, each name once (a view given a name
    twice would replace the first silently, or, a text and a media view, make two processors of one name). Each
    media file must be what its option says, `kinds` ("image", "audio", or None for either: a resumed run's)."""
    text_views: dict[str, str] = {}
    media_views: dict[str, str] = {}
    for spec in texts:
        name, value = _named(spec, "--text")
        _check_view_name(name, spec, text_views, media_views)
        text_views[name] = value
    for spec, kind in zip(media, kinds or [None] * len(media), strict=True):
        name, sep, path = spec.partition("=")
        name, path = (name.strip(), path) if sep else (Path(spec).stem, spec)
        _check_view_name(name, spec, text_views, media_views)
        _check_media(path, kind)
        media_views[name] = path
    return Observation.of(text_views, media_views)


def _check_media(path: str, kind: str | None) -> None:
    """A file of the kind its option says, by its name as `MediaPart` reads it (a text file was sent as an image,
    an mp3 given to --image became an audio view), with something in it."""
    if not Path(path).is_file():
        raise UsageError(f"no file at {path}")
    media_type = mimetypes.guess_type(Path(path).name)[0]
    wanted = (kind,) if kind else ("image", "audio")
    if media_type is None or media_type.split("/")[0] not in wanted:
        said = f"its name says {media_type}" if media_type else "its name does not say what it is"
        raise UsageError(f"{path} is no {' or '.join(wanted)} file ({said}): "
                         f"give {'--' + kind if kind else '--image or --audio'} a file such as "
                         f"{'.wav, .mp3' if kind == 'audio' else '.png, .jpg'}")
    if Path(path).stat().st_size == 0:
        raise UsageError(f"{path} is empty")


def _check_view_name(name: str, spec: str, *taken: dict[str, str]) -> None:
    if not name:
        raise UsageError(f"a view needs a name: give NAME=PATH, not {spec!r}")
    if any(name in views for views in taken):
        raise UsageError(f"two views are named {name!r}: give each --text, --image and --audio view a name of its own")


RESUME_TAKES = ("resume", "human", "budget", "cluster", "replicas", "otel", "otel_content")
"""The options `ask --resume` takes; every other setting is the run's own (its config.json)."""


def _refuse_other_settings(context: typer.Context) -> None:
    """A resumed run keeps the settings it was made with: `--seed 5` or `--system ctm` would be ignored, silently."""
    given = [param.opts[0] for param in context.command.params
             if param.name not in RESUME_TAKES and _typed(context, param.name)]
    if given:
        raise UsageError(f"--resume goes on with the run's own settings, not {', '.join(given)}: resume it without "
                         "them, or start a new run")


def _typed(context: typer.Context, name: str | None) -> bool:
    source = context.get_parameter_source(name) if name is not None else None
    return source is not None and source.name == "COMMANDLINE"


def add_ask(app: typer.Typer, opener: ModelOpener) -> None:
    @app.command()
    def ask(
        context: typer.Context,
        query: Annotated[str | None, typer.Argument(help="the question or task (not with --resume)")] = None,
        system: Annotated[str, typer.Option(help="which system answers: base, ctm or society")] = "base",
        society: Annotated[Path | None, typer.Option(
            help="society: a YAML or TOML file declaring the society (see examples/societies)")] = None,
        text: Annotated[list[str] | None, typer.Option(help="a text view of the observation, NAME=TEXT")] = None,
        image: Annotated[list[str] | None, typer.Option(help="an image view, PATH or NAME=PATH")] = None,
        audio: Annotated[list[str] | None, typer.Option(help="an audio view, PATH or NAME=PATH")] = None,
        tool: Annotated[list[str] | None, typer.Option(
            help=f"ctm: attach a built-in tool processor ({', '.join(builtin_tools())})")] = None,
        model: ModelOption = DEFAULT_MODEL,
        seed: SeedOption = 0,
        out: OutOption = Path("runs"),
        no_cache: NoCacheOption = False,
        budget: BudgetOption = None,
        max_tokens: Annotated[int, typer.Option(min=1, help="output token limit per model call")] = 512,
        scores: Annotated[str, typer.Option(
            help="base, ctm: where confidences come from: verbal (the model's words), logprob (its token "
                 "probabilities) or samples")] = "verbal",
        cluster: ClusterOption = None,
        replicas: ReplicasOption = "auto",
        resume: ResumeAskOption = None,
        human: HumanOption = "terminal",
        otel: OtelOption = None,
        otel_content: OtelContentOption = False,
    ) -> None:
        """Answer QUERY and print the answer, its confidence and where the run was written. With --cluster, the
        model is served by replicas on the cluster (an embedded one, by default) and every agent shares them."""
        on = ClusterChoice.of(cluster, None, replicas)
        check_channel(human)
        exporting = otel_export(otel, otel_content)
        if resume is not None:  # the run goes on with the settings it began with
            if query is not None or society is not None:
                raise UsageError("--resume goes on with the run's own query and society: give neither")
            _refuse_other_settings(context)
            saved, spec = saved_society_run(resume)
            query, system, model, seed, scores = saved["query"], "society", saved["model"], saved["seed"], "verbal"
            max_tokens, no_cache = saved.get("max_tokens", max_tokens), not saved.get("cache", True)
            text, image, audio, tool = saved.get("text") or [], [], [], []
        elif query is None or not query.strip():
            raise UsageError("ask needs a QUERY (or --resume RUN to go on with a stopped society run)"
                             if query is None else "the QUERY is empty: ask a question or give a task")
        elif system == "society":
            if society is None:
                raise UsageError("--system society needs --society FILE (see examples/societies)")
            spec = load_society_spec(society)
        elif society is not None:
            raise UsageError("--society is for --system society")
        elif system not in SYSTEMS:
            raise UnknownNameError("system", system, [*SYSTEMS, "society"])
        else:
            answer_with = get_system(system)
        if system != "society" and _typed(context, "human"):
            raise UsageError("--human says where a society's people answer: it is for --system society")
        if scores not in SCORE_SOURCES:
            raise UnknownNameError("score source", scores, SCORE_SOURCES)
        if scores != "verbal" and system == "society":
            raise UsageError("--scores is for base and ctm; a society weighs votes with `vote: weighted` in its file")
        if tool:
            if system != "ctm":
                raise UsageError("tools are attached as tool processors: use them with --system ctm")
            available = builtin_tools()
            for name in tool:
                if name not in available:
                    raise UnknownNameError("tool", name, available)
                if tool.count(name) > 1:
                    raise UsageError(f"--tool {name} is given twice: each tool is one processor")
            answer_with = partial(ask_ctm, tools=tuple(available[name] for name in tool))
        if system != "society":
            answer_with = partial(answer_with, scores=scores)
        media = [*(image or []), *(audio or [])]
        kinds: list[str | None] = [*(["image"] * len(image or [])), *(["audio"] * len(audio or []))]
        if resume is not None:  # saved as one list: each file is an image or audio, as it was when the run began
            media = saved.get("media") or []
            kinds = [None] * len(media)
        observation = parse_observation(text or [], media, kinds)
        for name in tool or []:  # a processor each: the workspace takes no two of one name
            if name in observation.names:
                raise UsageError(f"the view {name!r} has the name of --tool {name}: give the view another name")
        console = Console(emoji=False)
        config: dict[str, Any] = {"query": query, "system": system, "model": model, "seed": seed,
                                  "society": spec.model_dump() if system == "society" else None,
                                  "max_tokens": max_tokens, "cache": not no_cache, "views": observation.names,
                                  "tools": tool or [], "budget": parse_budget(budget), "scores": scores,
                                  "text": text or [], "media": media}
        cache = open_cache(no_cache)
        with on_cluster(on, opener, [model]) as session:  # joined before the run folder is made
            open_with = session.opener if session is not None else opener
            # SIGTERM stops it as Ctrl-C does: the run still writes result.json (status interrupted)
            limits = config["budget"]  # on a resume, the limits given replace those saved
            opened = (Run.resume(resume, budget=Budget(**limits) if limits else None) if resume is not None
                      else Run.create(out, command="ask", config=config))
            with opened as run, terminate_as_interrupt():
                if exporting is not None:
                    exporting.attach(run)
                if session is not None:
                    session.announce(run.trace, workers=False)
                settings = Settings(seed=seed, max_tokens=max_tokens)
                try:  # refused while preparing: nothing was asked, so no run folder is left (`withdraw`)
                    with console.status(f"loading {markup_safe(model)}"):
                        if system == "society":  # its own cache in the run folder: a stopped run can be resumed
                            members = open_session(run, spec, lambda model_id, trace, run_cache: open_with(
                                model_id, trace=trace, ledger=run.ledger, cache=run_cache, settings=settings), model,
                                human=human, resuming=resume is not None, fallback=cache, console=console)
                            answer_with = partial(ask_society, members.society)
                        else:
                            llm = open_with(model, trace=run.trace, ledger=run.ledger, cache=cache, settings=settings)
                            if scores == "logprob" and not llm.capabilities.logprobs:
                                raise CapabilityError(llm.id, "logprobs (--scores logprob); use --scores samples or "
                                                              "verbal")
                            needs = set().union(*(v.needs for v in observation.views), {"tools"} if tool else ())
                            missing = llm.capabilities.missing(needs)
                            if missing:  # else refused at its first call, the run folder made
                                raise CapabilityError(llm.id, f"{', '.join(missing)} (the --image, --audio or --tool "
                                                              "given)")
                            answer_with = partial(answer_with, llm)
                except UsageError:
                    run.withdraw()
                    raise
                asking = system == "society" and bool(members.people) and human == "terminal"
                try:  # no spinner while a person is asked on this terminal
                    with contextlib.nullcontext() if asking else console.status(f"{system} is thinking"):
                        answer = asyncio.run(answer_with(query, observation))
                except (KeyboardInterrupt, HumanStopped) as stopped:
                    if system != "society":
                        raise
                    run.finish({"query": query}, status="interrupted", error=f"{type(stopped).__name__}: {stopped}")
                    tell_stopped(console, run)
                    raise typer.Exit(130) from None
                finally:
                    if system == "society":
                        members.close()
                run.finish({"query": query, "answer": answer.answer, "confidence": answer.confidence})
        usage = run.ledger.total
        # printed as written, brackets too, its control characters shown (an ESC in a reply is no terminal command)
        console.print(f"[bold]answer:[/] {markup_safe(answer.answer)}", highlight=False)
        console.print(f"[bold]confidence:[/] {answer.confidence:.2f}")
        console.print(f"[dim]{run.ledger.calls} model calls, {usage.total_tokens} tokens; "
                      f"run written to {markup_safe(run.directory)}[/]", highlight=False)
