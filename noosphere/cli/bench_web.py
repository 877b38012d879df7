"""`noosphere bench miniwob`: base, react and the workspace as web agents on MiniWoB++ in headless Chromium.

Each item is one episode (a task at a seed), played in its own browser context of one Chromium the run
launches; rows are appended per episode and the run resumes from its folder. A missing Chromium is found
before any run folder is made, and is one line saying how to install it.
"""

from __future__ import annotations

import asyncio
import threading
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from noosphere.bench import miniwob as miniwob_bench
from noosphere.bench.runner import Scored, Solve
from noosphere.cli.ask import ModelOpener
from noosphere.cli.bench_run import Items, RunOptions, benchmark_command, checked_config, warn
from noosphere.errors import CapabilityError, UnknownNameError, UsageError
from noosphere.llm import Model
from noosphere.runs import write_atomically
from noosphere.workspace import WorkspaceSettings
from noosphere.workspace.scores import SCORE_SOURCES

SCORE_CHOICES = ("auto", *SCORE_SOURCES)
MAX_STEP_TIMEOUT_S = 86_400.0
"""A day: past it (`inf`, `1e306`) the browser's millisecond timeouts are no JSON number, and every episode failed."""


def check(saved: dict[str, Any]) -> None:
    """The tasks exist (or a "did you mean"), before any run folder is made."""
    from noosphere.envs.miniwob import check_tasks
    from noosphere.envs.web_browser import require_playwright

    require_playwright()
    check_tasks(saved["tasks"], Path(saved["pages"]) if saved.get("pages") else None)


def score_source(saved: dict[str, Any], llm: Model) -> str:
    """`auto`: the model's token probabilities where it can give them, else its words."""
    scores = saved.get("scores", "auto")
    exact = llm.capabilities.logprobs and not llm.capabilities.first_token_scores
    if scores == "auto":
        if exact:
            return "logprob"
        why = ("scores only the first token of an option, and the STM's labels are actions that share their first "
               "words (click(\"12\"), click(\"13\"))" if llm.capabilities.logprobs
               else "gives no token probabilities")
        warn(f"{llm.id} {why}: --scores auto takes the workspace's scores from its words (verbal), and each row "
             "says so; --scores samples estimates probabilities by sampling instead")
        return "verbal"
    if scores == "logprob" and not exact:
        need = ("exact option scores (--scores logprob: the STM scores whole actions, and this provider scores only "
                "their first token)" if llm.capabilities.logprobs else "logprobs (--scores logprob)")
        raise CapabilityError(llm.id, f"{need}; use --scores auto, verbal or samples, or a local model")
    return scores


def prepare(browser: BrowserOnDemand, saved: dict[str, Any], llm: Model) -> tuple[Items, Solve]:
    from noosphere.envs.miniwob import MiniWob, WebSettings
    from noosphere.systems.web_agents import base, react
    from noosphere.systems.web_ctm import ctm
    from noosphere.systems.web_episode import play

    system = saved["system"]
    source = score_source(saved, llm) if system == "ctm" else None  # `auto` resolved: each row says which it was
    if system == "ctm":
        settings = WorkspaceSettings(threshold=saved["threshold"], max_iterations=saved["iterations"],
                                     seed=saved["seed"], scores=source,  # type: ignore[arg-type]
                                     speculative_links=saved.get("parallel", 1) == 1)
        decide = ctm(llm, settings)
    else:
        decide = base(llm) if system == "base" else react(llm)
    web = WebSettings(step_timeout_s=saved["step_timeout"], settle_s=saved["settle"])
    pages = Path(saved["pages"]) if saved.get("pages") else None
    media = Path(llm.trace.path).parent if llm.trace.path else None
    chosen = miniwob_bench.episodes(saved["tasks"], saved["seeds"])
    chosen = chosen[: saved["limit"]] if saved.get("limit") else chosen

    async def solve(episode: miniwob_bench.Episode) -> Scored:
        env = MiniWob(await browser.get(), episode.task, episode.seed, root=pages, settings=web)
        played = await play(env, decide, system=system, trace=llm.trace, max_steps=saved["max_steps"], media=media)
        return Scored("won" if played.won else played.reason, played.won, {
            "task": played.task, "seed": played.seed, "goal": played.goal, "reward": played.reward,
            "steps": played.steps, "lost_steps": played.lost_steps, "reason": played.reason,
            "actions": list(played.actions), "episode_error": played.error, **({"scores": source} if source else {})})

    return [(episode.id, episode, "won") for episode in chosen], solve


def write_task_table(folder: Path, rows: list[dict[str, Any]]) -> list[Path]:
    """tasks.md beside report.md: success rate, its interval and mean reward per task."""
    path = folder / "tasks.md"
    metrics = miniwob_bench.summarise(rows)
    write_atomically(path, "\n".join(["# MiniWoB++ per task", *miniwob_bench.tasks_markdown(metrics)]) + "\n")
    return [path]


