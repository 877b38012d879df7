"""The systems `noosphere ask --system NAME` can run; each engine package registers its own here."""

from noosphere.systems.base import Answer, ask_base
from noosphere.systems.registry import SYSTEMS, AskSystem, get_system

__all__ = ["SYSTEMS", "Answer", "AskSystem", "ask_base", "get_system"]
