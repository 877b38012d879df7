"""The `Model` facade over the scripted backend: structured output, repair, retries, faults, cache."""

from __future__ import annotations

import asyncio
import math

import pytest
from pydantic import BaseModel, Field

from noosphere.errors import (
    BudgetExceededError,
    CapabilityError,
    ContextOverflowError,
    ModelError,
    OutputParseError,
    ScriptExhaustedError,
    UsageError,
)
from noosphere.llm import (
    Budget,
    CallCache,
    Capabilities,
    Message,
    Model,
    Reply,
    ScriptedBackend,
    Settings,
    ToolSpec,
    Usage,
    UsageLedger,
)
from noosphere.llm import model as model_module
from noosphere.llm.messages import MediaPart
from tests.helpers import scripted


class Verdict(BaseModel):
    label: str
    confidence: float = Field(ge=0.0, le=1.0)


async def test_plain_text_completion_records_call() -> None:
    model, backend, trace = scripted(["hello there"])
    completion = await model.complete("hi", agent="a1")
    assert completion.text == "hello there"
    assert completion.output is None
    assert completion.model_id == "scripted"
    [call] = trace.of_kind("model_call")
    assert call.agent == "a1" and call.response == "hello there"
    assert call.messages == [{"role": "user", "content": "hi"}]
    assert backend.prompts == ["hi"]


async def test_structured_output_parses_and_constrains() -> None:
    model, backend, trace = scripted(['{"label": "sarcastic", "confidence": 0.8}'])
    completion = await model.complete("classify", output=Verdict)
    assert completion.output == Verdict(label="sarcastic", confidence=0.8)
    request = backend.history[0]
    assert request.json_schema is not None and request.json_schema["title"] == "Verdict"
    assert request.messages[0].role == "system" and "JSON schema" in request.messages[0].content
    assert not trace.of_kind("output_repaired")


async def test_format_instruction_can_follow_the_prompt() -> None:
    """Callers whose calls share a context but ask for different forms keep the context a shared prefix."""
    model, backend, _ = scripted(['{"label": "sarcastic", "confidence": 0.8}'])
    await model.complete([Message.system("be brief"), Message.user("classify")], output=Verdict, format_at="end")
    system, user = backend.history[0].messages
    assert system.content == "be brief"
    assert user.content.startswith("classify\n\n") and "JSON schema" in user.content


async def test_broken_json_is_repaired_and_recorded() -> None:
    model, _, trace = scripted(['Sure! ```json\n{"label": "literal", "confidence": 0.4,\n```'])
    completion = await model.complete("classify", output=Verdict)
    assert completion.output == Verdict(label="literal", confidence=0.4)
    [repair] = trace.of_kind("output_repaired")
    assert repair.repair == "json_repaired"
    assert completion.repairs[0].kind == "json_repaired"


async def test_out_of_range_score_is_sent_back_and_retried() -> None:
    model, backend, trace = scripted([
        '{"label": "sarcastic", "confidence": 85}',
        '{"label": "sarcastic", "confidence": 0.85}',
    ])
    completion = await model.complete("classify", output=Verdict)
    assert completion.output is not None and completion.output.confidence == 0.85
    assert completion.attempts == 2
    retry_messages = backend.history[1].messages
    assert retry_messages[-2].role == "assistant" and "85" in retry_messages[-2].content
    assert "confidence" in retry_messages[-1].content and "less than or equal to 1" in retry_messages[-1].content
    assert [e.repair for e in trace.of_kind("output_repaired")] == ["invalid"]
    assert [e.attempt for e in trace.of_kind("model_call")] == [1, 2]


async def test_empty_replies_and_refusals_end_in_typed_error() -> None:
    model, _, trace = scripted(["", "I'm sorry, I cannot help with that.", '{"label": 3}'])
    with pytest.raises(OutputParseError) as caught:
        await model.complete("classify", output=Verdict, settings=Settings(max_retries=2))
    error = caught.value
    assert error.attempts == 3 and error.schema == "Verdict"
    assert "empty" in error.errors[0]
    [failed] = trace.of_kind("output_failed")
    assert failed.attempts == 3
    assert [e.repair for e in trace.of_kind("output_repaired")] == ["empty", "refusal", "invalid"]


