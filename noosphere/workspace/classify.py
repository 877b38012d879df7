"""Classification adapter: a query, an observation split into named views, and a closed label set.

One sensory processor per view (with an optional role each); the STM answers with one label of
the set, decoded as an enum, so the label is always one of them.
"""

from __future__ import annotations

from noosphere.llm import Model
from noosphere.observation import Observation
from noosphere.workspace.engine import Workspace, WorkspaceResult, WorkspaceSettings
from noosphere.workspace.processor import sensory
from noosphere.workspace.stm import ShortTermMemory


def classifier(model: Model, observation: Observation, labels: tuple[str, ...], *,
               roles: dict[str, str] | None = None, settings: WorkspaceSettings | None = None,
               stm_samples: int = 1) -> Workspace:
    roles = roles or {}
    settings = settings or WorkspaceSettings()
    processors = [sensory(view.name, model, view.name, role=roles.get(view.name, ""),
                          media_kind=view.media[0].kind if view.media else None, scores=settings.scores)
                  for view in observation.views]
    stm = ShortTermMemory(model, labels=labels, samples=stm_samples, scores=settings.scores,
                          calibrate=settings.calibrate, alpha=settings.stm_alpha)
    return Workspace(processors, stm, settings)


async def classify(model: Model, query: str, observation: Observation, labels: tuple[str, ...], *,
                   roles: dict[str, str] | None = None, settings: WorkspaceSettings | None = None,
                   stm_samples: int = 1) -> WorkspaceResult:
    """Run a fresh workspace on one item; `result.label` is one of `labels`."""
    workspace = classifier(model, observation, labels, roles=roles, settings=settings, stm_samples=stm_samples)
    return await workspace.run(query, observation)
