"""`--cluster`, `--workers` and `--replicas`: running a command's work on a Ray cluster.

The options are checked before anything runs; the cluster is joined (and an embedded model's
replicas started) before any run folder is made, so an address where no cluster answers, a missing
`ray`, or a node without the model's weights each end the command in one line with no folder left.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer
from pydantic import Field

from noosphere.cluster import (
    Cluster,
    ClusterOpener,
    ReplicaPlan,
    ReplicaSet,
    Target,
    joined,
    start_replicas,
    stop_replicas,
)
from noosphere.cluster.replicas import OpenModel
from noosphere.errors import UsageError
from noosphere.trace import Event, Trace

ClusterOption = Annotated[str | None, typer.Option(
    help="run on a Ray cluster: local (a Ray instance in this process), auto (the cluster this machine has joined) "
         "or ray://HOST:PORT; needs the ray extra, see docs/cluster.md")]
WorkersOption = Annotated[int | None, typer.Option(
    min=1, help="with --cluster: workers that score items (default: one per CPU of the cluster); --parallel is then "
                "the items each worker scores at once")]
ReplicasOption = Annotated[str, typer.Option(
    help="with --cluster: where the model is loaded: auto (once per node for an embedded model, in each worker for "
         "a provider), node, cpus=N (one per N CPUs), a number of replicas, or off")]


class ClusterJoined(Event):
    """A command's work went to a Ray cluster: its address, its nodes, its workers and the model replicas."""

    kind: str = "cluster_joined"
    address: str
    nodes: list[str]
    cpus: float
    workers: int | None = None
    replicas: dict[str, list[str]] = Field(default_factory=dict)
    """Model id -> the node of each of its replicas."""


@dataclass(frozen=True)
class ClusterChoice:
    """The cluster options of one command, checked."""

    address: str
    workers: int | None = None
    replicas: ReplicaPlan = field(default_factory=ReplicaPlan)

    @classmethod
    def of(cls, cluster: str | None, workers: int | None = None, replicas: str = "auto") -> ClusterChoice | None:
        if cluster is None:
            if workers is not None or replicas != "auto":
                raise UsageError("--workers and --replicas place work on a cluster: give --cluster too")
            return None
        Target.parse(cluster)
        return cls(cluster, workers, ReplicaPlan.parse(replicas))


def items_at_once(parallel: int, choice: ClusterChoice | None) -> int:
    """How many items may be in flight together (at least 2 on a cluster whose size is not known yet)."""
    return parallel if choice is None else parallel * (choice.workers or 2)


@dataclass(frozen=True)
class ClusterSession:
    """A joined cluster, the replicas started on it, and the opener that reaches them."""

    cluster: Cluster
    opener: ClusterOpener
    workers: int

    def announce(self, trace: Trace, *, workers: bool = True) -> None:
        replicas = {r.model_id: [str(self.cluster.node(node)) for node, _ in r.handles]
                    for r in self.opener.replicas}
        trace.emit(ClusterJoined(address=self.cluster.address, nodes=[str(n) for n in self.cluster.nodes],
                                 cpus=self.cluster.cpus, workers=self.workers if workers else None,
                                 replicas=replicas))


@contextlib.contextmanager
def on_cluster(choice: ClusterChoice | None, opener: OpenModel, model_ids: list[str],
               options: dict[str, Any] | None = None) -> Iterator[ClusterSession | None]:
    """Join the chosen cluster and start the replicas of `model_ids` (opened with the backend `options`) for the
    block; nothing without a choice."""
    if choice is None:
        yield None
        return
    with joined(choice.address) as cluster, contextlib.ExitStack() as started:
        replicas: list[ReplicaSet] = []
        for model_id in dict.fromkeys(model_ids):
            replica_set = start_replicas(cluster, opener, model_id, choice.replicas, options)
            if replica_set is not None:
                started.callback(stop_replicas, replica_set)
                replicas.append(replica_set)
        yield ClusterSession(cluster, ClusterOpener(opener, tuple(replicas)),
                             choice.workers or max(1, int(cluster.cpus)))
