"""Joining a Ray cluster: what `--cluster local|auto|ray://HOST:PORT` means.

- `local` starts a Ray instance inside this process (the machine's cores; nothing to set up first);
- `auto` joins the cluster already running on this machine (`ray start --head` here, or `RAY_ADDRESS`);
- `ray://HOST:PORT` joins a cluster through its client server (port 10001 of the head by default), and
  `HOST:PORT` through its GCS address (port 6379), for a process on a machine of the cluster's network.

Ray is an optional dependency (`pip install -e ".[ray]"`), imported only here and only when a cluster is asked
for. An address where nothing answers is refused in one line before anything runs (a TCP probe first, since
Ray itself may wait a minute before it gives up). A process already connected to Ray (a test module, a
notebook) keeps its connection and leaves it open.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import math
import socket
from collections.abc import Awaitable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from noosphere.errors import ClusterUnreachableError, MissingDependencyError, UsageError

PROBE_TIMEOUT_S = 5.0
PLACEMENT_TIMEOUT_S = 600.0
"""How long workers or shards may wait for Ray to place them (starting one imports noosphere: seconds each)."""
T = TypeVar("T")


def require_ray() -> ModuleType:
    """The `ray` module, or one line saying how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise MissingDependencyError("ray", "ray", "runs on a cluster (--cluster)") from None


def kill_actors(handles: Iterable[Any]) -> None:
    """Stop each of these Ray actors for good (no restart)."""
    ray = require_ray()
    for handle in handles:
        ray.kill(handle, no_restart=True)


@dataclass(frozen=True)
class Target:
    """A parsed `--cluster` value: what `ray.init` is given, and the host and port to probe first, if any."""

    text: str
    init_address: str
    probe: tuple[str, int] | None = None

    @classmethod
    def parse(cls, text: str) -> Target:
        text = text.strip()
        if text in ("local", "auto"):
            return cls(text, text)
        rest = text.removeprefix("ray://")
        host, sep, port = rest.rpartition(":")
        if not sep or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
            raise UsageError(f"--cluster takes local, auto, ray://HOST:PORT or HOST:PORT, not {text!r}")
        return cls(text, text, (host.strip("[]"), int(port)))


@dataclass(frozen=True)
class Node:
    """One machine of the cluster, as Ray sees it."""

    id: str
    host: str
    ip: str
    cpus: float

    def __str__(self) -> str:
        return f"{self.host} ({self.ip})"


@dataclass(frozen=True)
class Cluster:
    """The cluster this process has joined: its address and its live nodes."""

    address: str
    nodes: tuple[Node, ...]

    @property
    def cpus(self) -> float:
        return sum(node.cpus for node in self.nodes)

    def node(self, node_id: str) -> Node | str:
        """The node of that id, or the id itself for a node that has left since."""
        return next((node for node in self.nodes if node.id == node_id), node_id)


def share_of_cpus(cluster: Cluster, actors: int) -> float:
    """The CPUs each of `actors` asks of Ray so that all of them fit the cluster at once (at most one each;
    rounded down, since Ray counts to 1/10000 of a CPU and three thirds rounded up would not fit)."""
    return math.floor(min(1.0, max(cluster.cpus, 1.0) / actors) * 10_000) / 10_000


async def placed(started: Awaitable[T], actors: int, what: str, cluster: Cluster,
                 timeout_s: float = PLACEMENT_TIMEOUT_S) -> T:
    """Wait for actors to start; if Ray cannot place them in time (the CPUs are held by other work), say so
    rather than wait for ever."""
    try:
        return await asyncio.wait_for(started, timeout_s)
    except TimeoutError:
        raise UsageError(f"{actors} {what} could not be placed on the cluster in {timeout_s:.0f} s, asking "
                         f"{share_of_cpus(cluster, actors)} CPU each of its {cluster.cpus:g}; is other work "
                         "holding its CPUs (`ray status`)?") from None


def live_nodes(ray: Any) -> tuple[Node, ...]:
    return tuple(Node(str(info["NodeID"]), str(info.get("NodeManagerHostname") or info["NodeManagerAddress"]),
                      str(info["NodeManagerAddress"]), float(info.get("Resources", {}).get("CPU", 0.0)))
                 for info in ray.nodes() if info.get("Alive"))


def _probe(target: Target) -> None:
    if target.probe is None:
        return
    host, port = target.probe
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ClusterUnreachableError(target.text, f"nothing answers at {host}:{port} "
                                                   f"({exc.strerror or exc})") from None
    except UnicodeError:  # a host name that cannot be one (an empty label: head..lan)
        raise UsageError(f"--cluster names no valid host: {host!r}") from None


@contextlib.contextmanager
def joined(address: str, *, num_cpus: int | None = None) -> Iterator[Cluster]:
    """Join (or, for `local`, start) the cluster at `address` for the block; leave it after, unless this process
    was connected to Ray before. `num_cpus` sizes a `local` instance (default: the machine's cores)."""
    target = Target.parse(address)
    ray = require_ray()
    _probe(target)
    if ray.is_initialized():
        yield Cluster(address, live_nodes(ray))
        return
    options: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    if target.init_address == "local":
        options |= {"num_cpus": num_cpus, "include_dashboard": False}
    try:
        ray.init(address=target.init_address, **options)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterUnreachableError(target.text, reason) from None
    try:
        yield Cluster(address, live_nodes(ray))
    finally:
        ray.shutdown()
