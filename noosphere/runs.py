"""A run is a folder: `trace.jsonl`, `config.json` and `result.json`, written as the run goes.

Use it as a context manager; the result is written even when the run fails, with the error, so
nothing is lost. The run owns the trace and the usage ledger that its models report into. A
benchmark run also keeps `items.jsonl`, one row per scored item; `load_done` reads it back (for
resuming, reports and the viewer).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from noosphere.datafiles import BadLine, describe, scan_json_lines
from noosphere.errors import UsageError
from noosphere.llm.usage import Budget, UsageLedger
from noosphere.trace import Redactor, RunFinished, RunStarted, Trace


class SavedBudget(BaseModel):
    """A run's `budget` as its config.json saves it (what `--budget` gave, the fields of `Budget`)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    max_calls: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)


def _new_run_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


class Run:
    def __init__(self, directory: Path, *, command: str, config: dict[str, Any], budget: Budget | None = None,
                 redactor: Redactor | None = None) -> None:
        self.directory = directory
        self.run_id = directory.name
        self.command = command
        self.config = config
        self.redactor = redactor or Redactor.from_environment()
        self._made = [folder for folder in (directory, *directory.parents) if not folder.exists()]
        """The folders this run made, the run's own first (`--out` and its parents too where they were new): a
        discarded run removes those it leaves empty."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock = lock_folder(directory)
            self.trace = Trace(directory / "trace.jsonl", redactor=self.redactor)
        except OSError as exc:
            raise UsageError(f"cannot write a run folder at {directory} ({exc.strerror or exc}); "
                             "give --out a folder you can write to") from None
        saved_budget = config.get("budget")  # a budget set on the command line lives in the config: a resume keeps it
        self.ledger = UsageLedger(budget or (Budget(**saved_budget) if saved_budget else None))
        self.started = time.time()
        self.result: dict[str, Any] | None = None
        self._reopened: tuple[bytes, int] | None = None
        """A resumed run's config.json and trace length as they were before this session opened them."""
        self.earlier: dict[str, Any] = {}
        """What the folder's earlier sessions spent (a resumed run): the result adds this session to it."""
        try:
            self._write("config.json", {"run_id": self.run_id, "command": command, **config})
        except OSError as exc:  # a folder that can be read but not written (a resumed one made read-only, say)
            self.trace.close()
            self._lock.close()
            raise UsageError(f"cannot write {directory / 'config.json'} ({exc.strerror or exc}); the run folder "
                             "must be writable") from None
        self.trace.emit(RunStarted(run_id=self.run_id, command=command, config=config))

    @classmethod
    def resume(cls, directory: Path | str, *, budget: Budget | None = None,
               changes: Mapping[str, Any] | None = None) -> Run:
        """Reopen a run folder (a killed benchmark, say): same config, the trace is appended to. `changes` are
        settings this session changes (a benchmark's grown `limit`), kept for the resumes after it; the caller
        decides which settings may change."""
        directory = Path(directory)
        saved = cls.saved_config(directory)
        config = {k: v for k, v in saved.items() if k not in ("run_id", "command")}
        config.update(changes or {})
        if budget is not None:  # new limits over the saved ones, kept for the resumes after this one
            config["budget"] = {**(config.get("budget") or {}),
                                **{k: v for k, v in asdict(budget).items() if v is not None}}
            budget = Budget(**config["budget"])
        config_before = (directory / "config.json").read_bytes()
        trace_path = directory / "trace.jsonl"
        trace_before = trace_path.stat().st_size if trace_path.exists() else 0
        run = cls(directory, command=saved.get("command", "?"), config=config, budget=budget)
        run._reopened = (config_before, trace_before)
        with contextlib.suppress(OSError, ValueError):  # killed before any result: nothing earlier to add
            earlier = json.loads((directory / "result.json").read_text(encoding="utf-8"))
            run.earlier = earlier if isinstance(earlier, dict) else {}
        run.ledger.carry_over((run.earlier.get("usage") or {}).get("total") or {})
        return run

    @staticmethod
    def saved_config(directory: Path | str) -> dict[str, Any]:
        """A run folder's `config.json`, read without reopening the run."""
        try:
            config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else f"config.json is not JSON: {exc}"
            raise UsageError(f"{directory} is not a run folder that can be resumed ({reason})") from None
        if not isinstance(config, dict):
            raise UsageError(f"{directory} is not a run folder that can be resumed (config.json is not an object)")
        if config.get("budget") is not None:  # the limits its ledger keeps to (`Budget`), edited by hand, say
            try:
                SavedBudget.model_validate(config["budget"])
            except ValidationError as exc:
                raise UsageError(f"{directory} is not a run folder that can be resumed (config.json: budget "
                                 f"{describe(exc, 'limits: max_calls, max_tokens, max_cost_usd')})") from None
        return config

    @classmethod
    def create(cls, out: Path | str = "runs", *, command: str, config: dict[str, Any] | None = None,
               budget: Budget | None = None, redactor: Redactor | None = None) -> Run:
        return cls(Path(out) / _new_run_id(), command=command, config=config or {}, budget=budget,
                   redactor=redactor)

    def _write(self, name: str, data: dict[str, Any]) -> None:
        """Written whole or not at all: `result.json` holds every session's totals, and a kill mid-write
        must not leave it torn."""
        write_atomically(self.directory / name, self.redactor(json.dumps(data, indent=2, default=str)) + "\n")

    def finish(self, result: dict[str, Any], *, status: str = "ok", error: str | None = None) -> None:
        """Write `result.json`; for a resumed run, seconds and usage are those of every session so far."""
        self.result = result
        totals = self._totals()
        self._write("result.json", {"status": status, "error": error, **totals, **result})
        self.trace.emit(RunFinished(run_id=self.run_id, seconds=totals["seconds"], status=status, error=error))
        self.trace.close()
        self._lock.close()

    def discard(self) -> None:
        """Remove the folder of a new run that never got going (its preparation refused the input: a model that
        cannot do what the run asks, say): nothing was scored, and a folder left behind would look like a run. A
        resumed run's folder is never removed."""
        if self.earlier or (self.directory / "items.jsonl").exists():
            raise UsageError(f"{self.directory} holds an earlier session's work; it is not discarded")
        self.trace.close()
        self._lock.close()
        self.result = {}
        shutil.rmtree(self.directory, ignore_errors=True)
        for folder in self._made[1:]:  # `--out` made for this run alone goes with it; one holding anything stays
            try:
                folder.rmdir()
            except OSError:
                break

    def withdraw(self) -> None:
        """Take back a session refused before any item (a usage error while preparing): a new run's folder is
        removed (`discard`); a resumed one is left as it was, its config (a new `--budget`, say) and trace restored
        and its result not rewritten."""
        if self._reopened is None:
            self.discard()
            return
        config, trace_size = self._reopened
        self.trace.close()
        write_atomically(self.directory / "config.json", config.decode("utf-8"))
        with (self.directory / "trace.jsonl").open("r+b") as trace:
            trace.truncate(trace_size)
        self._lock.close()
        self.result = {}

    def checkpoint(self) -> None:
        """Write `result.json` as `running`, with what every session has spent so far (a benchmark calls this
        after each item). A session killed outright writes no result of its own, and the resume would start
        from the last session's totals: the run's budget would forget what the killed session spent."""
        self._write("result.json", {"status": "running", "error": None, **self._totals()})

    def _totals(self) -> dict[str, Any]:
        seconds = time.time() - self.started
        usage = self.ledger.summary()
        if self.earlier:
            seconds += float(self.earlier.get("seconds") or 0.0)
            usage = added_usage(self.earlier.get("usage") or {}, usage)
        # a folder made by `--create-only` has a result but no session behind it
        created = not self.earlier or self.earlier.get("status") == "created"
        sessions = (0 if created else int(self.earlier.get("sessions", 1))) + 1
        return {"seconds": round(seconds, 3), "sessions": sessions, "usage": usage}

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.result is None:
            status = "ok" if exc is None else "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            self.finish({}, status=status, error=None if exc is None else f"{type(exc).__name__}: {exc}")


