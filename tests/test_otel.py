"""OpenTelemetry export: a run's events as a span tree after the GenAI conventions, live and from a run folder.

The span trees are read from the SDK's in-memory exporter, and end to end from a real OTLP/HTTP receiver started
in the test: `oteltest`'s HttpSink (from PyPI), which decodes the protobuf requests the exporter sends.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import typer
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from noosphere.cli import make_app
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request
from noosphere.observation import Observation
from noosphere.otel import OtelSink, export_run
from noosphere.runs import Run
from noosphere.society import Member, democracy
from noosphere.systems import ask_base
from noosphere.systems.ctm import ask_ctm
from noosphere.trace import Event
from tests.helpers import chunk_reply, opener_for, stm_reply
from tests.human_driver import society_script
from tests.test_bench_gsm8k import PROBLEMS, said
from tests.test_cli import invoke

SECRET = "s3cr3t-value-0042"


def ctm_script(request: Request) -> Any:
    """Two views, the STM never sure enough."""
    if request.agent == "stm":
        return stm_reply("Sarcastic.", 0.4)
    return chunk_reply(f"{request.agent} reads it as mockery", "", 0.8, 0.7)


def opener_of(script: Any) -> Any:
    backend = ScriptedBackend(script)
    return lambda model_id, **kwargs: Model(backend, **kwargs)


CTM_ARGS = ["ask", f"Is it sarcastic? {SECRET}", "--system", "ctm", "--text", "words=Oh great.",
            "--text", "tone=flat", "--no-cache"]
SOCIETY = Path(__file__).parent.parent / "examples" / "societies" / "democracy.yaml"
SOCIETY_ARGS = ["ask", "What is 6 times 7?", "--system", "society", "--society", str(SOCIETY), "--no-cache"]


def paths(spans: list[tuple[Any, Any, str]]) -> Counter[str]:
    """Spans given as (id, parent id, name), counted by their path from the root: `run/workspace/iteration 1/...`.
    A parent that is not among them (or None) makes a root."""
    by_id = {span_id: (parent, name) for span_id, parent, name in spans}

    def path(parent: Any, name: str) -> str:
        parts = [name]
        while parent in by_id:
            parent, above = by_id[parent]
            parts.append(above)
        return "/".join(reversed(parts))

    return Counter(path(parent, name) for _, parent, name in spans)


def sdk_paths(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> Counter[str]:
    return paths([(s.context.span_id, s.parent.span_id if s.parent is not None else None, s.name) for s in spans])


CTM_TREE = Counter({
    "invoke_workflow noosphere ask ctm": 1,
    "invoke_workflow noosphere ask ctm/invoke_agent workspace": 1,
    "invoke_workflow noosphere ask ctm/invoke_agent workspace/iteration 1": 1,
    "invoke_workflow noosphere ask ctm/invoke_agent workspace/iteration 2": 1,
    "invoke_workflow noosphere ask ctm/invoke_agent workspace/iteration 3": 1,
})
"""The STM is never sure enough, so the workspace runs its three iterations."""


def test_a_workspace_run_becomes_run_workspace_iterations_and_model_calls(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    model_backend = ScriptedBackend(ctm_script)
    with Run(tmp_path / "run", command="ask", config={"system": "ctm", "model": "scripted", "query": SECRET}) as run:
        run.trace.add_sink(OtelSink.to(exporter))
        model = Model(model_backend, trace=run.trace, ledger=run.ledger)
        views = Observation.of({"words": "Oh great.", "tone": "flat"})
        answer = asyncio.run(ask_ctm(model, "Is it sarcastic?", views))
        run.finish({"answer": answer.answer})
    spans = exporter.get_finished_spans()
    paths = sdk_paths(spans)
    calls = {path: n for path, n in paths.items() if path.endswith("/chat scripted")}
    assert {p: n for p, n in paths.items() if not p.endswith("/chat scripted")} == CTM_TREE
    # every model call hangs under the iteration it was made in, and there are as many as the trace has
    assert sum(calls.values()) == len(run.trace.of_kind("model_call")) == len(model_backend.history)
    assert set(calls) == {f"invoke_workflow noosphere ask ctm/invoke_agent workspace/iteration {n}/chat scripted"
                          for n in (1, 2, 3)}
    call = next(s for s in spans if s.name == "chat scripted")
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.request.model"] == "scripted"
    assert attributes["gen_ai.provider.name"] == "noosphere.scripted"
    assert attributes["gen_ai.usage.input_tokens"] > 0 and attributes["gen_ai.usage.output_tokens"] > 0
    assert attributes["gen_ai.agent.name"] in ("words", "tone", "stm")
    assert tuple(attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    assert call.end_time >= call.start_time
    # no content unless asked: no prompt, no completion, no query in the run's attributes
    everything = json.dumps([dict(s.attributes or {}) for s in spans])
    assert "gen_ai.input.messages" not in everything and SECRET not in everything
    root = next(s for s in spans if s.parent is None)
    assert root.attributes["noosphere.run.status"] == "ok" and root.attributes["gen_ai.operation.name"] == (
        "invoke_workflow")
    workspace = next(s for s in spans if s.name == "invoke_agent workspace")
    assert workspace.attributes["noosphere.workspace.iterations"] == 3


def test_content_is_exported_only_when_asked_and_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOOSPHERE_TEST_SERVICE_TOKEN", SECRET)
    exporter = InMemorySpanExporter()
    with Run(tmp_path / "run", command="ask", config={"system": "base", "query": f"key {SECRET}"}) as run:
        run.trace.add_sink(OtelSink.to(exporter, content=True))
        model = Model(ScriptedBackend([{"answer": f"the key is {SECRET}", "confidence": 0.9}]), trace=run.trace)
        asyncio.run(ask_base(model, f"What is the key {SECRET}?"))
        run.finish({})
    spans = exporter.get_finished_spans()
    call = next(s for s in spans if s.name.startswith("chat"))
    inputs = json.loads(call.attributes["gen_ai.input.messages"])
    outputs = json.loads(call.attributes["gen_ai.output.messages"])
    assert inputs[0]["role"] == "user" and "What is the key [REDACTED]?" in inputs[0]["parts"][0]["content"]
    assert outputs[0]["role"] == "assistant" and "the key is [REDACTED]" in outputs[0]["parts"][0]["content"]
    assert "gen_ai.system_instructions" in call.attributes
    assert SECRET not in json.dumps([dict(s.attributes or {}) for s in spans])


def democracy_of(backend: ScriptedBackend, run: Run) -> Any:
    def member(name: str) -> Member:
        return Member(name, Model(backend, trace=run.trace, ledger=run.ledger), f"You are {name}.")

    return democracy([member("planner"), member("calculator")], member("organizer"), rounds=1)


SOCIETY_TREE = Counter({
    "invoke_workflow noosphere ask society": 1,
    "invoke_workflow noosphere ask society/invoke_agent democracy": 1,
    "invoke_workflow noosphere ask society/invoke_agent democracy/mission": 1,
    "invoke_workflow noosphere ask society/invoke_agent democracy/mission/chat scripted": 2,
    "invoke_workflow noosphere ask society/invoke_agent democracy/mindstorm round 1": 1,
    "invoke_workflow noosphere ask society/invoke_agent democracy/mindstorm round 1/chat scripted": 3,
    "invoke_workflow noosphere ask society/invoke_agent democracy/opinion": 1,
    "invoke_workflow noosphere ask society/invoke_agent democracy/opinion/chat scripted": 1,  # the summary
    "invoke_workflow noosphere ask society/invoke_agent democracy/execution": 1,  # unanimous: no ballot
})


def test_a_society_run_becomes_run_society_phases_and_member_calls(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    backend = ScriptedBackend(society_script)
    with Run(tmp_path / "run", command="ask", config={"system": "society"}) as run:
        run.trace.add_sink(OtelSink.to(exporter))
        result = democracy_of(backend, run).run_sync("What is 6 times 7?", trace=run.trace)
        run.finish({"answer": result.answer})
    spans = exporter.get_finished_spans()
    assert sdk_paths(spans) == SOCIETY_TREE
    agents = Counter(s.attributes.get("gen_ai.agent.name") for s in spans if s.name == "chat scripted")
    assert agents == {"planner": 2, "calculator": 2, "organizer": 2}
    society = next(s for s in spans if s.name == "invoke_agent democracy")
    assert society.attributes["noosphere.society.decided_by"] == "unanimous"
    assert list(society.attributes["noosphere.society.members"]) == ["calculator", "organizer", "planner"]

    # the same run folder exported afterwards gives the same tree, with the same times
    later = InMemorySpanExporter()
    done = export_run(tmp_path / "run", later)
    assert done.runs == 1 and sdk_paths(later.get_finished_spans()) == SOCIETY_TREE
    assert sorted(s.start_time for s in later.get_finished_spans()) == sorted(s.start_time for s in spans)


@pytest.mark.parametrize("content", [False, True])
def test_a_debate_that_reaches_consensus_notes_it_with_its_answer_only_as_content(tmp_path: Path,
                                                                                 content: bool) -> None:
    """The society's answer is content (its `soc_finished` sends it only with `content`): so is the answer the
    members agreed on, noted on the step where the rounds stopped."""
    from noosphere.society import debate

    exporter = InMemorySpanExporter()
    backend = ScriptedBackend(lambda request: {"reasoning": "r", "answer": SECRET})
    with Run(tmp_path / "run", command="ask", config={"system": "society"}) as run:
        run.trace.add_sink(OtelSink.to(exporter, content=content))
        members = [Member(name, Model(backend, trace=run.trace), f"You are {name}.") for name in ("a", "b")]
        debate(members, rounds=1, until_consensus=True).run_sync("What is the key?", trace=run.trace)
        run.finish({})
    noted = [e for s in exporter.get_finished_spans() for e in s.events if e.name == "noosphere.soc_consensus"]
    assert len(noted) == 1 and noted[0].attributes["noosphere.phase"] == "debate"
    assert (SECRET in json.dumps([dict(s.attributes or {}) for s in exporter.get_finished_spans()]
                                + [dict(e.attributes or {}) for e in noted])) == content


def test_a_quorum_is_noted_on_the_mission_with_who_held_it(tmp_path: Path) -> None:
    from noosphere.society import debate

    exporter = InMemorySpanExporter()
    backend = ScriptedBackend(lambda request: {"reasoning": "r", "answer": SECRET})
    with Run(tmp_path / "run", command="ask", config={"system": "society"}) as run:
        run.trace.add_sink(OtelSink.to(exporter, content=False))
        members = [Member(name, Model(backend, trace=run.trace), f"You are {name}.") for name in ("a", "b", "c")]
        debate(members, rounds=1, quorum=2).run_sync("What is the key?", trace=run.trace)
        run.finish({})
    [noted] = [e for s in exporter.get_finished_spans() for e in s.events if e.name == "noosphere.soc_quorum"]
    assert (noted.attributes["noosphere.holders"], noted.attributes["noosphere.asked"]) == (2, 2)
    assert "noosphere.answer" not in noted.attributes


def test_a_killed_run_is_exported_with_what_it_did(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    backend = ScriptedBackend(society_script)
    run = Run(tmp_path / "run", command="ask", config={"system": "society"})
    democracy_of(backend, run).run_sync("What is 6 times 7?", trace=run.trace)
    run.trace.close()  # no run_finished: the process died here
    export_run(tmp_path / "run", exporter)
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.parent is None)
    assert root.status.status_code.name == "ERROR" and "without run_finished" in (root.status.description or "")
    assert len([s for s in spans if s.name == "chat scripted"]) == 6


# a real OTLP/HTTP receiver ------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Received:
    """oteltest's request handler interface: keeps every decoded trace request."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def handle_trace(self, request: Any, headers: Any) -> None:
        self.requests.append(request)

    def handle_metrics(self, request: Any, headers: Any) -> None:
        pass

    def handle_logs(self, request: Any, headers: Any) -> None:
        pass

    def spans(self) -> list[Any]:
        return [span for request in self.requests for resource in request.resource_spans
                for scope in resource.scope_spans for span in scope.spans]

    def services(self) -> set[str]:
        return {attribute.value.string_value for request in self.requests for resource in request.resource_spans
                for attribute in resource.resource.attributes if attribute.key == "service.name"}


