"""The screenshots of a run's web episodes, for the page: each PNG its `web_step` events name, as a data URL.

Only files inside the run folder's `web/` are read (a path in a trace is data, and cannot point elsewhere), only
PNGs, and at most `MAX_BYTES` of them in all (a very long run shows its first screenshots and says so).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 1024 * 1024
PNG = b"\x89PNG\r\n\x1a\n"


def web_media(run_dir: Path, events: list[dict[str, Any]]) -> dict[str, str]:
    """{path as written in the trace: data URL}."""
    folder = (run_dir / "web").resolve()
    found: dict[str, str] = {}
    total = 0
    for event in events:
        name = event.get("screenshot") if event.get("kind") == "web_step" else None
        if not isinstance(name, str) or name in found:
            continue
        try:
            path = (run_dir / name).resolve()
            if not path.is_relative_to(folder) or not path.is_file():
                continue
            data = path.read_bytes()
        except (OSError, ValueError):  # a name no file can have (a NUL in it), a file that cannot be read: not shown
            continue
        if not data.startswith(PNG) or total + len(data) > MAX_BYTES:
            continue
        total += len(data)
        found[name] = "data:image/png;base64," + base64.b64encode(data).decode()
    return found
