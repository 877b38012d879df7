"""The CLI in a process of its own, on a scripted model, for tests that kill it: `python -m tests.bench_driver ARGS`.

The model answers every GSM8K problem "7" after `DRIVER_LATENCY` seconds. `DRIVER_KILL_ROW=N` makes the process
kill itself (SIGKILL) while writing the N-th results row of this session: half the line reaches the file, the rest
never does. `DRIVER_KILL_RESULT=N` kills it just before the N-th `result.json` of this session replaces the last.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from types import SimpleNamespace
from typing import Any

from noosphere.bench import runner
from noosphere.cli import make_app, run
from noosphere.llm import Model, ScriptedBackend


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _kill_while_writing_row(n: int) -> None:
    """The runner writes a row, flushes and fsyncs it: at the n-th fsync, cut the row in half and die."""
    seen = {"fsyncs": 0}

    def fsync(fd: int) -> None:
        seen["fsyncs"] += 1
        if seen["fsyncs"] == n:
            size = os.fstat(fd).st_size
            with open(f"/proc/self/fd/{fd}", "rb") as handle:
                last_row = handle.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
            os.ftruncate(fd, size - len(last_row) // 2 - 1)  # the row's second half and its newline never landed
            _kill_self()
        os.fsync(fd)

    runner.os = SimpleNamespace(**{**vars(os), "fsync": fsync})  # type: ignore[assignment]


def _kill_before_result(n: int) -> None:
    from noosphere import runs

    seen = {"replaces": 0}

    def replace(source: Any, target: Any) -> None:
        if str(target).endswith("result.json"):
            seen["replaces"] += 1
            if seen["replaces"] == n:
                _kill_self()
        os.replace(source, target)

    runs.os = SimpleNamespace(**{**vars(os), "replace": replace})  # type: ignore[assignment]


def main() -> int:
    latency = float(os.environ.get("DRIVER_LATENCY", "0"))
    if os.environ.get("DRIVER_KILL_ROW"):
        _kill_while_writing_row(int(os.environ["DRIVER_KILL_ROW"]))
    if os.environ.get("DRIVER_KILL_RESULT"):
        _kill_before_result(int(os.environ["DRIVER_KILL_RESULT"]))
    backend = ScriptedBackend(lambda request: json.dumps({"reasoning": "3 + 4 = 7", "answer": "7"}),
                              latency_s=latency)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    return run(make_app(opener), sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
