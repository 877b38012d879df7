"""`noosphere bench gsm8k` and `bench roleplay`: the societies of mind at work."""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from noosphere.bench import gsm8k as gsm8k_bench
from noosphere.bench import roleplay as roleplay_bench
from noosphere.bench.answer_spread import answer_spread
from noosphere.bench.roleplay_tasks import TASKS as CODING_TASKS
from noosphere.bench.runner import Solve, load_done
from noosphere.cli.ask import ModelOpener
from noosphere.cli.bench_run import (
    Items,
    OffsetOption,
    RunOptions,
    benchmark_command,
    check_saved,
    member_models,
    select_items,
)
from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm import Model
from noosphere.runs import Run
from noosphere.society import Society
from noosphere.society.config import build_society, load_society_spec, saved_society_spec, society_settings
from noosphere.society.market import restore_market
from noosphere.society.spec import SocietySpec
from noosphere.tools.sandbox import Sandbox


def calls_of_run(folder: Path) -> int:
    """Mean model calls per problem of a finished (or partial) society run: the N that matches it."""
    if not (folder / "config.json").is_file():
        raise UsageError(f"--match-run {folder}: not a run folder (no config.json)")
    rows = list(load_done(folder / "items.jsonl").values())
    if not rows:
        raise UsageError(f"{folder} holds no scored problems to match the calls of")
    return max(1, round(sum(row.get("calls", 0) for row in rows) / len(rows)))


def _gsm8k_config(system: str, society: Path | None, rounds: int | None, rights: str | None, vote: str | None,
                  n: int | None, options: RunOptions, limit: int | None, data: Path | None,
                  match_run: Path | None = None, settings: list[str] | None = None,
                  weights: str = "none", offset: int = 0, form: str = "statement", repairs: int = 0) -> dict[str, Any]:
    """Check the options of a new GSM8K run; the society file is read now and saved whole with the run."""
    systems = ("base", "best-of-n", "society")
    if system not in systems:
        raise UnknownNameError("system", system, systems)
    spec = load_society_spec(society) if society is not None else None
    overrides = society_settings(settings or [])
    flags = {"rounds": rounds, "rights": rights, "vote": vote}
    if rounds is not None:
        overrides["rounds"] = rounds
    if rights is not None:
        overrides["rights"] = [r.strip() for r in rights.split(",") if r.strip()]
    if vote is not None:
        overrides["vote"] = vote
    if overrides:
        if spec is None:
            raise UsageError("--rounds, --rights, --vote and --set change a society: give --society FILE")
        try:
            spec = SocietySpec.model_validate({**spec.model_dump(), **overrides}).check_staff()
        except ValidationError as exc:
            error = exc.errors()[0]
            first = str(error["loc"][0]) if error["loc"] else ""
            flag = f"--{first}" if flags.get(first) is not None else f"--set {'.'.join(map(str, error['loc']))}"
            raise UsageError(f"invalid {flag}: {error['msg']}") from exc
    if weights not in gsm8k_bench.WEIGHTS:
        raise UnknownNameError("vote weight", weights, gsm8k_bench.WEIGHTS)
    if weights != "none" and system != "best-of-n":
        raise UsageError("--weights (and --weighted) weigh best-of-n's samples; they apply to --system best-of-n")
    if form not in gsm8k_bench.FORMS:
        raise UnknownNameError("sample form", form, gsm8k_bench.FORMS)
    if form != "statement" and system != "best-of-n":
        raise UsageError("--form is the form of best-of-n's samples; it applies to --system best-of-n (a society's "
                         "members say theirs in its file: answers = \"program\")")
    if repairs and form != "program":
        raise UsageError("--repairs are second tries of a program that failed: give --system best-of-n --form program "
                         "(a society's program members say theirs in its file: repairs = 1)")
    if system == "society" and spec is None:
        raise UsageError("--system society needs --society FILE (see examples/societies)")
    if system == "best-of-n" and n is None:
        if match_run is not None:
            n = calls_of_run(match_run)
        elif spec is not None:
            n = gsm8k_bench.planned_calls(spec)
        else:
            raise UsageError("best-of-n needs --n N, --match-run RUN_DIR (a society run whose mean calls set N), "
                             "or --society FILE (its planned calls)")
    return {"benchmark": "gsm8k", "system": system, **options.config(), "limit": limit, "offset": offset,
            "data": str(data.resolve()) if data else None, "n": n,
            "society": spec.model_dump() if spec is not None else None,
            # whole, as --data: a resume from another folder reads the same file, and checks --society against it
            "society_file": str(society.resolve()) if society else None,
            "matched_run": str(match_run.resolve()) if match_run is not None and system == "best-of-n" else None,
            "weighted": weights != "none", "weights": weights, "form": form,
            **({"repairs": repairs} if repairs else {})}  # saved only when set: older runs' configs stay as they were


