"""Past one machine, on Ray: joining a cluster, pools of workers, model replicas and sharded workspaces.

Ray is an optional dependency (`pip install -e ".[ray]"`); nothing here imports it until a cluster is
joined. The benchmark loop on workers lives with the benchmarks (`noosphere.bench.remote`).
"""

from noosphere.cluster.carried import Carried
from noosphere.cluster.connect import Cluster, Node, Target, joined, require_ray
from noosphere.cluster.pool import Placement, WorkerPool
from noosphere.cluster.replicas import (
    ClusterOpener,
    RemoteBackend,
    ReplicaPlan,
    ReplicaSet,
    start_replicas,
    stop_replicas,
)

__all__ = [
    "Carried", "Cluster", "ClusterOpener", "Node", "Placement", "RemoteBackend", "ReplicaPlan", "ReplicaSet", "Target",
    "WorkerPool", "joined", "require_ray", "start_replicas", "stop_replicas",
]
