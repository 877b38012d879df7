"""Every hosted or self-hosted provider, through LiteLLM.

Capabilities come from LiteLLM's model map (overridable, e.g. for an OpenAI-compatible server it
does not know). Provider faults are classified once here: rate limits, timeouts, connection and
server errors are retryable (the `Model` retries them with backoff); the rest fail at once.
LiteLLM is imported lazily, and told to use its bundled price map rather than fetch one.
"""

from __future__ import annotations

import json
import os
from typing import Any

from noosphere.errors import ContextOverflowError, ModelError
from noosphere.llm.messages import Message
from noosphere.llm.types import Capabilities, Reply, Request, ToolCall, Usage


def import_litellm() -> Any:
    """LiteLLM, set to use its bundled price map: fetching one at import would reach the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


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
        self.capabilities = capabilities or Capabilities(
            vision=_probe(litellm, "supports_vision", model),
            audio=_probe(litellm, "supports_audio_input", model),
            tools=_probe(litellm, "supports_function_calling", model),
            json_schema=_probe(litellm, "supports_response_schema", model),
        )
        try:
            self.context_window: int | None = litellm.get_max_tokens(model)
        except Exception:
            self.context_window = None

    def __repr__(self) -> str:
        return f"LiteLLMBackend({self.model!r}, api_base={self.api_base!r})"

    @property
    def fingerprint(self) -> str:
        return f"litellm:{self.model}@{self.api_base or 'default'}"

    def count_tokens(self, messages: tuple[Message, ...]) -> int | None:
        try:
            return int(import_litellm().token_counter(model=self.model, messages=[m.to_openai() for m in messages]))
        except Exception:
            return None

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
        return args

    async def generate(self, request: Request) -> Reply:
        litellm = import_litellm()
        retryable = (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                     litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError)
        try:
            response = await litellm.acompletion(**self._arguments(request))
        except litellm.ContextWindowExceededError as exc:
            raise ContextOverflowError(self.model_id, self.count_tokens(request.messages) or 0,
                                       request.settings.max_tokens, self.context_window or 0) from exc
        except retryable as exc:
            raise ModelError(self.model_id, f"{type(exc).__name__}: {exc}", retryable=True) from exc
        except litellm.APIError as exc:
            raise ModelError(self.model_id, f"{type(exc).__name__}: {exc}") from exc
        except litellm.OpenAIError as exc:
            raise ModelError(self.model_id, f"{type(exc).__name__}: {exc}") from exc
        return _reply(litellm, response)


def _reply(litellm: Any, response: Any) -> Reply:
    choice = response.choices[0]
    message = choice.message
    calls = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or ()):
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"__unparsed__": call.function.arguments}
        calls.append(ToolCall(call.function.name, arguments, call.id or f"call_{index}"))
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
