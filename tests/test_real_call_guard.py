"""The guard of `tests/conftest.py`: outside tests marked `real_model` (or `provider_double`, for a provider),
neither generating nor scoring options reaches a real backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from noosphere.llm import Capabilities, Message, Request, ScoreRequest, Settings
from noosphere.llm.litellm_backend import LiteLLMBackend
from noosphere.llm.local import LocalBackend
from noosphere.society.artists import LiteLLMPainter
from tests.conftest import RealModelCallInTest

MESSAGES = (Message.user("Is it raining? Answer Yes or No."),)


async def test_the_local_model_can_neither_generate_nor_score_in_a_unit_test(tmp_path: Path) -> None:
    backend = LocalBackend("local:x", tmp_path / "x.gguf", fingerprint="gguf:abc")  # no weights are loaded by this
    with pytest.raises(RealModelCallInTest):
        await backend.generate(Request(MESSAGES, Settings()))
    with pytest.raises(RealModelCallInTest):
        await backend.score(ScoreRequest(MESSAGES, ("Yes", "No")))


async def test_a_provider_can_neither_generate_nor_score_in_a_unit_test() -> None:
    backend = LiteLLMBackend("openai/gpt-4o-mini", capabilities=Capabilities(logprobs=True))
    with pytest.raises(RealModelCallInTest):
        await backend.generate(Request(MESSAGES, Settings()))
    with pytest.raises(RealModelCallInTest):
        await backend.score(ScoreRequest(MESSAGES, ("Yes", "No")))


async def test_a_provider_cannot_paint_in_a_unit_test(tmp_path: Path) -> None:
    painter = LiteLLMPainter("openai/dall-e-3", tmp_path / "paintings")
    with pytest.raises(RealModelCallInTest):
        await painter.paint("a red boat")
    assert not (tmp_path / "paintings").exists()
