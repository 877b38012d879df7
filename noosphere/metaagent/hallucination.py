"""Text that has left the game: the paper's creative hallucination, told apart from honest uncertainty.

Small models drift in three recognisable ways once a few actions fail: they declare the task
unsolvable and stop trying, they announce success the environment has not granted, or they reason
about objects that were never there ("fridge 3" in a room with one fridge). Each is checked against
what the episode has actually shown, never against an opinion of what is plausible, so the check
cannot fire on a belief that is merely wrong about where things are.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from noosphere.metaagent.grounding import numbered_objects

if TYPE_CHECKING:
    from noosphere.metaagent.state import EpisodeState

GIVING_UP = re.compile(r"\b(unsolvable|cannot be (completed|solved|done)|can ?not complete the task|"
                       r"can't be (completed|solved|done)|impossible to (complete|solve|finish)|give up|giving up)\b")
CLAIMED_SUCCESS = re.compile(r"\b(task (is|has been) (now )?(complete|completed|done|finished|accomplished|solved)|"
                             r"successfully (completed|solved|finished) the task)\b")
HEDGES = re.compile(r"(\b(not|once|when|after|until|if|will|yet|almost|nearly|before|part|half|first)\b|n't\b)")
CONDITIONS = re.compile(r"(\b(until|unless|without|if|once|when|never|do not|don't)\b|n't give up)")
"""A give-up phrase under one of these is a condition or an exhortation ("cannot be done until I
find the key", "don't give up"), not a verdict."""
INVALID_STREAK_FOR_FOCUS = 2


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;])\s+|\n", text.lower()) if s.strip()]


def off_task(text: str, *, won: bool, seen: set[tuple[str, str]]) -> str | None:
    """Why `text` (a belief state or an idea) has left the game, or None while it stays in it.

    `seen` holds the numbered objects of every observation and admissible action so far (and of the
    recalled memory, which a belief may quote); a name counts as invented only when its kind has
    been seen with other numbers and never with this one.
    """
    sentences = _sentences(text)
    if any(GIVING_UP.search(s) and not CONDITIONS.search(s) for s in sentences):
        return "it declares the task cannot be done"
    if not won and any(CLAIMED_SUCCESS.search(s) and not HEDGES.search(s) for s in sentences):
        return "it claims a success the game has not granted"
    kinds_seen = {kind for kind, _ in seen}
    invented = sorted(f"{kind} {number}" for kind, number in numbered_objects(text)
                      if kind in kinds_seen and (kind, number) not in seen)
    if invented:
        return f"it names objects the game never showed: {', '.join(invented[:3])}"
    return None


def flag_hallucination(node: str, state: EpisodeState) -> None:
    """Flag what the agent `node` just did if it is one of the hallucinations the paper names, so
    that the conscious agent goes round the focus loop next."""
    if node == "external_perception" and state.invalid_streak >= INVALID_STREAK_FOR_FOCUS:
        state.needs_focus = state.needs_focus or f"{state.invalid_streak} actions in a row did nothing"
    text = {"conscious": state.belief, "idea": state.idea}.get(node)
    # objects of recalled games may be named only by agents that read them (the paper's team view)
    recalled = numbered_objects(state.recall) if state.recall_shared else set()
    if text and (why := off_task(text, won=state.won, seen=state.seen | recalled)):
        state.needs_focus = state.needs_focus or f"the {node} agent's text: {why}"
