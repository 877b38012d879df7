"""Tools: a name, a description, a JSON schema of arguments, and an async call that returns text.

A tool never raises into an engine: a bad argument or a failing call becomes a `ToolResult` with
`ok=False` and the error text, which the model can read and act on.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import httpx
import jsonschema

from noosphere.llm import ToolSpec


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    output: str

    def render(self) -> str:
        return self.output if self.ok else f"error: {self.output}"


@runtime_checkable
class Tool(Protocol):
    spec: ToolSpec

    async def call(self, arguments: dict[str, Any]) -> ToolResult: ...


def check_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> ToolResult | None:
    """A failed result explaining what is wrong with the arguments, or None when they fit the schema."""
    try:
        jsonschema.validate(arguments, spec.parameters)
    except jsonschema.ValidationError as exc:
        return ToolResult(False, f"invalid arguments: {exc.message}")
    return None


class FunctionTool:
    """Wraps a Python callable (sync or async) whose keyword arguments follow `parameters`."""

    def __init__(self, function: Callable[..., Any] | Callable[..., Awaitable[Any]], *, name: str | None = None,
                 description: str | None = None, parameters: dict[str, Any] | None = None,
                 timeout_s: float = 30.0) -> None:
        self.function = function
        self.timeout_s = timeout_s
        self.spec = ToolSpec(name or function.__name__,
                             description or inspect.getdoc(function) or function.__name__,
                             parameters or {"type": "object", "properties": {}})

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        if (invalid := check_arguments(self.spec, arguments)) is not None:
            return invalid
        try:
            if inspect.iscoroutinefunction(self.function):
                value = await asyncio.wait_for(self.function(**arguments), self.timeout_s)
            else:
                value = await asyncio.wait_for(asyncio.to_thread(self.function, **arguments), self.timeout_s)
        except TimeoutError:
            return ToolResult(False, f"timed out after {self.timeout_s}s")
        except Exception as exc:  # a tool's own failure is information for the model, not a crash
            return ToolResult(False, f"{type(exc).__name__}: {exc}")
        return ToolResult(True, str(value))


MAX_RESPONSE_BYTES = 64 * 1024
"""What HttpTool reads of a response at most: the model is shown its first 4,000 characters."""


class HttpTool:
    """Calls an HTTP API: GET with the arguments as query parameters, or POST with them as JSON."""

    def __init__(self, name: str, description: str, url: str, parameters: dict[str, Any], *,
                 method: str = "GET", headers: dict[str, str] | None = None, timeout_s: float = 20.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.spec = ToolSpec(name, description, parameters)
        self.url = url
        self.method = method.upper()
        self._headers = headers or {}  # may hold keys: never rendered into results or traces
        self.timeout_s = timeout_s
        self._transport = transport

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        if (invalid := check_arguments(self.spec, arguments)) is not None:
            return invalid
        declared = set(self.spec.parameters.get("properties", {}))
        fixed = {key for key, _ in httpx.URL(self.url).params.multi_items()}
        if unknown := sorted(set(arguments) - declared):  # the tool's own parameters only, never the URL's keys
            return ToolResult(False, f"invalid arguments: {', '.join(unknown)} not among the tool's parameters "
                                     f"({', '.join(sorted(declared)) or 'none'})")
        if self.method == "GET" and (clash := sorted(set(arguments) & fixed)):
            return ToolResult(False, f"invalid arguments: {', '.join(clash)} is set by the tool itself")
        get = self.method == "GET"
        url = httpx.URL(self.url).copy_merge_params(arguments) if get else self.url  # `params=` drops the URL's own
        body = bytearray()
        try:  # the whole exchange within timeout_s (httpx's timeouts are per phase: a slow drip passes them)
            async with asyncio.timeout(self.timeout_s), \
                    httpx.AsyncClient(timeout=self.timeout_s, transport=self._transport) as client, \
                    client.stream(self.method, url, json=None if get else arguments, headers=self._headers) as response:
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= MAX_RESPONSE_BYTES:  # what the model is shown is cut far shorter anyway
                        break
        except TimeoutError:
            return ToolResult(False, f"timed out after {self.timeout_s}s")
        except httpx.HTTPError as exc:
            return ToolResult(False, f"{type(exc).__name__}: {exc}")
        text = body.decode(response.encoding or "utf-8", errors="replace")[:4000]
        return ToolResult(response.is_success, text if response.is_success else f"HTTP {response.status_code}: {text}")
