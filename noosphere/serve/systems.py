"""The systems a server offers, each under a model name, and the one loaded model per id they all share.

`base` and `ctm` are served as `noosphere-base` and `noosphere-ctm`; a society file `democracy.yaml` as
`society-democracy`. The engines are those of `noosphere ask` (`noosphere.systems`); a society is built afresh for
every request (its members keep a history while it runs), over models that are opened once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from noosphere.errors import UnknownNameError, UsageError
from noosphere.llm import Model, Settings, UsageLedger
from noosphere.observation import Observation
from noosphere.society.config import build_society, load_society_spec
from noosphere.society.spec import SocietySpec
from noosphere.systems import SYSTEMS, Answer, get_system
from noosphere.systems.society import ask_society
from noosphere.trace import Trace

DEFAULT_SYSTEMS = ("base", "ctm")
"""Served when neither `--system` nor `--society` is given."""


class ModelPool:
    """One `Model` per model id, opened once; each request gets it bound to its own run (trace, ledger, sampling
    settings) with `Model.bind`, so concurrent requests share the backend: one process, one batch engine."""

    def __init__(self, open_model: Callable[[str], Model]) -> None:
        self._open = open_model
        self.models: dict[str, Model] = {}

    def get(self, model_id: str) -> Model:
        if model_id not in self.models:
            self.models[model_id] = self._open(model_id)
        return self.models[model_id]

    def bound(self, model_id: str, trace: Trace, ledger: UsageLedger, settings: Settings) -> Model:
        return self.get(model_id).bind(trace=trace, ledger=ledger, settings=settings)


@dataclass(frozen=True)
class ServedSystem:
    """A system under the name clients ask for: `base`, `ctm`, or `society` with its spec."""

    name: str
    system: str
    society: SocietySpec | None = None
    source: str | None = None
    """The society file, for the catalogue and the run's config."""

    async def answer(self, models: Callable[[str], Model], default_model: str, query: str, paintings: Path) -> Answer:
        """Run the system once; `models` gives the model of an id, already bound to the run."""
        nothing = Observation()
        if self.society is None:
            return await get_system(self.system)(models(default_model), query, nothing)
        society = build_society(self.society, models, default_model, paintings=paintings)
        return await ask_society(society, query, nothing)

    def open_models(self, pool: ModelPool, default_model: str) -> None:
        """Open every model the system's runs will call, before the first request (a missing weights package is
        found at start-up, not by a client)."""
        pool.get(default_model)
        if self.society is not None:
            build_society(self.society, pool.get, default_model)


def society_name(path: Path) -> str:
    """`examples/societies/democracy.yaml` -> `society-democracy`."""
    return "society-" + (re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "society")


def served_systems(systems: list[str], societies: list[Path]) -> list[ServedSystem]:
    """The catalogue from the command line: each `--system` (base, ctm; society only with `--society`), then one
    entry per society file. Nothing given: base and ctm."""
    if not systems and not societies:
        systems = list(DEFAULT_SYSTEMS)
    if "society" in systems and not societies:
        raise UsageError("--system society needs --society FILE (see examples/societies)")
    served = []
    for system in dict.fromkeys(systems):
        if system == "society":
            continue
        if system not in SYSTEMS:
            raise UnknownNameError("system", system, [*SYSTEMS, "society"])
        served.append(ServedSystem(f"noosphere-{system}", system))
    for path in societies:
        served.append(ServedSystem(society_name(path), "society", load_society_spec(path), str(path)))
    names = [entry.name for entry in served]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"two society files would be served under one name ({', '.join(repeated)}); "
                         "rename one of the files")
    return served
