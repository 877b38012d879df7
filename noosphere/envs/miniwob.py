"""MiniWoB++ tasks in a real browser, offline: the pages of the `miniwob` package, loaded from files.

A task is a page with a generator and a reward in MiniWoB's own script (`core/core.js`): the episode starts
from a seed (`Math.seedrandom`), the goal is the page's utterance, and after every step the page's globals
say whether the episode is over and its reward (`WOB_DONE_GLOBAL`, `WOB_RAW_REWARD_GLOBAL`). As BrowserGym
does, the instructions, the timer and the reward display are hidden from the page the agent sees (the goal
is given apart), the page's own time limit is lifted (the step budget ends an episode), and an episode is
won when its raw reward is positive.

`MiniWob` follows the `Environment` protocol (sync `reset`/`step`/`close`, the observation being the
accessibility tree and the admissible actions `noosphere.envs.web_admissible`'s list); `areset`/`astep`/`aclose`
are the same for callers on an event loop, and `state` holds every view of the latest observation.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import random
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from noosphere.envs.base import Reset, Step
from noosphere.envs.web_actions import Effect, WebAction, WebActionError, parse_action, perform
from noosphere.envs.web_admissible import admissible
from noosphere.envs.web_browser import Browser, WebPageError, WebTimeout, from_playwright
from noosphere.envs.web_effect import PageEffect, page_effect
from noosphere.envs.web_guard import Guard, Refusal, open_page
from noosphere.envs.web_page import PageState, observe
from noosphere.errors import MissingDependencyError, RuntimeFault, UnknownNameError, UsageError

T = TypeVar("T")

DEFAULT_TASKS = (
    "click-button", "click-button-sequence", "click-checkboxes", "click-collapsible", "click-dialog",
    "click-dialog-2", "click-link", "click-option", "click-tab", "click-tab-2", "click-test", "click-test-2",
    "click-widget", "enter-password", "enter-text", "enter-text-2", "focus-text", "login-user", "choose-list",
    "use-autocomplete",
)
"""Twenty tasks of one to about ten actions each: clicks, forms, lists, tabs, an autocompletion."""

SETUP = """(args) => {
  for (const id of ["reward-display", "click-canvas", "sync-task-cover"]) {
    const element = document.getElementById(id);
    if (element) element.style.display = "none";
  }
  Math.seedrandom(args.seed);
  core.EPISODE_MAX_TIME = args.episodeMs;
  core.startEpisodeReal();
}"""
GOAL = """() => {
  const said = core.getUtterance();
  const query = document.getElementById("query");
  if (query) query.style.visibility = "hidden";
  return typeof said === "string" ? said : (said && said.utterance) || "";
}"""
STATUS = "() => [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_GLOBAL, WOB_REWARD_REASON]"
READY = "() => typeof WOB_TASK_READY === 'undefined' || WOB_TASK_READY === true"


def miniwob_root(root: Path | None = None) -> Path:
    """The folder holding `miniwob/<task>.html` and `core/core.js`: `root`, or the installed package's pages.
    The package is located, not imported (its import registers gym environments)."""
    if root is not None:
        return root.resolve()
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("miniwob", "web", "MiniWoB++ tasks")
    return (Path(next(iter(spec.submodule_search_locations))) / "html").resolve()


def task_names(root: Path | None = None) -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in (miniwob_root(root) / "miniwob").glob("*.html")))


def check_tasks(tasks: list[str] | tuple[str, ...], root: Path | None = None) -> None:
    """Every name a task of the folder, or a usage error with the closest names."""
    known = task_names(root)
    if not known:  # a folder of something else, or none: "unknown task 'click-test'. Known: ." said nothing of it
        raise UsageError(f"no MiniWoB++ task pages in {miniwob_root(root)}: --pages takes a folder laid out as "
                         "MiniWoB++'s html/ (miniwob/<task>.html beside core/core.js)")
    for task in tasks:
        if task not in known:
            raise UnknownNameError("MiniWoB++ task", task, known)


@dataclass(frozen=True)
class WebSettings:
    step_timeout_s: float = 30.0
    """A reset or step (loading, acting, observing) that takes longer fails the episode."""
    action_timeout_s: float = 5.0
    """How long an action waits for its element to be actionable; past it the step is lost."""
    settle_s: float = 0.5
    """Wait after an action before observing (menus open, pages react), as BrowserGym does."""
    viewport: tuple[int, int] = (332, 214)
    """BrowserGym's MiniWoB viewport."""
    screenshot: bool = True
    episode_ms: int = 2_000_000_000
    """The page's own time limit, out of reach (below 2^31 ms, the browsers' timer limit)."""


@dataclass
class LastStep:
    """What the latest `step` did, besides the observation."""

    action: str
    performed: WebAction | None = None
    error: str | None = None
    effect: Effect = field(default_factory=Effect)
    refusals: tuple[Refusal, ...] = ()
    change: PageEffect | None = None
    """What the step visibly did to the page (`web_effect`); None when the page was not read after it."""


LEFT_PAGE = PageEffect("the browser left the task's page", True)


