"""Where data files live: an explicit path always wins; otherwise `../shared/data/<name>`.

A neutral module below the benchmarks and the environments, which both find their data here.
"""

from __future__ import annotations

from pathlib import Path

from noosphere.errors import UsageError

_REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data(name: str, filename: str, path: Path | None = None) -> Path:
    """Return `path` if given, else the first `shared/data/<name>/<filename>` found next to cwd or the repo."""
    if path is not None:
        if not path.exists():
            raise UsageError(f"no data at {path}")
        return path
    candidates = list(dict.fromkeys(base / "shared" / "data" / name / filename  # each place once
                                    for base in (Path.cwd().parent, Path.cwd(), _REPO_ROOT.parent)))
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise UsageError(f"{name} data not found (looked in {', '.join(str(c) for c in candidates)}); pass --data PATH")
