"""`noosphere serve` against clients nobody here wrote: the official `openai` client and LiteLLM (a noosphere society
whose member is a served system), on the scripted model, with uvicorn serving in a thread of the test process."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from rich.console import Console

from noosphere.cli import make_app, run
from noosphere.errors import ModelError
from noosphere.llm import Budget, Model, ScriptedBackend
from noosphere.llm.registry import split_api_base
from noosphere.serve.app import make_api
from noosphere.serve.server import serving_in_thread
from noosphere.serve.service import ServeSettings, Service
from noosphere.serve.systems import ModelPool, served_systems
from noosphere.trace import read_trace
from noosphere.viewer import load_bundle
from tests.serve_driver import ANSWER, REPLY, answer_anything, fill
from tests.test_cli import invoke, scripted_opener

KEY = "test-serve-key-0123456789"
DEMOCRACY = """\
organisation: democracy
rounds: 1
members:
  - name: alice
    role: You solve problems step by step.
  - name: bob
    role: You check every answer against the question.
organizer:
  name: organizer
  role: You run the discussion and ask pointed questions.
"""


class CountingBackend(ScriptedBackend):
    """The scripted backend, counting the calls in flight at once (across every request it serves)."""

    def __init__(self) -> None:
        super().__init__(answer_anything, latency_s=0.02)
        self.running = 0
        self.peak = 0

    async def generate(self, request: Any) -> Any:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            return await super().generate(request)
        finally:
            self.running -= 1


@contextlib.contextmanager
def server(tmp: Path, *, systems: tuple[str, ...] = ("base", "ctm"), society: bool = True,
           backend: ScriptedBackend | None = None, **settings: Any) -> Iterator[tuple[str, Service]]:
    """A server on the scripted model at any free port; yields its base URL and service."""
    societies = []
    if society:
        societies = [tmp / "democracy.yaml"]
        societies[0].write_text(DEMOCRACY)
    backend = backend or CountingBackend()
    service = Service(served_systems(list(systems), societies), ModelPool(lambda model_id: Model(backend)),
                      ServeSettings(**{"default_model": "scripted", "out": tmp / "runs", **settings}))
    service.open_models()
    with serving_in_thread(make_api(service)) as url:
        yield url, service


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Service]]:
    with server(tmp_path_factory.mktemp("serve"), api_key=KEY) as running:
        yield running


@pytest.fixture
def client(served: tuple[str, Service]) -> openai.OpenAI:
    return openai.OpenAI(base_url=served[0], api_key=KEY, max_retries=0)


@contextlib.contextmanager
def slower(service: Service, latency_s: float) -> Iterator[CountingBackend]:
    """The shared server's model, taking `latency_s` a call while the block runs."""
    [model] = service.pool.models.values()
    backend = model.backend
    assert isinstance(backend, CountingBackend)
    before, backend.latency_s = backend.latency_s, latency_s
    try:
        yield backend
    finally:
        backend.latency_s = before


def result_of(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / "result.json").read_text())


