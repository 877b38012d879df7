"""The single agent: one model reads the robot's view as text, notes what matters and chooses the action, one
call a step. It keeps a log of its notes and actions (its memory), which it answers questions from afterwards.

Its prompt carries the whole log, which only grows: each step's prompt begins with the last one's, so the model's
cache holds it and only the newest entry and the view are read anew. With the last 8 steps in full (a window that
slides, so the prompt changed from its start every step) and notes of up to 300 characters, in which the 1.5B model
copied the whole view, a call read some 700 new tokens and took 7.6 s of wall time at `--parallel 4`."""

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
    seen: str = Field(max_length=160, description="what the robot sees now that matters, in one short sentence")
    action: str = Field(min_length=1, max_length=60, description=f"one of: {', '.join(ACTIONS)}")


class SingleAgent:
    name = "single"

    def __init__(self, model: Model, *, max_steps: int) -> None:
        self.model, self.max_steps = model, max_steps
        self.log: list[LogEntry] = []

    async def decide(self, world: GridWorld, step: int, last: str) -> Decision:
        prompt = STEP_PROMPT.format(log=log_text(self.log, window=None), step=step, steps=self.max_steps,
                                    view=world.view_text(), last=f"Your last action: {last}. " if last else "",
                                    actions=", ".join(ACTIONS))
        completion = await self.model.complete([Message.system(f"{ROLE}\n\n{GUIDE}"), Message.user(prompt)],
                                               output=SingleStep, agent=self.name)
        assert completion.output is not None
        chosen = completion.output
        self.log.append(LogEntry(step, last, chosen.seen.strip(), chosen.action.strip()))
        return Decision(chosen.action, note=chosen.seen)

    def memory(self) -> str:
        """The whole log: what it answers questions about the house from."""
        return log_text(self.log, window=None)
