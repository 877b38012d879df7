"""What every system that drives the robot is: something that, each step, reads what it may of the world and
says an action."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from noosphere.envs.gridworld import GridWorld


@dataclass(frozen=True)
class Decision:
    said: str
    """The action as the system gives it (read by `parse_action`; anything else is an invented action)."""
    note: str = ""
    """What the system wrote about the step: the first mate's summary, the single agent's note."""
    detail: dict[str, Any] = field(default_factory=dict)


class Policy(Protocol):
    name: str

    async def decide(self, world: GridWorld, step: int, last: str) -> Decision:
        """The action for step `step` (1-based); `last` says what the previous step did ("" at the start).
        A system reads of `world` only what it is meant to: its view, or for code its map of what it has seen."""
        ...


@dataclass(frozen=True)
class LogEntry:
    """One step as a system that keeps a log remembers it: what the last action did, what was seen, what it chose."""

    step: int
    last: str
    seen: str
    chose: str

    def line(self) -> str:
        after = f" (after {self.last})" if self.last else ""
        return f"Step {self.step}{after}: {self.seen.rstrip('. ') or 'nothing noted'}. You chose: {self.chose}."


LOG_WINDOW = 8
"""Steps of a log told in full in each step's prompt; the actions of all of them are listed too. A whole log
would grow each prompt by some 60 tokens a step; questions after the episode read it whole."""


def log_text(log: list[LogEntry], *, window: int | None = LOG_WINDOW) -> str:
    """The log as a prompt carries it: every action so far, then the last `window` steps in full (None: all)."""
    if not log:
        return "(nothing yet: this is the first step)"
    shown = log if window is None else log[-window:]
    actions = ", ".join(entry.chose for entry in log)
    earlier = f"Actions so far: {actions}.\n" if window is not None and len(log) > window else ""
    return earlier + "\n".join(entry.line() for entry in shown)