def _weights(weighted: bool, weights: str) -> str:
    """`--weighted` is `--weights p-true`; both at once must agree."""
    if weighted and weights not in ("none", "p-true"):
        raise UsageError(f"--weighted means --weights p-true; it cannot go with --weights {weights}")
    return "p-true" if weighted else weights


class SavedGsm8kRun(BaseModel):
    """The type and bounds of the settings a GSM8K run's config holds, as its options take them: hand-edited, a
    missing `system` was a KeyError traceback, another one was played as a society, and a best-of-N without its N
    failed at the first problem."""

    model_config = ConfigDict(extra="allow", strict=True)
    system: Literal["base", "best-of-n", "society"]
    n: int | None = Field(None, ge=1)
    weights: Literal["none", "p-true", "sequence"] | None = None
    weighted: bool | None = None
    form: Literal["statement", "program"] | None = None
    repairs: int = Field(0, ge=0, le=3)


def check_saved_gsm8k(saved: dict[str, Any]) -> None:
    """A GSM8K run's config, as `SavedGsm8kRun` reads it (and a best-of-N's N present): one line before the model
    opens."""
    checked = check_saved(SavedGsm8kRun, saved, "gsm8k")
    assert isinstance(checked, SavedGsm8kRun)
    if checked.system == "best-of-n" and checked.n is None:
        raise UsageError("the run's config.json: a best-of-n run lacks its n (edited by hand?): add it, or make a new "
                         "run with `noosphere bench gsm8k`")


def _one_economy_at_a_time(config: dict[str, Any], parallel: int) -> None:
    if parallel > 1 and (config.get("society") or {}).get("organisation") == "economy":
        raise UsageError("an economy's ledger carries over from problem to problem: run it with --parallel 1")


def _economy_as_left(society: Society, resume: Path | None) -> Society:
    """A resumed economy goes on from the ledger and members its last scored problem left, not afresh (a
    problem whose society failed leaves no ledger: the one before it stands)."""
    rows = list(load_done(resume / "items.jsonl").values()) if resume is not None else []
    ledger = next((row["ledger"] for row in reversed(rows) if "ledger" in row), None)
    if ledger is None and any(not row.get("error") for row in rows):
        raise UsageError(f"{resume} was scored before rows kept the economy's ledger: start it again")
    if ledger is not None and society.economy is not None:
        restore_market(society.members, society.economy, ledger)
    return society


