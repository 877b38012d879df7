"""Built-in tools, the sandbox, and the tool processor on the scripted model."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from noosphere.llm import Model, ScriptedBackend
from noosphere.observation import Observation
from noosphere.tools import (
    FunctionTool,
    SandboxError,
    calculate,
    calculator_tool,
    convert_units,
    corpus_search_tool,
    date_arithmetic,
    python_tool,
    run_python_expression,
    sqlite_lookup_tool,
)
from noosphere.tools.arithmetic import ExpressionError
from noosphere.tools.bwrap import bwrap_path
from noosphere.trace import Trace
from noosphere.workspace import ToolProcessor
from tests.helpers import by_agent, chunk_reply


def test_calculator_is_arithmetic_only() -> None:
    assert calculate("2 + 3 * (4 - 1) ** 2") == 29
    assert calculate("sqrt(16) + 2^3") == 12.0
    assert calculate("round(pi, 2)") == 3.14
    assert calculate("-7 // 2 + 7 % 3 + factorial(5) + 2 ** -1 + max(1, 4)") == 121.5
    assert calculate("10 ** 1000") == 10**1000  # large, within the limit
    walk = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
    for hostile in ("__import__('os').system('true')", "open('x')", "(1).__class__", "9 ** 99999",
                    f"{walk}.__init__.__globals__['system']('true')", "x + 1", "'a' * 3", "lambda: 1", "[1, 2]",
                    "round(2.5, ndigits=1)", "1 if 1 else 2", "True + 1", "1j * 1j"):
        with pytest.raises(ValueError, match=r"not allowed|takes positional|not an arithmetic|not a real|too large"):
            calculate(hostile)


@pytest.mark.parametrize("expression", ["9**9**9", "(10 ** 999) ** 999", "((2 ** 1000) ** 1000) ** 1000",
                                        "factorial(10 ** 6)", "factorial(factorial(10))", "10 ** 1000 * 10 ** 1000",
                                        "2 ** 4001", "1.5 ** 100000", "(-8) ** 0.5", "exp(1000)", "1 / 0",
                                        "sqrt(-1)", "min()", "-" * 400 + "1" + " + 1" * 30, "(" * 300 + "1" + ")" * 300,
                                        "1" + " + 1" * 300])
def test_calculator_refuses_what_would_hold_a_cpu_or_fill_memory(expression: str) -> None:
    started = time.monotonic()
    with pytest.raises(ExpressionError):
        calculate(expression)
    assert time.monotonic() - started < 1


def test_unit_conversion_and_dates() -> None:
    assert convert_units(1, "mi", "km") == pytest.approx(1.609344)
    assert convert_units(212, "F", "C") == pytest.approx(100)
    assert convert_units(0, "C", "K") == pytest.approx(273.15)
    with pytest.raises(ValueError, match="cannot convert length to mass"):
        convert_units(1, "m", "kg")
    assert date_arithmetic("add_days", "2024-02-27", days=3) == "2024-03-01"
    assert date_arithmetic("days_between", "2024-01-01", other_date="2024-12-25") == "359"
    assert date_arithmetic("weekday", "2026-11-22") == "Sunday"


async def test_sqlite_lookup_is_read_only(tmp_path: Path) -> None:
    database = tmp_path / "cities.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE cities (name TEXT, country TEXT, population INTEGER)")
        db.executemany("INSERT INTO cities VALUES (?, ?, ?)",
                       [("Oslo", "Norway", 700000), ("Bergen", "Norway", 290000)])
    tool = sqlite_lookup_tool(database, "cities")
    assert tool.spec.parameters["properties"]["column"]["enum"] == ["name", "country", "population"]
    found = await tool.call({"column": "name", "equals": "Oslo"})
    assert found.ok and "700000" in found.output
    bad = await tool.call({"column": "name; DROP TABLE cities", "equals": "x"})
    assert not bad.ok and "invalid arguments" in bad.output


async def test_sqlite_lookup_opens_a_path_with_uri_characters_as_that_file(tmp_path: Path) -> None:
    """A '#' or '?' in the path is part of the path: the database itself is opened, read-only."""
    database = tmp_path / "c#1?x.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (name TEXT)")
        db.execute("INSERT INTO t VALUES ('here')")
    before = set(tmp_path.iterdir())
    found = await sqlite_lookup_tool(database, "t").call({"column": "name", "equals": "here"})
    assert found.ok and "here" in found.output and set(tmp_path.iterdir()) == before


async def test_corpus_search_ranks_matching_passages() -> None:
    tool = corpus_search_tool({"a": "The lighthouse keeper found a map.", "b": "Bread recipes with rye flour.",
                               "c": "A map of the old harbour and its lighthouse."})
    result = await tool.call({"query": "lighthouse map"})
    assert result.ok and result.output.splitlines()[0].startswith(("[a]", "[c]")) and "[b]" not in result.output


@pytest.mark.skipif(bwrap_path() is None,
                    reason="bubblewrap is not installed (apt-get install bubblewrap; .ci/run installs it)")
async def test_python_sandbox_limits() -> None:
    assert run_python_expression("sum(range(10))") == "45"
    with pytest.raises(SandboxError, match="refused: '__import__'"):
        run_python_expression("__import__('os').listdir('/')")
    with pytest.raises(SandboxError, match="NameError"):
        run_python_expression("open('/etc/passwd').read()")
    with pytest.raises(SandboxError):
        run_python_expression("[0] * (10 ** 10)", memory_mb=64)
    # whichever comes first on a busy or an idle machine: the wall clock or the CPU-time limit
    with pytest.raises(SandboxError, match=r"timed out|CPU-time"):
        run_python_expression("sum(range(10 ** 12))", timeout_s=1)
    failed = await python_tool(timeout_s=1).call({"expression": "1 / 0"})
    assert not failed.ok and "ZeroDivisionError" in failed.output


async def test_function_tool_validates_arguments_and_catches_failures() -> None:
    tool = calculator_tool()
    assert (await tool.call({"expression": "6 * 7"})).output == "42"
    assert "invalid arguments" in (await tool.call({})).output
    assert "ExpressionError: not allowed in a calculation: 'x'" in (await tool.call({"expression": "x + 1"})).output
    assert FunctionTool(lambda: 1, name="one").spec.name == "one"


async def test_tool_processor_decides_calls_and_reports_the_result() -> None:
    backend = ScriptedBackend(by_agent({"calc": [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "17 * 23"}}]},
        chunk_reply("17 * 23 = 391", "", 0.9, 0.95),
    ]}))
    trace = Trace(None)
    processor = ToolProcessor("calc", Model(backend, trace=trace), calculator_tool())
    chunk = await processor.execute("What is 17 times 23?", Observation(), tick=1)
    assert chunk.gist == "17 * 23 = 391" and chunk.weight == pytest.approx(1.85)
    [used] = trace.of_kind("ws_tool")
    assert used.tool == "calculator" and used.output == "391" and used.ok
    decide, answer = backend.history
    assert decide.json_schema is not None  # the call was constrained to the tool's schema
    assert "got: 391" in answer.messages[-1].content


async def test_tool_processor_may_decline() -> None:
    backend = ScriptedBackend(by_agent({"calc": [{"tool_calls": []},
                                                 chunk_reply("not a maths question", "", 0.1, 0.2)]}))
    processor = ToolProcessor("calc", Model(backend), calculator_tool())
    chunk = await processor.execute("Who wrote Hamlet?", Observation(), tick=1)
    assert chunk.relevance == 0.1
    assert "decided not to call" in backend.history[1].messages[-1].content


async def test_http_tool_sends_arguments_and_reports_failures() -> None:
    import httpx

    from noosphere.tools import HttpTool

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("city") == "Oslo":
            assert request.headers["x-api-key"] == "k-123"
            return httpx.Response(200, json={"temp_c": -3})
        return httpx.Response(404, text="unknown city")

    tool = HttpTool("weather", "current weather", "http://127.0.0.1/weather",
                    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                    headers={"x-api-key": "k-123"}, transport=httpx.MockTransport(handler))
    ok = await tool.call({"city": "Oslo"})
    assert ok.ok and '"temp_c":-3' in ok.output.replace(" ", "")
    missing = await tool.call({"city": "Atlantis"})
    assert not missing.ok and "HTTP 404" in missing.output and "k-123" not in missing.output


async def test_http_tool_arguments_cannot_replace_the_urls_own_parameters() -> None:
    import httpx

    from noosphere.tools import HttpTool

    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(str(request.url))
        return httpx.Response(200, text="sunny")

    tool = HttpTool("weather", "current weather", "http://127.0.0.1/weather?appid=SECRET&units=metric",
                    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                    transport=httpx.MockTransport(handler))
    for hostile, says in (({"city": "Oslo", "appid": "attacker"}, "appid not among the tool's parameters"),
                          ({"city": "Oslo", "units": "imperial"}, "units not among")):
        refused = await tool.call(hostile)
        assert not refused.ok and says in refused.output
    clashing = HttpTool("weather", "w", "http://127.0.0.1/weather?units=metric",
                        {"type": "object", "properties": {"city": {"type": "string"}, "units": {"type": "string"}}},
                        transport=httpx.MockTransport(handler))
    refused = await clashing.call({"city": "Oslo", "units": "imperial"})
    assert not refused.ok and "units is set by the tool itself" in refused.output
    assert sent == []
    assert (await tool.call({"city": "Oslo"})).ok and sent == ["http://127.0.0.1/weather?appid=SECRET&units=metric&city=Oslo"]


async def test_motor_picks_only_admissible_actions() -> None:
    from noosphere.workspace import MotorProcessor

    backend = ScriptedBackend([{"reason": "the apple is there", "action": "go to fridge 1"}])
    motor = MotorProcessor("motor", Model(backend))
    action = await motor.act("find the apple", ["go to fridge 1", "open drawer 2"], goal="put an apple on the table")
    assert action.action == "go to fridge 1"
    assert backend.history[0].json_schema["properties"]["action"]["enum"] == ["go to fridge 1", "open drawer 2"]


async def test_http_tool_bounds_the_whole_exchange_in_time_and_what_it_reads() -> None:
    """httpx's timeouts are per phase: a server that drips a byte at a time passed them; a huge body was read
    whole before the 4,000 characters the model sees were cut from it."""
    import asyncio

    import httpx

    from noosphere.tools import HttpTool
    from noosphere.tools.base import MAX_RESPONSE_BYTES

    sent = {"bytes": 0}

    class Drip(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            for _ in range(100):
                await asyncio.sleep(0.05)
                yield b"x"

    class Flood(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            for _ in range(1000):
                sent["bytes"] += 65536
                yield b"y" * 65536

    def tool(stream: httpx.AsyncByteStream) -> HttpTool:
        return HttpTool("t", "t", "http://127.0.0.1/t", {"type": "object", "properties": {}}, timeout_s=0.5,
                        transport=httpx.MockTransport(lambda request: httpx.Response(200, stream=stream)))

    started = asyncio.get_running_loop().time()
    slow = await tool(Drip()).call({})
    assert not slow.ok and "timed out after 0.5s" in slow.output
    assert asyncio.get_running_loop().time() - started < 2.0
    big = await tool(Flood()).call({})
    assert big.ok and len(big.output) == 4000 and sent["bytes"] <= MAX_RESPONSE_BYTES + 65536