def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Poll until `check` holds (a run ending in the server's thread); fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def finished(run_dir: str | Path) -> bool:
    path = Path(run_dir) / "result.json"
    return path.is_file() and result_of(run_dir)["status"] != "running"


QUESTION = [{"role": "user", "content": "What is six times seven?"}]


def nested(depth: int) -> dict[str, Any]:
    """An object schema with an object property inside it, `depth` times over."""
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


# --- the openai client ------------------------------------------------------------------------------------------

def test_models_lists_one_entry_per_served_system(client: openai.OpenAI) -> None:
    models = client.models.list()
    assert [m.id for m in models] == ["noosphere-base", "noosphere-ctm", "society-democracy"]
    assert client.models.retrieve("society-democracy").model_extra["noosphere"]["system"] == "society"


@pytest.mark.parametrize(("model", "section"), [("noosphere-base", None), ("noosphere-ctm", "workspace"),
                                                 ("society-democracy", "society")])
def test_openai_client_gets_an_answer_and_the_run_folder(client: openai.OpenAI, model: str,
                                                         section: str | None) -> None:
    reply = client.chat.completions.create(model=model, messages=QUESTION, seed=7)
    extension = reply.model_extra["noosphere"]
    run_dir = Path(extension["run_dir"])
    assert reply.choices[0].message.content == ANSWER and reply.choices[0].finish_reason == "stop"
    assert reply.id == f"chatcmpl-{extension['run_id']}" and run_dir.name == extension["run_id"]
    assert extension["confidence"] == pytest.approx(1.0 if section == "society" else 0.9)
    result = result_of(run_dir)
    assert result["status"] == "ok" and result["answer"] == ANSWER and result["client"] == "connected"
    config = json.loads((run_dir / "config.json").read_text())
    assert config["command"] == "serve" and config["served_as"] == model and config["seed"] == 7
    calls = [e for e in read_trace(run_dir / "trace.jsonl") if e.kind == "model_call"]
    assert reply.usage.prompt_tokens == sum(e.prompt_tokens for e in calls) > 0
    bundle = load_bundle(run_dir)  # what `noosphere view RUN_DIR` serves
    assert bundle["sections"] == ([section] if section else []) and bundle["result"]["status"] == "ok"


def test_stream_sends_each_phase_as_it_happens_then_the_answer(client: openai.OpenAI,
                                                               served: tuple[str, Service]) -> None:
    received: list[tuple[float, Any]] = []
    with slower(served[1], 0.25):  # the run takes two call latencies: half a second
        for piece in client.chat.completions.create(model="noosphere-ctm", messages=QUESTION, stream=True,
                                                    stream_options={"include_usage": True}):
            received.append((time.time(), piece))
    first = received[0][1]
    run_dir = Path(first.model_extra["noosphere"]["run_dir"])
    written = [e for e in read_trace(run_dir / "trace.jsonl") if e.kind not in ("run_started", "run_finished")]
    phases = [(at, p.model_extra["noosphere"]["phase"]) for at, p in received
              if "phase" in (p.model_extra or {}).get("noosphere", {})]
    assert [phase["kind"] for _, phase in phases] == [e.kind for e in written]  # every event, in order
    assert [phase["kind"] for _, phase in phases][:1] == ["ws_iteration"] and "messages" not in phases[1][1]
    ended = next(e.ts for e in read_trace(run_dir / "trace.jsonl") if e.kind == "ws_finished")
    assert received[0][0] < ended and phases[0][0] < ended  # sent while the run went on, not after it
    contents = [p.choices[0].delta.content for _, p in received if p.choices and p.choices[0].delta.content]
    assert contents == [ANSWER]
    kinds_in_order = [(p.model_extra.get("noosphere") or {}).get("phase", {}).get("kind") or
                      ("content" if p.choices and p.choices[0].delta.content else None) for _, p in received]
    assert kinds_in_order.index("serve_answer") < kinds_in_order.index("content")  # the answer once it is known
    finish = [p for _, p in received if p.choices and p.choices[0].finish_reason]
    assert [p.choices[0].finish_reason for p in finish] == ["stop"]
    assert finish[0].model_extra["noosphere"]["confidence"] == pytest.approx(0.9)
    usage = received[-1][1]
    assert usage.choices == [] and usage.usage.total_tokens == result_of(run_dir)["usage"]["total"]["prompt_tokens"] \
        + result_of(run_dir)["usage"]["total"]["completion_tokens"]


def test_society_streams_its_phases(client: openai.OpenAI) -> None:
    pieces = list(client.chat.completions.create(model="society-democracy", messages=QUESTION, stream=True))
    kinds = [p.model_extra["noosphere"]["phase"]["kind"] for p in pieces if "phase" in p.model_extra["noosphere"]]
    assert kinds[0] == "soc_started" and {"soc_phase", "soc_message", "soc_ballot", "soc_tally"} <= set(kinds)
    assert "".join(p.choices[0].delta.content or "" for p in pieces if p.choices) == ANSWER


def test_instructions_and_response_format_are_honoured_by_one_more_call(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="noosphere-ctm", messages=[
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": "Six times seven?"}])
    assert reply.choices[0].message.content == REPLY and reply.model_extra["noosphere"]["answer"] == ANSWER
    trace = list(read_trace(Path(reply.model_extra["noosphere"]["run_dir"]) / "trace.jsonl"))
    composed = [e for e in trace if e.kind == "model_call" and e.agent == "compose"]
    assert len(composed) == 1 and composed[0].messages[0]["content"].startswith("You are terse.")

    schema = {"type": "object", "properties": {"product": {"type": "string"}, "sure": {"type": "boolean"}},
              "required": ["product", "sure"]}
    reply = client.chat.completions.create(model="noosphere-base", messages=QUESTION, response_format={
        "type": "json_schema", "json_schema": {"name": "product", "schema": schema}})
    assert json.loads(reply.choices[0].message.content) == fill(schema) == {"product": ANSWER, "sure": False}


async def test_eight_concurrent_streams_share_one_model(served: tuple[str, Service]) -> None:
    url, service = served
    client = openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)

    async def one(i: int) -> tuple[str, str]:
        text, run_id = "", ""
        async for piece in await client.chat.completions.create(
                model="noosphere-base", messages=[{"role": "user", "content": f"Question {i}?"}], stream=True):
            run_id = run_id or piece.model_extra["noosphere"]["run_id"]
            text += (piece.choices[0].delta.content or "") if piece.choices else ""
        return text, run_id

    with slower(service, 0.2) as backend:
        backend.peak, calls_before = 0, len(backend.history)
        answers = await asyncio.gather(*(one(i) for i in range(8)))
    await client.close()
    assert [text for text, _ in answers] == [ANSWER] * 8 and len({run for _, run in answers}) == 8
    assert len(service.pool.models) == 1 and len(backend.history) - calls_before == 8  # one model, one backend
    assert backend.peak >= 2  # the requests' calls were in flight together


def test_model_ids_carry_a_base_url() -> None:
    assert split_api_base("openai/noosphere-ctm@http://127.0.0.1:8000/v1") == (
        "openai/noosphere-ctm", "http://127.0.0.1:8000/v1")
    assert split_api_base("vertex_ai/claude-3@20240229") == ("vertex_ai/claude-3@20240229", None)
    assert split_api_base("openai/gpt-4o") == ("openai/gpt-4o", None)


# --- bad input ----------------------------------------------------------------------------------------------------

def post(url: str, body: bytes | dict[str, Any], key: str | None = KEY, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{url}/chat/completions", content=content, headers=headers, timeout=10, **kwargs)


def assert_error(response: httpx.Response, status: int, *, code: str | None = None, param: str | None = None) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["code"] == code and (param is None or error["param"] == param)
    return error["message"]


@pytest.mark.parametrize(("body", "param", "says"), [
    (b"{not json", None, "not JSON"),
    (b"[1, 2]", None, "JSON object"),
    # a lone surrogate escape: a 500 (the trace could not be written) with a run folder left behind
    (b'{"model": "noosphere-base", "messages": [{"role": "user", "content": "hi \\ud800"}]}', None,
     "half of a UTF-16 surrogate pair"),
    (b'{"model": "noosphere-base", "messages": [{"role": "user", "content": "hi"}], "user": "\\udfff"}', None,
     "half of a UTF-16 surrogate pair"),
    ({"model": "noosphere-base"}, "messages", "Field required"),
    ({"model": "noosphere-base", "messages": "hello"}, "messages", "list"),
    ({"model": "noosphere-base", "messages": []}, "messages", "at least 1"),
    ({"model": "noosphere-base", "messages": [{"role": "wizard", "content": "hi"}]}, "messages.0.role", "user"),
    ({"model": "noosphere-base", "messages": QUESTION, "temperature": 7}, "temperature", "less than"),
    ({"model": "noosphere-base", "messages": QUESTION, "n": 3}, "n", "n must be 1"),
    ({"model": "noosphere-base", "messages": QUESTION, "stream_options": {"include_usage": True}}, "stream_options",
     "only allowed when stream is true"),
    ({"model": "noosphere-base", "messages": QUESTION, "tools": [{"type": "function"}]}, "tools", "not served"),
    ({"model": "noosphere-base", "messages": QUESTION, "top_logprobs": 3}, "top_logprobs", "logprobs are not served"),
    # a call demanded without tools: the system's text came back as if nothing had been asked
    ({"model": "noosphere-base", "messages": QUESTION, "tool_choice": "required"}, "tool_choice", "cannot be required"),
    ({"model": "noosphere-base", "messages": QUESTION, "tool_choice": {"type": "function", "function": {"name": "f"}}},
     "tool_choice", "cannot be required"),
    ({"model": "noosphere-base", "messages": QUESTION, "function_call": {"name": "f"}}, "function_call",
     "cannot be required"),
    ({"model": "noosphere-base", "messages": [*QUESTION, {"role": "assistant", "content": "4"}]}, "messages.1",
     "last message"),
    ({"model": "noosphere-base", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}, "messages.0.content.0.type", "image_url"),
    # a text part without its text was "content parts of type 'text' are not served"
    ({"model": "noosphere-base", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
     "messages.0.content.0.text", "needs its 'text' string"),
    ({"model": "noosphere-base", "messages": QUESTION, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "strin"}}}}, "response_format.json_schema.schema", "not a JSON schema"),
    ({"model": "noosphere-base", "messages": QUESTION, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "string"}}}}, "response_format.json_schema.schema", "object"),
    # garbage on which jsonschema's own checks raise (an unhashable $schema), and a schema nested 150 deep
    ({"model": "noosphere-base", "messages": QUESTION, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"$schema": [], "type": "object"}}}}, "response_format.json_schema.schema",
     "not a JSON schema"),
    ({"model": "noosphere-base", "messages": QUESTION, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": nested(150)}}}, "response_format.json_schema.schema", "deeper than 32"),
    # a $ref to nothing in the schema, or to a schema elsewhere: a 500 once the system had run (jsonschema's
    # referencing error checking the reply)
    ({"model": "noosphere-base", "messages": QUESTION, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}}}},
     "response_format.json_schema.schema", "$ref '#/$defs/nope' points at nothing"),
    ({"model": "noosphere-base", "messages": QUESTION, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"a": {"$ref": "https://example.org/a.json"}}}}}},
     "response_format.json_schema.schema", "nothing is fetched"),
])
def test_malformed_bodies_are_400_and_start_no_run(served: tuple[str, Service], body: Any, param: str | None,
                                                   says: str) -> None:
    url, service = served
    before = set(service.settings.out.glob("*"))
    message = assert_error(post(url, body), 400, param=param)
    assert says in message
    assert set(service.settings.out.glob("*")) == before


