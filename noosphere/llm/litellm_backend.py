"""Every hosted or self-hosted provider, through LiteLLM.

Capabilities come from LiteLLM's model map (overridable, e.g. for an OpenAI-compatible server it
does not know). Provider faults are classified once here: rate limits, timeouts, connection and
server errors are retryable (the `Model` retries them with backoff); the rest fail at once.
LiteLLM is imported lazily, and told to use its bundled price map rather than fetch one.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import json_repair

from noosphere.environment import environment
from noosphere.errors import CapabilityError, ContextOverflowError, ModelError, ProviderRefusedError, UsageError
from noosphere.llm.messages import Message
from noosphere.llm.scoring import NO_LOGPROBS, NO_TOP_LOGPROBS, PREFIX_REFUSED, SAMPLE_INSTEAD, check_first_tokens
from noosphere.llm.tools import UNPARSED
from noosphere.llm.types import Capabilities, Reply, Request, ScoreReply, ScoreRequest, Settings, ToolCall, Usage
from noosphere.redact import Redactor

LOGPROB_SLACK = 1e-4
CALLER_REFUSED = (401, 403, 404)
"""A provider's answers to the caller, not to one request: a wrong key, no access, a model it does not have."""
"""How far above 0 a provider's log-probability may come back (a float's rounding) before it is no log-probability."""


def import_litellm() -> Any:
    """LiteLLM, set to use its bundled price map: fetching one at import would reach the network. The setting is
    an environment variable LiteLLM reads when it is imported: it is set for that import only."""
    with environment(LITELLM_LOCAL_MODEL_COST_MAP="True"):
        import litellm

    litellm.suppress_debug_info = True
    return litellm


TOP_LOGPROBS = 20
"""Alternatives asked for at the first token when scoring options (OpenAI's maximum)."""


def _supports_logprobs(litellm: Any, model: str) -> bool:
    try:
        return "logprobs" in (litellm.get_supported_openai_params(model=model) or ())
    except Exception:
        return False


def _probe(litellm: Any, check: str, model: str) -> bool:
    try:
        return bool(getattr(litellm, check)(model=model))
    except Exception:  # unknown models make LiteLLM raise; treat as "not supported"
        return False


