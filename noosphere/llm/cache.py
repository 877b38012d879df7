"""A persistent call cache, so reruns are reproducible and free.

Keyed by the backend's fingerprint (weights hash or endpoint), the messages (media by hash), the
sampling settings, the output schema and the tools. Stored in SQLite in the user's cache
directory by default; any path works.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from noosphere.errors import UsageError
from noosphere.llm.types import Reply, Request, ScoreRequest, ToolCall, Usage


def request_key(fingerprint: str, request: Request) -> str:
    payload = {
        "model": fingerprint,
        "messages": [message.to_json() for message in request.messages],
        "settings": request.settings.cache_key(),
        "schema": request.json_schema,
        "tools": [tool.to_openai() for tool in request.tools],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def score_key(fingerprint: str, request: ScoreRequest) -> str:
    payload = {"model": fingerprint, "kind": "score", "messages": [m.to_json() for m in request.messages],
               "options": list(request.options), "prefix": request.prefix}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _reply_to_json(reply: Reply) -> str:
    return json.dumps(asdict(reply))


def _reply_from_json(raw: str) -> Reply:
    data: dict[str, Any] = json.loads(raw)
    return Reply(
        text=data["text"],
        tool_calls=tuple(ToolCall(**call) for call in data.get("tool_calls", ())),
        usage=Usage(**data.get("usage", {})),
        finish_reason=data.get("finish_reason", "stop"),
        logprob=data.get("logprob"),
    )


log = logging.getLogger(__name__)
T = TypeVar("T")

BUSY_TIMEOUT_S = 60.0
"""How long a write waits for another process's write to the same cache before it fails."""


@dataclass
class _Flight:
    """A call being generated, which identical calls wait for."""

    done: asyncio.Event = field(default_factory=asyncio.Event)
    reply: Reply | None = None


