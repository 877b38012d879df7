"""The global workspace as a web agent (CTM-AI's web setting): one sensory processor per view of the page.

Each step is one workspace run. The processors are the HTML processor and the accessibility-tree processor,
and with a model that declares vision the screenshot processor, which sees the screenshot with its
set-of-marks boxes; each sees only its view, with the goal, the action space, the actions that fit the page
and the steps so far (the query). They bid, one chunk wins, and the short-term memory turns it into exactly
one action of the page's admissible list: the list is the STM's label set, so its answer is always one of them
(constrained in the model's words, or with `scores="logprob"` the most probable label). Broadcast, links
and fusion run as in any workspace when the STM is not yet sure. The engine is `noosphere.workspace`'s,
unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from noosphere.envs.web_som import set_of_marks
from noosphere.llm import MediaPart, Model
from noosphere.observation import Observation, View
from noosphere.systems.web_episode import Decide, Decision, Turn
from noosphere.systems.web_prompts import PROCESSOR_ROLE, VIEW_NAMES, WORKSPACE_QUERY, brief
from noosphere.workspace import ShortTermMemory, Workspace, WorkspaceSettings, sensory

NOTHING_FITS = "noop()"
"""Waiting a step: what ctm does on a page where no action was found to fit, without a workspace run, and the
STM's second label where only one action fits."""


def views(turn: Turn, *, vision: bool) -> Observation:
    """The page as the processors see it: its HTML, its accessibility tree, and (vision) the marked screenshot."""
    found = [View("html", text=turn.state.html), View("axtree", text=turn.state.axtree)]
    if vision and turn.state.screenshot:
        marked = set_of_marks(turn.state.screenshot, (e for e in turn.state.elements if e.visible and e.bid in
                                                      _acted_on(turn.admissible)))
        found.append(View("screenshot", media=(MediaPart("image", marked, "image/png"),)))
    return Observation(tuple(found))


def _acted_on(admissible: tuple[str, ...]) -> set[str]:
    return {action.split('"')[1] for action in admissible if action.count('"') >= 2}


def ctm(model: Model, settings: WorkspaceSettings | None = None) -> Decide:
    settings = settings or WorkspaceSettings()
    vision = model.capabilities.vision

    async def decide(turn: Turn) -> Decision:
        if not turn.admissible:
            return Decision(NOTHING_FITS, "no action fits this page: wait a step")
        observation = views(turn, vision=vision)
        processors = [sensory(view.name, model, view.name, role=PROCESSOR_ROLE.format(view=VIEW_NAMES[view.name]),
                              media_kind="image" if view.media else None, scores=settings.scores)
                      for view in observation.views]
        # a label set has two labels at least: a page with one action offers it or waiting (click-test has one button)
        labels = turn.admissible if len(turn.admissible) > 1 else (*turn.admissible, NOTHING_FITS)
        stm = ShortTermMemory(model, labels=labels, scores=settings.scores, calibrate=settings.calibrate,
                              alpha=settings.stm_alpha)
        workspace = Workspace(processors, stm, replace(settings, carry_over=False))
        result = await workspace.run(f"{brief(turn)}\n\n{WORKSPACE_QUERY}", observation)
        action = result.label or result.answer
        return Decision(action, f"{result.answer} (from {', '.join(result.winners)}; confidence "
                                f"{result.confidence:.2f})")

    return decide
