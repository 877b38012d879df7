"""The environment protocol the meta-agent and its baselines act in.

`reset` gives the task, the first observation and the admissible actions; `step(action)` gives
the next observation, the reward, whether the episode is over and whether it was won. This is what
the Episodex agent had in ALFWorld: no hidden state, no oracle, only text and the action list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Reset:
    task: str
    observation: str
    admissible: tuple[str, ...]
    guide: str = ""
    """How this kind of world works (what the Episodex paper calls environmental affordances and put in
    its planning prompt, raising GPT-4o's success from 82 to 94 %): the same for every game of a kind,
    so agents keep it at the start of their prompts, where the model caches it."""


@dataclass(frozen=True)
class Step:
    observation: str
    reward: float
    done: bool
    won: bool
    admissible: tuple[str, ...]


class Environment(Protocol):
    name: str
    """Identifies the game (stable across runs, used as the item id in benchmarks)."""
    kind: str
    """The task type (ALFWorld's six, or a TextWorld challenge), for per-type success rates."""

    def reset(self) -> Reset: ...

    def step(self, action: str) -> Step: ...

    def close(self) -> None: ...