def test_openai_parse_gets_a_nested_pydantic_model(client: openai.OpenAI) -> None:
    """`client.beta.chat.completions.parse` sends a strict json_schema whose nested models are `$defs` and `$ref`s;
    the composing call moves them under its reply tool's own `$defs`."""
    from pydantic import BaseModel

    class Step(BaseModel):
        explanation: str

    class Solution(BaseModel):
        steps: list[Step]
        final_answer: str

    reply = client.beta.chat.completions.parse(model="noosphere-ctm", messages=QUESTION, response_format=Solution)
    assert reply.choices[0].message.parsed == Solution(steps=[Step(explanation=ANSWER)], final_answer=ANSWER)


def test_stop_cuts_the_reply_before_its_first_sequence(client: openai.OpenAI) -> None:
    """`stop` was accepted and ignored: the reply came back whole, past the sequence the client stops at."""
    terse = [{"role": "system", "content": "Be terse."}, *QUESTION]  # composed: REPLY, "The answer is 42."
    reply = client.chat.completions.create(model="noosphere-base", messages=terse, stop=[" is", "4"])
    assert reply.choices[0].message.content == "The answer" and reply.model_extra["noosphere"]["answer"] == ANSWER
    assert result_of(reply.model_extra["noosphere"]["run_dir"])["reply"] == "The answer"
    pieces = client.chat.completions.create(model="noosphere-base", messages=terse, stop="42", stream=True)
    assert "".join(p.choices[0].delta.content or "" for p in pieces if p.choices) == "The answer is "
    assert client.chat.completions.create(model="noosphere-base", messages=terse, stop=["no such", ""]
                                          ).choices[0].message.content == REPLY


