"""Backends as extras: a registry of backend factories, llama.cpp optional, no process-wide environment changes."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from noosphere.environment import environment
from noosphere.errors import MissingDependencyError, UnknownNameError, UsageError
from noosphere.llm import Message, ScriptedBackend, known_models, open_model
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


PLUGIN = '''
from noosphere.llm import BackendFactory, ScriptedBackend


def factory() -> BackendFactory:
    def open_(request):
        return ScriptedBackend(lambda r: '{"answer": "42", "confidence": 0.9}', model_id=request.model_id)
    return BackendFactory(open_, lambda name: name == "v1", ("arith:v1",))
'''


def install_plugin(where: Path, entry: str = "arith = noosphere_arith_plugin:factory") -> Path:
    """A package on `where` as pip would leave it: a module and a dist-info folder whose entry points name it."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "noosphere_arith_plugin.py").write_text(PLUGIN)
    info = where / "noosphere_arith_plugin-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: noosphere-arith-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[noosphere.backends]\n{entry}\n")
    return where


def test_an_installed_package_brings_its_prefix_through_an_entry_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("noosphere.llm.registry._FACTORIES", dict(_FACTORIES))
    with pytest.raises(UnknownNameError):
        check_model_id("arith:v1")  # not installed yet
    monkeypatch.syspath_prepend(str(install_plugin(tmp_path / "site")))
    assert "arith:<name>" in [row.model_id for row in known_models()]
    model = open_model("arith:v1")
    assert model.id == "arith:v1" and "42" in model.complete_sync([Message.user("6 x 7?")]).text
    assert "arith:v1" in [row.model_id for row in known_models()]  # loaded once, then registered
    with pytest.raises(UnknownNameError, match="Did you mean arith:v1"):
        check_model_id("arith:v2")


def test_a_broken_plugin_is_a_usage_error_naming_its_entry_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("noosphere.llm.registry._FACTORIES", dict(_FACTORIES))
    monkeypatch.syspath_prepend(str(install_plugin(tmp_path / "a", "arith = noosphere_no_such_module:factory")))
    with pytest.raises(UsageError, match=r"entry point 'arith' \(noosphere_no_such_module:factory\) failed to load"):
        open_model("arith:v1")
    monkeypatch.syspath_prepend(str(install_plugin(tmp_path / "b", "wrong = noosphere_not_a_factory:NAME")))
    (tmp_path / "b" / "noosphere_not_a_factory.py").write_text("NAME = 'not a factory'\n")
    with pytest.raises(UsageError, match=r"gave a str, not a noosphere\.llm\.BackendFactory"):
        check_model_id("wrong:v1")


def test_a_plugin_reaches_the_command_line_of_a_fresh_process(tmp_path: Path) -> None:
    site = install_plugin(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "noosphere", "ask", "6 x 7?", "--model", "arith:v1", "--out",
                           str(tmp_path / "runs")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "42" in done.stdout
