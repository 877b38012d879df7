"""BFCL: schema conversion, our AST matcher's rules, and both systems on the scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench.bfcl_data import BfclItem, load_bfcl, to_json_schema
from noosphere.bench.bfcl_match import score
from noosphere.llm import Message, ToolCall
from noosphere.llm.types import Request
from tests.helpers import stm_reply
from tests.test_bench_mustard import opener_for
from tests.test_cli import invoke

AREA = {"name": "area_circle.calculate", "description": "Area of a circle.",
        "parameters": {"type": "dict", "properties": {"radius": {"type": "float"}, "unit": {"type": "string"}},
                       "required": ["radius"]}}
RECT = {"name": "area_rectangle.calculate", "description": "Area of a rectangle.",
        "parameters": {"type": "dict", "properties": {"length": {"type": "float"}, "breadth": {"type": "float"}},
                       "required": ["length", "breadth"]}}


def item(category: str, truth: list[dict[str, Any]], functions: tuple[dict[str, Any], ...] = (AREA, RECT)
         ) -> BfclItem:
    return BfclItem("x_0", category, (Message.user("q"),), functions, tuple(truth))


def test_schema_dialect_is_converted() -> None:
    converted = to_json_schema({"type": "dict", "properties": {"xs": {"type": "tuple", "items": {"type": "float"}},
                                                               "any": {"type": "any"}}, "required": ["xs"]})
    assert converted == {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "number"}},
                                                          "any": {}}, "required": ["xs"]}


def test_simple_match_rules() -> None:
    truth = [{"area_circle.calculate": {"radius": [5.0], "unit": ["Square Meters", ""]}}]
    simple = item("simple_python", truth)
    assert score(simple, [ToolCall("area_circle.calculate", {"radius": 5})])[0]  # int accepted as float
    assert score(simple, [ToolCall("area_circle.calculate", {"radius": 5.0, "unit": "square_meters"})])[0]
    assert not score(simple, [ToolCall("area_circle.calculate", {"radius": 6})])[0]
    assert not score(simple, [ToolCall("area_circle.calculate", {"radius": "5"})])[0]  # wrong type
    assert "unexpected parameter" in score(simple, [ToolCall("area_circle.calculate", {"radius": 5, "r": 1})])[1]
    assert "expected 1" in score(simple, [])[1]
    assert not score(simple, [ToolCall("area_rectangle.calculate", {"length": 5, "breadth": 1})])[0]


def test_parallel_is_order_free_and_irrelevance_wants_no_call() -> None:
    truth = [{"area_rectangle.calculate": {"length": [7.0], "breadth": [3.0]}},
             {"area_circle.calculate": {"radius": [5.0], "unit": [""]}}]
    parallel = item("parallel_multiple", truth)
    calls = [ToolCall("area_circle.calculate", {"radius": 5}),
             ToolCall("area_rectangle.calculate", {"length": 7, "breadth": 3})]
    assert score(parallel, calls) == (True, "match")
    assert not score(parallel, calls[:1])[0]
    irrelevant = item("irrelevance", [])
    assert score(irrelevant, []) == (True, "no call")
    assert not score(irrelevant, calls[:1])[0]


def test_loader_reads_items_and_answers(tmp_path: Path) -> None:
    (tmp_path / "possible_answer").mkdir()
    row = {"id": "simple_python_0", "question": [[{"role": "user", "content": "area of r=5"}]], "function": [AREA]}
    (tmp_path / "BFCL_v4_simple_python.json").write_text(json.dumps(row) + "\n")
    (tmp_path / "possible_answer" / "BFCL_v4_simple_python.json").write_text(
        json.dumps({"id": "simple_python_0", "ground_truth": [{"area_circle.calculate": {"radius": [5]}}]}) + "\n")
    [loaded] = load_bfcl("simple_python", tmp_path)
    assert loaded.ground_truth[0]["area_circle.calculate"]["radius"] == [5]
    assert loaded.tools[0].parameters["type"] == "object"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "bfcl"
    (folder / "possible_answer").mkdir(parents=True)
    question = "Area of a 7 by 3 rectangle and of a circle of radius 5."
    rows = {"parallel_multiple": ({"id": "parallel_multiple_1", "question": [[{"role": "user", "content": question}]],
                                   "function": [AREA, RECT]},
                                  [{"area_rectangle.calculate": {"length": [7.0], "breadth": [3.0]}},
                                   {"area_circle.calculate": {"radius": [5.0], "unit": [""]}}]),
            "irrelevance": ({"id": "irrelevance_0", "question": [[{"role": "user", "content": "Who wrote Hamlet?"}]],
                             "function": [AREA]}, None)}
    for category, (row, truth) in rows.items():
        (folder / f"BFCL_v4_{category}.json").write_text(json.dumps(row) + "\n")
        if truth is not None:
            (folder / "possible_answer" / f"BFCL_v4_{category}.json").write_text(
                json.dumps({"id": row["id"], "ground_truth": truth}) + "\n")
    return folder


def test_base_makes_one_request_with_all_functions(data: Path, tmp_path: Path) -> None:
    def reply(request: Request) -> Any:
        if any("Hamlet" in m.content for m in request.messages):
            return {"tool_calls": []}
        return {"tool_calls": [{"name": "area_rectangle.calculate", "arguments": {"length": 7, "breadth": 3}},
                               {"name": "area_circle.calculate", "arguments": {"radius": 5}}]}

    opener = opener_for(reply)
    code, out, err = invoke(["bench", "bfcl", "--system", "base", "--data", str(data), "--category",
                             "parallel_multiple", "--category", "irrelevance", "--out", str(tmp_path / "runs"),
                             "--quiet", "--no-cache"], opener)
    assert code == 0, err
    assert '"parallel_multiple_accuracy": 100.0' in out and '"irrelevance_accuracy": 100.0' in out
    assert len(opener.backend.history) == 2


def test_ctm_makes_the_proposed_calls_the_motor_keeps(data: Path, tmp_path: Path) -> None:
    def reply(request: Request) -> Any:
        hamlet = any("Hamlet" in m.content for m in request.messages)
        if request.agent == "stm":
            return stm_reply("both areas are needed", 0.9)
        if request.agent == "motor":  # keeps both area calls; drops the circle proposed for Hamlet
            if hamlet:
                return {"asks": ["discuss Hamlet"], "make": ["none"]}
            return {"asks": ["rectangle area", "circle area", "a third ask"], "make": ["B", "A", "A"]}
        base = {"response": "r", "additional_question": "", "confidence": 0.9, "surprise": 0.0}
        if hamlet:
            return {"calls": [{"radius": 1}], "relevance": 0.9, **base}  # every proposer proposes its own function
        if request.agent and request.agent.endswith("area_circle.calculate"):
            return {"calls": [{"radius": 5}], "relevance": 0.9, **base}
        return {"calls": [{"length": 7, "breadth": 3}], "relevance": 0.8, **base}

    opener = opener_for(reply)
    code, out, err = invoke(["bench", "bfcl", "--system", "ctm", "--data", str(data), "--out",
                             str(tmp_path / "runs"), "--quiet", "--no-cache", "--category", "parallel_multiple",
                             "--category", "irrelevance"], opener)
    assert code == 0, err
    assert '"parallel_multiple_accuracy": 100.0' in out and '"irrelevance_accuracy": 100.0' in out
    agents = {request.agent for request in opener.backend.history}
    assert agents == {"f0:area_circle.calculate", "f1:area_rectangle.calculate", "stm", "motor"}
    circle_schema = next(r.json_schema for r in opener.backend.history if r.agent == "f0:area_circle.calculate")
    assert circle_schema["properties"]["calls"]["items"]["properties"]["radius"] == {"type": "number"}
    motor = next(r for r in opener.backend.history if r.agent == "motor" and "rectangle" in r.messages[-1].content)
    assert '(A) area_circle.calculate({"radius": 5})' in motor.messages[-1].content
    assert '(B) area_rectangle.calculate({"length": 7, "breadth": 3})' in motor.messages[-1].content
    run_dir = next((tmp_path / "runs").iterdir())
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert [r["proposed"] for r in rows] == [2, 1]


def test_proposals_below_the_relevance_bar_never_reach_the_motor(data: Path, tmp_path: Path) -> None:
    def reply(request: Request) -> Any:
        if request.agent == "stm":
            return stm_reply("no function fits", 0.9)
        return {"calls": [{"radius": 1}], "relevance": 0.1, "response": "r", "additional_question": "",
                "confidence": 0.9, "surprise": 0.0}

    opener = opener_for(reply)
    code, out, err = invoke(["bench", "bfcl", "--system", "ctm", "--data", str(data), "--out",
                             str(tmp_path / "runs"), "--quiet", "--no-cache", "--category", "irrelevance"], opener)
    assert code == 0, err
    assert '"irrelevance_accuracy": 100.0' in out
    assert "motor" not in {request.agent for request in opener.backend.history}


def test_the_motor_makes_one_call_per_ask_it_listed() -> None:
    import asyncio

    from noosphere.bench.bfcl import _select
    from noosphere.llm import ToolCall
    from tests.helpers import scripted

    functions = ("largest_city", "capital", "population")
    proposed = [ToolCall(f"country.{what}", {"country": "Brazil"}) for what in functions]
    model, backend, _ = scripted([{"asks": ["the largest city of Brazil"], "make": ["A", "B", "C"]}])
    made = asyncio.run(_select(model, "Largest city of Brazil?", "the largest city", proposed))
    assert made == (proposed[0],)  # one ask, one call: the extra letters are dropped
    schema = backend.history[0].json_schema
    assert list(schema["properties"]) == ["asks", "make"]  # what the request asks for comes first


def write_category(folder: Path, category: str, questions: list[str], functions: list[dict[str, Any]],
                   truth: list[dict[str, Any]] | None = None) -> None:
    """A category file of one row per question, ids `{category}_{n}`, each with the same functions and truth."""
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    ids = [f"{category}_{n}" for n in range(len(questions))]
    (folder / f"BFCL_v4_{category}.json").write_text("".join(
        json.dumps({"id": row_id, "question": [[{"role": "user", "content": question}]], "function": functions})
        + "\n" for row_id, question in zip(ids, questions, strict=True)))
    if truth is not None:
        (folder / "possible_answer" / f"BFCL_v4_{category}.json").write_text(
            "".join(json.dumps({"id": row_id, "ground_truth": truth}) + "\n" for row_id in ids))


@pytest.fixture
def longer(tmp_path: Path) -> Path:
    """Three parallel_multiple items and two irrelevance items, each question naming its own id."""
    folder = tmp_path / "longer"
    write_category(folder, "parallel_multiple", [f"pm{n}: a 7 by 3 rectangle and a circle of radius 5" for n in
                                                 range(3)], [AREA, RECT],
                   [{"area_rectangle.calculate": {"length": [7.0], "breadth": [3.0]}},
                    {"area_circle.calculate": {"radius": [5.0], "unit": [""]}}])
    write_category(folder, "irrelevance", [f"ir{n}: who wrote Hamlet?" for n in range(2)], [AREA])
    return folder


def test_loader_offset_skips_the_first_items_of_the_category(longer: Path) -> None:
    from noosphere.errors import UsageError

    assert [i.id for i in load_bfcl("parallel_multiple", longer, offset=1)] == ["parallel_multiple_1",
                                                                                "parallel_multiple_2"]
    assert [i.id for i in load_bfcl("parallel_multiple", longer, offset=1, limit=1)] == ["parallel_multiple_1"]
    assert [i.id for i in load_bfcl("parallel_multiple", longer, limit=2)] == ["parallel_multiple_0",
                                                                               "parallel_multiple_1"]
    with pytest.raises(UsageError, match="offset must be 0 or more"):
        load_bfcl("parallel_multiple", longer, offset=-1)
    with pytest.raises(UsageError, match="offset 2 leaves none of the 2 items of BFCL category irrelevance"):
        load_bfcl("irrelevance", longer, offset=2)


def test_offset_selects_each_categorys_later_items_and_is_kept_on_resume(longer: Path, tmp_path: Path) -> None:
    from tests.test_bench_mustard import SimulatedKill

    answered: list[str] = []

    def first(request: Request) -> Any:  # answers one item, then the process is "killed"
        if answered:
            raise SimulatedKill
        answered.append(request.messages[-1].content)
        return {"tool_calls": []}

    with pytest.raises((SimulatedKill, ExceptionGroup)):
        invoke(["bench", "bfcl", "--system", "base", "--data", str(longer), "--category", "parallel_multiple",
                "--category", "irrelevance", "--offset", "1", "--limit", "1", "--out", str(tmp_path / "runs"),
                "--quiet", "--no-cache"], opener_for(first))
    assert answered == ["pm1: a 7 by 3 rectangle and a circle of radius 5"]  # item 0 of the category left out
    [run_dir] = list((tmp_path / "runs").iterdir())
    config = json.loads((run_dir / "config.json").read_text())
    assert config["offset"] == 1 and config["limit"] == 1
    resumed = opener_for(lambda request: {"tool_calls": []})
    code, out, err = invoke(["bench", "bfcl", "--resume", str(run_dir), "--quiet", "--no-cache"], resumed)
    assert code == 0, err
    # the saved offset holds on resume: the irrelevance item after the first, and nothing else
    assert [r.messages[-1].content for r in resumed.backend.history] == ["ir1: who wrote Hamlet?"]
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["parallel_multiple_1", "irrelevance_1"]
    assert '"parallel_multiple_n": 1' in out and '"irrelevance_n": 1' in out


def test_a_negative_offset_or_one_past_a_category_is_a_usage_error(longer: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    opener = opener_for(lambda request: {"tool_calls": []})
    code, _, _ = invoke(["bench", "bfcl", "--system", "base", "--data", str(longer), "--offset", "-1", "--out",
                         str(tmp_path / "negative"), "--quiet", "--no-cache"], opener)
    assert code == 2 and "Invalid value for '--offset'" in capsys.readouterr().err  # typer's own check
    assert not (tmp_path / "negative").exists()
    code, _, err = invoke(["bench", "bfcl", "--system", "base", "--data", str(longer), "--category",
                           "parallel_multiple", "--category", "irrelevance", "--offset", "2", "--out",
                           str(tmp_path / "past"), "--quiet", "--no-cache"], opener)
    assert code == 2 and "offset 2 leaves none of the 2 items of BFCL category irrelevance" in err
    assert not (tmp_path / "past").exists() and not opener.backend.history


def test_ctm_detail_records_the_last_winner_each_relevance_and_the_winner_alone(tmp_path: Path) -> None:
    folder = tmp_path / "bfcl"
    write_category(folder, "multiple", ["Area of a 7 by 3 rectangle."], [AREA, RECT],
                   [{"area_rectangle.calculate": {"length": [7.0], "breadth": [3.0]}}])
    write_category(folder, "irrelevance", ["Who wrote Hamlet?"], [AREA])
    bids: dict[tuple[str | None, bool], int] = {}

    def reply(request: Request) -> Any:
        hamlet = any("Hamlet" in m.content for m in request.messages)
        if request.agent == "stm":
            return stm_reply("not sure yet", 0.5)  # below the threshold: both iterations run
        if request.agent == "motor":  # makes every proposed call: wrong on "multiple", whatever the winner did
            return {"asks": ["area", "other"], "make": ["A", "B"]}
        base = {"response": "r", "additional_question": "", "confidence": 0.9, "surprise": 0.0}
        if hamlet:
            return {"calls": [{"radius": 1}], "relevance": 0.7, **base}
        bid = bids[(request.agent, hamlet)] = bids.get((request.agent, hamlet), 0) + 1
        if request.agent == "f0:area_circle.calculate":  # wins the first competition, loses the second
            return {"calls": [{"radius": 7}], "relevance": 0.9 if bid == 1 else 0.612345678, **base}
        return {"calls": [{"length": 7, "breadth": 3}], "relevance": 0.87654321, **base}

    code, _, err = invoke(["bench", "bfcl", "--system", "ctm", "--data", str(folder), "--category", "multiple",
                           "--category", "irrelevance", "--out", str(tmp_path / "runs"), "--quiet", "--no-cache"],
                          opener_for(reply))
    assert code == 0, err
    run_dir = next((tmp_path / "runs").iterdir())
    multiple, irrelevance = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert bids == {("f0:area_circle.calculate", False): 2, ("f1:area_rectangle.calculate", False): 2}
    assert multiple["winner"] == "f1:area_rectangle.calculate"  # the last competition's, not the first's
    assert multiple["relevance"] == {"f0:area_circle.calculate": 0.6123, "f1:area_rectangle.calculate": 0.8765}
    assert multiple["winner_only"] is True and multiple["correct"] is False  # the motor's extra call cost it
    assert multiple["proposed"] == 2 and multiple["reason"] and multiple["category"] == "multiple"
    assert irrelevance["winner"] == "f0:area_circle.calculate" and irrelevance["relevance"] == {
        "f0:area_circle.calculate": 0.7}
    assert irrelevance["winner_only"] is False  # the winner alone would have called on an irrelevant request
