"""`noosphere view`: serve a run's page over HTTP on loopback.

The page is rendered afresh on every request, so reloading shows the events a running run has
written since. Only loopback by default: a trace holds prompts and answers that are nobody else's.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from noosphere.viewer.bundle import load_bundle
from noosphere.viewer.page import render_page

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def make_server(run_dir: Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                compare: Path | None = None) -> ThreadingHTTPServer:
    """A server for the page at `/`; bad run folders fail here, before anything listens."""
    for folder in (run_dir, compare):
        if folder is not None:
            load_bundle(folder)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/", "/index.html"):
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            body = render_page(run_dir, compare).encode("utf-8")
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the terminal shows the URL, not a line per request."""

    return ThreadingHTTPServer((host, port), Handler)


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/"


def serve(run_dir: Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, compare: Path | None = None,
          announce: Callable[[str], None] = print) -> None:
    """Serve until Ctrl-C."""
    server = make_server(run_dir, host=host, port=port, compare=compare)
    announce(url_of(server))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
