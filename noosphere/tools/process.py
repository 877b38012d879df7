"""Run a command in its own process group, keep only the tail of its output, and kill all it started.

The command starts a new session (so it leads its own process group); on the wall-clock deadline, and
always once its output is read, the group gets SIGKILL while the leader is still unreaped, so the group
id cannot have been reused by an unrelated process. Output is read as it comes and only the last
`keep` bytes of each stream are kept: a program that prints without end cannot fill our memory.

A sandbox runs its code in a PID namespace of its own, outside our process group: bubblewrap reports
the namespace's first process on a pipe (`--info-fd`), and when that process dies the kernel kills
everything else in the namespace before its death is reported. So we kill it too and wait for its
death: when this returns, nothing the command started is alive.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

_REAP_S = 10.0  # how long to wait for killed processes to be gone (the kernel needs milliseconds)


@dataclass(frozen=True)
class Finished:
    returncode: int | None
    """The exit status (negative: killed by that signal), or None when the deadline killed it."""
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


class _Run:
    def __init__(self, process: subprocess.Popen[bytes], report: int | None, keep: int) -> None:
        self.process = process
        self.keep = keep
        self.tails = {"stdout": bytearray(), "stderr": bytearray()}
        self.report = bytearray()
        self.report_fd = report
        self.pidfd: int | None = None

    def drain(self, deadline: float) -> bool:
        """Read the pipes until they close or the deadline passes; True when the deadline passed."""
        with selectors.DefaultSelector() as selector:
            for name in self.tails:
                selector.register(getattr(self.process, name), selectors.EVENT_READ, name)
            if self.report_fd is not None:
                selector.register(self.report_fd, selectors.EVENT_READ, "report")
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return True
                for key, _ in selector.select(min(remaining, 0.5)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        if key.data == "report":
                            self._watch_reported()
                    elif key.data == "report":
                        self.report += chunk[: 65536 - len(self.report)]
                        self._watch_reported()
                    else:
                        tail = self.tails[key.data]
                        tail += chunk
                        del tail[: -self.keep]
        while not _exited(self.process.pid):  # the pipes closed: wait for the exit itself, still without reaping
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.01)
        return False

    def _watch_reported(self) -> None:
        """Hold the reported process by a pidfd, once the report is whole, if it is the leader's own child."""
        if self.pidfd is not None:
            return
        with contextlib.suppress(ValueError, KeyError, TypeError, OSError):
            pid = int(json.loads(self.report.decode())["child-pid"])
            pidfd = os.pidfd_open(pid)
            if _parent_of(pid) == self.process.pid:  # checked after opening: the pidfd is of that very process
                self.pidfd = pidfd
            else:
                os.close(pidfd)

    def end(self) -> int:
        """Kill the reported process and the group, wait until they are gone, reap the leader."""
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the leader is unreaped here, so its group id is ours
        if self.pidfd is not None:
            select.select([self.pidfd], [], [], _REAP_S)  # readable once it (and its namespace) is dead
            os.close(self.pidfd)
        returncode = self.process.wait(_REAP_S)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        if self.report_fd is not None:
            os.close(self.report_fd)
        return returncode


def _parent_of(pid: int) -> int | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    return None


def _exited(pid: int) -> bool:
    """Whether `pid` has exited, without reaping it (the zombie keeps its process-group id reserved)."""
    result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return result is not None and result.si_pid == pid


def run_in_group(argv: list[str], *, timeout_s: float, cwd: Path | None = None, env: dict[str, str] | None = None,
                 keep: int = 65536, report: tuple[int, int] | None = None) -> Finished:
    """Run `argv` with no stdin; no process it started survives this call (unless it left the group).

    `report` is a pipe (read end, write end) on which the command writes JSON naming, as `child-pid`,
    a process outside the group whose death ends everything else it started (bubblewrap's `--info-fd`).
    """
    pass_fds = (report[1],) if report else ()
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd=cwd, env=env if env is not None else {}, start_new_session=True,
                                   pass_fds=pass_fds)
    except BaseException:
        if report:
            os.close(report[0])
        raise
    finally:
        if report:
            os.close(report[1])
    run = _Run(process, report[0] if report else None, keep)
    try:
        timed_out = run.drain(time.monotonic() + timeout_s)
    finally:
        returncode = run.end()
    return Finished(None if timed_out else returncode, bytes(run.tails["stdout"]).decode(errors="replace"),
                    bytes(run.tails["stderr"]).decode(errors="replace"))
