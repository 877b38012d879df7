"""Backends as extras: a registry of backend factories, llama.cpp optional, no process-wide environment changes."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import pytest

from noosphere.environment import environment
from noosphere.errors import MissingDependencyError, UnknownNameError
from noosphere.llm import Message, ScriptedBackend, open_model
from noosphere.llm.registry import _FACTORIES, BackendFactory, BackendRequest, check_model_id, register_backend

ROOT = Path(__file__).resolve().parents[1]


def test_a_registered_prefix_opens_through_its_factory_and_joins_the_suggestions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("noosphere.llm.registry._FACTORIES", dict(_FACTORIES))
    opened: list[BackendRequest] = []

    def echo(request: BackendRequest) -> ScriptedBackend:
        opened.append(request)
        return ScriptedBackend(lambda r: r.messages[-1].content.upper(), model_id=request.model_id, **request.options)

    with pytest.raises(UnknownNameError):
        check_model_id("echo:loud")
    register_backend("echo", BackendFactory(echo, lambda name: name == "loud", ("echo:loud",)))
    model = open_model("echo:loud", latency_s=0.0)
    assert model.complete_sync([Message.user("hi")]).text == "HI"
    assert (opened[0].name, dict(opened[0].options)) == ("loud", {"latency_s": 0.0})
    with pytest.raises(UnknownNameError, match="Did you mean echo:loud"):
        check_model_id("echo:lowd")


def test_a_local_model_without_llama_cpp_is_refused_in_one_line_naming_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = tmp_path / "tiny.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if llama-cpp-python were not installed
    with pytest.raises(MissingDependencyError) as refused:
        open_model(f"local:{weights}")
    message = str(refused.value)
    assert "\n" not in message and "llama-cpp-python" in message and 'pip install -e ".[local]"' in message


def test_the_core_install_needs_no_compiler_and_every_weights_extra_brings_the_local_backend() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("llama-cpp-python")]
    extras = project["optional-dependencies"]
    assert [d for d in extras["local"] if d.startswith("llama-cpp-python")]
    for weights in ("qwen15", "qwen05", "smollm"):
        assert "noosphere[local]" in extras[weights], weights


def test_an_environment_setting_lasts_for_its_block_alone_and_never_overrides_the_user(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOOSPHERE_TEST_SETTING", raising=False)
    monkeypatch.setenv("NOOSPHERE_TEST_KEPT", "user")
    with environment(NOOSPHERE_TEST_SETTING="1", NOOSPHERE_TEST_KEPT="ours"):
        assert os.environ["NOOSPHERE_TEST_SETTING"] == "1" and os.environ["NOOSPHERE_TEST_KEPT"] == "user"
    assert "NOOSPHERE_TEST_SETTING" not in os.environ and os.environ["NOOSPHERE_TEST_KEPT"] == "user"


def test_opening_a_provider_leaves_the_process_environment_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    before = dict(os.environ)
    open_model("litellm:openai/gpt-4o")
    assert dict(os.environ) == before
