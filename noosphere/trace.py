"""Typed trace events and the JSONL writer every run uses.

Each event kind is a pydantic model (traces are an edge: written by one process, read back by the
CLI, the viewer and tests). Subclasses register themselves by their `kind`, so a reader gets typed
events back and unknown kinds (from newer code) still load as plain `Event`s.

Secrets never reach a trace: every line passes through a `Redactor` before it is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from noosphere.datafiles import BadLine, describe, end_torn_line, scan_json_lines
from noosphere.errors import UsageError
from noosphere.redact import REDACTED, Redactor
from noosphere.scope import current_scope, current_society

__all__ = ["REDACTED", "Event", "Redactor", "Trace", "TraceSink", "read_trace"]

class Event(BaseModel):
    """Base of all trace events. `kind` names the event; `ts` is wall-clock seconds."""

    model_config = ConfigDict(frozen=True, extra="allow")
    kind: str = "event"
    ts: float = Field(default_factory=time.time)

    registry: ClassVar[dict[str, type[Event]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        default = cls.model_fields["kind"].default
        if isinstance(default, str) and default != "event":
            Event.registry[default] = cls

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Event:
        return Event.registry.get(data.get("kind", ""), Event).model_validate(data)


class RunStarted(Event):
    """The first event of a run's trace, written when `Run` opens the run folder (and again at the start of each resumed
    session, whose events are appended): the run's id, the command and its config."""

    kind: str = "run_started"
    run_id: str
    command: str
    config: dict[str, Any] = {}


class RunFinished(Event):
    """The last event of a run session, written by `Run.finish`: its status (`ok`, or why it ended: `failed`,
    `interrupted`, `budget`...), the error if one stopped it, and the seconds of every session of the run so far."""

    kind: str = "run_finished"
    run_id: str
    seconds: float
    status: str = "ok"
    error: str | None = None


class ModelEvent(Event):
    """Fields shared by the events of a model's work: which model, and for which agent (None outside one).

    Not an event kind of its own (its `kind` stays "event", so it is not registered); subclasses name theirs."""

    model: str
    agent: str | None = None


class ModelCall(ModelEvent):
    """One request to a backend and its reply (one per attempt; cached replies included)."""

    kind: str = "model_call"
    attempt: int = 1
    messages: list[dict[str, Any]]
    response: str
    tool_calls: list[dict[str, Any]] = []
    schema_name: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_prompt_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str = "stop"


class OptionsScored(ModelEvent):
    """One scoring of options: each option's probability as the continuation of the prompt."""

    kind: str = "options_scored"
    messages: list[dict[str, Any]]
    prefix: str = ""
    options: list[str]
    probs: list[float]
    logprobs: list[float | None]
    tokens: list[int]
    method: str
    normalise: str
    entropy: float
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    note: str | None = None
    """Why the scores are not exact log-probabilities (a first-token approximation, a sampling fallback)."""


class OutputRepaired(ModelEvent):
    """A reply needed fixing: repaired JSON, a validation error sent back, an empty reply."""

    kind: str = "output_repaired"
    attempt: int
    repair: str
    """What was wrong: `json_repaired` (malformed JSON fixed in place, no call lost), `invalid` (the reply did not
    match the schema), `empty` (no text and no tool call) or `refusal`; all but `json_repaired` send the error
    back to the model for another attempt."""
    detail: str
    """The repair made, or the error sent back to the model, in words."""


class OutputFailed(ModelEvent):
    """No attempt produced a valid object; the caller receives `OutputParseError`."""

    kind: str = "output_failed"
    attempts: int
    errors: list[str]


class ModelRetried(ModelEvent):
    """A provider fault that will be retried after `delay_s`."""

    kind: str = "model_retried"
    error: str
    delay_s: float


class PromptTruncated(Event):
    """A prompt did not fit the model's context window with room for the reply, and its settings say
    `overflow="truncate"` (`Model._fit`): the oldest messages between the task and the last one were dropped (the task
    only when nothing else was left). How many, the prompt's tokens after dropping them, and the window (`context`)."""

    kind: str = "prompt_truncated"
    model: str
    dropped_messages: int
    prompt_tokens: int
    context: int


