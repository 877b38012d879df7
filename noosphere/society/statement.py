"""The form of a member's turn that gives its answer to the task."""

from __future__ import annotations

from pydantic import BaseModel, Field

REASONING_CHARS = 2000
ANSWER_CHARS = 300


class Statement(BaseModel):
    """What a member says in a turn: its reasoning and its current answer to the task."""

    reasoning: str = Field(max_length=REASONING_CHARS, description="your working, step by step, with the facts and "
                                                                   "numbers each step uses and what it gives")
    answer: str = Field(min_length=1, max_length=ANSWER_CHARS, description="your current answer to the task, short")
