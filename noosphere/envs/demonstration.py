"""A solved game to learn from: the expert's own actions on another game of the same kind, replayed.

The 1.5B model read ALFWorld's task words as commands: given "look at the alarmclock under the
desklamp" it chose `look`, eight steps running, in ReAct and in the meta-agent alike (stop 16). A
game of the same kind played to a win shows what the commands do and in what order (go to a
receptacle, take, go on, use the lamp), the way ReAct's own ALFWorld prompts showed solved games.
The solved game is never one of the games played.
"""

from __future__ import annotations

from typing import Protocol

from noosphere.envs.base import Environment
from noosphere.errors import UsageError

OBSERVATION_CHARS = 240
"""A replayed observation is cut here: the first room listing is long, and the demo is about the moves."""


class SolvableGame(Environment, Protocol):
    """An environment that knows its own solution (ALFWorld's walkthrough, TextWorld's policy)."""

    def expert_actions(self) -> list[str]: ...


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= OBSERVATION_CHARS else text[: OBSERVATION_CHARS - 3].rstrip() + "..."


def demonstration(game: SolvableGame) -> str:
    """The game's task (told as another game's), first observation and every expert action with what
    it brought, up to the win. A replay that does not win shows nothing worth copying: `UsageError`."""
    try:
        actions = game.expert_actions()
        start = game.reset()
        # worded unlike the player's own "Your task is to: ...", so the demo's task is not taken for it
        lines = [f"Its task was: {start.task.split(':', 1)[-1].strip()}", _short(start.observation)]
        won = False
        for action in actions:
            step = game.step(action)
            lines.append(f"> {action}\n{_short(step.observation)}")
            if step.done:
                won = step.won
                break
    finally:
        game.close()
    if not won:
        raise UsageError(f"the expert's {len(actions)} actions did not win the game kept back as a demonstration")
    return "\n".join([*lines, "(the task was complete: the game was won)"])


def with_demonstration(guide: str, demo: str) -> str:
    """The world's guide followed by the solved game, introduced as one: other room, other objects."""
    example = f"A solved game of the same kind (another room; its objects and numbers are not yours):\n{demo}"
    return f"{guide}\n\n{example}" if guide else example
