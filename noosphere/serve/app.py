"""The HTTP face of a server: `/v1/models` and `/v1/chat/completions` as OpenAI's API has them.

Every request is checked in the order OpenAI checks it: the key (401), the body's size (413) and form (400), the
model (404), the prompt's length (400, `context_length_exceeded`), the server's budget (429); only then does a run
start. Every error is OpenAI's error object; a status of 500 means a fault of the server, never of the request.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException

from noosphere.errors import NoosphereError
from noosphere.serve.protocol import ChatRequest, Conversation, Refused, error_body
from noosphere.serve.request_run import Answered, ServedRun, refusal_for, server_stopped
from noosphere.serve.service import Service


def refused(refusal: Refused, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(refusal.body(), status_code=refusal.status, headers={**(headers or {}), **refusal.headers})


def authorize(request: Request, key: str | None) -> None:
    if key is None:
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise Refused(401, "No API key given; send it as 'Authorization: Bearer KEY'.", code="invalid_api_key",
                      headers={"WWW-Authenticate": "Bearer"})
    if not secrets.compare_digest(given.strip().encode(), key.encode()):
        raise Refused(401, "Incorrect API key provided.", code="invalid_api_key",
                      headers={"WWW-Authenticate": "Bearer"})


async def read_body(request: Request, limit: int) -> bytes:
    """The body, read no further than `limit` bytes (413 past it)."""
    def too_large(size: str) -> Refused:
        return Refused(413, f"The request body is {size}; this server reads at most {limit} bytes.",
                       code="request_too_large")

    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(f"{int(declared)} bytes")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise too_large("larger than that")
    return bytes(body)


async def disconnection(request: Request) -> None:
    """Returns once the client has gone (the body is read by then, so the only message left is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def make_api(service: Service) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await service.stop()

    api = FastAPI(title="noosphere", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    @api.exception_handler(NoosphereError)
    async def on_refused(_: Request, error: NoosphereError) -> JSONResponse:
        """A request refused (`Refused`), the server's budget spent (429), or a fault of the server outside any
        run (its run folder cannot be written, say: 500)."""
        return refused(refusal_for(error, service))

    @api.exception_handler(HTTPException)
    async def on_http(_: Request, error: HTTPException) -> JSONResponse:
        message = {404: "No such route; this server has /v1/models and /v1/chat/completions.",
                   405: "That method is not allowed on this route."}.get(error.status_code, str(error.detail))
        return JSONResponse(error_body(message, type="invalid_request_error"), status_code=error.status_code,
                            headers=getattr(error, "headers", None))

    @api.exception_handler(Exception)
    async def on_bug(_: Request, error: Exception) -> JSONResponse:
        """A bug: 500, and uvicorn logs the traceback."""
        return refused(refusal_for(error, service))

    def model_entry(name: str) -> dict[str, Any]:
        system = service.system(name)
        return {"id": name, "object": "model", "created": service.started, "owned_by": "noosphere",
                "noosphere": {"system": system.system, "society": system.source,
                              "model": service.settings.default_model}}

    @api.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        authorize(request, service.settings.api_key)
        return {"object": "list", "data": [model_entry(name) for name in service.systems]}

    @api.get("/v1/models/{name}")
    async def model(name: str, request: Request) -> dict[str, Any]:
        authorize(request, service.settings.api_key)
        return model_entry(name)

    @api.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> JSONResponse | StreamingResponse:
        authorize(request, service.settings.api_key)
        chat = ChatRequest.parse(await read_body(request, service.settings.max_body_bytes))
        served = service.system(chat.model)
        conversation = Conversation.of(chat.messages)
        schema = chat.response_format.schema_wanted() if chat.response_format is not None else None
        service.check_prompt(conversation)
        service.check_budget()
        run = await ServedRun.start(service, served, chat, conversation, schema)
        if chat.stream:
            return StreamingResponse(run.stream(), media_type="text/event-stream",
                                     headers={**run.headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        try:
            outcome = await run.reply(lambda: disconnection(request))
        except asyncio.CancelledError:  # the server stopped, its grace period over: the run is cancelled
            return refused(server_stopped(), run.headers)
        if outcome is None:  # nobody is left to read it
            return JSONResponse(error_body("the client disconnected", type="invalid_request_error"), status_code=499)
        if isinstance(outcome, Answered):
            return JSONResponse(run.response_body(outcome), headers=run.headers)
        return refused(outcome.refusal, run.headers)

    return api
