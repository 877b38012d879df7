"""Sending a run's spans: a trace sink for a live run, an OTLP/HTTP exporter, and a whole run folder at once.

`OtelSink` follows a `Trace` (`trace.add_sink`): each event goes to a `SpanBuilder`, whose spans a batch
processor sends in the background, so the run never waits on the network. Closing the trace flushes them.

An endpoint that cannot be reached is a warning, never a failure: `open_otlp_sink` asks the endpoint first
(an empty OTLP request, which a receiver accepts) and, unanswered, says so in one line and sends nothing; an
endpoint that stops answering later is told once, and the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse

import requests
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from noosphere.errors import UsageError
from noosphere.otel.spans import SpanBuilder
from noosphere.trace import Event, Redactor, read_trace, run_trace

TRACES_PATH = "/v1/traces"
EXPORT_TIMEOUT_S = 5.0
PROBE_TIMEOUT_S = 2.0
Warn = Callable[[str], None]


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of an endpoint given as its base (`http://127.0.0.1:4318`) or in full. One that no
    request could reach (no host, a port that is no port, a space, an unclosed IPv6 bracket) is a usage error
    before any run, not a warning once the run has started (nor, for the bracket, a ValueError)."""
    if not _well_formed(endpoint.strip()):
        raise UsageError(f"an OTLP endpoint is an http(s) URL such as http://127.0.0.1:4318, not {endpoint!r}")
    base = endpoint.strip().rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def _well_formed(url: str) -> bool:
    try:
        parsed = urlparse(url)
        parsed.port  # noqa: B018 -- a ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.hostname) and not any(c.isspace() for c in url)


def unreachable(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why `url` does not take OTLP traces (it does not answer, or refuses an empty request), or None."""
    try:
        reply = requests.post(url, data=b"", headers={"Content-Type": "application/x-protobuf"}, timeout=timeout_s)
    except requests.RequestException as error:
        reason = type(error).__name__
        if isinstance(error, requests.ConnectionError):
            reason = "connection refused or no such host"
        return reason
    return None if reply.status_code < 400 else f"it answered HTTP {reply.status_code}"


def resource() -> Resource:
    try:
        version = metadata.version("noosphere")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        version = "unknown"
    return Resource.create({"service.name": "noosphere", "service.version": version})


class _Told(SpanExporter):
    """An exporter that says, once, when its spans did not get through (the SDK only logs it)."""

    def __init__(self, inner: SpanExporter, where: str, warn: Warn) -> None:
        self.inner, self.where, self.warn = inner, where, warn
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.FAILURE:
            self.failed += 1
            if self.failed == 1:
                self.warn(f"spans could not be sent to {self.where}; the run goes on without them "
                          "(noosphere trace export RUN --otlp URL sends them later)")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def otlp_exporter(url: str, warn: Warn) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return _Told(OTLPSpanExporter(endpoint=url, timeout=EXPORT_TIMEOUT_S), url, warn)


@dataclass
class OtelSink:
    """A trace sink that exports a run's spans as the run goes. `content`: prompts and completions too."""

    provider: TracerProvider
    builder: SpanBuilder
    warn: Warn
    broken: bool = False

    @classmethod
    def to(cls, exporter: SpanExporter, *, content: bool = False, redactor: Redactor | None = None,
           warn: Warn = print) -> OtelSink:
        provider = TracerProvider(resource=resource())
        provider.add_span_processor(BatchSpanProcessor(exporter))
        redact = redactor or Redactor.from_environment()
        return cls(provider, SpanBuilder(provider.get_tracer("noosphere"), content=content, redact=redact), warn)

    def __call__(self, event: Event) -> None:
        if self.broken:
            return
        try:
            self.builder.add(event)
        except Exception as error:  # a bug here must not stop the run it watches: said once, then silent
            self.broken = True
            self.warn(f"OpenTelemetry export stopped at a {event.kind} event ({type(error).__name__}: {error})")

    def close(self) -> None:
        if not self.broken:
            self.builder.finish()
        self.provider.shutdown()  # flushes what is still queued


def open_otlp_sink(endpoint: str, *, content: bool = False, warn: Warn = print, redactor: Redactor | None = None,
                   probe: bool = True) -> OtelSink | None:
    """A sink exporting to an OTLP/HTTP endpoint, or None (after one warning) when the endpoint does not answer.
    `redactor`: the run's own (a server's knows its `--api-key`); `probe=False` skips asking the endpoint first
    (a server asks once, when it starts, not on every request: the question blocks for up to two seconds)."""
    url = traces_url(endpoint)
    reason = unreachable(url) if probe else None
    if reason is not None:
        warn(f"cannot send spans to {url} ({reason}); the run goes on without OpenTelemetry export")
        return None
    return OtelSink.to(otlp_exporter(url, warn), content=content, redactor=redactor, warn=warn)


@dataclass(frozen=True)
class Exported:
    runs: int
    events: int
    bad_lines: int
    stopped: bool = False
    """An event could not be made a span (a time that is no number, say): the export stopped there, told through
    `warn`, and the spans after it were not sent."""


def export_run(run_dir: Path | str, exporter: SpanExporter, *, content: bool = False,
               redactor: Redactor | None = None, warn: Warn = print) -> Exported:
    """Send a run folder's `trace.jsonl` as spans, every session of it; the exporter is shut down at the end.
    Lines that cannot be read are told through `warn` and left out."""
    trace = run_trace(run_dir)
    sink = OtelSink.to(exporter, content=content, redactor=redactor, warn=warn)
    bad: list[str] = []
    count = 0
    for event in read_trace(trace, on_bad_line=lambda line: bad.append(str(line))):
        sink(event)
        count += 1
    for line in bad:
        warn(line)
    sink.close()
    return Exported(sink.builder.runs, count, len(bad), stopped=sink.broken)