class TraceSink(Protocol):
    """Something that follows a trace as it is written (an OpenTelemetry exporter, say): it is handed every
    typed event, as emitted and before redaction (a sink redacts what it sends on), and closed with the trace."""

    def __call__(self, event: Event) -> None: ...

    def close(self) -> None: ...


class Trace:
    """Collects events in memory and, when given a path, appends them to a JSONL file."""

    def __init__(self, path: Path | None = None, *, redactor: Redactor | None = None, keep: bool = True) -> None:
        self.path = path
        self.redactor = redactor or Redactor.from_environment()
        self.keep = keep
        self.events: list[Event] = []
        if path is not None:
            end_torn_line(path)  # a kill mid-line: the next session's events start on a line of their own
        self._file = path.open("a", encoding="utf-8") if path else None
        self._sinks: list[TraceSink] = []

    def add_sink(self, sink: TraceSink) -> None:
        """Hand `sink` every event from now on, after the events already kept (a run's `run_started`)."""
        for event in self.events:
            sink(event)
        self._sinks.append(sink)

    def emit(self, event: Event) -> None:
        scope = current_scope()
        if scope is not None and getattr(event, "item_id", None) is None:
            event = event.model_copy(update={"item_id": scope.item_id})
        society = current_society()
        if society and getattr(event, "society", None) is None:
            event = event.model_copy(update={"society": society})
        if self.keep:
            self.events.append(event)
        if self._file is not None:
            self._file.write(self.redactor(event.model_dump_json()) + "\n")
            self._file.flush()
        for sink in self._sinks:
            sink(event)

    def of_kind(self, kind: str) -> list[Event]:
        return [event for event in self.events if event.kind == kind]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        sinks, self._sinks = self._sinks, []
        for sink in sinks:
            sink.close()


def run_trace(run: Path | str) -> Path:
    """A run folder's `trace.jsonl`; a `UsageError` if it has none (not a run folder, or a run committed without
    its trace, as the runs under `benchmarks/results` are)."""
    folder = Path(run)
    if not folder.is_dir():
        raise UsageError(f"{run} does not exist" if not folder.exists() else f"{run} is a file, not a run folder")
    trace = folder / "trace.jsonl"
    if not trace.is_file():
        raise UsageError(f"no trace.jsonl in {run}: not a run folder, or a run whose trace stayed on the machine that "
                         "ran it (the runs under benchmarks/results keep none)")
    return trace


def read_trace(path: Path, *, on_bad_line: Callable[[BadLine], None] | None = None) -> Iterator[Event]:
    """Read a trace file back as typed events. A line that is not one (torn by a killed run, not UTF-8, not an
    object, an event of a known kind without its fields) is handed to `on_bad_line` and skipped."""
    objects, bad = scan_json_lines(path)
    bad_by_line = {b.line: b for b in bad}
    for number, data in objects:
        for line in sorted(n for n in bad_by_line if n < number):
            _report(bad_by_line.pop(line), on_bad_line)
        if "kind" not in data:  # every event is written with its kind: this object is none (the viewer skips it too)
            _report(BadLine(path, number, "an object without a kind, not an event"), on_bad_line)
            continue
        kind = data["kind"]
        if not isinstance(kind, str):
            _report(BadLine(path, number, "its kind is not a string"), on_bad_line)
            continue
        try:
            event = Event.parse(data)
        except ValidationError as exc:
            _report(BadLine(path, number, f"not a {kind or 'trace'} event ({describe(exc, 'an event')})"), on_bad_line)
            continue
        yield event
    for line in sorted(bad_by_line):
        _report(bad_by_line[line], on_bad_line)


def _report(bad: BadLine, on_bad_line: Callable[[BadLine], None] | None) -> None:
    if on_bad_line is not None:
        on_bad_line(bad)