class CallCache:
    """One SQLite file, shared by every process that uses it: in WAL mode readers never wait for a writer, and a
    writer waits up to `BUSY_TIMEOUT_S` for another (each statement is its own short transaction).

    Within one process, identical calls in flight at once are generated once (`once`): runs played side by side
    (`bench together`) that ask the same thing, such as two configurations of one system before they part, then
    cost one generation, not two."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._flights: dict[str, _Flight] = {}
        try:  # a folder where the file should be cannot be opened at all
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"the call cache at {path} cannot be used ({exc}); delete it, or pass --no-cache"
                             ) from None
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, reply TEXT, created REAL)")
                # another program's table of the same name: its first call read or stored was a traceback
                self._db.execute("SELECT key, reply, created FROM calls LIMIT 0")
                break
            except sqlite3.OperationalError as exc:
                # two processes creating the file at once: switching to WAL takes a lock that SQLite may refuse
                # at once ("database is locked") instead of waiting for it, so the setup is retried until the
                # same deadline a write has
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    self._db.close()
                    raise UsageError(f"the call cache at {path} cannot be used ({exc}); delete it, or pass "
                                     "--no-cache") from None
                time.sleep(0.05)
            except sqlite3.DatabaseError as exc:
                self._db.close()
                raise UsageError(f"the call cache at {path} cannot be used ({exc}); delete it, or pass --no-cache"
                                 ) from None

    def _one(self, sql: str, parameters: tuple[Any, ...] = ()) -> Any:
        """One statement and its first row (None if it has none). A file whose pages turn out damaged only here (the
        header read whole at open) is the usage error a damaged file is at open, not a traceback mid-run."""
        try:
            return self._db.execute(sql, parameters).fetchone()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"the call cache at {self.path} cannot be used ({exc}); delete it, or pass --no-cache"
                             ) from None

    def get(self, key: str) -> Reply | None:
        """The stored reply, or None; a row that cannot be read (cut short, or written by another version) is a
        miss, deleted so that the call is asked again and stored afresh."""
        row = self._one("SELECT reply FROM calls WHERE key = ?", (key,))
        if row is None:
            return None
        try:
            return _reply_from_json(row[0])
        except (ValueError, TypeError, KeyError, AttributeError):  # JSONDecodeError is a ValueError
            self._drop(key)
            return None

    def _drop(self, key: str) -> None:
        log.warning("the call cache had an unreadable entry; it is asked again")
        self._one("DELETE FROM calls WHERE key = ?", (key,))

    def put(self, key: str, reply: Reply) -> None:
        self._one("INSERT OR REPLACE INTO calls VALUES (?, ?, ?)", (key, _reply_to_json(reply), time.time()))

    async def once(self, key: str, generate: Callable[[], Awaitable[Reply]]) -> tuple[Reply, bool]:
        """The reply for `key` from `generate`, generated once among the identical calls in flight: a call that
        arrives while the same one is being generated waits for that reply and gets it with True (shared, as
        a cache hit is); the first gets it with False. If the first one's generation fails (or is cancelled),
        the first waiting call to wake generates it again, and the others wait for that one. The caller stores
        the reply (`put`), with no await in between, so a call arriving later finds it stored."""
        while (flight := self._flights.get(key)) is not None:
            await flight.done.wait()
            if flight.reply is not None:
                return flight.reply, True
            # the call waited for failed: the first waiting call to wake asks again, the others wait for it
        flight = self._flights[key] = _Flight()
        try:
            flight.reply = await generate()
            return flight.reply, False
        finally:
            flight.done.set()
            if self._flights.get(key) is flight:
                del self._flights[key]

    def get_json(self, key: str) -> Any:
        """A stored value other than a reply (option scores), or None."""
        row = self._one("SELECT reply FROM calls WHERE key = ?", (key,))
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except ValueError:
            self._drop(key)
            return None

    def put_json(self, key: str, value: Any) -> None:
        self._one("INSERT OR REPLACE INTO calls VALUES (?, ?, ?)", (key, json.dumps(value), time.time()))

    def __len__(self) -> int:
        return int(self._one("SELECT COUNT(*) FROM calls")[0])

    def close(self) -> None:
        self._db.close()


class CarriedCache(CallCache):
    """A run folder's own copy of its calls (`calls.sqlite`), in front of a shared cache (the user's), if any: every
    call the run stores or finds in the shared cache is kept here too, so that the file, kept with the run, lets a
    resume on another machine replay what this one asked, the game or the turn it was in the middle of included.
    Identical calls in flight are still generated once across every run that shares the cache (`once` is the shared
    cache's).

    A call missing here is one no earlier session of the run completed: `on_miss` is told (a resumed run goes live
    there), unless `replays(key)` says its outcome is kept elsewhere (a person's forfeited turn). `hits` counts the
    calls this file served."""

    def __init__(self, path: Path, shared: CallCache | None = None, *, on_miss: Callable[[], None] = lambda: None,
                 replays: Callable[[str], bool] = lambda key: False) -> None:
        super().__init__(path)
        self.shared = shared
        self.on_miss = on_miss
        self.replays = replays
        self.hits = 0

    def _carried(self, here: T | None, key: str, shared: Callable[[CallCache], T | None],
                 keep: Callable[[T], None]) -> T | None:
        """What this file holds, else (after telling the miss) what the shared cache holds, copied here."""
        if here is not None:
            self.hits += 1
            return here
        if not self.replays(key):
            self.on_miss()
        if self.shared is not None and (here := shared(self.shared)) is not None:
            keep(here)
        return here

    def get(self, key: str) -> Reply | None:
        return self._carried(super().get(key), key, lambda shared: shared.get(key),
                             lambda reply: CallCache.put(self, key, reply))

    def put(self, key: str, reply: Reply) -> None:
        super().put(key, reply)
        if self.shared is not None:
            self.shared.put(key, reply)

    def get_json(self, key: str) -> Any:
        return self._carried(super().get_json(key), key, lambda shared: shared.get_json(key),
                             lambda value: CallCache.put_json(self, key, value))

    def put_json(self, key: str, value: Any) -> None:
        super().put_json(key, value)
        if self.shared is not None:
            self.shared.put_json(key, value)

    async def once(self, key: str, generate: Callable[[], Awaitable[Reply]]) -> tuple[Reply, bool]:
        """Generate a call once across every run sharing the cache; a reply another run generated for this one
        is kept in this run's file too (its caller stores only what it generated itself)."""
        if self.shared is None:
            return await super().once(key, generate)
        reply, shared = await self.shared.once(key, generate)
        if shared:
            CallCache.put(self, key, reply)
        return reply, shared

    def close(self) -> None:
        """Fold the write-ahead log into the file, so that the one file holds every call. The shared cache is its
        owner's to close."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        super().close()
