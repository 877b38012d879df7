"""Trace events of an embodied episode: the map the viewer uncovers step by step, each action, each question."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from noosphere.trace import Event


class EpisodeBegan(Event):
    """An exploration episode begins, once `explore` has reset the world: the world and seed, the system driving the
    robot, the action limit, the whole map and its objects, and the robot's starting pose and view."""

    kind: str = "emb_episode"
    world: str
    seed: int
    system: str
    max_steps: int
    layout: list[str]
    """The whole map, a string a row (`GridWorld.layout`): what the viewer uncovers as the robot sees it."""
    things: list[dict[str, Any]] = Field(default_factory=list)
    """Every object of the world: kind, colour, x, y, state (a door's)."""
    floor: int
    """How many floor cells the world has (coverage is the share of them seen)."""
    pose: list[int]
    """Where the robot starts: x, y, heading (0 east, 1 south, 2 west, 3 north)."""
    seen: list[list[int]] = Field(default_factory=list)
    """The cells in view at the start."""
    coverage: float
    view: str = ""
    """What the robot sees at the start, as text."""


class ActionTaken(Event):
    """One of an episode's actions, traced by `explore` after the world has moved: what the system said and the action
    read from it (or why nothing was done), the robot's pose, the cells newly seen and the coverage."""

    kind: str = "emb_step"
    step: int
    said: str
    """The action as the system gave it."""
    action: str | None
    """What was done: one of the world's actions, or None when `said` was none of them (nothing happened)."""
    invented: bool = False
    """The system gave no action of the world (an invented or empty one): recorded, and nothing was done."""
    forfeited: str | None = None
    """The system's turn failed at run time (why); nothing was done."""
    pose: list[int]
    seen: list[list[int]] = Field(default_factory=list)
    """The cells that came into view for the first time with this action."""
    coverage: float
    note: str = ""
    """What the system wrote about the step (the first mate's summary, the single agent's note)."""
    effect: str = ""
    """Why the action changed nothing, as the next step is told ("a wall was in the way: the robot did not move");
    empty when it did something."""
    view: str = ""
    """What the robot sees after the action, as text."""


class QuestionAnswered(Event):
    """One answerer's answer to one question about the world, asked after exploring (`eqa.ask_all`): the question and
    its gold answer, the answer as given and as compared, and whether it was right (a failed call answers nothing and is
    wrong)."""

    kind: str = "emb_question"
    question_id: str
    question_kind: str
    """present, colour, count or room."""
    question: str
    gold: str
    answerer: str
    """captain, single or seen-text (the baseline that reads the text of everything seen, in one call)."""
    answer: str
    canonical: str
    """The answer as it is compared with `gold` (its colour, number, room or yes / not seen)."""
    correct: bool
