"""The live part of `noosphere view`: whose turn it is, the questions waiting for a person, and their answers.

The page polls `GET /live` for the state of the run (read from the new lines of its trace each time) and posts
a person's answer to `POST /answer`. An answer is checked against the question's form here, as the run would
check it, and written to the run's answer book (`human/answers.jsonl`), where the run, or a resumed run if
this one is stopped, takes it. A question is answered once.

Only the page this server gave out may post: each server makes a token, the page sends it back in a header,
and a page of another site can neither read the token nor send that header here without asking (CORS), which
this server never allows.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noosphere.human import AnswerBook, Field, FormError, read_answer


@dataclass
class LiveRun:
    """A run folder as its page sees it now, read incrementally."""

    directory: Path
    book: AnswerBook = field(init=False)
    events: int = 0
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Asked and not yet settled in the trace, by id (the latest asking of each)."""
    phase: str = ""
    """The outermost society's current phase, as the page labels it: `mindstorm round 2`, `execution`."""
    rounds: int = 0
    _offset: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    """The server answers requests in threads of their own: one of them reads the trace at a time."""

    def __post_init__(self) -> None:
        self.book = AnswerBook(self.directory / "human")

    def _read(self) -> None:
        try:
            with (self.directory / "trace.jsonl").open("rb") as trace:
                if os.fstat(trace.fileno()).st_size < self._offset:  # cut back (a withdrawn session): read it anew
                    self._offset, self.events, self.questions, self.phase, self.rounds = 0, 0, {}, "", 0
                trace.seek(self._offset)
                data = trace.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self._offset += end
        for line in data[:end].splitlines():
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):  # a line nested too deeply is a bad line too, not the end of reading
                continue
            if not isinstance(event, dict) or not isinstance(event.get("kind"), str):
                continue  # counted as the page counts events: objects with a kind
            self.events += 1
            kind = event.get("kind")
            if kind == "human_asked" and isinstance(event.get("question"), str):
                self.questions[event["question"]] = event
            elif kind in ("human_answered", "human_forfeited"):
                self.questions.pop(str(event.get("question")), None)
            elif kind == "soc_phase" and not event.get("society"):
                step = event.get("round") if isinstance(event.get("round"), int) else 0
                in_round = 1 <= step <= self.rounds  # opinions and the execution carry the steps after the rounds
                self.phase = f"{event.get('phase')} round {step}" if in_round else str(event.get("phase"))
            elif kind == "soc_started" and not event.get("society"):
                self.rounds = event.get("rounds") if isinstance(event.get("rounds"), int) else 0
            elif kind == "run_started":  # a new session asks its open questions again
                self.questions.clear()

    def status(self) -> str:
        try:
            result = json.loads((self.directory / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return "running"
        return str(result.get("status", "running")) if isinstance(result, dict) else "running"

    def state(self) -> dict[str, Any]:
        """What the page shows: the run's status, its phase, and the questions still to answer."""
        with self._lock:
            self._read()
            waiting = []
            for question in self.questions.values():
                given = self.book.entry(question["question"])
                waiting.append({**{k: question.get(k) for k in ("question", "member", "prompt", "fields", "timeout_s")},
                                "answered": given is not None and "answer" in given})
            return {"events": self.events, "status": self.status(), "phase": self.phase, "waiting": waiting,
                    "resume": f"noosphere ask --resume {self.directory}"}

    def answer(self, question: str, given: Any) -> tuple[int, str]:
        """Take a person's answer: (HTTP status, message)."""
        with self._lock:
            self._read()
            asked = self.questions.get(question)
            if asked is None:
                return 404, "no question with that id is waiting for an answer"
            if not isinstance(given, dict):
                return 400, "an answer is an object of field values"
            try:
                fields = tuple(Field.from_json(f) for f in asked.get("fields") or [])
                values = read_answer(fields, given)
            except FormError as wrong:
                return 400, str(wrong)
            except (TypeError, ValueError, AttributeError):  # fields the run never writes: a trace edited by hand
                return 400, "the form of this question cannot be read from the trace (is it damaged?)"
            if not self.book.answer(question, str(asked.get("member", "")), values, "viewer"):
                return 409, "this question was answered already"
            return 200, "answered"
