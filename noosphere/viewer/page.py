"""The viewer page: one self-contained HTML file (CSS, JS and the run's data inline, no network).

The run's data goes into a `<script type="application/json">` element with `<`, `>`, `&` and the
JavaScript line separators escaped, so no string in a trace can close the element or start markup;
the page's own script then builds the DOM with text nodes only. A content security policy with a
per-page nonce is a second wall: only the page's own script and style may run, and nothing is fetched.
"""

from __future__ import annotations

import json
import re
import secrets
from importlib import resources
from pathlib import Path
from typing import Any

from noosphere.datafiles import finite
from noosphere.viewer.bundle import load_bundle

SCRIPTS = ("dom.js", "model.js", "timeline.js", "workspace.js", "society.js", "metaagent.js", "embodied.js", "games.js",
           "web.js", "bench.js", "report.js", "live.js", "app.js")
"""Inlined in this order: helpers first, `app.js` (which boots the page) last."""

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
"""What is escaped; a lone surrogate too (a run's config.json may hold `"\\ud800"`): UTF-8 cannot write it."""


def _static(name: str) -> str:
    return resources.files("noosphere.viewer").joinpath("static", name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """JSON that is safe inside a <script> element (the escapes keep it valid JSON)."""
    text = json.dumps(finite(data), ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
    return _UNSAFE.sub(lambda match: _ESCAPES.get(match.group(), f"\\u{ord(match.group()):04x}"), text)


def render(data: dict[str, Any]) -> str:
    """Fill the template in one pass, so nothing substituted is itself searched for placeholders."""
    parts = {"nonce": secrets.token_urlsafe(16), "style": _static("style.css"), "data": embed_json(data),
             "script": "\n".join(_static(name) for name in SCRIPTS),
             # a live page (`noosphere view`) asks its own server what changed; a written report fetches nothing
             "connect": " connect-src 'self';" if data.get("live") else ""}
    return re.sub(r"\{\{(\w+)\}\}", lambda match: parts[match.group(1)], _static("index.html"))


def render_page(run_dir: Path | str, compare: Path | str | None = None, live: dict[str, Any] | None = None) -> str:
    """The page for a run, optionally set against a second run (two benchmark runs, say). `live`: the page is
    served by `noosphere view` (its token, how often to poll), and shows whose turn it is and asks its people."""
    return render({"run": load_bundle(run_dir), "compare": load_bundle(compare) if compare is not None else None,
                   "live": live})


def write_page(run_dir: Path | str, out: Path | str, compare: Path | str | None = None) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_page(run_dir, compare), encoding="utf-8")
    return out
