"""How the games name things, read from text: a leaf module that the state and the hallucination check share."""

from __future__ import annotations

import re

NUMBERED_OBJECT = re.compile(r"\b([a-z]+) (\d{1,3})\b")


def numbered_objects(text: str) -> set[tuple[str, str]]:
    """`(kind, number)` for every "countertop 2"-style name: how ALFWorld tells objects apart."""
    return set(NUMBERED_OBJECT.findall(text.lower()))
