"""Work scopes: which unit of work (a benchmark item) a model call or trace event belongs to.

Benchmarks score several items at once so that the batched local backend has work for all its
slots. Their calls then interleave in one ledger and one trace, so a run-wide counter can no longer
say what an item cost. A scope is set per asyncio task (a `ContextVar`, inherited by the tasks the
item spawns): the ledger adds each call to the current scope as well, and the trace tags each event
with the scope's item id, which is how the viewer picks an item's events out of an interleaved trace.

Societies nested in societies (a hierarchy; the artists of the artist-critic society run in
parallel) interleave the same way: a society scope tags their events with the path of member
names that leads to them, e.g. `artist-3` or `panel/team`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Scope:
    """Usage counted for one item while it runs (mutable: every call in the item adds to it)."""

    item_id: str
    calls: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0


_current: ContextVar[Scope | None] = ContextVar("noosphere_scope", default=None)


def current_scope() -> Scope | None:
    return _current.get()


@contextlib.contextmanager
def item_scope(item_id: str) -> Iterator[Scope]:
    """Count and tag everything the current task (and the tasks it starts) does as `item_id`."""
    scope = Scope(item_id)
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)


_society: ContextVar[str] = ContextVar("noosphere_society", default="")


def current_society() -> str:
    """The path of the nested society the current task works for ("" for the outermost)."""
    return _society.get()


@contextlib.contextmanager
def society_scope(member: str) -> Iterator[str]:
    """Tag everything the current task does as the work of the society standing as `member`."""
    path = f"{_society.get()}/{member}".lstrip("/")
    token = _society.set(path)
    try:
        yield path
    finally:
        _society.reset(token)