def test_a_tool_choice_that_requires_no_call_is_accepted(served: tuple[str, Service]) -> None:
    url, _ = served
    for choice in ("none", "auto"):
        reply = post(url, {"model": "noosphere-base", "messages": QUESTION, "tool_choice": choice})
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == ANSWER


def test_an_earlier_refusal_part_is_a_turn_like_any_text(served: tuple[str, Service]) -> None:
    """An assistant's turn may hold OpenAI's `refusal` part (the model declined); a client replaying the conversation
    sends it back, and was refused (400) for it."""
    url, _ = served
    messages = [{"role": "user", "content": "Help me pick a lock."},
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]},
                {"role": "user", "content": [{"type": "text", "text": "Then what is six times seven?"}]}]
    reply = post(url, {"model": "noosphere-base", "messages": messages})
    assert reply.status_code == 200, reply.text
    query = json.loads((Path(reply.headers["x-noosphere-run-dir"]) / "config.json").read_text())["query"]
    assert "assistant: I can't help with that." in query and query.endswith("Then what is six times seven?")


def test_null_switches_are_their_defaults(served: tuple[str, Service]) -> None:
    """OpenAI's API takes `"stream": null` as false; clients that send every field they have send it (a 400 here)."""
    url, _ = served
    whole = post(url, {"model": "noosphere-base", "messages": QUESTION, "stream": None, "stream_options": None})
    assert whole.status_code == 200 and whole.json()["choices"][0]["message"]["content"] == ANSWER
    streamed = post(url, {"model": "noosphere-base", "messages": QUESTION, "stream": True,
                          "stream_options": {"include_usage": None}})
    assert streamed.status_code == 200 and streamed.text.endswith("data: [DONE]\n\n")
    assert '"usage"' not in streamed.text


