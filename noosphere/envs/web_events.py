"""Trace events of web episodes: one at the start, one per step, one at the end, and each refusal of the guard.

The viewer draws a web episode from these (`noosphere/viewer/static/web.js`): a step's screenshot (a PNG in the
run folder, named relative to it), the box of the element it acted on, and the action.
"""

from __future__ import annotations

from noosphere.trace import Event


class WebEpisodeStarted(Event):
    """A web episode began: the page is loaded and the agent is about to take its first step."""

    kind: str = "web_episode_started"
    env: str
    """The episode's name, `TASK-SEED`, which its `web_step`, `web_refused` and `web_episode_ended` carry."""
    task: str
    """The benchmark task, such as MiniWoB++'s `click-button`."""
    seed: int
    """The seed the task was generated with: the same task and seed give the same page."""
    goal: str
    """The instruction the agent is given, as the page states it."""
    system: str
    """The system that plays the episode: `base`, `react` or `ctm`."""
    url: str
    """The page the episode started on."""


class WebStepTaken(Event):
    """One step: what the agent wrote, what was carried out (or why not), and what the page said after it."""

    kind: str = "web_step"
    env: str
    step: int
    """The step's number in the episode, from 1."""
    action: str
    """As the agent wrote it."""
    performed: str | None = None
    """The action carried out, in canonical form; None when the step was lost."""
    error: str | None = None
    """Why the step was lost: the action did not parse, was refused, named no element, or failed on the page."""
    bid: str | None = None
    box: list[float] | None = None
    """The acted-on element's box [x, y, width, height] in the step's screenshot, for the viewer's outline."""
    screenshot: str | None = None
    """The page before the action, a PNG relative to the run folder."""
    thought: str | None = None
    message: str | None = None
    effect: str | None = None
    """What the step visibly did to the page, as the agent is told it (`noosphere.envs.web_effect`); None when
    nothing was carried out or the page was not read after it (and in traces written before it was recorded)."""
    reward: float = 0.0
    done: bool = False
    won: bool = False


class WebRefused(Event):
    """The guard stopped the page from leaving its folder: a navigation, a request, a pop-up or a download."""

    kind: str = "web_refused"
    env: str
    step: int
    """The step during which the page tried it."""
    what: str
    url: str


class WebEpisodeEnded(Event):
    """A web episode ended: whether it was won, its reward, how many steps it took and why it stopped."""

    kind: str = "web_episode_ended"
    env: str
    task: str
    seed: int
    won: bool
    """The task ended itself with success; False whenever the episode stopped for any other reason."""
    reward: float
    """The task's reward when it ended itself (`reason` done), else 0.0."""
    steps: int
    """Steps taken, lost ones included."""
    lost_steps: int
    """Steps that carried out nothing: no action was decided, or it did not parse, was refused, named no element
    or failed on the page."""
    reason: str
    """done (the task ended itself), max_steps, timeout, infeasible, left_page or error."""
    error: str | None = None