def _task_list(tasks: str | None) -> list[str]:
    from noosphere.envs.miniwob import DEFAULT_TASKS

    chosen = [name.strip() for name in tasks.split(",") if name.strip()] if tasks else list(DEFAULT_TASKS)
    if not chosen:
        raise UsageError("--tasks names no task")
    if len(set(chosen)) != len(chosen):
        raise UsageError("--tasks names a task twice")
    return chosen


def add_web_benchmarks(bench_app: typer.Typer, opener: ModelOpener) -> None:
    @benchmark_command(bench_app, "miniwob")
    def miniwob(
        system: Annotated[str, typer.Option(help="base, react or ctm")] = "ctm",
        tasks: Annotated[str | None, typer.Option(
            help="comma-separated MiniWoB++ tasks (default: twenty tasks of 1 to ~10 actions)")] = None,
        seeds: Annotated[int, typer.Option(min=1, help="episodes per task, seeds 0..N-1")] = 3,
        max_steps: Annotated[int, typer.Option(min=1, help="step budget per episode")] = 10,
        limit: Annotated[int | None, typer.Option(min=1, help="first N episodes (seed by seed over the tasks)")] = None,
        iterations: Annotated[int, typer.Option(min=1, help="ctm: workspace iterations per step")] = 2,
        threshold: Annotated[float, typer.Option(help="ctm: STM confidence that ends a step's iterations")] = 0.8,
        scores: Annotated[str, typer.Option(
            help="ctm: where scores come from: auto (token probabilities where the model gives them), verbal, "
                 "logprob or samples")] = "auto",
        step_timeout: Annotated[float, typer.Option(
            min=1, max=MAX_STEP_TIMEOUT_S, help="seconds a page load or step may take")] = 30.0,
        settle: Annotated[float, typer.Option(
            min=0, help="seconds to wait after an action before looking (less than --step-timeout)")] = 0.5,
        pages: Annotated[Path | None, typer.Option(
            help="a folder laid out as MiniWoB++'s html/ (default: the installed miniwob package's)")] = None,
        chromium: Annotated[Path | None, typer.Option(
            envvar="NOOSPHERE_CHROMIUM", help="the Chromium to drive (default /usr/bin/chromium)")] = None,
        *,
        options: RunOptions,
    ) -> None:
        """MiniWoB++ web tasks in headless Chromium, offline: success rate, reward, steps and calls per episode."""
        from noosphere.envs.web_browser import require_chromium

        if system not in miniwob_bench.SYSTEMS:
            raise UnknownNameError("system", system, miniwob_bench.SYSTEMS)
        if scores not in SCORE_CHOICES:
            raise UnknownNameError("score source", scores, SCORE_CHOICES)
        if options.cluster:
            raise UsageError("miniwob plays its episodes in this machine's browser; it takes no --cluster")
        if settle >= step_timeout and not options.resume:  # the wait is part of the step: every step would time out
            raise UsageError(f"--settle {settle:g} must be shorter than --step-timeout {step_timeout:g}: the wait "
                             "after an action is part of its step")
        if scores != "auto" and system != "ctm" and not options.resume:
            raise UsageError(f"--scores chooses where the ctm's scores come from; --system {system} takes none")
        resume = options.resume
        config = {"benchmark": "miniwob", "limit": limit} if resume else {
            "benchmark": "miniwob", "system": system, **options.config(), "tasks": _task_list(tasks),
            "seeds": seeds, "max_steps": max_steps, "limit": limit, "iterations": iterations, "threshold": threshold,
            "scores": scores, "step_timeout": step_timeout, "settle": settle,
            "pages": str(pages.resolve()) if pages else None, "parallel": options.parallel}
        saved = checked_config(config, resume, check)
        if saved.get("benchmark") != "miniwob":
            raise UsageError(f"{resume} is a {saved.get('benchmark')} run; bench miniwob resumes miniwob runs")
        browser = BrowserOnDemand(require_chromium(chromium))  # checked before any run folder; launched when needed
        try:
            options.run_benchmark(opener, "MiniWoB++", config, max_tokens=400, prepare=partial(prepare, browser),
                                  summarise=lambda saved, rows: miniwob_bench.summarise(rows),
                                  artefacts=write_task_table, check=check)
        finally:
            browser.close()


class BrowserOnDemand:
    """The run's one Chromium, launched by the first episode that needs it (a resumed run with nothing left to
    play launches none), off the event loop."""

    def __init__(self, executable: Path | None) -> None:
        self.executable = executable
        self._browser: Any = None
        self._lock = threading.Lock()

    def _launch(self) -> Any:
        from noosphere.envs.web_browser import Browser

        with self._lock:
            if self._browser is None:
                self._browser = Browser(self.executable)
            return self._browser

    async def get(self) -> Any:
        return self._browser or await asyncio.to_thread(self._launch)

    def close(self) -> None:
        with self._lock:
            if self._browser is not None:
                self._browser.close()
                self._browser = None
