"""SIGTERM (a `timeout`, a job scheduler, `kill`) handled like Ctrl-C, so a stopped command still writes its result."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Raise KeyboardInterrupt on SIGTERM while the block runs; the previous handler is restored after."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
