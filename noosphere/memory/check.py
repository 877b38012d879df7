"""A memory folder checked before it is read: `memory.sqlite` must be a SQLite database holding noosphere's tables,
in the format this version reads, and every row what `MemoryStore` reads back. It is opened read-only, so checking
changes nothing: a memory from another version of noosphere is refused whole, never read in part or migrated."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from noosphere.datafiles import describe, lone_surrogate
from noosphere.errors import DataError, UsageError

SQLITE_HEADER = b"SQLite format 3\x00"
COLUMNS = {"episodes": ("id", "task", "kind", "game", "won", "steps"), "concepts": ("id", "text", "source"),
           "clusters": ("label", "representative", "size", "members")}
EXPECTED = "noosphere's memory database (tables episodes, concepts, clusters)"
FORMAT = 1
"""The layout of `memory.sqlite` this version reads and writes (the tables and columns of `COLUMNS`, an episode's
steps as `[t, action, observation, belief]`), stamped in SQLite's `user_version` header field. A file stamped 0 was
written before the stamp, in this same layout."""


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)  # lax only so that a JSON list reads as a tuple; every leaf is strict


class EpisodeRow(_Row):
    id: StrictInt
    task: StrictStr
    kind: StrictStr
    game: StrictStr
    won: StrictInt
    steps: list[tuple[StrictInt, StrictStr, StrictStr, StrictStr]]


class ConceptRow(_Row):
    id: StrictInt
    text: StrictStr
    source: StrictStr | None


class ClusterRow(_Row):
    label: StrictInt
    representative: StrictStr
    size: StrictInt
    members: list[StrictStr]


ROWS: dict[str, type[_Row]] = {"episodes": EpisodeRow, "concepts": ConceptRow, "clusters": ClusterRow}
JSON_COLUMNS = {"steps", "members"}


def check_memory(folder: Path) -> Path:
    """The folder's `memory.sqlite`, or a usage error (no memory there) or a `DataError` naming the table, row and
    column that is wrong."""
    path = folder / "memory.sqlite"
    try:
        found = path.is_file()
    except OSError as exc:  # a folder that cannot be looked into: `is_file` raises
        raise unreadable(folder, exc) from None
    if path.is_dir():  # "no memory at FOLDER" sent the reader looking for the memory.sqlite that is there
        raise DataError(f"is a folder; expected a file holding {EXPECTED}", source=str(path))
    if not found:
        hint = (f"; a run keeps its memory in {folder / 'memory'}"
                if (folder / "memory" / "memory.sqlite").is_file() else
                f"; name the folder that holds it: {folder.parent}" if folder.is_file() and folder.name == path.name
                else "")
        raise UsageError(f"no memory at {folder} (expected {path}){hint}")
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise unreadable(folder, exc) from None
    if not header:
        raise DataError(f"is empty; expected {EXPECTED}", source=str(path))
    if header != SQLITE_HEADER:
        raise DataError(f"is not a SQLite database; expected {EXPECTED}", source=str(path))
    try:
        _roll_back_a_killed_write(path)
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            _check_format(db, path)
            damage = _problems(row[0] for row in db.execute("PRAGMA quick_check"))
            if damage != ["ok"]:
                more = f", and {len(damage) - 1} more" if len(damage) > 1 else ""
                raise DataError(f"is damaged ({damage[0]}{more}); expected {EXPECTED}", source=str(path))
            for table, columns in COLUMNS.items():
                _check_table(db, path, table, columns)
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise UsageError(f"the memory at {folder} is in use by another process (it held it for more than "
                             "5 seconds): wait for it to finish, then try again") from None
        raise DataError(f"cannot be read as a database ({exc}); expected {EXPECTED}", source=str(path)) from None
    except sqlite3.DatabaseError as exc:
        raise DataError(f"cannot be read as a database ({exc}); expected {EXPECTED}", source=str(path)) from None
    return path


def unreadable(folder: Path, exc: OSError) -> UsageError:
    """The memory in `folder` that cannot be read (its permissions, or the folder's), as the usage error it is."""
    return UsageError(f"the memory at {folder} cannot be read ({exc.strerror or type(exc).__name__}: {exc.filename}): "
                      "make it and its folder readable (chmod u+rx) and try again")


def check_writable(folder: Path, why: str = "it would be written") -> None:
    """A memory that will be written (a run's, resumed; one `memory reset` empties; one a killed writer left to roll
    back) can be: its folder takes the journal SQLite writes beside it, and its `memory.sqlite`, if there, is not
    read-only. Otherwise a `UsageError` saying `why` it would be written, before anything opens it."""
    path = folder / "memory.sqlite"
    for what, target, mode in (("memory folder", folder, os.W_OK | os.X_OK), ("memory", path, os.W_OK)):
        if target.exists() and not os.access(target, mode):
            raise UsageError(f"the {what} {target} is read-only, and {why}: make it writable "
                             "(chmod u+w, or chattr -i) and try again")


def _problems(rows: Iterable[object]) -> list[str]:
    """`PRAGMA quick_check`'s problems, one a line: a row may hold several, one a line under a heading such as
    `*** in database main ***`."""
    lines = [line.strip() for row in rows for line in str(row).splitlines()]
    return [line for line in lines if line and not (line.startswith("***") and line.endswith("***"))] or ["ok"]


def _roll_back_a_killed_write(path: Path) -> None:
    """A process killed while writing leaves a journal that must be rolled back before the file can be read (a
    read-only connection cannot): a read-write connection does it on its first read, restoring the memory as
    its last complete write left it. Nothing else is written."""
    journal = path.with_name(path.name + "-journal")
    if journal.is_file() and journal.stat().st_size > 0:
        # read-only, SQLite cannot roll it back, and says "disk I/O error": as if the memory were damaged
        check_writable(path.parent, why=f"a process killed while writing it left {journal.name} to roll back first "
                                        "(to its last complete write)")
        with contextlib.closing(sqlite3.connect(path, timeout=5.0)) as db:
            db.execute("PRAGMA schema_version").fetchone()


def _check_format(db: sqlite3.Connection, path: Path) -> None:
    found = db.execute("PRAGMA user_version").fetchone()[0]
    if found not in (0, FORMAT):
        raise DataError(f"was written by another version of noosphere (memory format {found}; this one reads format "
                        f"{FORMAT}). Nothing in it was read or changed: open it with the noosphere that wrote it, or "
                        "start a new memory folder", source=str(path))


def _check_table(db: sqlite3.Connection, path: Path, table: str, columns: tuple[str, ...]) -> None:
    present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    if not present:
        raise DataError(f"has no table {table!r}; expected {EXPECTED}", source=str(path))
    missing = [c for c in columns if c not in present]
    if missing:
        raise DataError(f"table {table!r} lacks the column(s) {', '.join(missing)}; expected {EXPECTED} (a memory "
                        "from another version of noosphere?). Nothing in it was changed", source=str(path))
    for values in db.execute(f"SELECT {', '.join(columns)} FROM {table}"):  # table and column names are ours
        data: dict[str, Any] = dict(zip(columns, values, strict=True))
        where = f"table {table!r}, row {columns[0]}={data[columns[0]]!r}"
        for name in JSON_COLUMNS & data.keys():
            try:
                data[name] = json.loads(data[name]) if isinstance(data[name], str | bytes) else data[name]
            except (ValueError, RecursionError):
                raise DataError(f"{where}: column {name!r} is not JSON", source=str(path)) from None
            if lone_surrogate(data[name]):  # JSON, but no text: the prompt that recalls it could not be sent
                raise DataError(f"{where}: column {name!r} holds a lone surrogate (an escape such as \\ud800 that "
                                "names no character), not text", source=str(path))
        try:
            ROWS[table].model_validate(data)
        except ValidationError as exc:
            raise DataError(f"{where}: {describe(exc, 'a row of ' + table)}", source=str(path)) from None
