"""The call cache shared by processes: WAL mode and a busy timeout, so that two writers never fail."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from noosphere.errors import UsageError
from noosphere.llm.cache import BUSY_TIMEOUT_S, CallCache
from noosphere.llm.types import Reply, Usage

WRITER = """
import sys
from pathlib import Path
import pytest

from noosphere.errors import UsageError
from noosphere.llm.cache import CallCache
from noosphere.llm.types import Reply, Usage

cache = CallCache(Path(sys.argv[1]))
name = sys.argv[2]
for index in range(int(sys.argv[3])):
    cache.put(f"{name}-{index}", Reply(f"reply {index} " * 50, usage=Usage(10, 50)))
    assert cache.get(f"{name}-{index}") is not None
cache.close()
print("done")
"""


def test_two_processes_writing_one_cache_at_once_both_succeed(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"  # both create it: neither finds it there first
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, "400"], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name in ("a", "b")]
    outcomes = [writer.communicate(timeout=300) for writer in writers]
    for writer, (out, err) in zip(writers, outcomes, strict=True):
        assert writer.returncode == 0 and out.strip() == "done", err
    cache = CallCache(path)
    assert len(cache) == 800
    cache.close()


def test_the_cache_is_in_wal_mode_with_a_busy_timeout(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert cache._db.execute("PRAGMA busy_timeout").fetchone()[0] == int(BUSY_TIMEOUT_S * 1000) >= 10_000
    cache.close()


HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO calls VALUES ('holder', '{}', 0)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def test_a_write_waits_for_another_process_holding_the_lock_and_a_read_does_not(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    CallCache(path).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), "1.5"], text=True, stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    cache = CallCache(path)
    started = time.monotonic()
    assert cache.get("anything") is None  # WAL: a reader does not wait for the writer
    assert time.monotonic() - started < 1.0
    cache.put("mine", Reply("ok", usage=Usage(1, 1)))  # waits out the holder's transaction instead of failing
    assert time.monotonic() - started >= 0.5
    holder.wait(timeout=60)
    assert holder.returncode == 0
    assert len(cache) == 2
    cache.close()


def test_a_cache_file_that_is_not_a_database_is_one_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    path.write_bytes(b"not a database at all " * 100)
    with pytest.raises(UsageError, match="--no-cache") as caught:
        CallCache(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("make", ["a folder", "another program's table"])
def test_a_cache_path_that_holds_no_call_cache_is_one_usage_error_at_open(make: str, tmp_path: Path) -> None:
    """A folder at the path was a traceback at open ("unable to open database file"); a database whose `calls` table
    is another program's opened, and its first call read was a traceback mid-run ("no such column: reply")."""
    import contextlib
    import sqlite3

    path = tmp_path / "calls.sqlite"
    if make == "a folder":
        path.mkdir()
    else:
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute("CREATE TABLE calls (id INTEGER PRIMARY KEY, note TEXT)")
            db.commit()
    with pytest.raises(UsageError, match="--no-cache") as caught:
        CallCache(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_cache_whose_pages_are_damaged_past_its_header_is_one_usage_error_at_the_call(tmp_path: Path) -> None:
    """Its header whole, the file opens; the damage shows at the first call that reads it, mid-run: that was a
    traceback (sqlite3.DatabaseError, "database disk image is malformed")."""
    path = tmp_path / "calls.sqlite"
    cache = CallCache(path)
    for index in range(20):
        cache.put(f"k{index}", Reply(f"reply {index} " * 100))
    cache._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every row in the file itself
    cache.close()
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page but the first (the header and the schema)
    path.write_bytes(bytes(data))
    damaged = CallCache(path)
    with pytest.raises(UsageError, match="--no-cache") as caught:
        damaged.get("k3")
    assert str(path) in str(caught.value) and "malformed" in str(caught.value)


OPENER = """
import sys
from pathlib import Path
from noosphere.llm.cache import CallCache
CallCache(Path(sys.argv[1])).close()
print("opened")
"""


def test_many_processes_creating_one_cache_at_once_all_open_it(tmp_path: Path) -> None:
    """Switching a new file to WAL takes a lock SQLite may refuse at once, not wait for: before the open retried
    it, 1 of 180 such opens failed with "database is locked" (6 processes at a time, 30 rounds, on 2 cores)."""
    for round_ in range(5):
        path = tmp_path / f"round-{round_}" / "calls.sqlite"
        openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(path)], text=True, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE) for _ in range(8)]
        for opener in openers:
            out, err = opener.communicate(timeout=120)
            assert opener.returncode == 0 and out.strip() == "opened", err


