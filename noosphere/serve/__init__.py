"""`noosphere serve`: any system of noosphere as an OpenAI-compatible model over HTTP.

The HTTP modules (`app`, `server`) need FastAPI and uvicorn, the `[serve]` extra; the rest of the package does not,
and importing it starts nothing.
"""

from __future__ import annotations

from noosphere.errors import MissingDependencyError


def require_server_packages() -> None:
    """Raise `MissingDependencyError`, naming the extra to install, when FastAPI or uvicorn is missing."""
    for package in ("fastapi", "uvicorn"):
        try:
            __import__(package)
        except ModuleNotFoundError:
            raise MissingDependencyError(package, "serve", "served systems (`noosphere serve`)") from None
