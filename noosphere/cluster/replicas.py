"""Model replicas: the embedded model loaded once per node (or per N CPUs), shared by every worker there.

An embedded model (`local:` ids) is weights in memory and a batch engine that decodes concurrent
requests together: loaded once per worker, a node of 8 workers would hold 8 copies and batch
nothing. A replica is a Ray actor that opens the model once and serves every request sent to it,
from any worker and any agent on its node; a worker's `Model` (its trace, cache, ledger, retries,
structured output) stays in the worker, over a `RemoteBackend` that forwards each request to the
replica on its own node. Providers and the scripted model need no replica: each worker calls them
directly.

Where replicas go (`ReplicaPlan`, `--replicas`): `node` (one on each node), `cpus=N` (one per N CPUs
of each node), `N` (N in all, spread over the nodes), `off`, or `auto` (`node` for embedded models,
`off` for the others). A replica asks for no CPU of Ray's own accounting, so the workers beside it
are scheduled as before. A node that lacks the model's weights fails the run before it starts, with
one error naming the node and the pip command.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, Protocol

from noosphere.cluster.carried import Carried, unwrap
from noosphere.cluster.connect import Cluster, Node, kill_actors, require_ray
from noosphere.errors import UsageError
from noosphere.llm import Backend, CallCache, Model, Settings, UsageLedger
from noosphere.llm.messages import Message
from noosphere.llm.types import Capabilities, Reply, Request, ScoreReply, ScoreRequest
from noosphere.trace import Trace

Placement = Literal["auto", "off", "node", "cpus", "count"]
REPLICA_CONCURRENCY = 1024
"""Requests one replica takes at once (its backend's own gate and batch engine bound what runs together)."""


class OpenModel(Protocol):
    """How models are opened (the command line's opener): an id and what the model reports into."""

    def __call__(self, model_id: str, *, trace: Trace | None = ..., cache: CallCache | None = ...,
                 ledger: UsageLedger | None = ..., settings: Settings | None = ..., **options: Any) -> Model: ...


@dataclass(frozen=True)
class ReplicaPlan:
    """Where a model's replicas go: see the module's doc. `n` is the CPUs per replica (`cpus`) or the count."""

    placement: Placement = "auto"
    n: int = 1

    @classmethod
    def parse(cls, text: str) -> ReplicaPlan:
        text = text.strip().lower()
        if text in ("auto", "off", "node"):
            return cls(text)  # type: ignore[arg-type]
        name, sep, value = text.replace(":", "=").partition("=")
        if sep and name == "cpus" and value.isascii() and value.isdigit() and int(value) >= 1:
            return cls("cpus", int(value))
        if text.isascii() and text.isdigit() and int(text) >= 1:
            return cls("count", int(text))
        raise UsageError(f"--replicas takes auto, off, node, cpus=N or a number of replicas, not {text!r}")

    def for_model(self, model_id: str) -> ReplicaPlan:
        """`auto` made definite: a replica per node for an embedded model, none for a provider or a script."""
        if self.placement != "auto":
            return self
        return ReplicaPlan("node") if model_id.startswith("local:") else ReplicaPlan("off")

    def layout(self, nodes: tuple[Node, ...]) -> list[Node]:
        """The node of each replica, in order."""
        if self.placement in ("off", "auto") or not nodes:
            return []
        if self.placement == "node":
            return list(nodes)
        if self.placement == "cpus":
            return [node for node in nodes for _ in range(max(1, int(node.cpus // self.n)))]
        ordered = sorted(nodes, key=lambda node: -node.cpus)
        return [ordered[index % len(ordered)] for index in range(self.n)]


@dataclass(frozen=True)
class ReplicaInfo:
    """What a worker's `Model` needs to know of the backend behind a replica."""

    model_id: str
    capabilities: Capabilities
    native_tools: bool
    max_concurrency: int
    context_window: int | None
    in_process: bool
    fingerprint: str

    @classmethod
    def of(cls, backend: Backend) -> ReplicaInfo:
        return cls(backend.model_id, backend.capabilities, backend.native_tools, backend.max_concurrency,
                   backend.context_window, backend.in_process, backend.fingerprint)


def backend_of(opener: OpenModel, model_id: str, options: dict[str, Any]) -> Backend:
    return opener(model_id, **options).backend


class _Replica:
    """The actor: one backend, opened where the actor runs, serving every request sent to it."""

    def __init__(self, open_backend: Callable[[], Backend]) -> None:
        import ray

        self.node_id = ray.get_runtime_context().get_node_id()
        self.backend: Backend | None = None
        self.failed: Carried | None = None
        try:
            self.backend = open_backend()
        except Exception as exc:  # missing weights, say: told to the driver with this node's name
            self.failed = Carried.of(exc)

    def info(self) -> tuple[str, ReplicaInfo | None, Carried | None]:
        return self.node_id, ReplicaInfo.of(self.backend) if self.backend is not None else None, self.failed

    async def generate(self, request: Request) -> Reply | Carried:
        try:
            assert self.backend is not None
            return await self.backend.generate(request)
        except Exception as exc:
            return Carried.of(exc)

    async def score(self, request: ScoreRequest) -> ScoreReply | Carried:
        try:
            return await self.backend.score(request)  # type: ignore[union-attr]
        except Exception as exc:
            return Carried.of(exc)

    def count_tokens(self, messages: tuple[Message, ...]) -> int | Carried | None:
        try:
            assert self.backend is not None
            return self.backend.count_tokens(messages)
        except Exception as exc:
            return Carried.of(exc)


@dataclass(frozen=True)
class ReplicaSet:
    """The replicas of one model: their handles by node, and the backend's description."""

    model_id: str
    """The id the model was opened by (its backend may call itself otherwise: a test's stand-in)."""
    info: ReplicaInfo
    handles: tuple[tuple[str, Any], ...]
    """(node id, actor handle) of each replica."""

    def pick(self, node_id: str) -> Any:
        """A replica on `node_id` (the workers of a node spread over its replicas), else any."""
        near = [handle for node, handle in self.handles if node == node_id] or [h for _, h in self.handles]
        return near[os.getpid() % len(near)]


class RemoteBackend:
    """A `Backend` that forwards every request to a replica; a worker's `Model` sits on top of it."""

    def __init__(self, replicas: ReplicaSet, replica: Any) -> None:
        info = replicas.info
        self.replica = replica
        self.model_id = info.model_id
        self.capabilities = info.capabilities
        self.native_tools = info.native_tools
        self.max_concurrency = info.max_concurrency
        self.context_window = info.context_window
        self.in_process = info.in_process
        self._fingerprint = info.fingerprint

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        return unwrap(require_ray().get(self.replica.count_tokens.remote(messages)))

    async def generate(self, request: Request) -> Reply:
        return unwrap(await self.replica.generate.remote(request))

    async def score(self, request: ScoreRequest) -> ScoreReply:
        return unwrap(await self.replica.score.remote(request))


@dataclass(frozen=True)
class ClusterOpener:
    """Opens models as `base` does, except those with replicas: a `Model` over the replica of this node."""

    base: OpenModel
    replicas: tuple[ReplicaSet, ...] = ()

    def __call__(self, model_id: str, *, trace: Trace | None = None, cache: CallCache | None = None,
                 ledger: UsageLedger | None = None, settings: Settings | None = None, **options: Any) -> Model:
        """A replica was opened with the run's backend options (`start_replicas`); `options` go to the others."""
        chosen = next((r for r in self.replicas if r.model_id == model_id), None)
        if chosen is None:
            return self.base(model_id, trace=trace, cache=cache, ledger=ledger, settings=settings, **options)
        node_id = require_ray().get_runtime_context().get_node_id()
        return Model(RemoteBackend(chosen, chosen.pick(node_id)), trace=trace, cache=cache, ledger=ledger,
                     settings=settings)


def start_replicas(cluster: Cluster, opener: OpenModel, model_id: str, plan: ReplicaPlan,
                   options: dict[str, Any] | None = None) -> ReplicaSet | None:
    """Start `model_id`'s replicas as `plan` places them and wait until each has opened the model with the backend
    `options` (None when the plan wants none). A node that cannot open it (no weights there) fails here, named."""
    nodes = plan.for_model(model_id).layout(cluster.nodes)
    if not nodes:
        return None
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor = ray.remote(_Replica)
    handles = [actor.options(num_cpus=0, max_concurrency=REPLICA_CONCURRENCY, max_restarts=3, max_task_retries=3,
                             scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False)
                             ).remote(partial(backend_of, opener, model_id, options or {})) for node in nodes]
    answers = ray.get([handle.info.remote() for handle in handles])
    for node_id, _, failed in answers:
        if failed is not None:
            kill_actors(handles)
            failed.raise_on(cluster.node(node_id))
    placed = tuple((node_id, handle) for (node_id, _, _), handle in zip(answers, handles, strict=True))
    return ReplicaSet(model_id, answers[0][1], placed)


def stop_replicas(replicas: ReplicaSet) -> None:
    kill_actors(handle for _, handle in replicas.handles)
