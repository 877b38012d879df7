"""`ask --system society`: a declared society answers; its confidence is the share of it behind the answer."""

from __future__ import annotations

from noosphere.observation import Observation
from noosphere.society import Society
from noosphere.systems.base import NO_ANSWER, Answer


async def ask_society(society: Society, query: str, observation: Observation) -> Answer:
    """The society's answer; confidence is its `support`: the votes for it, or the members who hold it."""
    result = await society.run(query, observation if observation.views else None)
    return Answer(answer=(result.answer or NO_ANSWER)[:600], confidence=result.support)
