"""Joining a Ray cluster: what `--cluster local|auto|ray://HOST:PORT` means.

- `local` starts a Ray instance inside this process (the machine's cores; nothing to set up first);
- `auto` joins the cluster already running on this machine (`ray start --head` here, or `RAY_ADDRESS`);
- `ray://HOST:PORT` joins a cluster through its client server (port 10001 of the head by default), and
  `HOST:PORT` through its GCS address (port 6379), for a process on a machine of the cluster's network.

Ray is an optional dependency (`pip install -e ".[ray]"`), imported only here and only when a cluster is asked
for. An address where nothing answers, or where something answers that is not Ray, is refused in one line before
anything runs (a probe first, since Ray itself retries for minutes before it gives up): a TCP connection, then an
HTTP/2 handshake, which Ray's GCS and client server, both gRPC servers, answer with a SETTINGS frame (a web
server, or a socket that accepts and says nothing, does not). A process already connected to Ray (a test module,
a notebook) keeps its connection and leaves it open.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import math
import os
import socket
import time
from collections.abc import Awaitable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from noosphere.errors import ClusterUnreachableError, MissingDependencyError, UsageError

PROBE_TIMEOUT_S = 5.0
HANDSHAKE_TIMEOUT_S = 3.0
"""How long the probe waits for the HTTP/2 reply of a Ray server that accepted its connection."""
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""What an HTTP/2 client sends first (RFC 9113, 3.4), followed by its SETTINGS frame."""
EMPTY_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
"""An HTTP/2 frame header: no payload, type SETTINGS (4), no flags, stream 0."""
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
    """Something answers at the target's address, and answers as Ray's servers do (see `_not_grpc`), or one
    `ClusterUnreachableError` saying which it is not, within seconds."""
    if target.probe is None:
        return
    host, port = target.probe
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as connection:
            other = None if _tls() else _not_grpc(connection)
    except OSError as exc:
        raise ClusterUnreachableError(target.text, f"nothing answers at {host}:{port} "
                                                   f"({exc.strerror or exc})") from None
    except UnicodeError:  # a host name that cannot be one (an empty label: head..lan)
        raise UsageError(f"--cluster names no valid host: {host!r}") from None
    if other is not None:
        where = ("Ray's client server (ray start --head: port 10001)" if target.text.startswith("ray://")
                 else "Ray's GCS (ray start --head: port 6379)")
        raise ClusterUnreachableError(target.text, f"something answers at {host}:{port}, but not as a Ray cluster "
                                                   f"does ({other}); give the address of {where}")


def _tls() -> bool:
    """Whether Ray speaks TLS here (`RAY_USE_TLS`): its servers then answer a TLS handshake, not a plain HTTP/2 one,
    and the probe stops at the TCP connection."""
    return os.environ.get("RAY_USE_TLS", "0").strip().lower() not in ("", "0", "false")


def _not_grpc(connection: socket.socket) -> str | None:
    """None when the server at the other end of `connection` answers an HTTP/2 client preface with a SETTINGS frame,
    as the gRPC servers of Ray (its GCS, its client server) do; else what it did instead, in a few words."""
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
    head = b""
    try:
        connection.sendall(HTTP2_PREFACE + EMPTY_SETTINGS)
        while len(head) < len(EMPTY_SETTINGS):
            connection.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = connection.recv(len(EMPTY_SETTINGS) - len(head))
            if not chunk:
                return "it closed the connection without an HTTP/2 reply"
            head += chunk
    except TimeoutError:
        return f"it said {'nothing' if not head else 'too little'} in {HANDSHAKE_TIMEOUT_S:g} s"
    except OSError as exc:
        return f"it dropped the connection ({exc.strerror or exc})"
    if head[3] == EMPTY_SETTINGS[3] and int.from_bytes(head[5:9]) & 0x7FFF_FFFF == 0:
        return None
    if head.startswith((b"HTTP/", b"<")):  # a status line, or an error page sent bare (Python's http.server)
        return "it answers as a web server does"
    return "its reply is not HTTP/2"


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
