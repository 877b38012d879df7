"""SIGTERM (a `timeout`, a job scheduler, `kill`) handled like Ctrl-C, so a stopped command still writes its result."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Raise KeyboardInterrupt on SIGTERM while the block runs; the previous handler is restored after. Off the
    main thread (a command run inside a server or a test's thread) signals are not ours to handle: nothing changes."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
