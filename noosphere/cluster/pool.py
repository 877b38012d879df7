"""A pool of worker actors on the cluster, each set up once, that take work one payload at a time.

Each worker is a Ray actor built from a `Setup`: a function, shipped to the worker, that makes the
worker's `Work` there (opens its model, prepares its benchmark) once, when the actor starts. The
driver submits payloads; a free worker runs each, `per_worker` at a time, and its answer comes back to
the one caller that submitted it.

A worker that dies (killed, out of memory, its node gone) is restarted by Ray, which runs the setup
again and then the payloads it held (`retries` times). If it cannot come back, the payloads it held go
to the other workers; only when none is left is the payload lost, as `WorkerLostError`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from noosphere.cluster.carried import Carried
from noosphere.cluster.connect import Cluster, kill_actors, placed, require_ray, share_of_cpus
from noosphere.errors import UsageError, WorkerLostError

Work = Callable[[Any], Awaitable[Any]]
INLINE_BYTES = 100_000
"""Ray's limit on arguments sent inline with a task (`max_direct_call_object_size`)."""
Setup = Callable[[], Work]


@dataclass(frozen=True)
class Placement:
    """Where a payload ran: the node, the worker's process, and whether Ray had restarted that worker."""

    node_id: str
    pid: int
    restarted: bool


class _Worker:
    """The actor: its work, made once per process (again after a restart)."""

    def __init__(self, setup: Setup) -> None:
        import ray

        context = ray.get_runtime_context()
        self.placement = Placement(context.get_node_id(), os.getpid(), context.was_current_actor_reconstructed)
        self.failed: Carried | None = None
        self.work: Work | None = None
        try:
            self.work = setup()
        except Exception as exc:  # told to the driver by `ready`, as the error it is
            self.failed = Carried.of(exc)

    def ready(self) -> tuple[Placement, Carried | None]:
        return self.placement, self.failed

    async def run(self, payload: Any) -> tuple[Placement, Any]:
        if self.work is None:
            return self.placement, self.failed
        try:
            return self.placement, await self.work(payload)
        except Exception as exc:
            return self.placement, Carried.of(exc)


class WorkerPool:
    """`workers` actors spread over the cluster's nodes, sharing its CPUs; use as an async context manager."""

    def __init__(self, cluster: Cluster, setup: Setup, *, workers: int, per_worker: int = 1, retries: int = 3) -> None:
        if workers < 1 or per_worker < 1:
            raise UsageError(f"a worker pool needs at least one worker and one slot each, not {workers}x{per_worker}")
        self.cluster = cluster
        self.setup = setup
        self.workers = workers
        self.per_worker = per_worker
        self.retries = retries
        self.actors: list[Any] = []
        self.placements: list[Placement] = []
        self._free: asyncio.Queue[int] | None = None
        self._setup: Any = None
        self._lost: set[int] = set()
        self._none_left = asyncio.Event()

    async def __aenter__(self) -> WorkerPool:
        ray = require_ray()
        from ray import cloudpickle

        cpus = share_of_cpus(self.cluster, self.workers)
        actor = ray.remote(_Worker).options(num_cpus=cpus, max_concurrency=self.per_worker,
                                            max_restarts=self.retries, max_task_retries=self.retries,
                                            scheduling_strategy="SPREAD")
        # A setup past Ray's inline size goes to its object store: put once and held here for the pool's life, so that
        # a worker restarted by Ray can be built from it again (a small one travels inside each actor's spec).
        setup: Any = self.setup
        if len(cloudpickle.dumps(setup)) > INLINE_BYTES:
            setup = self._setup = ray.put(setup)
        self.actors = [actor.remote(setup) for _ in range(self.workers)]
        try:
            ready = await placed(asyncio.gather(*(handle.ready.remote() for handle in self.actors)), self.workers,
                                 "workers", self.cluster)
            for placement, failed in ready:
                if failed is not None:  # its setup failed there: missing weights are told with the node's name
                    failed.raise_on(self.cluster.node(placement.node_id))
            self.placements = [placement for placement, _ in ready]
        except BaseException:
            kill_actors(self.actors)
            raise
        self._free = asyncio.Queue()
        for _ in range(self.per_worker):
            for index in range(self.workers):
                self._free.put_nowait(index)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        kill_actors(self.actors)

    async def submit(self, payload: Any) -> tuple[Placement, Any]:
        """Run `payload` on a free worker; its answer (a `Carried` error stays carried for the caller). A worker
        that is lost passes the payload to another; it is lost with the last of them."""
        ray = require_ray()
        assert self._free is not None, "use the pool as `async with WorkerPool(...)`"
        reason = "no worker is left"
        while (index := await self._next_free()) is not None:
            try:
                return await self.actors[index].run.remote(payload)
            except ray.exceptions.RayActorError as exc:  # Ray's own restarts are spent: another worker takes it
                self._lost.add(index)
                reason = str(exc).strip().splitlines()[0]
                if len(self._lost) == self.workers:
                    self._none_left.set()  # callers waiting for a free slot are told, not left waiting
            finally:
                if index not in self._lost:
                    self._free.put_nowait(index)
        raise WorkerLostError(_name(payload), reason)

    async def _next_free(self) -> int | None:
        """A free slot of a live worker, waited for; None once every worker is lost (the slots a lost worker left
        in the queue are dropped on the way)."""
        assert self._free is not None
        while len(self._lost) < self.workers:
            getting = asyncio.ensure_future(self._free.get())
            none_left = asyncio.ensure_future(self._none_left.wait())
            try:
                await asyncio.wait({getting, none_left}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:  # the caller was cancelled: a slot it was given goes back
                if getting.done() and not getting.cancelled():
                    self._free.put_nowait(getting.result())
                getting.cancel()
                raise
            finally:
                none_left.cancel()
            if not getting.done():
                getting.cancel()
                return None
            if (index := getting.result()) not in self._lost:
                return index
        return None


def _name(payload: Any) -> str:
    return str(getattr(payload, "item_id", payload))[:80]
