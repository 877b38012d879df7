"""`noosphere serve`: systems as OpenAI-compatible models, one run folder per request, until Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from noosphere.cli.ask import (
    ModelOpener,
    ModelOption,
    NoCacheOption,
    SeedOption,
    open_cache,
    parse_budget,
)
from noosphere.cli.otel_cmd import OtelContentOption, OtelOption, otel_export
from noosphere.cli.signals import terminate_as_interrupt
from noosphere.errors import UnknownNameError
from noosphere.llm import DEFAULT_MODEL, Budget, Settings
from noosphere.printable import markup_safe
from noosphere.serve import require_server_packages
from noosphere.serve.access import API_KEY_ENV, check_exposure
from noosphere.serve.service import DISCONNECT_ACTIONS, ServeSettings
from noosphere.serve.systems import ModelPool, served_systems


def add_serve(app: typer.Typer, opener: ModelOpener) -> None:
    @app.command()
    def serve(
        system: Annotated[list[str] | None, typer.Option(
            help="a system to serve: base, ctm, or society (with --society); repeat it for more "
                 "(default: base and ctm)")] = None,
        society: Annotated[list[Path] | None, typer.Option(
            help="a society file to serve, as society-<file name>; repeat it for more")] = None,
        model: ModelOption = DEFAULT_MODEL,
        host: Annotated[str, typer.Option(help="address to listen on; any but loopback needs --api-key")] = (
            "127.0.0.1"),
        port: Annotated[int, typer.Option(min=0, max=65535, help="port to listen on (0: any free port)")] = 8000,
        api_key: Annotated[str | None, typer.Option(
            envvar=API_KEY_ENV, show_default=False,
            help="the key clients must send (Authorization: Bearer KEY)")] = None,
        out: Annotated[Path, typer.Option(help="folder that receives the run folders, one per request")] = Path(
            "runs"),
        seed: SeedOption = 0,
        no_cache: NoCacheOption = False,
        budget: Annotated[str | None, typer.Option(
            help="what one request's run may spend, e.g. calls=50,tokens=20000,cost=0.1 (then 429)")] = None,
        total_budget: Annotated[str | None, typer.Option(
            help="what all requests together may spend while the server runs, e.g. calls=5000,cost=10 (then 429)")
        ] = None,
        max_tokens: Annotated[int, typer.Option(min=1, help="output token limit per model call")] = 512,
        max_prompt_chars: Annotated[int, typer.Option(
            min=1, help="the longest conversation a request may send, in characters (400 past it)")] = 32_000,
        on_disconnect: Annotated[str, typer.Option(
            help="what the run of a client that goes away does: cancel (stop where it is) or finish")] = "cancel",
        otel: OtelOption = None,
        otel_content: OtelContentOption = False,
    ) -> None:
        """Serve systems as OpenAI-compatible models at http://HOST:PORT/v1 until Ctrl-C. Each request is a run
        whose folder goes into --out; the reply carries its id."""
        served = served_systems(system or [], society or [])
        check_exposure(host, api_key)
        if on_disconnect not in DISCONNECT_ACTIONS:
            raise UnknownNameError("--on-disconnect action", on_disconnect, DISCONNECT_ACTIONS)
        limits = parse_budget(budget)
        total = parse_budget(total_budget)
        require_server_packages()
        exporter = otel_export(otel, otel_content)
        exporter = exporter.probe() if exporter is not None else None  # once, not on every request
        from noosphere.serve.app import make_api
        from noosphere.serve.server import listening_socket, serve_forever
        from noosphere.serve.service import Service

        cache = open_cache(no_cache)
        settings = Settings(seed=seed, max_tokens=max_tokens)
        pool = ModelPool(lambda model_id: opener(model_id, cache=cache, settings=settings))
        service = Service(served, pool, ServeSettings(
            default_model=model, out=out, api_key=api_key, seed=seed, budget=limits,
            total_budget=Budget(**total) if total else None, max_prompt_chars=max_prompt_chars,
            max_body_bytes=max(1_000_000, 8 * max_prompt_chars), on_disconnect=on_disconnect,  # type: ignore[arg-type]
            on_run=exporter.attach if exporter is not None else None))
        console = Console(emoji=False)
        sock = listening_socket(host, port)  # before the models load: a taken port or bad host is said at once
        try:
            with console.status(f"loading {markup_safe(model)}"):
                service.open_models()
        except BaseException:
            sock.close()
            raise
        names = ", ".join(service.systems)

        def announce(url: str) -> None:
            console.print(f"serving {names} at {url} (runs in {markup_safe(out)}; Ctrl-C stops)", highlight=False,
                          soft_wrap=True)

        try:
            with terminate_as_interrupt():
                serve_forever(make_api(service), sock, announce)
        except KeyboardInterrupt:  # uvicorn stops gracefully, then raises the signal it caught again
            pass
        console.print("stopped")