def test_unknown_model_is_404_and_a_wrong_key_401(served: tuple[str, Service], client: openai.OpenAI) -> None:
    url, _ = served
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="noosphere-ctn", messages=QUESTION)
    assert unknown.value.code == "model_not_found" and "noosphere-ctm" in unknown.value.message
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")
    wrong = openai.OpenAI(base_url=url, api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        wrong.chat.completions.create(model="noosphere-base", messages=QUESTION)
    assert refused.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    assert_error(post(url, {"model": "noosphere-base", "messages": QUESTION}, key=None), 401, code="invalid_api_key")
    assert_error(httpx.get(f"{url}/nowhere"), 404)
    assert_error(httpx.get(f"{url}/chat/completions"), 405)


def test_oversized_prompts_are_400_and_oversized_bodies_413(tmp_path: Path) -> None:
    with server(tmp_path, society=False, max_prompt_chars=100, max_body_bytes=4000) as (url, _):
        long = [{"role": "user", "content": "why? " * 40}]
        message = assert_error(post(url, {"model": "noosphere-base", "messages": long}), 400,
                               code="context_length_exceeded", param="messages")
        assert "200 characters" in message and "at most 100" in message
        # empty earlier turns: no text of their own, but a line each in the query the system is asked
        empty = [*[{"role": "assistant", "content": ""}] * 50, {"role": "user", "content": "why?"}]
        assert_error(post(url, {"model": "noosphere-base", "messages": empty}), 400, code="context_length_exceeded",
                     param="messages")
        assert_error(post(url, {"model": "noosphere-base", "messages": [{"role": "user", "content": "x" * 5000}]}),
                     413, code="request_too_large")
        assert not (tmp_path / "runs").exists()


def test_a_spent_budget_is_429_and_the_folder_says_so(tmp_path: Path) -> None:
    with server(tmp_path, society=False, budget={"max_calls": 2}) as (url, _):  # a workspace run needs four calls
        client = openai.OpenAI(base_url=url, api_key="any", max_retries=3)
        with pytest.raises(openai.RateLimitError) as spent:
            client.chat.completions.create(model="noosphere-ctm", messages=QUESTION)
        assert spent.value.code == "insufficient_quota" and "this request's budget" in spent.value.message
        run_dir = spent.value.response.headers["x-noosphere-run-dir"]
        assert result_of(run_dir)["status"] == "budget" and len(list((tmp_path / "runs").iterdir())) == 1  # no retry
        with pytest.raises(openai.APIError, match="budget"):  # streamed: the error comes as an event
            list(client.chat.completions.create(model="noosphere-ctm", messages=QUESTION, stream=True))
    with server(tmp_path / "total", society=False, total_budget=Budget(max_calls=1)) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="any", max_retries=0)
        assert client.chat.completions.create(model="noosphere-base", messages=QUESTION).choices[0].message.content
        with pytest.raises(openai.RateLimitError, match="server's budget"):
            client.chat.completions.create(model="noosphere-base", messages=QUESTION)
        assert len(list((tmp_path / "total" / "runs").iterdir())) == 1  # refused before any run


def test_a_run_folder_outside_latin_1_is_named_percent_encoded_in_the_header(tmp_path: Path) -> None:
    """A header holds Latin-1 only: an --out of `прогоны` made every reply, whole or streamed, a 500 once its run
    had answered."""
    from urllib.parse import unquote

    with server(tmp_path, society=False, out=tmp_path / "прогоны 100%") as (url, _):
        for stream in (False, True):
            response = post(url, {"model": "noosphere-base", "messages": QUESTION, "stream": stream})
            assert response.status_code == 200, response.text
            run_dir = Path(unquote(response.headers["x-noosphere-run-dir"]))
            assert run_dir.parent == tmp_path / "прогоны 100%" and result_of(run_dir)["status"] == "ok"