class LiteLLMBackend:
    native_tools = True
    in_process = False

    def __init__(self, model: str, *, api_base: str | None = None, api_key: str | None = None,
                 capabilities: Capabilities | None = None, max_concurrency: int = 8,
                 extra: dict[str, Any] | None = None) -> None:
        self.model = model
        self.model_id = f"litellm:{model}"
        self.api_base = api_base
        self._api_key = api_key  # kept off every trace and repr
        self.max_concurrency = max_concurrency
        self.extra = extra or {}
        litellm = import_litellm()
        try:  # a provider LiteLLM cannot tell would fail every call: refused before any (`litellm:gpt4o`, `: `)
            named = litellm.get_llm_provider(model, custom_llm_provider=self.extra.get("custom_llm_provider"),
                                             api_base=api_base)[0]
        except Exception:
            named = None
        if not (named or "").strip():  # `litellm:openai/` (an unset $MODEL, say): a provider and no model
            raise UsageError(f"LiteLLM cannot tell a provider and a model in {model!r} (of litellm:{model}); "
                             "give it as litellm:<provider>/<model>, e.g. litellm:openai/gpt-4o or "
                             "litellm:ollama/llama3") from None
        self.capabilities = replace(capabilities or Capabilities(
            vision=_probe(litellm, "supports_vision", model),
            audio=_probe(litellm, "supports_audio_input", model),
            tools=_probe(litellm, "supports_function_calling", model),
            json_schema=_probe(litellm, "supports_response_schema", model),
            logprobs=_supports_logprobs(litellm, model),
        ), first_token_scores=True)  # what `score` reads is the first token's top alternatives
        self.context_window: int | None = _input_window(litellm, model)

    def __repr__(self) -> str:
        return f"LiteLLMBackend({self.model!r}, api_base={self.api_base!r})"

    @property
    def fingerprint(self) -> str:
        """What the replies depend on besides the request: the model, where it is served and the provider options
        (`extra`, hashed: it may hold headers)."""
        base = f"litellm:{self.model}@{self.api_base or 'default'}"
        if not self.extra:
            return base
        options = json.dumps(self.extra, sort_keys=True, default=str)
        return f"{base}+{hashlib.sha256(options.encode()).hexdigest()[:12]}"

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        try:
            return int(import_litellm().token_counter(model=self.model, messages=[m.to_openai() for m in messages]))
        except Exception:
            return None

    def _count_text(self, text: str) -> int:
        try:
            return int(import_litellm().token_counter(model=self.model, text=text)) if text else 0
        except Exception:
            return 0

    def _reported(self, usage: Usage, messages: tuple[Message, ...], *, completion_tokens: int) -> Usage:
        """The usage a provider reported, or, where it reported none (no `usage`, which LiteLLM reads as 0 and 0
        tokens, which no call has), the tokens counted here with LiteLLM's tokenizer for the model, and priced where
        the model is: an estimate, which keeps budgets on tokens and money working instead of never reached."""
        if usage.prompt_tokens or usage.completion_tokens or not messages:
            return usage
        prompt_tokens = self.count_tokens(messages) or 0
        cost = usage.cost_usd
        if cost is not None:  # priced from the 0 tokens reported
            try:
                cost = float(sum(import_litellm().cost_per_token(model=self.model, prompt_tokens=prompt_tokens,
                                                                 completion_tokens=completion_tokens)))
            except Exception:
                cost = None
        return replace(usage, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost_usd=cost)

    def _arguments(self, request: Request) -> dict[str, Any]:
        settings = request.settings
        args: dict[str, Any] = {
            "model": self.model, "messages": [m.to_openai() for m in request.messages],
            "temperature": settings.temperature, "top_p": settings.top_p, "max_tokens": settings.max_tokens,
            "seed": settings.seed, "timeout": settings.timeout_s, "num_retries": 0, **self.extra,
        }
        if settings.stop:
            args["stop"] = list(settings.stop)
        if self.api_base:
            args["api_base"] = self.api_base
        if self._api_key:
            args["api_key"] = self._api_key
        if request.json_schema is not None:
            args["response_format"] = {"type": "json_schema", "json_schema": {
                "name": str(request.json_schema.get("title", "output")), "schema": request.json_schema}}
        if request.tools:
            args["tools"] = [tool.to_openai() for tool in request.tools]
            # With tools, the pinned LiteLLM checks for its MCP gateway first, which imports the optional
            # `mcp` package and fails without it; noosphere never routes tools through that gateway.
            args["_skip_mcp_handler"] = True
        if request.logprobs:
            args["logprobs"] = True
        return args

    async def score(self, request: ScoreRequest) -> ScoreReply:
        """First-token scores from the provider's `top_logprobs`: each option gets the probability of the
        first token it starts with (options must differ in their first token: letters, Yes/No)."""
        if request.prefix:  # `Model.score_options` refuses it before the call; kept for a backend called alone
            raise CapabilityError(self.model_id, PREFIX_REFUSED)
        check_first_tokens(self.model_id, request.options)
        settings = Settings(temperature=0.0, max_tokens=1, timeout_s=request.timeout_s)
        args = {**self._arguments(Request(request.messages, settings)), "logprobs": True,
                "top_logprobs": TOP_LOGPROBS}
        response = await self._acompletion(args, request.messages, settings)
        choice = response.choices[0]
        logprobs = _field(choice, "logprobs")
        if logprobs is None:  # not sent at all: every call would be the same
            raise CapabilityError(self.model_id, NO_LOGPROBS)
        content = _field(logprobs, "content")
        if not content:  # sent for no token (the reply ended at once): this call only
            raise ModelError(self.model_id, "the provider returned logprobs for no token (an empty reply)")
        alternatives = _field(content[0], "top_logprobs")
        if alternatives is None:  # the field not sent: a server that ignores top_logprobs, the same on every call
            raise CapabilityError(self.model_id, NO_TOP_LOGPROBS)
        top = [(str(_field(t, "token")), float(_field(t, "logprob"))) for t in alternatives
               if _field(t, "token") is not None and _field(t, "logprob") is not None]
        if not top:
            raise ModelError(self.model_id, "the provider returned an empty top_logprobs for the first token")
        scores = first_token_scores(request.options, top, model_id=self.model_id)
        usage = getattr(response, "usage", None)
        counted = _counted(self.model_id, Usage(getattr(usage, "prompt_tokens", 0) or 0,
                                                getattr(usage, "completion_tokens", 0) or 0))
        return ScoreReply(scores, tuple(1 for _ in request.options),
                          self._reported(counted, request.messages, completion_tokens=1), method="first_token")

    async def generate(self, request: Request) -> Reply:
        response = await self._acompletion(self._arguments(request), request.messages, request.settings)
        reply = _reply(import_litellm(), response)
        written = reply.text + "".join(f"{call.name}{json.dumps(call.arguments)}" for call in reply.tool_calls)
        reply = replace(reply, usage=self._reported(_counted(self.model_id, reply.usage), request.messages,
                                                    completion_tokens=self._count_text(written)))
        if not request.logprobs:
            return reply
        content = _field(_field(response.choices[0], "logprobs"), "content")
        values = [_field(token, "logprob") for token in content or ()]
        if not values or any(value is None for value in values):
            return reply  # no `logprob`: the model refuses it after counting what the reply cost
        tokens = [(_field(token, "token"), float(value)) for token, value in zip(content, values, strict=True)]
        if any(math.isnan(logprob) or logprob > LOGPROB_SLACK for _, logprob in tokens):  # as a score's are refused
            raise ModelError(self.model_id, f"the reply's tokens came back with log-probabilities no probability has: "
                                            f"{tokens[:5]}")
        return replace(reply, logprob=sum(logprob for _, logprob in tokens))

    async def _acompletion(self, args: dict[str, Any], messages: tuple[Message, ...], settings: Settings) -> Any:
        litellm = import_litellm()
        from openai import OpenAIError  # LiteLLM's own dependency: the base of every error it raises

        retryable = (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                     litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError)
        try:
            response = await litellm.acompletion(**args)
        except litellm.ContextWindowExceededError as exc:
            raise ContextOverflowError(self.model_id, self.count_tokens(messages) or 0, settings.max_tokens,
                                       self.context_window or 0, said=_said(exc, self._api_key)) from exc
        except litellm.RateLimitError as exc:  # a quota that ran out (a provider's, or a `noosphere serve` budget)
            spent = _quota_spent(exc)  # is not a rate limit: asking again later gets the same answer
            raise ModelError(self.model_id, _said(exc, self._api_key), retryable=not spent,
                             retry_after_s=_retry_after(exc)) from exc
        except retryable as exc:
            if _unconfigured(exc, OpenAIError):  # no key: every call would be refused before it is sent
                raise UsageError(f"{self.model_id}: the provider's client cannot be made: {_said(exc, self._api_key)} "
                                 "(a server that takes no key still needs one set, any value)") from exc
            raise ModelError(self.model_id, _said(exc, self._api_key), retryable=True,
                             retry_after_s=_retry_after(exc)) from exc
        except litellm.APIError as exc:  # LiteLLM's catch-all: a server's fault (5xx, "overloaded") passes
            status = getattr(exc, "status_code", None)  # and an OpenAI-compatible server's 403 (no typed error)
            self._refused_logprobs(args, status, exc)
            if status in CALLER_REFUSED:
                raise ProviderRefusedError(self.model_id, status, _said(exc, self._api_key)) from exc
            # a 2xx whose body could not be read (not JSON: a proxy's page, a body cut short) is a malformed reply
            raise ModelError(self.model_id, _said(exc, self._api_key),
                             retryable=isinstance(status, int) and (status >= 500 or 200 <= status < 300)) from exc
        except OpenAIError as exc:  # the rest, a provider's 4xx among them: a wrong key, an unknown model, a request
            # refused (LiteLLM's BadRequestError, AuthenticationError, NotFoundError... derive from openai's errors,
            # not from its own OpenAIError)
            status = getattr(exc, "status_code", None)
            self._refused_logprobs(args, status, exc)
            if status in CALLER_REFUSED:  # the key or the model id is wrong: the same for every call, the run stops
                raise ProviderRefusedError(self.model_id, status, _said(exc, self._api_key)) from exc
            raise ModelError(self.model_id, _said(exc, self._api_key)) from exc
        if not getattr(response, "choices", None):  # `choices: []` (a proxy's, a filter's): no reply, asked again
            raise ModelError(self.model_id, "the provider's reply had no choices", retryable=True)
        return response

    def _refused_logprobs(self, args: dict[str, Any], status: Any, exc: Exception) -> None:
        """A request for log-probabilities that the provider refuses as such (a 400 naming them: a model or server
        that lists `logprobs` and does not serve them) would be refused on every call: a usage error that stops
        the run, not a fault each turn forfeits, which would let it go on without its scores."""
        said = _said(exc, self._api_key)
        if args.get("logprobs") and status in (400, 422) and "logprob" in said.lower():
            raise CapabilityError(self.model_id, f"log-probabilities here: the provider refused a request for them "
                                                 f"({status}: {said}) and would refuse every one {SAMPLE_INSTEAD}"
                                  ) from exc