class MiniWob:
    """One MiniWoB++ task at one seed, played in its own browser context."""

    def __init__(self, browser: Browser, task: str, seed: int, *, root: Path | None = None,
                 settings: WebSettings | None = None) -> None:
        self.root = miniwob_root(root)
        page = self.root / "miniwob" / f"{task}.html"
        if not page.is_file():
            raise UnknownNameError("MiniWoB++ task", task, task_names(self.root))
        self.browser, self.task, self.seed = browser, task, seed
        self.name, self.kind = f"{task}-{seed}", task
        self.settings = settings or WebSettings()
        self.url = page.as_uri()
        self.guard = Guard(self.root, self.url)
        self.page_seed = str(random.Random(f"miniwob/{task}/{seed}").randrange(2**31))
        self.goal = ""
        self.state: PageState | None = None
        self.admissible: tuple[str, ...] = ()
        self.last: LastStep | None = None
        self.done = False
        self.won = False
        self.reward = 0.0
        self.reason = ""
        self._context: Any = None
        self._page: Any = None

    # the event-loop side ------------------------------------------------------------------------------
    async def areset(self) -> Reset:
        await self.aclose()
        await self._call(self._reset(), "loading the task's page")
        assert self.state is not None
        return Reset(self.goal, self.state.axtree, self.admissible)

    async def astep(self, action: str) -> Step:
        if self._page is None or self.state is None:
            raise RuntimeFault("step before reset")
        await self._call(self._step(action), "a step")
        assert self.state is not None
        return Step(self.state.axtree, self.reward if self.done else 0.0, self.done, self.won, self.admissible)

    async def aclose(self) -> None:
        if self._context is not None:
            context, self._context, self._page = self._context, None, None
            with contextlib.suppress(RuntimeFault):  # a browser that is gone took the context with it
                await self.browser.call(context.close(), self.settings.step_timeout_s, what="closing the page")

    # the sync facade (the Environment protocol) --------------------------------------------------------
    def reset(self) -> Reset:
        return _run(self.areset())

    def step(self, action: str) -> Step:
        return _run(self.astep(action))

    def close(self) -> None:
        _run(self.aclose())

    # on the browser's loop -------------------------------------------------------------------------------
    async def _call(self, work: Coroutine[Any, Any, T], what: str) -> T:
        """`work` on the browser's loop within the step timeout; what Playwright raises becomes a `WebPageError`."""
        try:
            return await self.browser.call(work, self.settings.step_timeout_s, what=f"{what} ({self.name})")
        except Exception as error:
            if not from_playwright(error):
                raise
            if type(error).__name__ == "TimeoutError":  # Playwright's own clock (goto's), racing ours: the same limit
                raise WebTimeout(f"{what} ({self.name})", self.settings.step_timeout_s) from None
            raise WebPageError(f"{what} ({self.name})", error) from None

    async def _reset(self) -> None:
        settings = self.settings
        width, height = settings.viewport
        self.done, self.won, self.reward, self.reason, self.last = False, False, 0.0, "", None
        self._context, self._page = await open_page(self.browser.browser, self.guard,
                                                    viewport={"width": width, "height": height},
                                                    timeout_ms=settings.action_timeout_s * 1000)
        page = self._page
        await page.goto(self.url, wait_until="load", timeout=settings.step_timeout_s * 1000)
        await page.evaluate(SETUP, {"seed": self.page_seed, "episodeMs": settings.episode_ms})
        await page.wait_for_function(READY, timeout=settings.step_timeout_s * 1000)
        self.goal = " ".join(str(await page.evaluate(GOAL)).split())
        await self._observe()

    async def _step(self, action: str) -> None:
        page, state = self._page, self.state
        assert state is not None
        before = len(self.guard.refusals)
        last = LastStep(action)
        try:
            last.performed = parse_action(action)
            last.effect = await perform(page, last.performed, state.bids)
        except WebActionError as error:
            last.error = error.reason
        except Exception as error:  # Playwright's own: not actionable in time, not a select, a bad key
            if not from_playwright(error):
                raise
            last.error = str(error).strip().splitlines()[0][:300]
        if last.error is None and self.settings.settle_s:
            await asyncio.sleep(self.settings.settle_s)
        last.refusals = tuple(self.guard.refusals[before:])
        self.last = last
        await self._read_status()
        if not self.done and last.effect.infeasible:
            self.done, self.reason = True, "infeasible"
        if not self.done or self.reason == "done":
            last.change = page_effect(state, await self._observe())
        elif self.reason == "left_page":
            last.change = LEFT_PAGE

    async def _read_status(self) -> None:
        page = self._page
        if page.is_closed() or page.url.split("#", 1)[0] != self.url:
            self.done, self.won, self.reward, self.reason = True, False, 0.0, "left_page"
            return
        try:
            done, raw, _, _ = await page.evaluate(STATUS)
        except Exception as error:  # the page's globals are gone: it is no longer the task's page
            if not from_playwright(error):
                raise
            self.done, self.won, self.reward, self.reason = True, False, 0.0, "left_page"
            return
        if done:
            self.done, self.reward, self.reason = True, float(raw or 0.0), "done"
            self.won = self.reward > 0

    async def _observe(self) -> PageState:
        self.state = await observe(self._page, screenshot=self.settings.screenshot)
        self.admissible = admissible(self.state, self.goal)
        return self.state


def _run(work: Coroutine[Any, Any, T]) -> T:
    """The sync facade: run on a loop of its own (the browser's calls go to the browser's thread anyway)."""
    return asyncio.run(work)
