"""Where benchmark data lives: moved to `noosphere.data`, below both the benchmarks and the environments
(which read ALFWorld's games from the same place); kept here so that `noosphere.bench.data` still works."""

from noosphere.data import shared_data

__all__ = ["shared_data"]
