"""Tools that processors and agents can call: wrappers for callables and HTTP APIs, and built-ins."""

from noosphere.tools.base import FunctionTool, HttpTool, Tool, ToolResult
from noosphere.tools.builtin import (
    builtin_tools,
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
from noosphere.tools.sandbox import (
    Limits,
    ProgramRun,
    Sandbox,
    SandboxError,
    SandboxUnavailableError,
    run_python_expression,
    run_python_program,
)

__all__ = [
    "FunctionTool", "HttpTool", "Limits", "ProgramRun", "Sandbox", "SandboxError", "SandboxUnavailableError", "Tool",
    "ToolResult", "builtin_tools", "calculate", "calculator_tool", "convert_units", "corpus_search_tool",
    "date_arithmetic", "date_tool", "python_tool", "run_python_expression", "run_python_program",
    "sqlite_lookup_tool", "unit_converter_tool",
]

