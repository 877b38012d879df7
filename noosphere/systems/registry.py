"""Name -> system for the CLI's `--system` option; unknown names fail with a suggestion."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from noosphere.errors import UnknownNameError
from noosphere.llm import Model
from noosphere.observation import Observation
from noosphere.systems.base import Answer, ask_base
from noosphere.systems.ctm import ask_ctm

AskSystem = Callable[[Model, str, Observation], Awaitable[Answer]]

SYSTEMS: dict[str, AskSystem] = {"base": ask_base, "ctm": ask_ctm}


def get_system(name: str) -> AskSystem:
    if name not in SYSTEMS:
        raise UnknownNameError("system", name, SYSTEMS)
    return SYSTEMS[name]
