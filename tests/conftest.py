"""Test setup: a guard that fails any real model call outside tests marked `real_model`, and CI's rule on skipped
tests (`tests/skip_policy.py`: with NOOSPHERE_EXPECT_NO_SKIPS=1 a skip for anything but a missing ../shared fails)."""

from __future__ import annotations

import pytest

from noosphere.llm.batching import BatchEngine
from noosphere.llm.litellm_backend import LiteLLMBackend
from noosphere.llm.local import LocalBackend
from noosphere.society.artists import LiteLLMPainter
from tests.skip_policy import pytest_sessionfinish, pytest_terminal_summary  # noqa: F401  (hooks)


class RealModelCallInTest(AssertionError):
    pass


def _forbidden(*_args: object, **_kwargs: object) -> None:
    raise RealModelCallInTest("a unit test tried to call a real model; use the scripted model or mark it real_model")


@pytest.fixture(autouse=True)
def _guard_real_models(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way a backend reaches its model: generating a reply and scoring options (`Model.score_options`);
    the local model's scoring would load the weights before its jobs reach the batch engine."""
    if request.node.get_closest_marker("real_model") is None:
        monkeypatch.setattr(LocalBackend, "generate", _forbidden)
        monkeypatch.setattr(LocalBackend, "_generate_serially", _forbidden)
        monkeypatch.setattr(LocalBackend, "score", _forbidden)
        monkeypatch.setattr(BatchEngine, "submit", _forbidden)
        if request.node.get_closest_marker("provider_double") is None:
            monkeypatch.setattr(LiteLLMBackend, "generate", _forbidden)
            monkeypatch.setattr(LiteLLMBackend, "score", _forbidden)
            monkeypatch.setattr(LiteLLMPainter, "paint", _forbidden)
