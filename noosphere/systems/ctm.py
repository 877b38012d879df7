"""`ask --system ctm`: a global workspace with one sensory processor per view of the observation.

With no views, the query is all there is, and three cognitive processors with different habits of
thought compete instead. Each attached tool adds a tool processor.
"""

from __future__ import annotations

from dataclasses import replace

from noosphere.llm import Model
from noosphere.observation import Observation
from noosphere.systems.base import NO_ANSWER, Answer
from noosphere.tools import Tool
from noosphere.workspace import ShortTermMemory, ToolProcessor, Workspace, WorkspaceSettings, cognitive, sensory
from noosphere.workspace.processor import LLMProcessor

THINKERS = {
    "reasoner": "You work the query out step by step from first principles.",
    "skeptic": "You look for the catch: what could make the obvious answer wrong.",
    "intuition": "You answer from common sense and everyday experience, quickly.",
}


def workspace_for(model: Model, observation: Observation, settings: WorkspaceSettings | None = None,
                  tools: tuple[Tool, ...] = ()) -> Workspace:
    """One sensory processor per view (or the thinkers when there is none), plus one per tool."""
    processors: list[LLMProcessor]
    settings = settings or WorkspaceSettings()
    scores = settings.scores
    if observation.views:
        processors = [sensory(view.name, model, view.name, media_kind=view.media[0].kind if view.media else None,
                              scores=scores) for view in observation.views]
    else:
        processors = [cognitive(name, model, role=role, scores=scores) for name, role in THINKERS.items()]
    processors += [ToolProcessor(tool.spec.name, model, tool) for tool in tools]
    # calibrate and stm_alpha need labels, which this STM has none of: set, it refuses them rather than ignore them
    stm = ShortTermMemory(model, scores=scores, calibrate=settings.calibrate, alpha=settings.stm_alpha)
    return Workspace(processors, stm, settings)


async def ask_ctm(model: Model, query: str, observation: Observation, *, settings: WorkspaceSettings | None = None,
                  tools: tuple[Tool, ...] = (), scores: str | None = None) -> Answer:
    """`scores` overrides the settings' score source (`workspace.scores`). Without settings, the competition's draws
    take the model's seed (`--seed`), as its sampling does."""
    settings = settings or WorkspaceSettings(seed=model.settings.seed)
    if scores is not None:
        settings = replace(settings, scores=scores)  # type: ignore[arg-type]
    result = await workspace_for(model, observation, settings, tools).run(query, observation)
    if not result.answer:  # every processor forfeited its bid (`stopped_by="no_chunks"` in the trace)
        return Answer(answer=NO_ANSWER, confidence=0.0)
    return Answer(answer=result.answer[:600], confidence=result.confidence)
