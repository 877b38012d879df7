"""Benchmarks: resumable item loops, metrics and reports, and one module per benchmark."""

from noosphere.bench.metrics import classification_report
from noosphere.bench.runner import Scored, averages, run_items, write_report

__all__ = ["Scored", "averages", "classification_report", "run_items", "write_report"]
