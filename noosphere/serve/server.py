"""Listening: the socket and uvicorn, in the foreground (the command) or in a thread (tests,
benchmarks)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from noosphere.errors import RuntimeFault, UsageError

GRACE_S = 5
"""Seconds a stopping server waits for replies under way before it cancels their runs."""


def listening_socket(host: str, port: int) -> socket.socket:
    """Bound here, before anything loads into the server, so a taken port is one clear line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"


def uvicorn_server(api: Any, *, quiet: bool) -> uvicorn.Server:
    options: dict[str, Any] = {"log_level": "warning", "access_log": False, "log_config": None} if quiet else {}
    return uvicorn.Server(uvicorn.Config(api, lifespan="on", timeout_graceful_shutdown=GRACE_S, **options))


def serve_forever(api: Any, sock: socket.socket, announce: Callable[[str], None]) -> None:
    """Serve until Ctrl-C or SIGTERM; replies under way get `GRACE_S` seconds, then their runs are cancelled."""
    server = uvicorn_server(api, quiet=False)
    announce(base_url(sock))
    server.run(sockets=[sock])


@contextlib.contextmanager
def serving_in_thread(api: Any, host: str = "127.0.0.1", port: int = 0, *,
                      start_timeout_s: float = 10.0) -> Iterator[str]:
    """Serve in a thread of this process while the block runs (any free port by default); yields the base URL."""
    sock = listening_socket(host, port)
    server = uvicorn_server(api, quiet=True)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="noosphere-serve")
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeFault("the server did not start")
        time.sleep(0.005)
    try:
        yield base_url(sock)
    finally:
        server.should_exit = True
        thread.join(GRACE_S + 5)
        sock.close()
