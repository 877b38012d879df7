"""`ask --system society`: a declared society answers; its confidence is how many members agree."""

from __future__ import annotations

from noosphere.observation import Observation
from noosphere.society import Society
from noosphere.society.session import default_key
from noosphere.systems.base import Answer


async def ask_society(society: Society, query: str, observation: Observation) -> Answer:
    """The society's answer; confidence is the share of members whose last answer is that answer."""
    result = await society.run(query, observation if observation.views else None)
    names = {member.name for member in society.members}
    latest = {r.member: r.answer for r in result.records if r.member in names}
    agreeing = sum(default_key(answer) == default_key(result.answer) for answer in latest.values())
    return Answer(answer=(result.answer or "(no answer)")[:600], confidence=agreeing / len(latest) if latest else 0.0)
