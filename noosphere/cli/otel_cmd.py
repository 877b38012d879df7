"""`--otel URL` on the commands that run something, and `noosphere trace export RUN --otlp URL`.

The OpenTelemetry packages are an extra (`pip install -e ".[otel]"`): they are imported only when asked for,
and a missing one is a one-line usage error before any run folder is made.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from noosphere.errors import MissingDependencyError, RuntimeFault
from noosphere.printable import markup_safe
from noosphere.runs import Run
from noosphere.trace import run_trace

OtelOption = Annotated[str | None, typer.Option(
    "--otel", envvar="NOOSPHERE_OTEL_ENDPOINT", show_envvar=True,
    help="send the run's spans (OpenTelemetry GenAI conventions) to this OTLP/HTTP endpoint, e.g. "
         "http://127.0.0.1:4318; an endpoint that does not answer is a warning")]
OtelContentOption = Annotated[bool, typer.Option(
    "--otel-content", envvar="NOOSPHERE_OTEL_CONTENT", show_envvar=True,
    help="with --otel: include prompts and completions in the spans (secrets redacted as in the trace)")]


def warn(text: str) -> None:
    Console(stderr=True, emoji=False).print(f"warning: {markup_safe(text)}", highlight=False, soft_wrap=True)


def _needs_otel() -> None:
    try:
        import noosphere.otel  # noqa: F401
    except ImportError as missing:
        raise MissingDependencyError(missing.name or "opentelemetry-sdk", "otel",
                                     "OpenTelemetry export (--otel, trace export)") from None


@dataclass(frozen=True)
class OtelExport:
    """Where a run's spans go, checked before the run starts."""

    url: str
    content: bool = False
    answered: bool = False
    """The endpoint was asked already (`probe`): runs attach without asking it again."""

    def probe(self) -> OtelExport | None:
        """Ask the endpoint once, now (a server, before it takes requests): this export marked as answered, or None
        after a warning when it does not answer."""
        from noosphere.otel.sink import unreachable

        reason = unreachable(self.url)
        if reason is not None:
            warn(f"cannot send spans to {self.url} ({reason}); going on without OpenTelemetry export")
            return None
        return replace(self, answered=True)

    def attach(self, run: Run) -> None:
        """Follow the run's trace from its `run_started` on, redacted as the run's own files are; an endpoint that
        does not answer is a warning."""
        from noosphere.otel import open_otlp_sink

        sink = open_otlp_sink(self.url, content=self.content, warn=warn, redactor=run.redactor,
                              probe=not self.answered)
        if sink is not None:
            run.trace.add_sink(sink)


def otel_export(endpoint: str | None, content: bool = False) -> OtelExport | None:
    """`--otel` and `--otel-content` as one setting; None without an endpoint."""
    if not endpoint:
        return None
    _needs_otel()
    from noosphere.otel import traces_url

    return OtelExport(traces_url(endpoint), content)


def add_trace_export(trace_app: typer.Typer) -> None:
    @trace_app.command("export")
    def export(
        run: Annotated[Path, typer.Argument(help="a run folder (runs/<time>-<id>)")],
        otlp: Annotated[str, typer.Option("--otlp", envvar="NOOSPHERE_OTEL_ENDPOINT", show_envvar=True,
                                          help="the OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318")],
        content: Annotated[bool, typer.Option(help="include prompts and completions (secrets redacted)")] = False,
    ) -> None:
        """Send an existing run to an OpenTelemetry receiver, as the spans `--otel` would have sent."""
        _needs_otel()
        from noosphere.otel import export_run, otlp_exporter, traces_url
        from noosphere.otel.sink import unreachable

        url = traces_url(otlp)
        run_trace(run)
        reason = unreachable(url)
        if reason is not None:
            raise RuntimeFault(f"cannot send spans to {url} ({reason})")
        failures: list[str] = []

        def told(text: str) -> None:
            failures.append(text)
            warn(text)

        done = export_run(run, otlp_exporter(url, told), content=content, warn=warn)
        if failures:
            raise RuntimeFault(f"the spans of {run} did not all reach {url}")
        if done.stopped:  # told above: which event, and why
            raise RuntimeFault(f"the export of {run} stopped partway; the spans after that event were not sent")
        Console(emoji=False).print(f"sent {done.runs} run session(s), {done.events} events, to {markup_safe(url)}",
                                   highlight=False)
