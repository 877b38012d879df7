"""The motor processor: turns the workspace's winning intent into one action an environment accepts.

The action is decoded as an enum of the admissible actions, so it is always valid; the processor
may also say why, for the trace. It is used after the STM, by whoever drives an environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, create_model

from noosphere.errors import UsageError
from noosphere.llm import Message, Model
from noosphere.workspace.chunk import Chunk

MOTOR = """You are the motor processor of a global workspace: you turn its current intent into exactly one
action from the list of admissible actions."""


@dataclass(frozen=True)
class Action:
    action: str
    reason: str


class MotorProcessor:
    def __init__(self, name: str, model: Model) -> None:
        self.name = name
        self.model = model

    async def act(self, intent: Chunk | str, admissible: list[str], *, goal: str = "") -> Action:
        if not admissible:
            raise UsageError("the motor processor needs at least one admissible action")
        choices: Any = Literal[tuple(admissible)]  # type: ignore[valid-type]
        output = create_model("MotorOutput", reason=(str, Field(max_length=200)), action=(choices, ...))
        gist = intent.gist if isinstance(intent, Chunk) else intent
        listing = "\n".join(f"- {action}" for action in admissible)
        user = "\n\n".join(part for part in (f"Goal: {goal}" if goal else "", f"Intent: {gist}",
                                             f"Admissible actions:\n{listing}") if part)
        completion = await self.model.complete([Message.system(MOTOR), Message.user(user)], output=output,
                                               agent=self.name)
        result: Any = completion.output
        return Action(result.action, result.reason)