def test_faults_of_the_server_are_5xx_with_the_folder_saying_failed(tmp_path: Path) -> None:
    down = ScriptedBackend([ModelError("scripted", "the model process died", retryable=False)])
    with server(tmp_path, society=False, backend=down) as (url, _):
        response = post(url, {"model": "noosphere-base", "messages": QUESTION})
        assert "the model process died" in assert_error(response, 502, code="model_error")
        result = result_of(response.headers["x-noosphere-run-dir"])
        assert result["status"] == "failed" and "ModelError" in result["error"]
    (tmp_path / "a-file").write_text("not a folder")
    with server(tmp_path, society=False, out=tmp_path / "a-file") as (url, _):
        response = post(url, {"model": "noosphere-base", "messages": QUESTION})
        assert "cannot write a run folder" in assert_error(response, 500, code="run_failed")


@pytest.mark.parametrize("action", ["cancel", "finish"])
def test_a_client_leaving_mid_stream_cancels_or_finishes_the_run(tmp_path: Path, action: str) -> None:
    slow = ScriptedBackend(answer_anything, latency_s=0.3)
    with server(tmp_path, society=False, backend=slow, on_disconnect=action) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="any", max_retries=0)
        stream = client.chat.completions.create(model="noosphere-ctm", messages=QUESTION, stream=True)
        run_dir = next(iter(stream)).model_extra["noosphere"]["run_dir"]
        stream.close()
        eventually(lambda: finished(run_dir))
        result = result_of(run_dir)
        left = [e for e in read_trace(Path(run_dir) / "trace.jsonl") if e.kind == "serve_disconnected"]
        assert [e.action for e in left] == [action] and result["client"] == "disconnected"
        if action == "cancel":
            assert result["status"] == "cancelled" and "disconnected" in result["error"] and result["answer"] is None
        else:
            assert result["status"] == "ok" and result["answer"] == ANSWER


def test_a_client_that_times_out_has_its_run_cancelled(tmp_path: Path) -> None:
    slow = ScriptedBackend(answer_anything, latency_s=0.3)
    with server(tmp_path, society=False, backend=slow) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="any", max_retries=0, timeout=0.1)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="noosphere-ctm", messages=QUESTION)
        eventually(lambda: any(finished(d) for d in (tmp_path / "runs").iterdir()))
        [run_dir] = list((tmp_path / "runs").iterdir())
        assert result_of(run_dir)["status"] == "cancelled"


def test_a_server_that_stops_past_its_grace_tells_its_waiting_clients_so(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the grace period uvicorn cancels the replies under way: a whole reply was uvicorn's plain-text 500
    ("Internal Server Error"), a stream was cut off mid-chunk; both are now OpenAI's error, 503 server_stopped."""
    import noosphere.serve.server as serve_server

    monkeypatch.setattr(serve_server, "GRACE_S", 0.1)
    slow = ScriptedBackend(answer_anything, latency_s=3)
    outcomes: dict[bool, Any] = {}

    def ask(url: str, stream: bool) -> None:
        body = {"model": "noosphere-ctm", "messages": QUESTION, "stream": stream}
        if stream:
            with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=20) as response:
                outcomes[stream] = [line for line in response.iter_lines() if line]
        else:
            outcomes[stream] = post(url, body, key=None)

    with server(tmp_path, society=False, backend=slow) as (url, _):
        askers = [threading.Thread(target=ask, args=(url, stream)) for stream in (False, True)]
        for asker in askers:
            asker.start()
        eventually(lambda: (tmp_path / "runs").is_dir() and len(list((tmp_path / "runs").iterdir())) == 2)
    for asker in askers:
        asker.join()
    assert_error(outcomes[False], 503, code="server_stopped")
    assert outcomes[True][-1] == "data: [DONE]"
    assert json.loads(outcomes[True][-2].removeprefix("data: "))["error"]["code"] == "server_stopped"
    for run_dir in (tmp_path / "runs").iterdir():
        eventually(partial(finished, run_dir))
        assert result_of(run_dir)["status"] == "cancelled"


