"""Two web agents over the model alone: `base` (one call a step, the accessibility tree, the action) and `react`
(one call a step that thinks before it acts, as in ReAct). Both write BrowserGym action strings freely; the
environment parses them, and one that does not parse or names no element loses its step."""

from __future__ import annotations

from pydantic import BaseModel, Field

from noosphere.llm import Message, Model
from noosphere.systems.web_episode import Decide, Decision, Turn
from noosphere.systems.web_prompts import AGENT_ROLE, NEXT_ACTION, REACT_ROLE, brief, page_view

ACTION_FIELD = 'one action call, such as click("12") or fill("14", "some text")'


class BaseStep(BaseModel):
    action: str = Field(min_length=1, max_length=300, description=ACTION_FIELD)


class ReactStep(BaseModel):
    thought: str = Field(min_length=1, max_length=400,
                         description="what the page shows and what remains to do, in one or two sentences")
    action: str = Field(min_length=1, max_length=300, description=ACTION_FIELD)


def _messages(role: str, turn: Turn) -> list[Message]:
    return [Message.system(role),
            Message.user(f"{brief(turn)}\n\n{page_view('axtree', turn.state.axtree)}\n\n{NEXT_ACTION}")]


def base(model: Model) -> Decide:
    async def decide(turn: Turn) -> Decision:
        completion = await model.complete(_messages(AGENT_ROLE, turn), output=BaseStep, agent="base")
        assert completion.output is not None
        return Decision(completion.output.action)

    return decide


def react(model: Model) -> Decide:
    async def decide(turn: Turn) -> Decision:
        completion = await model.complete(_messages(REACT_ROLE, turn), output=ReactStep, agent="react")
        assert completion.output is not None
        return Decision(completion.output.action, completion.output.thought)

    return decide
