"""The LiteLLM backend through LiteLLM's own offline double (`mock_response`): no network is used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from noosphere.concurrent import forfeits
from noosphere.errors import (
    BudgetExceededError,
    CapabilityError,
    ContextOverflowError,
    ModelError,
    OutputParseError,
    ProviderRefusedError,
    UsageError,
)
from noosphere.llm import Budget, Message, Settings, ToolSpec, open_model
from noosphere.llm import model as model_module
from noosphere.llm.litellm_backend import _reply, import_litellm
from noosphere.llm.usage import UsageLedger
from noosphere.runs import Run
from noosphere.trace import Trace

pytestmark = pytest.mark.provider_double

SECRET = "sk-test-abcdefghijklmnopqrstuvwxyz123456"


class Verdict(BaseModel):
    label: str


async def test_text_reply_usage_and_cost_without_leaking_the_key(tmp_path: Path) -> None:
    with Run.create(tmp_path, command="test") as run:
        model = open_model("litellm:openai/gpt-4o", trace=run.trace, ledger=run.ledger, api_key=SECRET,
                           extra={"mock_response": '{"label": "sarcastic"}'})
        assert model.capabilities.vision and model.capabilities.tools and model.capabilities.json_schema
        completion = await model.complete("Is it sarcastic?", output=Verdict, agent="judge")
        run.finish({"label": completion.output.label if completion.output else None})
    assert completion.output == Verdict(label="sarcastic")
    assert completion.usage.completion_tokens > 0 and (completion.usage.cost_usd or 0) > 0
    assert SECRET not in repr(model.backend)
    for name in ("trace.jsonl", "config.json", "result.json"):
        assert SECRET not in (run.directory / name).read_text()
    assert json.loads((run.directory / "result.json").read_text())["usage"]["by_agent"]["judge"]["calls"] == 1


async def test_native_tool_calls_are_parsed_and_validated() -> None:
    weather = ToolSpec("get_weather", "weather", {"type": "object", "properties": {"city": {"type": "string"}},
                                                  "required": ["city"]})
    mock_call = [{"id": "c1", "type": "function",
                  "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})}}]
    model = open_model("litellm:openai/gpt-4o", extra={"mock_tool_calls": mock_call, "mock_response": ""})
    completion = await model.complete("Weather in Oslo?", tools=[weather])
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [("get_weather", {"city": "Oslo"})]


async def test_native_tool_arguments_cut_short_are_repaired_and_ones_that_are_no_object_asked_again() -> None:
    weather = ToolSpec("get_weather", "weather", {"type": "object", "properties": {"city": {"type": "string"}}})

    def calls(arguments: str) -> list[dict[str, object]]:
        return [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]

    cut = open_model("litellm:openai/gpt-4o", extra={"mock_tool_calls": calls('{"city": "Oslo"'), "mock_response": ""})
    completion = await cut.complete("Weather in Oslo?", tools=[weather])
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [("get_weather", {"city": "Oslo"})]
    for garbage in ("null", "[1, 2]", "not json at all"):
        model = open_model("litellm:openai/gpt-4o", extra={"mock_tool_calls": calls(garbage), "mock_response": ""})
        with pytest.raises(OutputParseError) as caught:
            await model.complete("Weather in Oslo?", tools=[weather], settings=Settings(max_retries=1))
        assert "not a JSON object" in caught.value.errors[0], garbage


async def test_rate_limits_are_retried_with_backoff_then_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    model = open_model("litellm:openai/gpt-4o", extra={"mock_response": "litellm.RateLimitError"})
    with pytest.raises(ModelError) as caught:
        await model.complete("hi")
    assert caught.value.retryable
    assert "RateLimitError" in str(caught.value)


async def test_unknown_model_declares_no_media_and_fails_fast(tmp_path: Path) -> None:
    image = tmp_path / "x.png"
    image.write_bytes(b"\x89PNG")
    model = open_model("litellm:openai/someone-unknown-model", api_base="http://127.0.0.1:9")
    with pytest.raises(CapabilityError, match="vision"):
        await model.complete([Message.user("what is it?", images=(image,))])


def test_a_providers_prompt_cache_is_counted_as_reused_prompt_tokens() -> None:
    litellm = import_litellm()
    response = litellm.ModelResponse(
        model="gpt-4o", choices=[{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        usage=litellm.Usage(prompt_tokens=10, completion_tokens=2, prompt_tokens_details={"cached_tokens": 6}))
    usage = _reply(litellm, response).usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.reused_prompt_tokens) == (10, 2, 6)


def test_the_context_window_is_the_models_input_size_and_the_options_are_part_of_the_cache_key() -> None:
    """gpt-4o takes 128,000 prompt tokens (LiteLLM's `max_tokens` for it, 16,384, is its output limit); two
    backends that differ in provider options do not share cached replies."""
    plain = open_model("litellm:openai/gpt-4o").backend
    assert plain.context_window == 128_000
    assert open_model("litellm:openai/someone-unknown-model").backend.context_window is None
    a, b = (open_model("litellm:openai/gpt-4o", extra={"reasoning_effort": effort}).backend
            for effort in ("low", "high"))
    assert len({plain.fingerprint, a.fingerprint, b.fingerprint}) == 3
    assert plain.fingerprint == "litellm:openai/gpt-4o@default"  # unchanged where there are no options


async def test_a_providers_5xx_through_litellms_catch_all_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = import_litellm()
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    model = open_model("litellm:openai/gpt-4o", extra={"mock_response": "fine"})
    real = litellm.acompletion
    failures = [litellm.APIError(status_code=529, message="overloaded", llm_provider="openai", model="gpt-4o"),
                # a 200 whose body is no JSON (a proxy's page): how LiteLLM's httpx providers (hosted_vllm/) say it
                litellm.APIError(status_code=200, message="Unable to get json response - Expecting value",
                                 llm_provider="hosted_vllm", model="m"),
                litellm.APIError(status_code=418, message="a teapot", llm_provider="openai", model="gpt-4o")]

    async def flaky(**kwargs: object) -> object:
        if failures and failures[0].status_code in (529, 200):
            raise failures.pop(0)
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", flaky)
    assert (await model.complete("hi")).text == "fine"

    async def teapot(**kwargs: object) -> object:
        raise failures[0]

    monkeypatch.setattr(litellm, "acompletion", teapot)
    with pytest.raises(ModelError) as caught:
        await model.complete("hi again")
    assert not caught.value.retryable


@pytest.mark.parametrize("how", ["score", "generate"])
async def test_a_provider_that_refuses_logprobs_stops_the_run_and_other_400s_forfeit(
        how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that lists `logprobs` among its parameters and then answers 400 to a request for them forfeited
    every turn one by one, the run going on without a score; the same 400 to a request without them, or another
    400, is this call's fault."""
    litellm = import_litellm()
    model = open_model("litellm:openai/gpt-4o", extra={"mock_response": "fine"})
    sent: list[dict[str, object]] = []

    async def refuse(**kwargs: object) -> object:
        sent.append(kwargs)
        said = "logprobs is not supported by this model" if kwargs.get("logprobs") else "max_tokens is too large"
        raise litellm.BadRequestError(message=said, llm_provider="openai", model="gpt-4o")

    monkeypatch.setattr(litellm, "acompletion", refuse)
    with pytest.raises(CapabilityError, match=r"refused a request for them \(400: .*logprobs is not supported.*"
                                              r"--scores samples") as caught:
        if how == "score":
            await model.score_options("Is it right?", ["Yes", "No"])
        else:
            await model.complete("hi", logprobs=True)
    assert len(sent) == 1 and sent[0]["logprobs"] and not forfeits(caught.value)
    with pytest.raises(ModelError, match="max_tokens is too large") as other:
        await model.complete("hi")
    assert forfeits(other.value)


async def test_a_providers_4xx_is_one_error_not_litellms_own_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong key, a model the provider does not have, a request it refuses: LiteLLM raises errors that derive from
    openai's, not from its own OpenAIError (a traceback before). A refused request is a ModelError, not retried (the
    turn is forfeited); a refused key or model is the caller's mistake, the same for every call, so it is a usage
    error that stops the run instead of forfeiting every item of a benchmark one by one."""
    litellm = import_litellm()
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    model = open_model("litellm:openai/gpt-4o", extra={"mock_response": "fine"})
    calls = 0
    for error, kind in (
            (litellm.AuthenticationError(message="invalid key", llm_provider="openai", model="gpt-4o"),
             ProviderRefusedError),
            (litellm.NotFoundError(message="no such model", llm_provider="openai", model="gpt-4o"),
             ProviderRefusedError),
            # an OpenAI-compatible server's 403 comes through LiteLLM's catch-all, not as a typed error
            (litellm.APIError(status_code=403, message="no access", llm_provider="openai", model="gpt-4o"),
             ProviderRefusedError),
            (litellm.BadRequestError(message="LLM Provider NOT provided", llm_provider="", model="foo"), ModelError)):
        async def refuse(error: Exception = error, **kwargs: object) -> object:
            nonlocal calls
            calls += 1
            raise error

        monkeypatch.setattr(litellm, "acompletion", refuse)
        calls = 0
        with pytest.raises(kind) as caught:
            await model.complete("hi")
        assert calls == 1 and type(error).__name__ in str(caught.value)
        assert str(caught.value).startswith("litellm:openai/gpt-4o: ")
        assert forfeits(caught.value) == (kind is ModelError)


async def test_a_reply_without_choices_is_a_fault_asked_again_not_an_index_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`choices: []` (a proxy's or a content filter's) was an IndexError traceback; it is a malformed reply, retried
    and traced, then the turn's `ModelError`."""
    litellm = import_litellm()
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    model = open_model("litellm:openai/gpt-4o", extra={"mock_response": "fine"}, trace=Trace(None))
    real = litellm.acompletion
    empty = 1

    async def none_then_fine(**kwargs: object) -> object:
        nonlocal empty
        if empty:
            empty -= 1
            return litellm.ModelResponse(choices=[])
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", none_then_fine)
    assert (await model.complete("hi")).text == "fine"
    assert "no choices" in model.trace.of_kind("model_retried")[0].error

    async def never(**kwargs: object) -> object:
        return litellm.ModelResponse(choices=[])

    monkeypatch.setattr(litellm, "acompletion", never)
    for call in (model.complete("hi again"), model.score_options("Is it?", ["Yes", "No"])):
        with pytest.raises(ModelError, match="no choices") as caught:
            await call
        assert caught.value.retryable and forfeits(caught.value)