@pytest.fixture
def receiver() -> Any:
    sink_module = pytest.importorskip("oteltest.sink", reason="needs oteltest (pip install -e '.[test]')")
    received = Received()
    port = free_port()
    sink = sink_module.HttpSink(received, logging.getLogger("otlp-receiver"), port=port)
    sink.start()
    for _ in range(200):  # until it listens (its thread binds the port)
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.01)
    yield received, f"http://127.0.0.1:{port}"
    sink.stop()


def otlp_paths(spans: list[Any]) -> Counter[str]:
    """The same, for spans decoded from OTLP protobuf requests."""
    return paths([(bytes(s.span_id), bytes(s.parent_span_id) or None, s.name) for s in spans])


def test_end_to_end_a_receiver_gets_the_span_trees_of_a_workspace_and_a_society_run(receiver: Any,
                                                                                      tmp_path: Path) -> None:
    received, url = receiver
    code, _, err = invoke([*CTM_ARGS, "--out", str(tmp_path / "ctm"), "--otel", url], opener_of(ctm_script))
    assert code == 0, err
    assert "warning" not in err
    ctm = otlp_paths(received.spans())
    assert {p: n for p, n in ctm.items() if not p.endswith("/chat scripted")} == CTM_TREE
    assert ctm["invoke_workflow noosphere ask ctm/invoke_agent workspace/iteration 1/chat scripted"] > 0
    assert received.services() == {"noosphere"}
    call = next(s for s in received.spans() if s.name == "chat scripted")
    attributes = {a.key: a.value for a in call.attributes}
    assert attributes["gen_ai.request.model"].string_value == "scripted"
    assert attributes["gen_ai.usage.input_tokens"].int_value > 0
    assert call.end_time_unix_nano >= call.start_time_unix_nano > 0
    assert SECRET not in str(received.requests)  # the query is content: not sent unless asked

    received.requests.clear()
    code, _, err = invoke([*SOCIETY_ARGS, "--out", str(tmp_path / "society"), "--otel", url],
                          opener_of(society_script))
    assert code == 0, err
    society = otlp_paths(received.spans())
    organisation = "invoke_workflow noosphere ask society/invoke_agent democracy"
    assert society[organisation] == 1
    assert {p.removeprefix(organisation + "/") for p in society if p.startswith(organisation + "/")} >= {
        "mission", "mission/chat scripted", "mindstorm round 1", "mindstorm round 2", "opinion", "execution",
        "mindstorm round 1/chat scripted"}

    # and the same society run, exported from its folder afterwards, arrives as the same tree
    received.requests.clear()
    [folder] = list((tmp_path / "society").iterdir())
    code, out, err = invoke(["trace", "export", str(folder), "--otlp", url])
    assert code == 0, err
    assert "sent 1 run session(s)" in out
    assert otlp_paths(received.spans()) == society


