"""What a served run adds to its trace, and how any trace event travels in the stream as a phase."""

from __future__ import annotations

import json
from typing import Any

from noosphere.redact import Redactor
from noosphere.trace import Event

LONG_TEXT = 300
"""Characters of a text field a phase keeps (the run folder has them whole)."""
LEFT_OUT = ("messages", "config")
"""Fields a phase leaves out: every prompt of a model call, the run's whole configuration."""


class AnswerReached(Event):
    """The system has answered; the reply the client gets is this answer (or, when the request asked for a form,
    the answer written in that form by one more call)."""

    kind: str = "serve_answer"
    served_as: str
    answer: str
    confidence: float


class ClientDisconnected(Event):
    """The client went away before the reply was complete; `action` is what the run did then: `cancel` (stopped
    where it was, `result.json` status `cancelled`) or `finish` (went on to its answer, status `ok`)."""

    kind: str = "serve_disconnected"
    action: str


def phase_of(event: Event, redactor: Redactor) -> dict[str, Any]:
    """An event as the stream shows it: its fields but the bulky ones, long texts cut, secrets redacted."""
    fields = {name: _short(value) for name, value in event.model_dump(mode="json").items() if name not in LEFT_OUT}
    return json.loads(redactor(json.dumps(fields, ensure_ascii=False)))


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LONG_TEXT:
        return value[:LONG_TEXT] + "…"
    if isinstance(value, list):
        return [_short(item) for item in value]
    if isinstance(value, dict):
        return {key: _short(item) for key, item in value.items()}
    return value
