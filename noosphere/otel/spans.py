"""A run's typed trace events, turned into a tree of OpenTelemetry spans as they come.

The tree, whatever the engine:

    run (one per session of the run folder)
    └── item (benchmarks: one per item)
        ├── workspace → iteration → model calls
        ├── society → phase / round → model calls (a society standing as a member nests under its phase)
        └── episode → step → model calls

Nothing here knows an engine beyond the event kinds that open and close its steps, so every engine gets
spans without a change. Events are fed in the order they were emitted (live, from a `Trace`, or read back
from `trace.jsonl`); each span gets its times from the events' own timestamps, so a run exported later has
the same tree and times as one exported while it ran. Events of benchmark items scored at once, and of
societies running inside one another, carry their item and society path: each gets its own branch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace as otel
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from noosphere.otel.genai import (
    AGENT_NAME,
    ERROR_TYPE,
    OPERATION,
    TOOL_NAME,
    WORKFLOW_NAME,
    Attributes,
    call_span,
    redacted,
    scalar,
    scoring_span,
)
from noosphere.trace import Event, ModelCall, OptionsScored

Key = tuple[str, str]
"""(item id, society path): the branch an event belongs to ("" for none)."""

OPENS = {"soc_started": "society", "soc_phase": "phase", "ws_iteration": "iteration", "ma_episode": "episode"}
NOTED = {"output_repaired", "output_failed", "model_retried", "prompt_truncated", "soc_forfeit", "soc_program_repair",
         "ws_forfeit", "soc_budget_spent", "soc_consensus", "soc_quorum",
         "human_asked", "human_answered", "human_forfeited"}
"""Events that are not steps of their own but worth seeing on the step they happened in (as span events)."""
CONTENT_CONFIG = {"query", "instructions"}
"""A run's settings that are content (what was asked, a served request's system messages): sent only with
`content`, as prompts and completions are."""


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


@dataclass
class Frame:
    kind: str
    span: Span
    step: int | None = None
    rounds: int = 0
    """A society's rounds: a phase is labelled with its round only inside them (opinions and the execution
    carry the steps after the last round)."""


@dataclass
class SpanBuilder:
    """Feed it events in order (`add`); `finish` ends whatever is still open (a run killed without its
    `run_finished`). `content`: attach prompts and completions; `redact`: applied to every string sent."""

    tracer: Tracer
    content: bool = False
    redact: Callable[[str], str] = lambda text: text
    runs: int = 0
    """Root spans opened so far (one per session of the run folder)."""
    _run: Span | None = None
    _items: dict[str, Span] = field(default_factory=dict)
    _stacks: dict[Key, list[Frame]] = field(default_factory=dict)
    _last_ts: float = 0.0

    # entry points ------------------------------------------------------------------------------------
    def add(self, event: Event) -> None:
        self._last_ts = max(self._last_ts, event.ts)
        kind = event.kind
        data = event.model_dump()
        if kind == "run_started":
            self.finish()
            self._start_run(event, data)
            return
        if self._run is None:  # events before any run_started (a trace written without a Run): a root of its own
            self._start_run(event, {"run_id": "?", "command": "?", "config": {}})
        key = (data.get("item_id") or "", data.get("society") or "")
        if kind == "run_finished":
            self._finish_run(event, data)
        elif kind == "bench_item_started":
            self._start_item(event, data)
        elif kind == "bench_item_finished":
            self._finish_item(event, data)
        elif isinstance(event, ModelCall):
            name, attributes = call_span(event, content=self.content)
            self._leaf(key, name, attributes, event.ts - event.latency_s, event.ts, SpanKind.CLIENT)
        elif isinstance(event, OptionsScored):
            name, attributes = scoring_span(event, content=self.content)
            self._leaf(key, name, attributes, event.ts - event.latency_s, event.ts, SpanKind.CLIENT)
        elif kind == "ws_tool":
            self._leaf(key, f"execute_tool {data.get('tool', '?')}", {
                OPERATION: "execute_tool", TOOL_NAME: str(data.get("tool", "?")),
                AGENT_NAME: str(data.get("processor", "")), "noosphere.tool.ok": bool(data.get("ok"))},
                event.ts, event.ts, SpanKind.INTERNAL)
        elif kind in OPENS:
            self._step(key, OPENS[kind], event, data)
        elif kind == "soc_finished":
            self._close(key, "society", event.ts, {
                "noosphere.society.decided_by": str(data.get("decided_by", "")),
                **({"noosphere.society.answer": str(data.get("answer", ""))} if self.content else {})})
        elif kind == "ws_finished":
            self._close(key, "iteration", event.ts, {})
            self._close(key, "workspace", event.ts, {
                "noosphere.workspace.confidence": float(data.get("confidence") or 0.0),
                "noosphere.workspace.iterations": int(data.get("iterations") or 0),
                "noosphere.workspace.stopped_by": str(data.get("stopped_by", "")),
                **({"noosphere.workspace.answer": str(data.get("answer", ""))} if self.content else {})})
        elif kind == "ma_episode_end":
            self._close(key, "episode", event.ts, {"noosphere.metaagent.won": bool(data.get("won")),
                                                   "noosphere.metaagent.actions": int(data.get("actions") or 0)})
        elif kind.startswith("ma_") and isinstance(data.get("step"), int):
            self._metaagent_step(key, event, data["step"])
        if kind in NOTED:
            self._note(key, event, data)

    def finish(self) -> None:
        """End every open span at the last event's time (the run's end when it finished)."""
        for key in list(self._stacks):
            self._close_all(key, self._last_ts)
        for item in list(self._items):
            self._items.pop(item).end(end_time=_ns(self._last_ts))
        if self._run is not None:
            self._run.set_attribute("noosphere.run.finished", False)
            self._run.set_status(Status(StatusCode.ERROR, "the trace ends without run_finished (killed?)"))
            self._run.end(end_time=_ns(self._last_ts))
            self._run = None

    # the run and its items ---------------------------------------------------------------------------
    def _start_run(self, event: Event, data: dict[str, Any]) -> None:
        config = data.get("config") or {}
        command = str(data.get("command", "?"))
        named = [str(config[key]) for key in ("benchmark", "system") if isinstance(config.get(key), str)]
        workflow = " ".join(["noosphere", command, *named])  # noosphere ask ctm, noosphere bench gsm8k society
        attributes: Attributes = {OPERATION: "invoke_workflow", WORKFLOW_NAME: workflow,
                                  "noosphere.run.id": str(data.get("run_id", "?")), "noosphere.run.command": command}
        for name, value in config.items():
            shown = scalar(value)
            if shown is not None and (self.content or name not in CONTENT_CONFIG):
                attributes[f"noosphere.config.{name}"] = shown
        self._run = self.tracer.start_span(f"invoke_workflow {workflow}", context=Context(), kind=SpanKind.INTERNAL,
                                           attributes=redacted(attributes, self.redact), start_time=_ns(event.ts))
        self.runs += 1

    def _finish_run(self, event: Event, data: dict[str, Any]) -> None:
        for key in list(self._stacks):
            self._close_all(key, event.ts)
        for item in list(self._items):
            self._items.pop(item).end(end_time=_ns(event.ts))
        run, self._run = self._run, None
        assert run is not None
        status = str(data.get("status", "ok"))
        run.set_attribute("noosphere.run.status", status)
        if status == "failed":
            error = str(data.get("error") or "failed")
            run.set_attribute(ERROR_TYPE, error.split(":", 1)[0])
            run.set_status(Status(StatusCode.ERROR, self.redact(error)))
        run.end(end_time=_ns(event.ts))

    def _start_item(self, event: Event, data: dict[str, Any]) -> None:
        item = str(data.get("item_id", "?"))
        self._items[item] = self.tracer.start_span(
            f"item {item}", context=otel.set_span_in_context(self._run), kind=SpanKind.INTERNAL,
            attributes={"noosphere.item.id": item}, start_time=_ns(event.ts))

    def _finish_item(self, event: Event, data: dict[str, Any]) -> None:
        item = str(data.get("item_id", "?"))
        for key in [k for k in self._stacks if k[0] == item]:
            self._close_all(key, event.ts)
        span = self._items.pop(item, None)
        if span is None:
            return
        span.set_attributes(redacted({"noosphere.item.correct": bool(data.get("correct")),
                                      "noosphere.item.calls": int(data.get("calls") or 0),
                                      "noosphere.item.tokens": int(data.get("tokens") or 0)}, self.redact))
        if self.content:
            span.set_attributes(redacted({"noosphere.item.prediction": json.dumps(data.get("prediction"), default=str),
                                          "noosphere.item.gold": json.dumps(data.get("gold"), default=str)},
                                         self.redact))
        if data.get("error"):
            span.set_status(Status(StatusCode.ERROR, self.redact(str(data["error"]))))
        span.end(end_time=_ns(event.ts))

    # steps -------------------------------------------------------------------------------------------
    def _parent(self, key: Key) -> Span:
        """The innermost open span of this branch, else of the society it runs inside, its item, the run."""
        item, path = key
        while True:
            stack = self._stacks.get((item, path))
            if stack:
                return stack[-1].span
            if not path:
                break
            path = path.rpartition("/")[0]
        if item in self._items:
            return self._items[item]
        assert self._run is not None
        return self._run

    def _open(self, key: Key, kind: str, name: str, attributes: Attributes, ts: float, step: int | None = None,
              rounds: int = 0) -> None:
        span = self.tracer.start_span(name, context=otel.set_span_in_context(self._parent(key)),
                                      kind=SpanKind.INTERNAL, attributes=redacted(attributes, self.redact),
                                      start_time=_ns(ts))
        self._stacks.setdefault(key, []).append(Frame(kind, span, step, rounds))

    def _close(self, key: Key, kind: str, ts: float, attributes: Attributes) -> None:
        """End the innermost open `kind` of this branch and everything opened inside it."""
        stack = self._stacks.get(key, [])
        if not any(frame.kind == kind for frame in stack):
            return
        while stack:
            frame = stack.pop()
            if frame.kind == kind:
                frame.span.set_attributes(redacted(attributes, self.redact))
            frame.span.end(end_time=_ns(ts))
            if frame.kind == kind:
                break
        if not stack:
            self._stacks.pop(key, None)

    def _close_all(self, key: Key, ts: float) -> None:
        for frame in reversed(self._stacks.pop(key, [])):
            frame.span.end(end_time=_ns(ts))

    def _step(self, key: Key, kind: str, event: Event, data: dict[str, Any]) -> None:
        if kind == "society":
            organisation = str(data.get("organisation", "society"))
            name = key[1] or organisation
            rounds = int(data.get("rounds") or 0)
            self._open(key, "society", f"invoke_agent {name}", {
                OPERATION: "invoke_agent", AGENT_NAME: name, "noosphere.society.organisation": organisation,
                "noosphere.society.members": sorted(str(m) for m in data.get("members") or {}),
                "noosphere.society.rounds": rounds}, event.ts, rounds=rounds)
        elif kind == "phase":
            self._close(key, "phase", event.ts, {})
            phase, round_ = str(data.get("phase", "?")), int(data.get("round") or 0)
            society = next((f for f in reversed(self._stacks.get(key, [])) if f.kind == "society"), None)
            in_round = society is not None and 1 <= round_ <= society.rounds
            self._open(key, "phase", f"{phase} round {round_}" if in_round else phase,
                       {"noosphere.society.phase": phase, "noosphere.society.round": round_}, event.ts)
        elif kind == "iteration":
            if not any(frame.kind == "workspace" for frame in self._stacks.get(key, [])):
                self._open(key, "workspace", "invoke_agent workspace", {OPERATION: "invoke_agent",
                                                                         AGENT_NAME: "workspace"}, event.ts)
            self._close(key, "iteration", event.ts, {})
            iteration = int(data.get("iteration") or 0)
            self._open(key, "iteration", f"iteration {iteration}", {"noosphere.workspace.iteration": iteration},
                       event.ts)
        elif kind == "episode":
            game = str(data.get("game", "?"))
            self._open(key, "episode", f"invoke_agent {data.get('system', 'metaagent')}", {
                OPERATION: "invoke_agent", AGENT_NAME: str(data.get("system", "metaagent")),
                "noosphere.metaagent.game": game, "noosphere.metaagent.task_type": str(data.get("task_type", ""))},
                event.ts)
            self._open(key, "step", "step 0", {"noosphere.metaagent.step": 0}, event.ts, step=0)

    def _metaagent_step(self, key: Key, event: Event, step: int) -> None:
        """A meta-agent's step begins with the first event that carries its number (the action that ends the
        step before it); the calls that follow are its calls."""
        stack = self._stacks.get(key, [])
        if not any(frame.kind == "episode" for frame in stack) or (stack and stack[-1].step == step):
            return
        self._close(key, "step", event.ts, {})
        self._open(key, "step", f"step {step}", {"noosphere.metaagent.step": step}, event.ts, step=step)

    def _leaf(self, key: Key, name: str, attributes: Attributes, start: float, end: float, kind: SpanKind) -> None:
        span = self.tracer.start_span(name, context=otel.set_span_in_context(self._parent(key)), kind=kind,
                                      attributes=redacted(attributes, self.redact), start_time=_ns(min(start, end)))
        span.end(end_time=_ns(end))

    def _note(self, key: Key, event: Event, data: dict[str, Any]) -> None:
        shown = {name: value for name, value in data.items() if name not in ("kind", "ts", "item_id", "society")}
        if not self.content:  # what a member said, a prompt, the answer agreed on: content; who and where is not
            shown = {name: value for name, value in shown.items()
                     if name not in ("prompt", "detail", "fields", "answer")}
        attributes: Attributes = {}
        for name, value in shown.items():
            value = scalar(value) if not isinstance(value, dict) else json.dumps(value, default=str)
            if value is not None:
                attributes[f"noosphere.{name}"] = value
        self._parent(key).add_event(f"noosphere.{event.kind}", redacted(attributes, self.redact),
                                    timestamp=_ns(event.ts))
