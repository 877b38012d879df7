"""SIGTERM (a `timeout`, a job scheduler, `kill`) handled like Ctrl-C, so a stopped command still writes its result."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Stop on SIGTERM as on Ctrl-C while the block runs; the previous handler is restored after. Off the
    main thread (a command run inside a server or a test's thread) signals are not ours to handle: nothing changes.
    Inside `asyncio.run` SIGTERM goes to its Ctrl-C handler, which cancels the running task and then raises
    KeyboardInterrupt: raised at once, it came out of whichever task was running (a benchmark item's), and the
    loop's teardown printed that task's traceback."""
    def interrupt(signum: int, frame: FrameType | None) -> None:
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler) and handler is not signal.default_int_handler:  # an event loop's own
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
