"""An action as a model writes it, read as one of the world's actions, or as none (an invented action)."""

from __future__ import annotations

import re

from noosphere.envs.gridworld import FORWARD, OPEN, STOP, TURN_LEFT, TURN_RIGHT

_SAYINGS: tuple[tuple[str, str], ...] = (
    (r"\bturn(ing)?\s+(to\s+the\s+)?left\b|^left$|\brotate\s+left\b", TURN_LEFT),
    (r"\bturn(ing)?\s+(to\s+the\s+)?right\b|^right$|\brotate\s+right\b", TURN_RIGHT),
    (r"\b(move|go|walk|step)s?\s+(one\s+cell\s+)?(forward|ahead|straight)\b|^forward$|^ahead$", FORWARD),
    (r"(?<!\bthe )(?<!\ban )\bopen(s|ing)?\b(\s+the)?(\s+\w+)?\s+door\b|^open$|^toggle$", OPEN),  # not "the open door"
    (r"^stop$|^done$|\bstop\s+(exploring|the\s+robot)\b", STOP),
)


def parse_action(text: str) -> str | None:
    """The world action `text` names, or None. The action may stand alone ("move forward", "Forward.") or open a
    sentence; a text that names two different actions names none (the robot cannot do both)."""
    said = " ".join(re.sub(r"[^a-z\s]", " ", text.lower()).split())
    found = {action for pattern, action in _SAYINGS if re.search(pattern, said)}
    return found.pop() if len(found) == 1 else None