async def test_a_reply_cut_off_at_max_tokens_is_not_repaired_into_an_answer() -> None:
    """`{"label": "x", "confidence": 0.1` cut at the limit could be closed by the repair, its number cut short
    (0.15 -> 0.1): it is refused and asked again, never accepted."""
    model, backend, trace = scripted([Reply('{"label": "x", "confidence": 0.1', finish_reason="length"),
                                      '{"label": "x", "confidence": 0.15}'])
    completion = await model.complete("classify", output=Verdict)
    assert completion.output == Verdict(label="x", confidence=0.15) and len(backend.history) == 2
    [cut] = [e for e in trace.of_kind("output_repaired") if e.repair == "invalid"]
    assert "cut off at the limit" in cut.detail and "may be cut short" in cut.detail


async def test_missing_field_is_named_in_correction() -> None:
    model, backend, _ = scripted(['{"label": "x"}', '{"label": "x", "confidence": 0.5}'])
    await model.complete("classify", output=Verdict)
    assert "confidence: Field required" in backend.history[1].messages[-1].content


async def test_capabilities_fail_fast_before_any_call(tmp_path) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(b"\x89PNG fake")
    model, backend, _ = scripted(["never"], capabilities=Capabilities(vision=False, json_schema=True))
    with pytest.raises(CapabilityError) as caught:
        await model.complete([Message.user("what is this?", images=(image,))])
    assert caught.value.capability == "vision"
    with pytest.raises(CapabilityError):
        await model.complete("call a tool", tools=[ToolSpec("f", "does f")])
    assert backend.history == []


@pytest.mark.parametrize(("messages", "match"), [
    ([], "no messages"),
    ((), "no messages"),
    (None, "not NoneType"),
    ({"role": "user", "content": "hi"}, "not dict"),
    (["hi"], "must be Messages, not str"),
    ([Message.user("hi"), None], "must be Messages, not NoneType"),
])
async def test_messages_that_are_no_messages_are_refused_before_any_call(messages: object, match: str) -> None:
    model, backend, _ = scripted(["ok"], scorer=lambda request: [1.0] * len(request.options))
    with pytest.raises(UsageError, match=match):
        await model.complete(messages)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=match):
        await model.score_options(messages, ["Yes", "No"])  # type: ignore[arg-type]
    assert backend.history == [] and backend.score_history == []


