"""Resuming a run that stopped part-way (a society waiting for a person, say) from its run folder.

Nothing of the run's state is pickled. A run's control flow is decided by its seed and by the replies its
turns got, so a resumed run starts again from the top and every turn that an earlier session completed is
served again, exactly, without asking anybody: a model's reply from the run's own call cache (`calls.sqlite`
in the run folder, kept whether or not the user's cache is on), a person's answer or forfeit from what
`noosphere.human` saved. The first turn that was not completed is where the run is live again.

Until then the events the run emits were already written by the earlier session: `ReplayTrace` drops them, so
`trace.jsonl` reads as one run with a pause in it, not as the run told twice.

The run cache holds the model replies as they came (the trace redacts its copy); delete `calls.sqlite` from a
folder you share, as you would the call cache.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from noosphere.llm.cache import CallCache, CarriedCache
from noosphere.trace import Event, Trace

RUN_CACHE = "calls.sqlite"


class ReplayTrace(Trace):
    """The run's trace as a resumed run sees it: what it emits while it replays is dropped (an earlier session
    wrote it), everything after `go_live` reaches the run's trace."""

    def __init__(self, trace: Trace, *, replaying: bool) -> None:
        super().__init__(None, redactor=trace.redactor, keep=False)
        self.inner = trace
        self.replaying = replaying
        self.dropped = 0

    def go_live(self) -> None:
        self.replaying = False

    def emit(self, event: Event) -> None:
        if self.replaying:
            self.dropped += 1
            return
        self.inner.emit(event)

    def of_kind(self, kind: str) -> list[Event]:
        return self.inner.of_kind(kind)


class Replay:
    """The two halves together, for one session of a run folder: `trace` for the engine, `cache` for its
    models. A fresh run (`resuming=False`) is live from the start and only fills the cache."""

    def __init__(self, trace: Trace, directory: Path, *, resuming: bool, fallback: CallCache | None = None,
                 replays: Callable[[str], bool] = lambda key: False) -> None:
        self.trace = ReplayTrace(trace, replaying=resuming)
        self.cache = CarriedCache(directory / RUN_CACHE, fallback, on_miss=self.trace.go_live, replays=replays)

    @property
    def replayed(self) -> int:
        """Turns served from the run's cache this session."""
        return self.cache.hits

    def close(self) -> None:
        """Close the run's cache and the user's behind it."""
        self.cache.close()
        if self.cache.shared is not None:
            self.cache.shared.close()
