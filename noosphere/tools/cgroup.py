"""A control group of its own for each sandbox, where this machine lets us make one.

Resource limits (`setrlimit`) hold per process: the address space of each, the processes of a user. A control
group holds for the sandbox as a whole: the memory of all its processes together, files in memory (`memfd`,
its tmpfs folders) included, and the number of its processes, apart from every other sandbox running beside it
(root's process limit is shared by all of them, and not enforced for root at all). Everything the command
starts stays in the group, even a process that leaves the process group (`setsid`); `remove` kills what is left
and deletes the group.

Making one needs write access to a cgroup hierarchy with the memory and pids controllers: cgroup v1 (as root
here), or a v2 subtree delegated to this user with both controllers enabled. Elsewhere `Cgroup.make` gives None
and the sandbox keeps its per-process limits; `ProgramRun.memory_bounded` says which held.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_MOUNTINFO = Path("/proc/self/mountinfo")
_OWN = Path("/proc/self/cgroup")
# The command's first process writes its own pid into each group, then becomes the command: nothing it starts
# can run outside the group, and no Python runs between fork and exec (`preexec_fn` is unsafe beside threads).
_ENTER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


def _mounts() -> dict[str, Path]:
    """Mount points by controller (`memory`, `pids`) for v1, and `unified` for the v2 hierarchy."""
    found: dict[str, Path] = {}
    for line in _MOUNTINFO.read_text().splitlines():
        fields = line.split()
        separator = fields.index("-")
        kind, options, where = fields[separator + 1], fields[separator + 3].split(","), Path(fields[4])
        if kind == "cgroup2":
            found.setdefault("unified", where)
        elif kind == "cgroup":
            for controller in ("memory", "pids"):
                if controller in options:
                    found.setdefault(controller, where)
    return found


def _own_paths() -> dict[str, str]:
    """This process's group in each hierarchy: by controller for v1, `unified` for v2."""
    paths: dict[str, str] = {}
    for line in _OWN.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else ["unified"]:
            paths[controller] = path
    return paths


@dataclass(frozen=True)
class Cgroup:
    groups: tuple[Path, ...]
    """The group's folder in each hierarchy it was made in (v1: memory and pids; v2: one)."""
    events: Path
    """Where the kernel counts the processes it killed for memory (v1 `memory.oom_control`, v2 `memory.events`)."""
    memory_bytes: int

    @classmethod
    def make(cls, memory_bytes: int, processes: int) -> Cgroup | None:
        """A new group holding the sandbox to `memory_bytes` and `processes`, or None where none can be made."""
        try:
            mounts, own = _mounts(), _own_paths()
        except (OSError, ValueError, IndexError):
            return None
        name = f"noosphere-sandbox-{secrets.token_hex(6)}"
        if "memory" in mounts and "pids" in mounts:
            made: list[Path] = []
            try:
                for controller in ("memory", "pids"):
                    folder = mounts[controller] / own.get(controller, "/").lstrip("/") / name
                    folder.mkdir()
                    made.append(folder)
                (made[0] / "memory.limit_in_bytes").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):  # without swap accounting there is no such file
                    (made[0] / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
                (made[1] / "pids.max").write_text(str(processes))
            except OSError:
                _remove(made)
                return None
            return cls(tuple(made), made[0] / "memory.oom_control", memory_bytes)
        if "unified" in mounts:
            parent = mounts["unified"] / own.get("unified", "/").lstrip("/")
            try:
                enabled = (parent / "cgroup.subtree_control").read_text().split()
            except OSError:
                return None
            if not {"memory", "pids"} <= set(enabled):
                return None
            folder = parent / name
            try:
                folder.mkdir()
                (folder / "memory.max").write_text(str(memory_bytes))
                (folder / "memory.swap.max").write_text("0")
                (folder / "pids.max").write_text(str(processes))
            except OSError:
                _remove([folder])
                return None
            return cls((folder,), folder / "memory.events", memory_bytes)
        return None

    def command(self, argv: list[str]) -> list[str]:
        """`argv`, started inside the group."""
        return ["/bin/sh", "-c", _ENTER, "sh", *(str(group / "cgroup.procs") for group in self.groups), "--", *argv]

    def memory_kills(self) -> int:
        """How many of its processes the kernel killed for going over the memory limit."""
        with contextlib.suppress(OSError, ValueError):
            for line in self.events.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def remove(self) -> None:
        """Kill whatever is still in the group, then delete it."""
        _remove(list(self.groups))


def _remove(groups: list[Path]) -> None:
    for group in groups:
        deadline = time.monotonic() + 5.0
        while group.exists():
            with contextlib.suppress(OSError, ValueError):
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                group.rmdir()
            except FileNotFoundError:
                break
            except OSError:  # still busy: its last processes are being reaped
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
