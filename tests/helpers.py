"""Small builders shared by tests."""

from __future__ import annotations

from typing import Any

from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.scripted import Script
from noosphere.trace import Trace


def scripted(script: Script, **options: Any) -> tuple[Model, ScriptedBackend, Trace]:
    """A model over a scripted backend with an in-memory trace; returns all three for assertions."""
    backend = ScriptedBackend(script, **options)
    trace = Trace(None)
    return Model(backend, trace=trace), backend, trace
