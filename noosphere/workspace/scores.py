"""Where a chunk's scores and the STM's alpha come from: the model's words or its probabilities.

- `verbal`: the model writes its relevance, confidence and surprise (CTM-AI's prompt scales).
- `logprob`: the model writes only its response and question; each score is then P(True), the
  probability the model gives "Yes" against "No" to a yes/no question about that response, asked
  after it in the same conversation (so the conversation's cache is reused and only the question is
  evaluated). With labels, the STM scores every label as its answer's continuation instead of
  writing one: the answer is the most probable label and alpha its probability.
- `samples`: as `logprob`, but each probability is estimated from sampled Yes/No answers (for a
  provider that returns no log-probabilities; it costs calls).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from noosphere.llm import Message, Model

ScoreSource = Literal["verbal", "logprob", "samples"]
SCORE_SOURCES: tuple[str, ...] = ("verbal", "logprob", "samples")
SAMPLES = 8
"""Sampled answers per probability in `samples` mode."""

RELEVANCE_QUESTION = "Does your response answer the query directly and usefully? Answer Yes or No."
CONFIDENCE_QUESTION = "Is your response correct? Answer Yes or No."
SURPRISE_QUESTION = ("Does your response say something unexpected, that the query alone would not suggest? "
                     "Answer Yes or No.")
ANSWER_CORRECT_QUESTION = "Is this answer to the query correct? Answer Yes or No."


@dataclass(frozen=True)
class ProbabilityScores:
    relevance: float
    confidence: float
    surprise: float


async def probability(model: Model, messages: list[Message], source: ScoreSource, *, agent: str) -> float:
    """P(True) of the yes/no question the messages end with, from log-probabilities or samples."""
    method: Literal["logprob", "samples"] = "samples" if source == "samples" else "logprob"
    return await model.p_true(messages, method=method, samples=SAMPLES, agent=agent)


async def judge_response(model: Model, conversation: list[Message], response: str, source: ScoreSource, *,
                         agent: str) -> ProbabilityScores:
    """The three chunk scores of `response` (the reply to `conversation`), asked at once."""
    context = [*conversation, Message.assistant(response)]
    relevance, confidence, surprise = await asyncio.gather(*(
        probability(model, [*context, Message.user(question)], source, agent=agent)
        for question in (RELEVANCE_QUESTION, CONFIDENCE_QUESTION, SURPRISE_QUESTION)))
    return ProbabilityScores(relevance, confidence, surprise)
