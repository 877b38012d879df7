"""Small builders shared by tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.scripted import Script
from noosphere.trace import Trace


def scripted(script: Script, **options: Any) -> tuple[Model, ScriptedBackend, Trace]:
    """A model over a scripted backend with an in-memory trace; returns all three for assertions."""
    backend = ScriptedBackend(script, **options)
    trace = Trace(None)
    return Model(backend, trace=trace), backend, trace


def opener_for(script: Script, **options: Any) -> Any:
    """A model opener (what the CLI and benchmarks call with a model id) over one scripted backend, kept as
    `opener.backend` for assertions."""
    backend = ScriptedBackend(script, **options)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    opener.backend = backend  # type: ignore[attr-defined]
    return opener


MUSTARD_SAMPLE = {
    "1_1": {"utterance": "Oh, great. Just great.", "speaker": "CHANDLER", "context": ["The car broke down."],
            "context_speakers": ["ROSS"], "show": "FRIENDS", "sarcasm": True},
    "1_2": {"utterance": "I love this sandwich.", "speaker": "JOEY", "context": [], "context_speakers": [],
            "show": "FRIENDS", "sarcasm": False},
    "1_3": {"utterance": "What a genius plan.", "speaker": "SHELDON", "context": ["Let's hide in the fridge."],
            "context_speakers": ["HOWARD"], "show": "BBT", "sarcasm": True},
}
"""Three MUStARD items in the dataset's own JSON shape: two sarcastic, one sincere."""


def by_agent(replies: dict[str, list[Any]]) -> Any:
    """A script function that answers each agent from its own queue (routing by caller, not by prompt)."""
    queues = {agent: list(items) for agent, items in replies.items()}

    def reply(request: Any) -> Any:
        queue = queues.get(request.agent)
        if not queue:
            raise AssertionError(f"no scripted reply left for agent {request.agent!r}")
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return reply


def chunk_reply(response: str, question: str = "", relevance: float = 0.5, confidence: float = 0.5,
                surprise: float = 0.0) -> dict[str, Any]:
    return {"response": response, "additional_question": question, "relevance": relevance,
            "confidence": confidence, "surprise": surprise}


def stm_reply(answer: str, confidence: float, label: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"answer": answer, "confidence": confidence}
    if label is not None:
        out["label"] = label
    return out


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """A script outside the package (benchmarks/, docs/) as a module, registered in `sys.modules` under `name`
    (default: `<stem>_script`), where its dataclasses look their module up."""
    spec = importlib.util.spec_from_file_location(name or f"{path.stem}_script", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