def test_an_export_that_stops_at_an_event_it_cannot_send_fails_and_says_so(receiver: Any, tmp_path: Path) -> None:
    """Before, the export stopped at the event (a warning), then said it had sent every event and exited 0."""
    _, url = receiver
    with Run(tmp_path / "run", command="ask", config={}) as run:
        run.trace.emit(Event(kind="note"))
    lines = (tmp_path / "run" / "trace.jsonl").read_text().splitlines()
    call = {"kind": "model_call", "ts": float("nan"), "model": "m", "messages": [], "response": "r"}
    (tmp_path / "run" / "trace.jsonl").write_text("\n".join([lines[0], json.dumps(call), *lines[1:]]) + "\n")
    code, out, err = invoke(["trace", "export", str(tmp_path / "run"), "--otlp", url])
    assert code != 0 and "sent 1 run session" not in out and "stopped partway" in out + err, out + err
    assert export_run(tmp_path / "run", InMemorySpanExporter(), warn=lambda text: None).stopped


def test_a_benchmark_sends_one_branch_per_item_even_scored_at_once(receiver: Any, tmp_path: Path) -> None:
    received, url = receiver
    data = tmp_path / "gsm.jsonl"
    data.write_text("".join(json.dumps(problem) + "\n" for problem in PROBLEMS))
    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--data", str(data), "--out", str(tmp_path / "b"),
                           "--no-cache", "--quiet", "--parallel", "2", "--otel", url],
                          opener_for([said("7"), said("300")]))
    assert code == 0, err
    tree = otlp_paths(received.spans())
    items = sorted(p for p in tree if p.count("/") == 1)
    assert items == ["invoke_workflow noosphere bench gsm8k base/item gsm8k-0000",
                     "invoke_workflow noosphere bench gsm8k base/item gsm8k-0001"]
    assert all(tree[f"{item}/chat scripted"] == 1 for item in items)
    correct = {s.name: {a.key: a.value.bool_value for a in s.attributes}["noosphere.item.correct"]
               for s in received.spans() if s.name.startswith("item ")}
    assert correct == {"item gsm8k-0000": True, "item gsm8k-0001": False}