def test_a_stream_whose_result_cannot_be_written_ends_with_an_error(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """result.json failing to be written (a full disk, the folder removed) ends the stream with an error and [DONE]
    instead of keep-alives for ever; a whole reply is a 500."""
    from noosphere.runs import Run

    def fails(self: Run, *args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Run, "finish", fails)
    with server(tmp_path, society=False, keepalive_s=0.2) as (url, _):
        lines: list[str] = []
        with httpx.stream("POST", f"{url}/chat/completions", timeout=10, json={
                "model": "noosphere-base", "messages": QUESTION, "stream": True}) as response:
            started = time.monotonic()
            for line in response.iter_lines():
                lines.append(line)
                assert time.monotonic() - started < 5, "the stream never ended"
        assert lines[-2:] == ["data: [DONE]", ""] or [line for line in lines if line][-1] == "data: [DONE]"
        [error] = [json.loads(line[6:])["error"] for line in lines if line.startswith("data: {") and '"error"' in line]
        assert "could not be written" in error["message"] and "No space left" in error["message"]
        assert_error(post(url, {"model": "noosphere-base", "messages": QUESTION}), 500)


def test_concurrent_requests_share_the_backends_concurrency_limit(tmp_path: Path) -> None:
    """Every request binds the one model to its own run; `max_concurrency` bounds them all together."""
    backend = CountingBackend()
    backend.max_concurrency, backend.latency_s = 1, 0.1

    async def four(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=20) as client:
            return list(await asyncio.gather(*(client.post(f"{url}/chat/completions", json={
                "model": "noosphere-base", "messages": QUESTION}) for _ in range(4))))

    with server(tmp_path, society=False, backend=backend) as (url, _):
        replies = asyncio.run(four(url))
    assert [reply.status_code for reply in replies] == [200] * 4
    assert backend.peak == 1


def test_exported_spans_keep_the_servers_key_and_without_content_its_system_messages_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve --api-key K --otel URL`: the key is redacted from the spans as from trace.jsonl (the run's redactor,
    not only the environment's); without --otel-content the system messages and the answer stay out too."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import noosphere.otel.sink as sink
    from noosphere.cli.otel_cmd import OtelExport

    monkeypatch.delenv("NOOSPHERE_API_KEY", raising=False)
    exporters: list[InMemorySpanExporter] = []

    def exporter(url: str, warn: Any) -> InMemorySpanExporter:
        exporters.append(InMemorySpanExporter())
        return exporters[-1]

    monkeypatch.setattr(sink, "otlp_exporter", exporter)
    monkeypatch.setattr(sink, "unreachable", lambda url: pytest.fail("a probed export asked the endpoint again"))
    secret = "Confidential persona: patient 4711."
    messages = [{"role": "system", "content": secret},
                {"role": "user", "content": f"My key is {KEY}. Six times seven?"}]
    for content in (True, False):
        exporters.clear()
        export = OtelExport("http://127.0.0.1:4318/v1/traces", content=content, answered=True)
        (tmp_path / str(content)).mkdir()
        with server(tmp_path / str(content), api_key=KEY, on_run=export.attach) as (url, _):
            for model in ("noosphere-base", "society-democracy"):
                response = post(url, {"model": model, "messages": messages})
                assert response.status_code == 200, response.text
                run_dir = Path(response.headers["x-noosphere-run-dir"])
                eventually(partial(finished, run_dir))
                assert KEY not in (run_dir / "trace.jsonl").read_text()
        eventually(lambda: len(exporters) == 2 and all(e.get_finished_spans() for e in exporters))
        sent = json.dumps([dict(span.attributes or {}) for e in exporters for span in e.get_finished_spans()])
        assert KEY not in sent
        assert (secret in sent) is content
        assert ('"noosphere.society.answer"' in sent) is content


# --- the command --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    (["--host", "0.0.0.0"], "--api-key"),
    (["--api-key", "hunter2"], "8 characters or more"),
    (["--system", "society"], "--society FILE"),
    (["--system", "bse"], "Did you mean base"),
    (["--on-disconnect", "later"], "unknown --on-disconnect action 'later'"),
    (["--budget", "calls=0"], "positive"),
])
def test_serve_refuses_bad_options_in_one_line(tmp_path: Path, args: list[str], says: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOOSPHERE_API_KEY", raising=False)
    code, _, err = invoke(["serve", "--out", str(tmp_path), *args], scripted_opener([]))
    assert code == 2 and says in err and "Traceback" not in err


def test_serve_without_its_extra_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if it were not installed
    code, _, err = invoke(["serve", "--out", str(tmp_path)], scripted_opener([]))
    assert code == 2 and 'need uvicorn; install it with: pip install -e ".[serve]"' in err


def counting_opener() -> Any:
    """A scripted opener that keeps the ids it was asked to open (a local model's weights load there)."""
    inner = scripted_opener([])

    def opener(model_id: str, **kwargs: Any) -> Model:
        opener.opened.append(model_id)  # type: ignore[attr-defined]
        return inner(model_id, **kwargs)

    opener.opened = []  # type: ignore[attr-defined]
    return opener


def test_serve_says_when_the_port_is_taken_before_any_model_loads(tmp_path: Path) -> None:
    opener = counting_opener()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, _, err = invoke(["serve", "--port", str(port), "--no-cache", "--out", str(tmp_path)], opener)
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in err
    assert opener.opened == []  # the model loaded first, minutes for a local one, before the port was tried


def test_serve_says_when_the_host_is_no_address_before_any_model_loads(tmp_path: Path) -> None:
    opener = counting_opener()
    code, _, err = invoke(["serve", "--host", "999.1.1.1", "--api-key", KEY, "--no-cache", "--out", str(tmp_path)],
                          opener)
    assert code == 2 and "cannot listen on 999.1.1.1:8000" in err and "Traceback" not in err
    assert opener.opened == []


def test_the_command_serves_until_ctrl_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`noosphere serve` as a user starts it, in this process's main thread (where uvicorn takes Ctrl-C); a client
    in another thread asks once, then presses Ctrl-C (SIGINT to this process)."""
    monkeypatch.setenv("NOOSPHERE_API_KEY", KEY)
    shown = io.StringIO()
    replies: list[Any] = []

    def user() -> None:
        eventually(lambda: " at http://" in shown.getvalue())
        url = shown.getvalue().split(" at ")[1].split()[0]
        try:
            replies.append(openai.OpenAI(base_url=url, api_key=KEY, max_retries=0).chat.completions.create(
                model="noosphere-ctm", messages=QUESTION))
        finally:
            os.kill(os.getpid(), signal.SIGINT)

    backend = ScriptedBackend(answer_anything)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    helper = threading.Thread(target=user)
    helper.start()
    with contextlib.redirect_stdout(shown):
        code = run(make_app(opener), ["serve", "--system", "ctm", "--port", "0", "--host", "0.0.0.0", "--no-cache",
                                      "--out", str(tmp_path)], stderr=Console(file=io.StringIO()))
    helper.join()
    assert code == 0 and shown.getvalue().startswith("serving noosphere-ctm at http://0.0.0.0:")
    assert shown.getvalue().rstrip().endswith("stopped")
    run_dir = Path(replies[0].model_extra["noosphere"]["run_dir"])
    assert run_dir.parent == tmp_path and result_of(run_dir)["answer"] == ANSWER
    assert load_bundle(run_dir)["sections"] == ["workspace"]  # what `noosphere view` shows


def test_each_served_request_is_exported_as_its_own_span_tree(tmp_path: Path) -> None:
    """`serve --otel` attaches an exporter to every request's run, as `on_run` does here."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from noosphere.otel.sink import OtelSink

    exporters: dict[Path, InMemorySpanExporter] = {}  # one a run: a run's sink shuts its exporter down when it ends

    def attach(run: Any) -> None:
        exporters[run.directory] = InMemorySpanExporter()
        run.trace.add_sink(OtelSink.to(exporters[run.directory]))

    def roots(exporter: InMemorySpanExporter) -> list[str]:
        return [span.name for span in exporter.get_finished_spans() if span.parent is None]

    with server(tmp_path, society=False, on_run=attach) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="any", max_retries=0)
        for model in ("noosphere-base", "noosphere-ctm"):
            client.chat.completions.create(model=model, messages=QUESTION)  # type: ignore[arg-type]
        # a run's spans are flushed when its trace closes, just after its result.json is written
        eventually(lambda: len(exporters) == 2 and all(len(roots(e)) == 1 for e in exporters.values()))
    assert sorted(name for e in exporters.values() for name in roots(e)) == [
        "invoke_workflow noosphere serve base", "invoke_workflow noosphere serve ctm"]
    for exporter in exporters.values():
        calls = [span for span in exporter.get_finished_spans() if span.name.startswith("chat ")]
        assert calls and all(span.parent is not None for span in calls)
