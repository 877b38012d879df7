"""`noosphere view`: serve a run's page over HTTP on loopback.

The page is rendered afresh on every request, so reloading shows the events a running run has
written since. Only loopback by default: a trace holds prompts and answers that are nobody else's.

The page is live: it polls `/live` for whose turn it is and for questions waiting for a person, and posts
their answers to `/answer` (`noosphere.viewer.live`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from noosphere.datafiles import lone_surrogate
from noosphere.errors import NoosphereError, UsageError
from noosphere.viewer.bundle import load_bundle
from noosphere.viewer.live import LiveRun
from noosphere.viewer.page import render_page

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
POLL_MS = 300
MAX_ANSWER_BYTES = 256 * 1024
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def make_server(run_dir: Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                compare: Path | None = None) -> ThreadingHTTPServer:
    """A server for the page at `/`; bad run folders fail here, before anything listens."""
    if not host.strip():  # the socket would take "" for every interface: the run's prompts open to the network
        raise UsageError("--host is empty: give the address to listen on (127.0.0.1, the default, keeps the page on "
                         "this machine; 0.0.0.0 opens it to every network this machine is on)")
    for folder in (run_dir, compare):
        if folder is not None:
            load_bundle(folder)
    token = secrets.token_urlsafe(24)
    live = LiveRun(run_dir)
    loopback = host.strip("[]") in LOOPBACK_NAMES or host.startswith("127.")

    class Handler(BaseHTTPRequestHandler):
        head_only = False  # set by do_HEAD: the headers a GET would send, and no body

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not self.head_only:
                self.wfile.write(body)

        def _json(self, status: int, data: object) -> None:
            self._send(status, json.dumps(data).encode("utf-8"), "application/json")

        def _ours(self) -> bool:
            """Sent by the page this server gave out (see `noosphere.viewer.live`)."""
            return secrets.compare_digest(self.headers.get("X-Noosphere-Token", ""), token)

        def _named_right(self) -> bool:
            """The request names this machine's loopback as its host: a page on a site whose name was rebound to
            127.0.0.1 (DNS rebinding) would be same-origin with this one, and read the run and its token."""
            if not loopback:  # served on another address at the user's word: any name that reaches it
                return True
            try:
                name = urlsplit("//" + self.headers.get("Host", "")).hostname or ""
            except ValueError:
                name = ""
            if name in LOOPBACK_NAMES:
                return True
            self._send(HTTPStatus.MISDIRECTED_REQUEST, b"this viewer answers to localhost or 127.0.0.1 only",
                       "text/plain; charset=utf-8")
            return False

        def do_GET(self) -> None:
            if not self._named_right():
                return
            path = self.path.split("?", 1)[0]
            if path == "/live":
                if not self._ours():
                    self._json(HTTPStatus.FORBIDDEN, {"error": "not this page's token"})
                    return
                try:
                    state = live.state()
                except OSError as exc:  # the folder was replaced (by a file, say) while it was served
                    self._json(HTTPStatus.GONE, {"error": f"the run can no longer be read: {exc}"})
                    return
                self._json(HTTPStatus.OK, state)
                return
            if path not in ("/", "/index.html"):
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            try:
                page = render_page(run_dir, compare, live={"token": token, "poll_ms": POLL_MS})
            except (NoosphereError, OSError) as exc:  # the folder moved or was deleted while it was served
                self._send(HTTPStatus.GONE, f"the run can no longer be read: {exc}".encode(),
                           "text/plain; charset=utf-8")
                return
            self._send(HTTPStatus.OK, page.encode("utf-8"), "text/html; charset=utf-8")

        def do_HEAD(self) -> None:
            """What a GET of the same path would answer, headers only (link checkers and `curl -I` ask so)."""
            self.head_only = True
            self.do_GET()

        def do_POST(self) -> None:
            if not self._named_right():
                return
            if self.path.split("?", 1)[0] != "/answer":
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            if not self._ours() or not self.headers.get("Content-Type", "").startswith("application/json"):
                self._json(HTTPStatus.FORBIDDEN, {"error": "answers come from the run's page"})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if not 0 < length <= MAX_ANSWER_BYTES:
                self._json(HTTPStatus.BAD_REQUEST, {"error": "an answer is a JSON body of at most 256 KB"})
                return
            try:
                body = json.loads(self.rfile.read(length))
            except (ValueError, RecursionError):  # a body nested too deeply is not an answer either
                self._json(HTTPStatus.BAD_REQUEST, {"error": "the answer is not JSON"})
                return
            if not isinstance(body, dict) or not isinstance(body.get("question"), str):
                self._json(HTTPStatus.BAD_REQUEST, {"error": "expected {\"question\": ID, \"answer\": {...}}"})
                return
            if lone_surrogate(body):  # the answer book, a prompt and the trace are UTF-8: it could not be written
                self._json(HTTPStatus.BAD_REQUEST, {"error": "the answer holds a lone surrogate (an escape such as "
                                                             "\\ud800 that names no character), not text"})
                return
            try:
                status, message = live.answer(body["question"], body.get("answer"))
            except OSError as exc:  # the run folder cannot be read or its answer book written any more
                self._json(HTTPStatus.CONFLICT, {"error": f"the answer could not be kept in the run folder: {exc}"})
                return
            self._json(status, {"ok": status == HTTPStatus.OK, "message" if status == 200 else "error": message})

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
