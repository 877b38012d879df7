"""The single agent: one model reads the robot's view as text, notes what matters and chooses the action, one
call a step. It keeps a log of its notes and actions (its memory), which it answers questions from afterwards."""

from __future__ import annotations

from pydantic import BaseModel, Field

from noosphere.embodied.policy import Decision, LogEntry, log_text
from noosphere.envs.gridworld import ACTIONS, GUIDE, GridWorld
from noosphere.llm import Message, Model

ROLE = ("You drive a robot that explores a house, to see as much of it as it can. Each step you read what the "
        "robot sees, note in a sentence what matters (rooms, doors, objects and their colours, open ways), and "
        "choose one action. Go where you have not been; open closed doors to reach new rooms.")
STEP_PROMPT = ("Your log (most recent last):\n{log}\n\nStep {step} of {steps}. {last}What the robot sees now:\n{view}"
               "\n\nChoose one action: {actions}.")


class SingleStep(BaseModel):
    seen: str = Field(max_length=300, description="what the robot sees now that matters, in one sentence")
    action: str = Field(min_length=1, max_length=60, description=f"one of: {', '.join(ACTIONS)}")


class SingleAgent:
    name = "single"

    def __init__(self, model: Model, *, max_steps: int) -> None:
        self.model, self.max_steps = model, max_steps
        self.log: list[LogEntry] = []

    async def decide(self, world: GridWorld, step: int, last: str) -> Decision:
        prompt = STEP_PROMPT.format(log=log_text(self.log), step=step, steps=self.max_steps, view=world.view_text(),
                                    last=f"Your last action: {last}. " if last else "", actions=", ".join(ACTIONS))
        completion = await self.model.complete([Message.system(f"{ROLE}\n\n{GUIDE}"), Message.user(prompt)],
                                               output=SingleStep, agent=self.name)
        assert completion.output is not None
        chosen = completion.output
        self.log.append(LogEntry(step, last, chosen.seen.strip(), chosen.action.strip()))
        return Decision(chosen.action, note=chosen.seen)

    def memory(self) -> str:
        """The whole log: what it answers questions about the house from."""
        return log_text(self.log, window=None)
