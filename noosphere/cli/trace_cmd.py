"""`noosphere trace show RUN`: a readable summary of a run folder (`trace export` is in `otel_cmd`)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from noosphere.cli.otel_cmd import add_trace_export
from noosphere.datafiles import lone_surrogate
from noosphere.printable import markup_safe
from noosphere.trace import Event, ModelCall, read_trace, run_trace


def _snippet(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return markup_safe(flat if len(flat) <= width else flat[: width - 1] + "…")


def _e(value: object) -> str:
    """Text from the run, shown as itself: a trace may hold anything, markup and terminal escapes included."""
    return markup_safe(value)


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON file of the run, or {} when it is missing, half-written or not an object. A lone surrogate in it (JSON,
    but no text a terminal can write) is shown as U+FFFD."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    if lone_surrogate(data):  # JSON read pairs into characters: a surrogate left in its text is a lone one
        data = json.loads(re.sub("[\ud800-\udfff]", "\ufffd", json.dumps(data, ensure_ascii=False)))
    return data


SHOWN_STEPS = 200
"""Workspace steps `trace show` prints; the rest are counted."""


def _print_workspace(console: Console, events: list[Event]) -> None:
    """One line per workspace step: bids, competition, STM answer, links and fusion."""
    lines = []
    for event in events:
        data = event.model_dump()
        if event.kind == "ws_iteration":
            lines.append(f"[bold]iteration {_e(data['iteration'])}[/]")
        elif event.kind == "ws_chunk" and data["phase"] == "chunk":
            lines.append(f"  bid {_e(data['processor'])}: w={data['weight']:.2f} (r={data['relevance']:.2f} "
                         f"c={data['confidence']:.2f} s={data['surprise']:.2f}) {_snippet(data['gist'], 60)}")
        elif event.kind == "ws_competition":
            lines.append(f"  winner ({_e(data['method'])}): {_e(data['winner'])}")
        elif event.kind == "ws_stm":
            label = f" \\[{_e(data['label'])}]" if data.get("label") else ""
            lines.append(f"  stm{label} alpha={data['confidence']:.2f} stop={_e(data['stop'])}: "
                         f"{_snippet(data['answer'], 60)}")
        elif event.kind == "ws_link":
            lines.append(f"  link {_e(data['a'])} - {_e(data['b'])} {_e(data['change'])}")
        elif event.kind == "ws_fusion":
            lines.append(f"  fusion {_e(data['asker'])} <- {_e(data['answerer'])}: {_snippet(data['answer'], 50)}")
        elif event.kind == "ws_forfeit":
            lines.append(f"  [yellow]forfeit[/] {_e(data['processor'])} ({_e(data['phase'])}): "
                         f"{_snippet(data['error'], 60)}")
    if lines:
        console.print("[bold]workspace[/]")
        for line in lines[:SHOWN_STEPS]:
            console.print(line, highlight=False)
        if len(lines) > SHOWN_STEPS:
            console.print(f"  ... and {len(lines) - SHOWN_STEPS} more steps (`noosphere view` shows them all)",
                          highlight=False)


def add_trace(app: typer.Typer) -> None:
    trace_app = typer.Typer(help="Inspect run traces, or export them to OpenTelemetry.", no_args_is_help=True)
    app.add_typer(trace_app, name="trace")

    @trace_app.command("show")
    def show(
        run: Annotated[Path, typer.Argument(help="a run folder (runs/<time>-<id>)")],
        calls: Annotated[int, typer.Option(min=0, help="how many model calls to list")] = 20,
    ) -> None:
        """Print what a run did: config, events, model calls, repairs and the result."""
        trace_path = run_trace(run)
        console = Console(emoji=False)
        config = _read_json(run / "config.json")
        result = _read_json(run / "result.json")
        warnings = Console(stderr=True, emoji=False)
        events = list(read_trace(trace_path, on_bad_line=lambda bad: warnings.print(
            f"warning: {markup_safe(bad)}", highlight=False, soft_wrap=True)))
        status = result.get("status", "running")
        console.print(f"[bold]run[/] {_e(run.name)}  command={_e(config.get('command'))}  status={_e(status)}"
                      f"  seconds={_e(result.get('seconds', '?'))}", highlight=False)
        console.print("[bold]config[/] " + _e(json.dumps({k: v for k, v in config.items() if k not in ("run_id",)})),
                      highlight=False, soft_wrap=True)
        kinds = Counter(event.kind for event in events)
        console.print("[bold]events[/] " + _e(", ".join(f"{kind}={count}" for kind, count in sorted(kinds.items()))))
        model_calls = [e for e in events if isinstance(e, ModelCall)]
        listed = f", the first {calls} listed" if len(model_calls) > calls else ""
        table = Table(title=f"model calls ({len(model_calls)}{listed})")
        for column in ("#", "agent", "model", "try", "in", "out", "s", "cached", "response"):
            table.add_column(column, overflow="fold")
        for index, call in enumerate(model_calls[:calls], 1):
            table.add_row(str(index), _e(call.agent or "-"), _e(call.model), str(call.attempt), str(call.prompt_tokens),
                          str(call.completion_tokens), f"{call.latency_s:.2f}", "yes" if call.cached else "",
                          _snippet(call.response))
        console.print(table)
        _print_workspace(console, events)
        for event in events:
            if event.kind in ("output_repaired", "output_failed", "model_retried", "prompt_truncated"):
                details = event.model_dump(exclude={"kind", "ts"})
                console.print(f"[yellow]{_e(event.kind)}[/] {_e(json.dumps(details, default=str))}", highlight=False,
                              soft_wrap=True)
        shown = {k: v for k, v in result.items() if k not in ("usage",)}
        if shown:
            console.print("[bold]result[/]", highlight=False)
            console.print(_e(json.dumps(shown, indent=2, ensure_ascii=False)), highlight=False, soft_wrap=True)
        total = (result.get("usage") or {}).get("total") if isinstance(result.get("usage"), dict) else None
        if isinstance(total, dict):
            console.print("[bold]usage[/] " + _e(
                f"calls={total.get('calls')} cached={total.get('cached_calls')} "
                f"prompt_tokens={total.get('prompt_tokens')} reused={total.get('reused_prompt_tokens', 0)} "
                f"completion_tokens={total.get('completion_tokens')} cost_usd={total.get('cost_usd')}"),
                highlight=False)

    add_trace_export(trace_app)