LOCK_FILE = ".lock"


def lock_folder(directory: Path) -> Any:
    """Hold the run folder for this process until the run finishes: a second process resuming the same folder (two
    shells, or `bench together` beside `--resume`) would score its items twice and overwrite its totals. The lock
    goes with the process, however it ends. (Within one process, `bench together` refuses a folder given twice.)"""
    handle = (directory / LOCK_FILE).open("a")
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock to take
        return handle
    try:  # a POSIX record lock is the process's: a folder reopened in this process (a resume in a test) is its own
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UsageError(f"{directory} is in use by another run (another process is scoring it); let it finish or "
                         "stop it first") from None
    return handle


def write_atomically(path: Path, text: str) -> None:
    """Write `path` whole or not at all: a temporary file beside it, flushed to disk, then renamed over it. A kill
    at any moment leaves the old file or the new one, never a torn one."""
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)


def added_usage(earlier: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """Two usage summaries (`UsageLedger.summary`) as one, row by row and agent by agent."""
    def add(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        row = {key: (a.get(key) or 0) + (b.get(key) or 0) for key in dict.fromkeys([*b, *a]) if key != "cost_usd"}
        costs = [c for c in (a.get("cost_usd"), b.get("cost_usd")) if c is not None]
        return {**row, "cost_usd": sum(costs) if costs else None}

    agents = {**earlier.get("by_agent", {}), **now.get("by_agent", {})}
    return {"total": add(earlier.get("total", {}), now.get("total", {})),
            "by_agent": {name: add(earlier.get("by_agent", {}).get(name, {}), now.get("by_agent", {}).get(name, {}))
                         for name in sorted(agents)}}


class ResultRow(BaseModel):
    """What any reader of `items.jsonl` needs of a row: the id of its item."""

    model_config = ConfigDict(extra="allow", strict=True)
    id: str = Field(min_length=1)


def load_done(path: Path, *, row: type[ResultRow] = ResultRow,
              on_bad_line: Callable[[BadLine], None] | None = None) -> dict[str, dict[str, Any]]:
    """The rows of `items.jsonl` by item id (a later row of an id replaces an earlier one). A line torn by a kill,
    not UTF-8, not an object, or not a `row` is handed to `on_bad_line` and skipped: its item is scored again."""
    done: dict[str, dict[str, Any]] = {}
    objects, bad = scan_json_lines(path)
    for number, data in objects:
        try:
            row.model_validate(data)
        except ValidationError as exc:
            bad.append(BadLine(path, number, f"not a result row ({describe(exc, 'a row of results')})"))
            continue
        done[data["id"]] = data
    for line in sorted(bad, key=lambda b: b.line):
        if on_bad_line is not None:
            on_bad_line(line)
    return done
