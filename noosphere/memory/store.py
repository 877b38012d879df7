"""Persistent memory in SQLite: episodes, learned concepts and the latest clustering of concepts.

One file per memory folder, so a benchmark's memory survives restarts and `noosphere memory show`
can read it. Writes are small and rare (one episode per game), so a plain connection per call is
enough and keeps the store safe to use from any thread.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from noosphere.errors import UsageError
from noosphere.memory.check import FORMAT, check_memory, check_writable
from noosphere.memory.records import ConceptCluster, Episode, EpisodeStep

MIN_CONCEPT_CHARS = 30
"""Shorter "rules" (and refusals such as "no concept") carry nothing worth recalling."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (id INTEGER PRIMARY KEY, task TEXT, kind TEXT, game TEXT, won INTEGER,
                                     steps TEXT, created REAL DEFAULT (julianday('now')));
CREATE TABLE IF NOT EXISTS concepts (id INTEGER PRIMARY KEY, text TEXT UNIQUE, source TEXT);
CREATE TABLE IF NOT EXISTS clusters (label INTEGER PRIMARY KEY, representative TEXT, size INTEGER, members TEXT);
"""


class MemoryStore:
    def __init__(self, folder: Path, *, read_only: bool = False) -> None:
        """Open the memory in `folder`, or start one there. A memory kept earlier is checked whole first
        (`check_memory`, read-only): one from another version of noosphere, or not noosphere's, is a `DataError`
        and is left exactly as it was. With `read_only` (`noosphere memory show`), the memory must be there and
        is only read: no table is made, no format stamped, and every connection is SQLite's read-only one."""
        self.folder = folder
        self.path = folder / "memory.sqlite"
        self.read_only = read_only
        if read_only:
            check_memory(folder)
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where the folder goes, a folder that cannot be made
            raise UsageError(f"cannot keep a memory in {folder}: {exc.strerror or type(exc).__name__}") from None
        if self.path.exists() and self.path.stat().st_size:  # SQLite leaves a new database at 0 bytes
            check_memory(folder)
        check_writable(folder)
        try:
            with self._db() as db:
                db.executescript(_SCHEMA)
                db.execute(f"PRAGMA user_version = {FORMAT}")
        except sqlite3.OperationalError as exc:  # read-only in a way `check_writable` cannot see, or in use
            raise self._refused(exc) from None

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        connection = (sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True) if self.read_only
                      else sqlite3.connect(self.path))
        try:
            with connection:
                yield connection
        finally:
            connection.close()

    def add_episode(self, episode: Episode) -> int:
        with self._db() as db:
            return _insert_episode(db, episode)

    def episodes(self) -> list[Episode]:
        with self._db() as db:
            rows = db.execute("SELECT id, task, kind, game, won, steps FROM episodes ORDER BY id").fetchall()
        return [Episode(task, kind, game, tuple(EpisodeStep(*s) for s in json.loads(steps)), bool(won), id_)
                for id_, task, kind, game, won, steps in rows]

    def add_concept(self, text: str, source: str) -> bool:
        """Keep a rule unless it is too short to say anything or already known."""
        with self._db() as db:
            return _insert_concept(db, text, source)

    def add_game(self, episode: Episode | None, rules: Sequence[str], source: str) -> None:
        """What one game leaves, in one transaction: its episode (None: not kept) and its rules, taught by
        `source`. A kill cannot leave the episode without its rules."""
        with self._db() as db:
            if episode is not None:
                _insert_episode(db, episode)
            for rule in rules:
                _insert_concept(db, rule, source)

    def forget_game(self, game: str) -> int:
        """Remove the episodes of `game` and the rules only it taught; how many rows went. A rule another game
        taught too stays, as the other game's. For a memory that plays each game once (a benchmark run's): what
        an attempt killed after storing, before its result was written, left behind, so that the game replays
        from the memory the games before it made. The clusters are left for the next sleep to redo."""
        with self._db() as db:
            gone = db.execute("DELETE FROM episodes WHERE game = ?", (game,)).rowcount
            for id_, source in db.execute("SELECT id, source FROM concepts").fetchall():
                teachers = _teachers(source)
                if game not in teachers:
                    continue
                rest = [t for t in teachers if t != game]
                if rest:
                    db.execute("UPDATE concepts SET source = ? WHERE id = ?", (SOURCES_SEP.join(rest), id_))
                else:
                    gone += db.execute("DELETE FROM concepts WHERE id = ?", (id_,)).rowcount
            return gone

    def concepts(self) -> list[str]:
        with self._db() as db:
            return [row[0] for row in db.execute("SELECT text FROM concepts ORDER BY id")]

    def save_clusters(self, clusters: list[ConceptCluster]) -> None:
        with self._db() as db:
            db.execute("DELETE FROM clusters")
            db.executemany("INSERT INTO clusters VALUES (?, ?, ?, ?)",
                           [(c.label, c.representative, c.size, json.dumps(c.members)) for c in clusters])

    def clusters(self) -> list[ConceptCluster]:
        with self._db() as db:
            rows = db.execute("SELECT label, representative, size, members FROM clusters ORDER BY size DESC, label"
                              ).fetchall()
        return [ConceptCluster(label, rep, size, tuple(json.loads(members))) for label, rep, size, members in rows]

    def reset(self) -> None:
        try:
            with self._db() as db:  # one transaction: a kill leaves the memory whole or empty, never half of it
                for table in ("episodes", "concepts", "clusters"):
                    db.execute(f"DELETE FROM {table}")
        except sqlite3.OperationalError as exc:  # taken by another process since it was opened (`memory reset`
            raise self._refused(exc) from None   # waits for its confirmation in between)

    def _refused(self, exc: sqlite3.OperationalError) -> UsageError:
        """SQLite's refusal to write the memory, as the usage error it is: the memory in use, or read-only."""
        advice = ("another process holds it (a run still playing?): wait for it, or stop it" if "locked" in str(exc)
                  else f"make {self.path} writable and try again")
        return UsageError(f"cannot keep a memory in {self.folder}: {exc}; {advice}")


def _insert_episode(db: sqlite3.Connection, episode: Episode) -> int:
    steps = json.dumps([[s.t, s.action, s.observation, s.belief] for s in episode.steps])
    cursor = db.execute("INSERT INTO episodes (task, kind, game, won, steps) VALUES (?, ?, ?, ?, ?)",
                        (episode.task, episode.kind, episode.game, int(episode.won), steps))
    return int(cursor.lastrowid or 0)


SOURCES_SEP = "\n"
"""A rule's `source` names every game that taught it, one per line, first teacher first (one line in a memory
written before rules kept more than their first teacher: the same format)."""


def _teachers(source: str | None) -> list[str]:
    return source.split(SOURCES_SEP) if source else []


def _insert_concept(db: sqlite3.Connection, text: str, source: str) -> bool:
    """Keep a new rule (True), or add `source` to the teachers of a rule already known (False)."""
    text = " ".join(text.split())
    if len(text) < MIN_CONCEPT_CHARS or "no concept" in text.lower():
        return False
    known = db.execute("SELECT id, source FROM concepts WHERE text = ?", (text,)).fetchone()
    if known is None:
        db.execute("INSERT INTO concepts (text, source) VALUES (?, ?)", (text, source))
        return True
    teachers = _teachers(known[1])
    if source not in teachers:
        db.execute("UPDATE concepts SET source = ? WHERE id = ?", (SOURCES_SEP.join([*teachers, source]), known[0]))
    return False