async def test_an_unreadable_reply_is_one_bounded_line_not_litellms_traceback_and_the_whole_reply(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """LiteLLM's error for a reply it cannot read (a token count of 3.7) goes on with a traceback and the reply: a
    long reply made a ModelError of megabytes, traced at every retry and printed by the command line."""
    litellm = import_litellm()
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    model = open_model("litellm:openai/gpt-4o", extra={"mock_response": "fine"}, trace=Trace(None))
    said = ("Invalid response object Traceback (most recent call last):\n  File \"convert_dict_to_response.py\", "
            "line 727\npydantic_core.ValidationError: 1 validation error\n\n"
            f"received_args={{'content': '{'x' * 50_000}'}}")

    async def unreadable(**kwargs: object) -> object:
        raise litellm.InternalServerError(message=said, llm_provider="openai", model="gpt-4o")

    monkeypatch.setattr(litellm, "acompletion", unreadable)
    with pytest.raises(ModelError) as caught:
        await model.complete("hi")
    message = str(caught.value)
    assert message.endswith("Invalid response object") and "\n" not in message and "Traceback" not in message
    assert all(len(event.error) < 2000 for event in model.trace.of_kind("model_retried"))


async def test_negative_token_counts_are_a_malformed_reply_not_a_refund(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy's negative token counts were counted as they came, and LiteLLM priced them: the ledger went below
    zero and every budget on tokens or money got further away with each call."""
    litellm = import_litellm()
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    model = open_model("litellm:openai/gpt-4o", trace=Trace(None))

    async def refund(**kwargs: object) -> object:
        return litellm.ModelResponse(
            model="gpt-4o", choices=[{"message": {"role": "assistant", "content": "Yes"}, "finish_reason": "stop"}],
            usage=litellm.Usage(prompt_tokens=-100_000, completion_tokens=1))

    monkeypatch.setattr(litellm, "acompletion", refund)
    with pytest.raises(ModelError, match="-100000 prompt tokens") as caught:
        await model.complete("hi")
    assert caught.value.retryable and len(model.trace.of_kind("model_retried")) == model_module.FAULT_RETRIES
    assert model.ledger.total.total_tokens == 0 and not model.ledger.total.cost_usd


async def test_a_key_a_server_quotes_in_its_error_is_redacted_however_it_is_shaped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-hosted server's key need not look like one (vLLM's example is `token-abc123`): quoted back in a refusal
    or a fault, it was in the error the command line prints and in every retry's trace event."""
    litellm = import_litellm()
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    key = "token-abc123"
    for error in (litellm.AuthenticationError(message=f"invalid key Bearer {key}", llm_provider="openai", model="m"),
                  litellm.InternalServerError(message=f"overloaded for {key}", llm_provider="openai", model="m")):
        async def refuse(error: Exception = error, **kwargs: object) -> object:
            raise error

        monkeypatch.setattr(litellm, "acompletion", refuse)
        trace = Trace(tmp_path / f"{type(error).__name__}.jsonl")
        model = open_model("litellm:openai/m@http://127.0.0.1:9/v1", api_key=key, trace=trace)
        with pytest.raises((ModelError, ProviderRefusedError)) as caught:
            await model.complete("hi")
        trace.close()
        assert key not in str(caught.value) and "[REDACTED]" in str(caught.value)
        assert key not in (tmp_path / f"{type(error).__name__}.jsonl").read_text()


async def test_a_reply_without_usage_is_counted_here_so_budgets_still_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that sends no `usage` (LiteLLM reads it as 0 and 0 tokens) was counted as free: a budget on tokens or
    money was never reached. Its tokens are counted with LiteLLM's tokenizer and priced where the model is."""
    litellm = import_litellm()
    model = open_model("litellm:openai/gpt-4o", trace=Trace(None), ledger=UsageLedger(Budget(max_tokens=40)))

    async def unreported(**kwargs: object) -> object:
        return litellm.ModelResponse(
            model="gpt-4o", choices=[{"message": {"role": "assistant", "content": "Oslo, the capital of Norway"},
                                      "finish_reason": "stop"}], usage=litellm.Usage(prompt_tokens=0,
                                                                                    completion_tokens=0))

    monkeypatch.setattr(litellm, "acompletion", unreported)
    usage = (await model.complete("Which city is the capital of Norway?")).usage
    assert usage.prompt_tokens > 5 and usage.completion_tokens > 3 and (usage.cost_usd or 0) > 0
    with pytest.raises(BudgetExceededError):
        for _ in range(10):
            await model.complete("Which city is the capital of Norway?")


async def test_a_providers_retry_after_is_waited_before_the_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 429 or 503 that says `Retry-After: 30` was retried on the backoff alone (1, 2, 4, 8 s): every retry came too
    soon and the turn was forfeited. The retry now waits at least what the provider asked (up to a minute)."""
    litellm = import_litellm()
    monkeypatch.setattr(model_module, "BACKOFF_BASE_S", 0.001)
    waited: list[float] = []

    async def no_wait(delay: float) -> None:
        waited.append(delay)

    monkeypatch.setattr(model_module.asyncio, "sleep", no_wait)
    model = open_model("litellm:openai/gpt-4o", extra={"mock_response": "fine"}, trace=Trace(None))
    real = litellm.acompletion
    refusals = [litellm.RateLimitError(message="slow down", llm_provider="openai", model="gpt-4o"),
                litellm.ServiceUnavailableError(message="busy", llm_provider="openai", model="gpt-4o"),
                litellm.RateLimitError(message="later", llm_provider="openai", model="gpt-4o")]
    for refusal, header in zip(refusals, ({"retry-after": "30"}, {"retry-after-ms": "1500"},
                                          {"retry-after": "86400"}), strict=True):
        refusal.litellm_response_headers = header  # type: ignore[attr-defined]

    async def refused_first(**kwargs: object) -> object:
        if refusals:
            raise refusals.pop(0)
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", refused_first)
    assert (await model.complete("hi")).text == "fine"
    assert waited == [30.0, 1.5, model_module.MAX_RETRY_AFTER_S]
    assert [event.delay_s for event in model.trace.of_kind("model_retried")] == waited


async def test_a_native_tool_call_without_a_name_is_sent_back_not_a_validation_traceback() -> None:
    """`"name": null` in a tool call was a pydantic ValidationError out of `complete` (a traceback); it names no
    tool, so it is refused and told to the model as an unknown name is, then `OutputParseError`."""
    weather = ToolSpec("get_weather", "weather", {"type": "object", "properties": {"city": {"type": "string"}}})
    nameless = [{"id": "c1", "type": "function", "function": {"name": None, "arguments": "{}"}}]
    model = open_model("litellm:openai/gpt-4o", extra={"mock_tool_calls": nameless, "mock_response": ""})
    with pytest.raises(OutputParseError) as caught:
        await model.complete("Weather in Oslo?", tools=[weather], settings=Settings(max_retries=1))
    assert "is not one of ['get_weather']" in caught.value.errors[0]


async def test_a_providers_context_overflow_on_a_model_of_unknown_window_says_what_the_provider_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-hosted model's window is not in LiteLLM's table: its overflow said "exceeds the context window of 0",
    which no model has. It now says what the provider said (its window, the tokens it counted)."""
    litellm = import_litellm()
    said = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"

    async def too_long(**kwargs: object) -> object:
        raise litellm.ContextWindowExceededError(message=said, model="m", llm_provider="openai")

    monkeypatch.setattr(litellm, "acompletion", too_long)
    model = open_model("litellm:openai/m@http://127.0.0.1:9/v1")
    assert model.backend.context_window is None
    with pytest.raises(ContextOverflowError) as caught:
        await model.complete("hi")
    assert "window of 0" not in str(caught.value) and "maximum context length is 4096" in str(caught.value)


async def test_no_api_key_is_one_usage_error_not_a_server_fault_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without OPENAI_API_KEY openai's client refuses to be made, and LiteLLM passes that on as a server's 500: it was
    retried four times with backoff, then each turn forfeited. It is a usage error, at the first call."""
    litellm = import_litellm()
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(name, raising=False)
    real = litellm.acompletion
    calls = 0

    async def counted(**kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    model = open_model("litellm:openai/m@http://127.0.0.1:9/v1", trace=Trace(None))
    with pytest.raises(UsageError, match="OPENAI_API_KEY") as caught:
        await model.complete("hi")
    assert calls == 1 and not model.trace.of_kind("model_retried") and not forfeits(caught.value)


async def test_native_tool_arguments_cut_off_at_the_token_limit_are_sent_back_not_repaired(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Arguments cut off at max_tokens (`{"city": "Osl`, finish_reason length) were closed by a repair and the call
    accepted with "Osl" for "Oslo", silently; as a structured output closed by a repair at the limit is, they are
    refused and the model told it was cut off."""
    litellm = import_litellm()
    weather = ToolSpec("get_weather", "weather", {"type": "object", "properties": {"city": {"type": "string"}}})

    async def cut_off(**kwargs: object) -> object:
        return litellm.ModelResponse(model="gpt-4o", choices=[{"finish_reason": "length", "message": {
            "role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Osl'}}]}}])

    monkeypatch.setattr(litellm, "acompletion", cut_off)
    model = open_model("litellm:openai/gpt-4o")
    with pytest.raises(OutputParseError) as caught:
        await model.complete("Weather in Oslo?", tools=[weather], settings=Settings(max_retries=1))
    assert "cut off at the limit" in caught.value.errors[0]


@pytest.mark.parametrize("model_id", ["litellm:foo", "litellm: ", "litellm:open ai/gpt-4o", "litellm:@http://127.0.0.1:9",
                                      "litellm:nosuchprovider/model@http://127.0.0.1:9/v1", "litellm:openai/",
                                      "litellm:openai/ "])
def test_a_model_id_without_a_provider_and_a_model_litellm_can_tell_is_refused_on_opening(model_id: str) -> None:
    """Every call would fail (LiteLLM's "LLM Provider NOT provided", or a request for a model named ""): one usage
    error before any run or call. `litellm:openai/` is what an unset `$MODEL` makes of `litellm:openai/$MODEL`."""
    with pytest.raises(UsageError, match="cannot tell a provider and a model"):
        open_model(model_id)
    assert open_model("litellm:someone/model", extra={"custom_llm_provider": "openai"}).id == "litellm:someone/model"
