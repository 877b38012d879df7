"""A run folder as one JSON-able dict: everything the viewer page is drawn from.

The page does its own reading of the events, so the bundle keeps them exactly as written (plain
dicts, kinds this version does not know included) rather than as typed `Event`s. Which views apply
is decided here once, from the files and the event kinds present.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from noosphere.datafiles import BadLine, scan_json_lines, too_deep
from noosphere.runs import load_done
from noosphere.trace import run_trace
from noosphere.viewer.web_media import web_media

SECTIONS = {"ws_": "workspace", "soc_": "society", "econ_": "society", "ma_": "metaagent", "web_": "web",
            "emb_": "embodied"}


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON file of the run, or {} when it is missing or half-written (a run still going), or nested too deeply to
    draw."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constants)
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) and not too_deep(data) else {}


def _no_constants(name: str) -> None:
    """NaN and Infinity are not JSON: the browser's JSON.parse would reject the whole page."""
    return None


def read_events(path: Path, on_bad_line: Callable[[BadLine], None] | None = None) -> list[dict[str, Any]]:
    """The trace's events as dicts. A line that is not one (torn by a killed run, not UTF-8, not an object with a
    kind) is handed to `on_bad_line` and skipped."""
    events = []
    objects, bad = scan_json_lines(path, parse_constant=_no_constants)
    for number, event in objects:
        if isinstance(event.get("kind"), str):
            event.setdefault("ts", 0.0)
            events.append(event)
        else:
            bad.append(BadLine(path, number, "its kind is not a string" if "kind" in event
                               else "an object without a kind, not an event"))
    for line in sorted(bad, key=lambda b: b.line):
        if on_bad_line is not None:
            on_bad_line(line)
    return events


def sections(events: list[dict[str, Any]], benchmark: bool) -> list[str]:
    """The views that apply to a run, in a fixed order; a benchmark of a workspace gets both."""
    found = {name for event in events for prefix, name in SECTIONS.items() if event["kind"].startswith(prefix)}
    if benchmark:
        found.add("benchmark")
    return [name for name in ("workspace", "society", "metaagent", "web", "embodied", "benchmark") if name in found]


def load_bundle(run_dir: Path | str, on_bad_line: Callable[[BadLine], None] | None = None) -> dict[str, Any]:
    """Read a run folder; a folder without a trace is not a run and is a usage error. Lines of the trace or
    results that cannot be read go to `on_bad_line` and are left out."""
    run_dir = Path(run_dir)
    trace = run_trace(run_dir)
    events = read_events(trace, on_bad_line)
    report = _read_json(run_dir / "report.json") or None
    items = list(load_done(run_dir / "items.jsonl", on_bad_line=on_bad_line).values())
    return {"name": run_dir.name, "path": str(run_dir), "config": _read_json(run_dir / "config.json"),
            "result": _read_json(run_dir / "result.json"), "report": report, "items": items, "events": events,
            "sections": sections(events, benchmark=report is not None or bool(items)),
            "media": web_media(run_dir, events)}