def add_society_benchmarks(bench_app: typer.Typer, opener: ModelOpener) -> None:
    @benchmark_command(bench_app, "gsm8k")
    def gsm8k(
        system: Annotated[str, typer.Option(help="base, best-of-n or society")] = "society",
        society: Annotated[Path | None, typer.Option(
            help="society file (society; and for best-of-n, the society whose planned calls set N)")] = None,
        rounds: Annotated[int | None, typer.Option(min=0, max=50,
                                                   help="mindstorm rounds R, overriding the society file")] = None,
        rights: Annotated[str | None, typer.Option(
            help="democracy rights, comma-separated (know,change,execute), overriding the society file")] = None,
        vote: Annotated[str | None, typer.Option(
            help="how members vote where they do: ballot (each is asked), standing (each one's last answer is "
                 "counted), weighted (counted with the member's P(True)), sequence (with its reply's "
                 "probability) or every (a debate's: every answer each member gave, with its reply's probability), "
                 "overriding the society file")] = None,
        set_: Annotated[list[str] | None, typer.Option(
            "--set", help="any society setting, overriding the file: KEY=VALUE with a YAML value, repeatable "
                          "(e.g. --set editor=null for a debate whose members vote)")] = None,
        n: Annotated[int | None, typer.Option(
            min=1, help="best-of-n: samples per problem (default: --match-run's measured calls, else the society "
                        "file's planned calls, an upper bound: members who agree call less)")] = None,
        match_run: Annotated[Path | None, typer.Option(
            help="best-of-n: a society run folder; N is its mean calls per problem, measured")] = None,
        weighted: Annotated[bool, typer.Option(
            help="best-of-n: the same as --weights p-true")] = False,
        weights: Annotated[str, typer.Option(
            help="best-of-n: each sample's vote weighted by p-true (P(True) that its answer is right; one scoring "
                 "call a sample) or sequence (its own length-normalised probability; no call more), CISC; or none")
        ] = "none",
        form: Annotated[str, typer.Option(
            help="best-of-n: the form of each sample, statement (its working and answer in words) or program (a "
                 "Python program run in the bubblewrap sandbox, its last printed line the answer)")] = "statement",
        repairs: Annotated[int, typer.Option(
            min=0, max=3, help="best-of-n --form program: times a sample whose program fails is shown its failure and "
                               "asked again (one call each) before it counts as failed")] = 0,
        limit: Annotated[int | None, typer.Option(min=1, help="first N problems of the file")] = None,
        offset: OffsetOption = 0,
        data: Annotated[Path | None, typer.Option(help="a GSM8K JSONL file")] = None,
        *,
        options: RunOptions,
    ) -> None:
        """Grade-school maths: exact match on the final number, with calls, tokens and seconds per problem."""
        resume = options.resume
        config = {"benchmark": "gsm8k", "limit": limit} if resume is not None else _gsm8k_config(
            system, society, rounds, rights, vote, n, options, limit, data, match_run, set_,
            _weights(weighted, weights), offset, form, repairs)
        # refused before the run is opened (a resumed one's result.json stays as it was)
        _one_economy_at_a_time(Run.saved_config(resume) if resume is not None else config, options.items_at_once)

        def load(saved: dict[str, Any]) -> list[gsm8k_bench.GsmItem]:
            check_saved_gsm8k(saved)
            if saved.get("system") == "society" and resume is not None:  # its society, before the run is reopened
                saved_society_spec(saved.get("society"), str(resume / "config.json"))
            return select_items(gsm8k_bench.load_gsm8k(Path(saved["data"]) if saved.get("data") else None), saved)

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            items = load(saved)
            if saved["system"] == "base":
                solve: Solve = partial(gsm8k_bench.solve_base, llm)
            elif saved["system"] == "best-of-n":
                weights = saved.get("weights") or ("p-true" if saved.get("weighted") else "none")
                gsm8k_bench.check_weights(llm, weights)
                form = saved.get("form") or "statement"
                sandbox = Sandbox(trace=llm.trace) if form == "program" else None  # an unconfined run is traced
                if sandbox is not None:  # before any problem: its programs could not run
                    sandbox.check()
                solve = partial(gsm8k_bench.solve_best_of_n, llm, saved["n"], weights=weights, form=form,
                                sandbox=sandbox, repairs=saved.get("repairs", 0))
            else:
                spec = saved_society_spec(saved["society"], "config.json")

                def build() -> Society:
                    return build_society(spec, member_models(opener, saved, llm), saved["model"])

                # Members keep a history while they work, so problems scored at once need a society each;
                # an economy is one society throughout, because its ledger carries over. One is built now, so that
                # what the society's models cannot do (a weighted vote's probabilities) is refused before any problem.
                first = build()
                if spec.organisation == "economy":
                    solve = partial(gsm8k_bench.solve_society, _economy_as_left(first, resume))
                else:
                    solve = partial(gsm8k_bench.solve_in_new_society, build)
            return [(i.id, i, i.gold) for i in items], solve

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            deciders = Counter(str(r["decided_by"]) for r in rows if "decided_by" in r)
            return {"accuracy": round(100 * sum(r["correct"] for r in rows) / max(len(rows), 1), 2), "n": len(rows),
                    **answer_spread(rows), **({"decided_by": dict(deciders)} if deciders else {})}

        options.run_benchmark(opener, "GSM8K (exact match)", config, max_tokens=800, prepare=prepare,
                              summarise=summarise, check=load)

    @benchmark_command(bench_app, "roleplay")
    def roleplay(
        max_messages: Annotated[int, typer.Option(
            min=2, max=500, help="message cap of each conversation, at most 500 as in a society file (a role-play "
                                 "society's own default is 50; these tasks take a few exchanges, and a pair that loops "
                                 "should not hold a CPU for minutes)")] = 12,
        specify: Annotated[bool, typer.Option(help="a task specifier first makes each task concrete (CAMEL)")] = True,
        limit: Annotated[int | None, typer.Option(min=1, help=f"first N of the {len(CODING_TASKS)} tasks")] = None,
        *,
        options: RunOptions,
    ) -> None:
        """CAMEL-style user/assistant pairs write code; hidden unit tests run in the sandbox."""
        # the system names the specifier, so the reports of runs with and without it tell themselves apart
        config = {"benchmark": "roleplay", "system": "specifier+roleplay" if specify else "roleplay",
                  **options.config(), "limit": limit, "max_messages": max_messages, "specify": specify}

        def prepare(saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
            tasks = CODING_TASKS[: saved["limit"]] if saved["limit"] else CODING_TASKS
            return [(t.id, t, "pass") for t in tasks], partial(roleplay_bench.solve, llm, saved["max_messages"],
                                                                   specify=saved.get("specify", False))

        def summarise(saved: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
            return {"pass_rate": round(100 * sum(r["correct"] for r in rows) / max(len(rows), 1), 2), "n": len(rows),
                    "message_cap": saved["max_messages"],
                    "stopped_by_cap": sum(r.get("stopped_by") == "message_cap" for r in rows)}

        options.run_benchmark(opener, "Role-play coding (hidden tests)", config, max_tokens=700, prepare=prepare,
                              summarise=summarise)
