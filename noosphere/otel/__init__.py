"""OpenTelemetry export: a run's trace events as spans after the GenAI semantic conventions (`pip install -e
".[otel]"`). Live, as a trace sink (`--otel URL` on every command that runs something); afterwards, from a run
folder's `trace.jsonl` (`noosphere trace export RUN --otlp URL`)."""

from noosphere.otel.sink import Exported, OtelSink, export_run, open_otlp_sink, otlp_exporter, traces_url
from noosphere.otel.spans import SpanBuilder

__all__ = ["Exported", "OtelSink", "SpanBuilder", "export_run", "open_otlp_sink", "otlp_exporter", "traces_url"]