def test_identical_calls_in_flight_at_once_are_generated_once_and_counted_as_cached(tmp_path: Path) -> None:
    """Two runs side by side (`bench together`) share one cache: the same call asked by both while it is being
    generated costs one generation; the second gets the reply as a cache hit would give it."""
    import asyncio

    from noosphere.llm import Model, ScriptedBackend
    from noosphere.trace import Trace

    backend = ScriptedBackend(lambda request: f"reply to {request.messages[-1].content}", latency_s=0.05)
    cache = CallCache(tmp_path / "calls.sqlite")
    first, second = (Model(backend, trace=Trace(None), cache=cache) for _ in range(2))

    async def both() -> list:
        return await asyncio.gather(first.complete("same", agent="a"), second.complete("same", agent="b"),
                                    second.complete("other", agent="b"))

    same_a, same_b, other = asyncio.run(both())
    assert [r.messages[-1].content for r in backend.history] == ["same", "other"]  # "same" generated once
    assert same_a.text == same_b.text == "reply to same" and other.text == "reply to other"
    assert (same_a.cached, same_b.cached, other.cached) == (False, True, False)
    assert first.ledger.summary()["total"]["cached_calls"] == 0
    assert second.ledger.summary()["total"]["cached_calls"] == 1
    assert asyncio.run(first.complete("same")).cached  # stored once generated: a later call is a plain hit
    assert len(backend.history) == 2


def test_when_the_call_others_wait_for_fails_each_waiting_call_generates_its_own(tmp_path: Path) -> None:
    import asyncio

    from noosphere.errors import ModelError
    from noosphere.llm.cache import CallCache as Cache
    from noosphere.llm.types import Reply

    cache = Cache(tmp_path / "calls.sqlite")
    calls: list[str] = []

    async def failing() -> Reply:
        calls.append("first")
        await asyncio.sleep(0.02)
        raise ModelError("scripted", "the backend broke")

    async def working() -> Reply:
        calls.append("second")
        return Reply("fine")

    async def both() -> list:
        return await asyncio.gather(cache.once("k", failing), cache.once("k", working), return_exceptions=True)

    failed, (reply, shared) = asyncio.run(both())
    assert isinstance(failed, ModelError) and reply.text == "fine" and not shared and calls == ["first", "second"]
    assert cache._flights == {}


def test_a_cancelled_call_others_wait_for_hands_over_to_one_of_them(tmp_path: Path) -> None:
    """Cancelled while two identical calls wait, the first call's place goes to one waiter; the other waits for it."""
    import asyncio

    from noosphere.llm.types import Reply

    cache = CallCache(tmp_path / "calls.sqlite")
    generated: list[str] = []

    def generator(name: str, delay: float) -> Callable[[], Awaitable[Reply]]:
        async def generate() -> Reply:
            generated.append(name)
            await asyncio.sleep(delay)
            return Reply(f"from {name}")
        return generate

    async def scene() -> list:
        leader = asyncio.create_task(cache.once("k", generator("leader", 1.0)))
        await asyncio.sleep(0.01)
        waiters = [asyncio.create_task(cache.once("k", generator(name, 0.02))) for name in ("w1", "w2")]
        await asyncio.sleep(0.01)
        leader.cancel()
        return await asyncio.gather(*waiters)

    (first, first_shared), (second, second_shared) = asyncio.run(scene())
    assert generated == ["leader", "w1"] and first.text == second.text == "from w1"
    assert (first_shared, second_shared) == (False, True) and cache._flights == {}


def test_a_waiting_call_that_asks_for_a_log_probability_the_shared_reply_lacks_asks_again(tmp_path: Path) -> None:
    import asyncio

    from noosphere.llm import Capabilities, Model, ScriptedBackend
    from noosphere.llm.types import Reply
    from noosphere.trace import Trace

    def answer(request: object) -> Reply:
        return Reply("same", usage=Usage(1, 1), logprob=-0.5 if request.logprobs else None)  # type: ignore[attr-defined]

    backend = ScriptedBackend(answer, latency_s=0.05,
                              capabilities=Capabilities(json_schema=True, logprobs=True))
    cache = CallCache(tmp_path / "calls.sqlite")
    plain, scored = (Model(backend, trace=Trace(None), cache=cache) for _ in range(2))

    async def both() -> list:
        return await asyncio.gather(plain.complete("q"), scored.complete("q", logprobs=True))

    _, second = asyncio.run(both())
    assert len(backend.history) == 2 and not second.cached and second.logprob == -0.5


async def test_a_reply_generated_for_two_runs_is_kept_in_both_runs_files(tmp_path: Path) -> None:
    """`bench together`: the run that waited for the other's generation keeps the reply too, so its folder alone
    replays it on a machine without the shared cache."""
    import asyncio

    from noosphere.llm.cache import CarriedCache

    shared = CallCache(tmp_path / "shared.sqlite")
    first, second = CarriedCache(tmp_path / "a.sqlite", shared), CarriedCache(tmp_path / "b.sqlite", shared)
    generated: list[str] = []

    async def generate() -> Reply:
        generated.append("x")
        await asyncio.sleep(0.01)
        return Reply("the one reply", usage=Usage(3, 2))

    (one, mine), (other, waited) = await asyncio.gather(first.once("k", generate), second.once("k", generate))
    assert generated == ["x"] and (mine, waited) == (False, True) and one.text == other.text == "the one reply"
    first.put("k", one)  # the generating run's caller stores its own reply
    for path in ("a.sqlite", "b.sqlite"):
        alone = CallCache(tmp_path / path)
        assert (reply := alone.get("k")) is not None and reply.text == "the one reply", path
        alone.close()
