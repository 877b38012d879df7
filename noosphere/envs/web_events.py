"""Trace events of web episodes: one at the start, one per step, one at the end, and each refusal of the guard.

The viewer draws a web episode from these (`noosphere/viewer/static/web.js`): a step's screenshot (a PNG in the
run folder, named relative to it), the box of the element it acted on, and the action.
"""

from __future__ import annotations

from noosphere.trace import Event


class WebEpisodeStarted(Event):
    kind: str = "web_episode_started"
    env: str
    task: str
    seed: int
    goal: str
    system: str
    url: str


class WebStepTaken(Event):
    """One step: what the agent wrote, what was carried out (or why not), and what the page said after it."""

    kind: str = "web_step"
    env: str
    step: int
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
    what: str
    url: str


class WebEpisodeEnded(Event):
    kind: str = "web_episode_ended"
    env: str
    task: str
    seed: int
    won: bool
    reward: float
    steps: int
    lost_steps: int
    reason: str
    """done (the task ended itself), max_steps, timeout, infeasible, left_page or error."""
    error: str | None = None