def _input_window(litellm: Any, model: str) -> int | None:
    """The prompt tokens the model takes: `max_input_tokens` of LiteLLM's model table (its `max_tokens` is often
    the output limit: 16,384 for gpt-4o, whose window is 128,000), else `max_tokens` where no input size is
    listed, else None (unknown: not checked before the call)."""
    try:
        info = litellm.get_model_info(model)
    except Exception:
        return None
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if window else None


SAID_LIMIT = 1000
"""Characters of a provider's error kept in its `ModelError`: a message, not the reply it is about."""


def _said(error: Exception, api_key: str | None) -> str:
    """A LiteLLM error in one bounded line, without the key. One about a reply it could not read ("Invalid response
    object") goes on with a traceback and the whole reply: every retry would trace it (megabytes for a long reply)
    and the command line would print it. A server may quote the key it refused ("invalid key Bearer token-abc123"):
    the key given, or one of the environment's, is redacted however it is shaped."""
    said = Redactor.from_environment((api_key,) if api_key else ())(str(error))
    text = " ".join(said.split("Traceback (most recent call last):")[0].split())
    if len(text) > SAID_LIMIT:
        text = f"{text[:SAID_LIMIT]}... ({len(text):,} characters)"
    return f"{type(error).__name__}: {text}"


def _counted(model_id: str, usage: Usage) -> Usage:
    """A provider's token counts, where they can be counts: a negative one (a broken proxy's) would take what the
    call cost, and the price LiteLLM makes of it, off the run's budgets. Such a reply is malformed: asked again."""
    for name in ("prompt_tokens", "completion_tokens", "reused_prompt_tokens"):
        value = getattr(usage, name)
        if value < 0:
            raise ModelError(model_id, f"the provider reported {value} {name.replace('_', ' ')}, which no call has",
                             retryable=True)
    return usage