async def test_media_is_hashed_not_copied_into_trace(tmp_path) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(b"\x89PNG fake image bytes")
    model, _, trace = scripted(["a cat"])
    await model.complete([Message.user("what is this?", images=(image,))])
    [call] = trace.of_kind("model_call")
    media = call.messages[0]["media"][0]
    assert media["media_type"] == "image/png" and media["bytes"] == 21 and len(media["sha256"]) == 64
    assert MediaPart.from_path(image).kind == "image"
    openai = Message.user("x", images=(image,)).to_openai()
    assert openai["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_emulated_tool_calls_are_validated() -> None:
    weather = ToolSpec("get_weather", "weather for a city",
                       {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    model, backend, trace = scripted([
        '{"tool_calls": [{"name": "get_wether", "arguments": {"city": "Oslo"}}]}',
        '{"tool_calls": [{"name": "get_weather", "arguments": {}}]}',
        '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}',
    ])
    completion = await model.complete("weather in Oslo?", tools=[weather])
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [("get_weather", {"city": "Oslo"})]
    details = [e.detail for e in trace.of_kind("output_repaired")]
    assert "not one of" in details[0] and "'city' is a required property" in details[1]
    schema = backend.history[0].json_schema
    assert schema is not None and schema["properties"]["tool_calls"]["items"]["anyOf"][0]["properties"]["name"] == {
        "const": "get_weather"}


class Address(BaseModel):
    city: str
    within: Address | None = None


async def test_emulated_tool_calls_keep_the_references_of_a_tools_own_definitions() -> None:
    """A pydantic model's schema refers to its own `$defs`: nested in the reply's schema, those references pointed
    into the reply's root, where a local model's grammar found nothing (an AssertionError before any token)."""
    import jsonschema

    from noosphere.llm.gbnf import schema_grammar

    class Letter(BaseModel):
        to: Address

    send = ToolSpec("send", "send a letter", Letter.model_json_schema())
    plain = ToolSpec("get_weather", "weather for a city",
                     {"type": "object", "properties": {"city": {"type": "string"}}})
    model, backend, _ = scripted(['{"tool_calls": [{"name": "send", "arguments": {"to": {"city": "Oslo", "within": '
                                  '{"city": "Norway"}}}}]}'])
    completion = await model.complete("write to Oslo", tools=[send, plain])
    assert completion.tool_calls[0].arguments == {"to": {"city": "Oslo", "within": {"city": "Norway"}}}
    schema = backend.history[0].json_schema
    assert schema is not None and schema_grammar(schema)
    call = {"name": "send", "arguments": {"to": {"city": "Oslo", "within": {"city": "Norway"}}}}
    jsonschema.validate({"tool_calls": [call]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool_calls": [{"name": "send", "arguments": {"to": {"city": 3}}}]}, schema)
    assert schema["properties"]["tool_calls"]["items"]["anyOf"][1]["properties"]["arguments"] == plain.parameters


async def test_a_call_without_its_wrapper_is_that_call_and_anything_else_is_asked_again() -> None:
    """`{"name": ..., "arguments": ...}` (or a list of them) is read as the call it is; an object with neither the
    wrapper nor a name is not a decision to call nothing: the model is told and asked again."""
    weather = ToolSpec("get_weather", "weather for a city",
                       {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    for bare in ('{"name": "get_weather", "arguments": {"city": "Oslo"}}',
                 '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'):
        model, _, _ = scripted([bare])
        completion = await model.complete("weather in Oslo?", tools=[weather])
        assert [(c.name, c.arguments) for c in completion.tool_calls] == [("get_weather", {"city": "Oslo"})]
    model, backend, trace = scripted(['{"city": "Oslo"}', '{"tool_calls": []}'])
    assert (await model.complete("weather in Oslo?", tools=[weather])).tool_calls == ()
    assert len(backend.history) == 2 and "tool_calls: Field required" in trace.of_kind("output_repaired")[0].detail


async def test_json_is_found_among_prose_brackets_and_other_fences() -> None:
    replies = ['{"label": "a", "confidence": 0.5} (I used {2} because of [1])',
               'As shown in [1], the answer: {"label": "a", "confidence": 0.5}.',
               '```python\nprint(1)\n```\nSo:\n```json\n{"label": "a", "confidence": 0.5}\n```']
    for reply in replies:
        model, _, _ = scripted([reply])
        completion = await model.complete("classify", output=Verdict, settings=Settings(max_retries=0))
        assert completion.output == Verdict(label="a", confidence=0.5), reply


async def test_no_tool_call_is_a_valid_answer() -> None:
    model, _, _ = scripted(['{"tool_calls": []}'])
    completion = await model.complete("tell me a joke", tools=[ToolSpec("f", "does f")])
    assert completion.tool_calls == ()


async def test_output_and_tools_together_is_a_usage_error() -> None:
    model, _, _ = scripted([])
    with pytest.raises(UsageError):
        await model.complete("x", output=Verdict, tools=[ToolSpec("f", "f")])


async def test_retryable_faults_back_off_then_succeed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    model, _, trace = scripted([ModelError("scripted", "429 rate limited", retryable=True), "ok"])
    completion = await model.complete("hi")
    assert completion.text == "ok"
    [retry] = trace.of_kind("model_retried")
    assert "rate limited" in retry.error and retry.delay_s > 0


async def test_non_retryable_fault_raises_at_once() -> None:
    model, backend, _ = scripted([ModelError("scripted", "401 bad key"), "unused"])
    with pytest.raises(ModelError, match="bad key"):
        await model.complete("hi")
    assert len(backend.history) == 1


async def test_timeout_is_retryable_then_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    monkeypatch.setattr(model_module, "FAULT_RETRIES", 1)
    model, _, trace = scripted(lambda request: "late", latency_s=0.2)
    with pytest.raises(ModelError, match="timed out"):
        await model.complete("hi", settings=Settings(timeout_s=0.01))
    assert len(trace.of_kind("model_retried")) == 1


async def test_in_process_backend_is_not_timed_out() -> None:
    """An embedded model's call is bounded by max_tokens; a timeout would discard work done on a busy engine."""
    model, backend, trace = scripted(lambda request: "slow but done", latency_s=0.05)
    backend.in_process = True
    assert (await model.complete("hi", settings=Settings(timeout_s=0.01))).text == "slow but done"
    assert not trace.of_kind("model_retried")


async def test_script_exhaustion_is_a_model_error() -> None:
    model, _, _ = scripted([])
    with pytest.raises(ScriptExhaustedError):
        await model.complete("hi")


async def test_cache_makes_reruns_free_and_marks_them(tmp_path) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    model, backend, trace = scripted(["first"])
    model = model.bind(cache=cache)
    first = await model.complete("same prompt")
    second = await model.complete("same prompt")
    assert first.text == second.text == "first"
    assert not first.cached and second.cached
    assert len(backend.history) == 1
    assert [e.cached for e in trace.of_kind("model_call")] == [False, True]
    different_seed = model.bind(settings=Settings(seed=1))
    with pytest.raises(ScriptExhaustedError):
        await different_seed.complete("same prompt")


async def test_an_unreadable_cache_entry_is_asked_again_not_a_crash(tmp_path) -> None:
    import sqlite3

    cache = CallCache(tmp_path / "calls.sqlite")
    model, backend, _ = scripted(["first", "again"])
    model = model.bind(cache=cache)
    assert (await model.complete("same prompt")).text == "first"
    with sqlite3.connect(tmp_path / "calls.sqlite") as db:
        db.execute("UPDATE calls SET reply = substr(reply, 1, 10)")
    again = await model.complete("same prompt")
    assert again.text == "again" and not again.cached and len(backend.history) == 2
    assert (await model.complete("same prompt")).cached  # stored afresh


async def test_a_reply_carries_its_own_log_probability_when_asked_and_the_cache_keeps_it(tmp_path) -> None:
    logprobs = Capabilities(json_schema=True, logprobs=True)
    backend = ScriptedBackend([Reply("plain"), Reply("red", usage=Usage(4, 2), logprob=-1.0),
                               Reply("red", usage=Usage(4, 2), logprob=-1.0)], capabilities=logprobs)
    model = Model(backend, cache=CallCache(tmp_path / "calls.sqlite"))
    unasked = await model.complete("name a colour")
    assert unasked.logprob is None and unasked.token_probability is None
    asked = await model.complete("name a colour", logprobs=True)  # the cached reply has none: asked again
    assert not asked.cached and len(backend.history) == 2 and backend.history[1].logprobs
    assert asked.logprob == -1.0 and asked.token_probability == pytest.approx(math.exp(-0.5))
    again = await model.complete("name a colour", logprobs=True)
    assert again.cached and again.logprob == -1.0 and len(backend.history) == 2
    silent = Model(ScriptedBackend([Reply("red", usage=Usage(4, 2))], capabilities=logprobs))
    with pytest.raises(CapabilityError, match="provider returned none"):
        await silent.complete("name a colour", logprobs=True)
    assert silent.ledger.total.total_tokens == 6  # the reply was generated: what it cost is counted
    cannot = Model(ScriptedBackend(["red"], capabilities=Capabilities(json_schema=True)))
    with pytest.raises(CapabilityError, match="logprobs"):
        await cannot.complete("name a colour", logprobs=True)
    assert cannot.backend.history == []  # type: ignore[attr-defined]


async def test_context_overflow_errors_or_truncates() -> None:
    model, backend, trace = scripted(["ok", "ok"])
    backend.context_window = 30
    long_history = [Message.system("be brief"), *[Message.user("word " * 10) for _ in range(3)], Message.user("q")]
    with pytest.raises(ContextOverflowError) as caught:
        await model.complete(long_history, settings=Settings(max_tokens=5))
    assert caught.value.context == 30
    completion = await model.complete(long_history, settings=Settings(max_tokens=5, overflow="truncate"))
    assert completion.text == "ok"
    [truncated] = trace.of_kind("prompt_truncated")
    assert truncated.dropped_messages == 1
    kept = backend.history[-1].messages
    assert kept[0].content == "be brief" and kept[-1].content == "q"


async def test_truncating_a_repairs_retry_keeps_the_task_and_drops_the_bad_reply() -> None:
    """The retry adds the bad reply and a correction; what is dropped to fit is between the task and the
    correction (the bad reply), never the task itself."""
    class Count(BaseModel):
        value: int

    prompt = [Message.system("be brief"), Message.user("word " * 35 + "how many?")]
    model, backend, trace = scripted(["I think it is seven", '{"value": 7}'])
    await model.complete(prompt, output=Count)  # no window: the retry's whole prompt, measured
    whole = backend.count_tokens(backend.history[-1].messages)
    assert whole is not None
    model, backend, trace = scripted(["I think it is seven", '{"value": 7}'])
    backend.context_window = whole - 5 + 20  # the retry fits without the bad reply (5 words), not with it
    completion = await model.complete(prompt, output=Count, settings=Settings(max_tokens=20, overflow="truncate"))
    assert completion.output == Count(value=7)
    retry = backend.history[-1].messages
    assert any("how many?" in m.content for m in retry) and "I think it is seven" not in [m.content for m in retry]
    assert [m.role for m in retry][:2] == ["system", "user"] and trace.of_kind("prompt_truncated")


async def test_budget_stops_calls_and_ledger_counts_per_agent() -> None:
    model, _, _ = scripted(["one two", "three", "four"])
    ledger = UsageLedger(Budget(max_calls=2))
    model = model.bind(ledger=ledger)
    await model.complete("a", agent="x")
    await model.complete("b", agent="y")
    with pytest.raises(Exception, match="calls budget"):
        await model.complete("c", agent="x")
    summary = ledger.summary()
    assert summary["total"]["calls"] == 2
    assert summary["by_agent"]["x"]["completion_tokens"] == 2


async def test_calls_started_together_cannot_overshoot_a_budget_of_calls() -> None:
    model, backend, _ = scripted(["a", "b", "c", "d"], latency_s=0.01)
    model = model.bind(ledger=UsageLedger(Budget(max_calls=2)))
    outcomes = await asyncio.gather(*(model.complete(q) for q in "wxyz"), return_exceptions=True)
    assert len(backend.history) == 2 and sum(isinstance(o, BudgetExceededError) for o in outcomes) == 2


@pytest.mark.parametrize(("limit", "first_reply_saw"), [(8, 8), (1, 1)])
async def test_concurrent_calls_overlap_up_to_the_backend_limit(limit: int, first_reply_saw: int) -> None:
    """With latency, parallel requests have all arrived before the first reply; a limit of 1 serialises."""
    seen: list[int] = []
    holder: list[ScriptedBackend] = []
    model, backend, _ = scripted(lambda request: seen.append(len(holder[0].history)) or "ok",
                                 latency_s=0.02, max_concurrency=limit)
    holder.append(backend)
    await asyncio.gather(*(model.complete(f"q{i}") for i in range(8)))
    assert seen[0] == first_reply_saw


def test_sync_facade() -> None:
    model, _, _ = scripted(['{"label": "a", "confidence": 1}'])
    assert model.complete_sync("x", output=Verdict).output == Verdict(label="a", confidence=1.0)


async def test_a_listed_choice_keeps_its_options_out_of_the_prompt_but_in_the_grammar() -> None:
    from noosphere.llm.forms import choice_form

    form = choice_form("Pick", "action", ["go east", "take key"], "one admissible action", listed=True)
    model, backend, _ = scripted(['{"action": "take key"}'])
    completion = await model.complete("Admissible actions: go east, take key", output=form)
    assert completion.output.action == "take key"  # type: ignore[union-attr]
    request = backend.history[0]
    assert "take key" not in request.messages[0].content and "exactly as listed above" in request.messages[0].content
    assert request.json_schema is not None and request.json_schema["properties"]["action"]["enum"] == [
        "go east", "take key"]
