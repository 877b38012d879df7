"""`noosphere trace show RUN`: a readable summary of a run folder."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from noosphere.errors import UsageError
from noosphere.trace import ModelCall, read_trace


def _snippet(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def add_trace(app: typer.Typer) -> None:
    trace_app = typer.Typer(help="Inspect run traces.", no_args_is_help=True)
    app.add_typer(trace_app, name="trace")

    @trace_app.command("show")
    def show(
        run: Annotated[Path, typer.Argument(help="a run folder (runs/<time>-<id>)")],
        calls: Annotated[int, typer.Option(help="how many model calls to list")] = 20,
    ) -> None:
        """Print what a run did: config, events, model calls, repairs and the result."""
        trace_path = run / "trace.jsonl"
        if not trace_path.is_file():
            raise UsageError(f"{run} is not a run folder (no trace.jsonl)")
        console = Console()
        config = _read_json(run / "config.json")
        result = _read_json(run / "result.json")
        events = list(read_trace(trace_path))
        status = result.get("status", "running")
        console.print(f"[bold]run[/] {run.name}  command={config.get('command')}  status={status}"
                      f"  seconds={result.get('seconds', '?')}", highlight=False)
        console.print("[bold]config[/] " + json.dumps({k: v for k, v in config.items() if k not in ("run_id",)}),
                      highlight=False, soft_wrap=True)
        kinds = Counter(event.kind for event in events)
        console.print("[bold]events[/] " + ", ".join(f"{kind}={count}" for kind, count in sorted(kinds.items())))
        model_calls = [e for e in events if isinstance(e, ModelCall)]
        table = Table(title=f"model calls ({len(model_calls)})")
        for column in ("#", "agent", "model", "try", "in", "out", "s", "cached", "response"):
            table.add_column(column, overflow="fold")
        for index, call in enumerate(model_calls[:calls], 1):
            table.add_row(str(index), call.agent or "-", call.model, str(call.attempt), str(call.prompt_tokens),
                          str(call.completion_tokens), f"{call.latency_s:.2f}", "yes" if call.cached else "",
                          _snippet(call.response))
        console.print(table)
        for event in events:
            if event.kind in ("output_repaired", "output_failed", "model_retried", "prompt_truncated"):
                details = event.model_dump(exclude={"kind", "ts"})
                console.print(f"[yellow]{event.kind}[/] {json.dumps(details)}", highlight=False, soft_wrap=True)
        shown = {k: v for k, v in result.items() if k not in ("usage",)}
        if shown:
            console.print("[bold]result[/] " + json.dumps(shown), highlight=False, soft_wrap=True)
        if "usage" in result:
            total = result["usage"]["total"]
            console.print(f"[bold]usage[/] calls={total['calls']} cached={total['cached_calls']} "
                          f"prompt_tokens={total['prompt_tokens']} completion_tokens={total['completion_tokens']} "
                          f"cost_usd={total['cost_usd']}", highlight=False)
