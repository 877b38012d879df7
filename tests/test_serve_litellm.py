"""`noosphere serve` reached through LiteLLM, as noosphere itself reaches a served system: a `litellm:` model id with
the server's base URL, LiteLLM's own streaming, and a noosphere society one of whose members is a served system.
LiteLLM costs seconds to import, so these tests have a file of their own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from noosphere.errors import ModelError
from noosphere.llm import Budget, Model, ScriptedBackend, open_model
from noosphere.llm.litellm_backend import import_litellm
from noosphere.runs import Run
from noosphere.serve.service import Service
from noosphere.society.config import build_society, load_society_spec
from noosphere.trace import Trace, read_trace
from tests.serve_driver import ANSWER, answer_anything
from tests.test_serve import KEY, QUESTION, server

pytestmark = pytest.mark.provider_double


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Service]]:
    with server(tmp_path_factory.mktemp("serve"), api_key=KEY) as running:
        yield running


async def test_litellm_reaches_served_systems_and_a_society_member_is_one(
        served: tuple[str, Service], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, service = served
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # what LiteLLM sends for `openai/` models
    served_base = open_model(f"litellm:openai/noosphere-base@{url}")
    assert (await served_base.complete("What is six times seven?")).text == ANSWER

    streamed = await import_litellm().acompletion(model="openai/society-democracy", api_base=url, api_key=KEY,
                                                  messages=QUESTION, stream=True)
    assert "".join([piece.choices[0].delta.content or "" async for piece in streamed]) == ANSWER

    (tmp_path / "mixed.yaml").write_text(f"""\
organisation: democracy
rounds: 1
members:
  - name: local
    role: You solve problems step by step.
  - name: remote
    role: You solve problems with a global workspace.
    model: litellm:openai/noosphere-ctm@{url}
organizer:
  name: organizer
  role: You run the discussion.
""")
    outer = ScriptedBackend(answer_anything)
    with Run.create(tmp_path / "runs", command="test") as run:
        def opener(model_id: str) -> Model:
            model = Model(outer) if model_id == "scripted" else open_model(model_id)
            return model.bind(trace=run.trace, ledger=run.ledger)

        society = build_society(load_society_spec(tmp_path / "mixed.yaml"), opener, "scripted")
        result = await society.run("What is six times seven?")
    assert result.answer == ANSWER and result.support == 1.0
    trace = list(read_trace(run.directory / "trace.jsonl"))
    remote_calls = [e for e in trace if e.kind == "model_call" and e.agent == "remote"]
    assert remote_calls and {e.model for e in remote_calls} == {"litellm:openai/noosphere-ctm"}
    assert not [e for e in trace if e.kind == "soc_forfeit"]  # every turn of the served member parsed
    served_runs = [json.loads(p.read_text()) for p in (service.settings.out).glob("*/config.json")]
    asked = [c for c in served_runs if c["served_as"] == "noosphere-ctm" and "JSON schema" in c["instructions"]]
    assert len(asked) == len(remote_calls)  # each of the member's turns was one ctm run on the server


async def test_noosphere_does_not_retry_a_spent_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "any-key-at-all")
    with server(tmp_path, society=False, total_budget=Budget(max_calls=0)) as (url, _):
        trace = Trace(None)
        model = open_model(f"litellm:openai/noosphere-base@{url}", trace=trace)
        with pytest.raises(ModelError, match="server's budget") as spent:
            await model.complete("hello")
        assert not spent.value.retryable  # a rate limit would be retried, with backoff, four times
        assert not trace.of_kind("model_retried")