def test_every_command_that_runs_something_takes_otel() -> None:
    app = typer.main.get_command(make_app())
    runners = {"ask": app.commands["ask"], "serve": app.commands["serve"], **{f"bench {name}": command
                                             for name, command in app.commands["bench"].commands.items()}}
    assert {name for name, command in runners.items() if not any(p.name == "otel" for p in command.params)} == set()
    assert len(runners) >= 8


def test_an_unreachable_endpoint_is_a_warning_and_the_run_goes_on(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    code, out, err = invoke([*CTM_ARGS, "--out", str(tmp_path), "--otel", url], opener_of(ctm_script))
    assert code == 0, err
    warned = capsys.readouterr().err
    assert f"warning: cannot send spans to {url}/v1/traces" in warned and "the run goes on" in warned
    assert "answer:" in out
    [folder] = list(tmp_path.iterdir())
    assert json.loads((folder / "result.json").read_text())["status"] == "ok"
    # exporting to it later is a runtime fault, said in one line
    code, _, err = invoke(["trace", "export", str(folder), "--otlp", url])
    assert code == 1 and "cannot send spans to" in err and "Traceback" not in err


@pytest.mark.parametrize(("args", "said"), [
    (["--otel", "localhost:4318"], "an OTLP endpoint is an http(s) URL"),
    (["--otel", "ftp://example.org"], "an OTLP endpoint is an http(s) URL"),
    (["--otel", "http://[::1"], "an OTLP endpoint is an http(s) URL"),  # a ValueError's traceback before
    (["--otel", "http://localhost:99999"], "an OTLP endpoint is an http(s) URL"),  # a warning, and the run went on
    (["--otel", "http://localhost:port"], "an OTLP endpoint is an http(s) URL"),
    (["--otel", "http://:4318"], "an OTLP endpoint is an http(s) URL"),
    (["--otel", "http://a host:4318"], "an OTLP endpoint is an http(s) URL"),
])
def test_a_malformed_endpoint_is_a_usage_error_before_any_run(tmp_path: Path, args: list[str], said: str) -> None:
    code, _, err = invoke([*CTM_ARGS, "--out", str(tmp_path), *args], opener_of(ctm_script))
    assert code == 2 and said in err
    assert not any(tmp_path.iterdir())


def test_the_endpoint_may_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOOSPHERE_OTEL_ENDPOINT", "not a url")
    code, _, err = invoke([*CTM_ARGS, "--out", str(tmp_path)], opener_of(ctm_script))
    assert code == 2 and "an OTLP endpoint is an http(s) URL such as http://127.0.0.1:4318, not 'not a url'" in err


def test_trace_export_of_a_folder_that_is_no_run(tmp_path: Path) -> None:
    code, _, err = invoke(["trace", "export", str(tmp_path), "--otlp", "http://127.0.0.1:9"])
    assert code == 2 and "not a run folder" in err
