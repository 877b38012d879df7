"""Tools that processors and agents can call: wrappers for callables and HTTP APIs, and built-ins."""

from noosphere.tools.base import FunctionTool, HttpTool, Tool, ToolResult
from noosphere.tools.builtin import (
    calculate,
    calculator_tool,
    convert_units,
    corpus_search_tool,
    date_arithmetic,
    date_tool,
    python_tool,
    sqlite_lookup_tool,
    unit_converter_tool,
)
from noosphere.tools.sandbox import SandboxError, run_python_expression

__all__ = [
    "FunctionTool", "HttpTool", "SandboxError", "Tool", "ToolResult", "calculate", "calculator_tool",
    "convert_units", "corpus_search_tool", "date_arithmetic", "date_tool", "python_tool", "run_python_expression",
    "sqlite_lookup_tool", "unit_converter_tool",
]


def builtin_tools() -> dict[str, Tool]:
    """The built-ins that need no configuration, by name."""
    return {tool.spec.name: tool for tool in (calculator_tool(), unit_converter_tool(), date_tool(), python_tool())}