def _unconfigured(error: BaseException, client_error: type[BaseException]) -> bool:
    """Whether the error began in openai's client before any request was sent: its bare `OpenAIError` (`client_error`),
    raised for a missing key or a client option it cannot do without, which LiteLLM passes on as a server's 500 and
    would be retried as one."""
    cause: BaseException | None = error
    for _ in range(8):  # a chain, not a cycle
        if cause is None:
            return False
        if type(cause) is client_error:
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _retry_after(error: Any) -> float | None:
    """The seconds a provider's `Retry-After` (or `retry-after-ms`) header asks a client to wait, where its reply
    (a 429, a 503) has one that says a number of seconds or a date."""
    headers = getattr(error, "litellm_response_headers", None) or getattr(getattr(error, "response", None),
                                                                          "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return max(float(headers["retry-after-ms"]) / 1000, 0.0)
        said = headers.get("retry-after")
        if said is None:
            return None
        try:
            return max(float(said), 0.0)
        except ValueError:
            return max((parsedate_to_datetime(said) - datetime.now(UTC)).total_seconds(), 0.0)
    except (TypeError, ValueError, AttributeError):
        return None


def _quota_spent(error: Any) -> bool:
    """OpenAI's error body says `insufficient_quota` for a spent quota, `rate_limit_exceeded` for a rate limit."""
    body = getattr(error, "body", None)
    return isinstance(body, dict) and "insufficient_quota" in (body.get("code"), body.get("type"))


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def first_token_scores(options: tuple[str, ...], top: list[tuple[str, float]], *,
                       model_id: str = "provider") -> tuple[float, ...]:
    """Each option's log-probability from the first token's alternatives: the total of the alternatives it
    starts with (case and surrounding spaces ignored). An option none of them starts gets the smallest
    alternative's log-probability, an upper bound of its share. Two options one alternative starts alike
    cannot be told apart from the first token, which is a usage error; alternatives that start no option at all
    are a `ModelError` (every option would get the same floor)."""
    keys = [option.strip().lower() for option in options]
    mass: list[list[float]] = [[] for _ in options]
    if any(math.isnan(logprob) or logprob > LOGPROB_SLACK for _, logprob in top):  # a float's rounding aside
        raise ModelError(model_id, f"the first token's alternatives came back with log-probabilities no probability "
                                   f"has: {[(token, logprob) for token, logprob in top[:5]]}")
    for token, logprob in top:
        piece = token.strip().lower()
        if not piece:
            continue
        hits = [i for i, key in enumerate(keys) if key.startswith(piece)]
        if len(hits) > 1:
            raise UsageError(f"options {[options[i] for i in hits]} begin with the same token {token!r}; a provider "
                             "scores only the first token, so make them differ at the start (letters, Yes/No)")
        if hits:
            mass[hits[0]].append(logprob)
    if not any(mass):  # every option would get the same floor: a uniform guess, not a score
        raise ModelError(model_id, f"none of the options {list(options)} is among the first token's {len(top)} "
                                   f"likeliest alternatives ({', '.join(repr(token) for token, _ in top[:5])}, ...): "
                                   "the provider's scores cannot tell them apart")
    # An option no alternative starts has at most the smallest alternative's probability, and at most what the
    # alternatives leave over (with a single alternative, the smallest is the found option itself).
    left = 1.0 - sum(math.exp(logprob) for _, logprob in top)
    floor = min(min(logprob for _, logprob in top), math.log(max(left, 1e-12)))
    return tuple(_log_total(found) if found else floor for found in mass)


def _log_total(logprobs: list[float]) -> float:
    """The log of the probabilities' total: -inf where each is 0 (a provider's -inf alternatives, which the caller's
    check refuses when every option has them), not the ValueError `math.log(0)` raises."""
    total = sum(math.exp(logprob) for logprob in logprobs)
    return math.log(total) if total > 0 else -math.inf


def _arguments_of(raw: str | None, *, cut: bool = False) -> dict[str, Any]:
    """A native tool call's arguments as an object: parsed, repaired when that is all that is wrong (a closing
    brace cut off), else kept as text under `UNPARSED`, which the call's check refuses and tells the model. Not
    repaired in a reply `cut` off at its token limit: its last value may be cut short too (`{"city": "Osl`), as a
    structured output's closed by a repair is refused then."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        value = {UNPARSED: raw} if cut else json_repair.loads(raw or "")
    return value if isinstance(value, dict) and (value or (raw or "{}").strip() in ("", "{}")) else {UNPARSED: raw}


def _reply(litellm: Any, response: Any) -> Reply:
    choice = response.choices[0]
    message = choice.message
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or ()):
        arguments = _arguments_of(call.function.arguments, cut=choice.finish_reason == "length")
        # a call without a name (`"name": null`) names no tool: refused and told as an unknown name is
        calls.append(ToolCall(call.function.name or "", arguments, call.id or f"call_{index}"))
    try:
        cost: float | None = float(litellm.completion_cost(completion_response=response))
    except Exception:
        cost = None
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)  # a provider's prompt cache, where it reports one
    return Reply(
        text=message.content or "", tool_calls=tuple(calls),
        usage=Usage(getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0, cost,
                    getattr(details, "cached_tokens", 0) or 0),
        finish_reason=choice.finish_reason or "stop",
    )
