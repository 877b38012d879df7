"""The base system: the model alone, one call, answering with its confidence.

Every engine is measured against this, so it is kept honest: the same model, the same query, one
structured call, no extra context.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from noosphere.llm import Message, Model
from noosphere.observation import Observation

BASE_ROLE = (
    "You answer the user's question directly and carefully. Besides the answer, judge how likely it is "
    "to be correct: confidence 0.0 means a pure guess, 0.5 means it could go either way, 1.0 means certain."
)


NO_ANSWER = "(no answer)"
"""What a system answers when it reached none (every processor or member forfeited), with confidence 0."""


class Answer(BaseModel):
    """An answer and the model's own estimate that it is right."""

    answer: str = Field(min_length=1, max_length=600, description="the answer, in one or a few sentences")
    confidence: float = Field(ge=0.0, le=1.0, description="probability that the answer is correct, 0.0 to 1.0")


class Written(BaseModel):
    answer: str = Field(min_length=1, max_length=600, description="the answer, in one or a few sentences")


CORRECT_QUESTION = "Is your answer correct? Answer Yes or No."


async def ask_base(model: Model, query: str, observation: Observation | None = None, *,
                   scores: str = "verbal") -> Answer:
    """The model alone; any text views are given to it in full, media as attachments. With `scores="logprob"`
    (or `"samples"`) it writes only its answer, and the confidence is P(True) that the answer is right."""
    parts = [f"{view.name}:\n{view.text}" for view in (observation.views if observation else ()) if view.text]
    media = tuple(part for view in (observation.views if observation else ()) for part in view.media)
    prompt = "\n\n".join([*parts, query])
    messages = [Message.system(BASE_ROLE), Message("user", prompt, media)]
    if scores != "verbal":
        written = await model.complete(messages, output=Written, agent="base")
        assert written.output is not None
        confidence = await model.p_true([*messages, Message.assistant(written.output.answer),
                                         Message.user(CORRECT_QUESTION)], agent="base",
                                        method="samples" if scores == "samples" else "logprob")
        return Answer(answer=written.output.answer, confidence=confidence)
    completion = await model.complete(messages, output=Answer, agent="base")
    assert completion.output is not None
    return completion.output
