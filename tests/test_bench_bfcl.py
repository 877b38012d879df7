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
from tests.helpers import opener_for, stm_reply
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
    with pytest.raises(UsageError, match="is a file; give BFCL's folder"):  # it read .../x.json/BFCL_v4_..., twice
        load_bfcl("irrelevance", longer / "BFCL_v4_irrelevance.json")


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


def logprob_opener(reply: Any, gate_p: dict[str, float]) -> Any:
    """A scripted model that can score options: the gate's P(Yes) by the request's first word (`gate_p`), every
    other P(Yes) 0.9 (the STM stops after the first iteration, the proposers stay relevant)."""
    from noosphere.llm import Model, ScriptedBackend

    def scorer(request: Any) -> dict[str, float]:
        if request.agent == "gate":
            asked = next(m.content for m in request.messages if m.role == "user")
            p = gate_p[asked.split(":")[0]]
            return {"Yes": p, "No": 1 - p}
        return {"Yes": 0.9, "No": 0.1}

    backend = ScriptedBackend(reply, scorer=scorer)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    opener.backend = backend  # type: ignore[attr-defined]
    return opener


def call_motor_reply(request: Request) -> Any:
    """Every proposer proposes its own function; the STM concludes; the motor calls the circle's area, even on the
    irrelevant request."""
    if request.agent == "stm":
        return {"answer": "the circle's area is asked for"}
    if request.agent == "motor":
        return {"tool_calls": [{"name": "area_circle.calculate", "arguments": {"radius": 5}}]}
    if request.agent and request.agent.endswith("area_circle.calculate"):
        return {"calls": [{"radius": 5}], "response": "r", "additional_question": ""}
    return {"calls": [{"length": 7, "breadth": 3}], "response": "r", "additional_question": ""}


@pytest.fixture
def gated(tmp_path: Path) -> Path:
    """One simple item (the circle's area, right when called) and one irrelevance item (any call is wrong)."""
    folder = tmp_path / "gated"
    write_category(folder, "simple_python", ["simple: area of a circle of radius 5"], [AREA, RECT],
                   [{"area_circle.calculate": {"radius": [5.0], "unit": [""]}}])
    write_category(folder, "irrelevance", ["irrelevant: who wrote Hamlet?"], [AREA, RECT])
    return folder


def test_the_call_motor_is_one_request_with_every_function_and_the_conclusion(gated: Path, tmp_path: Path) -> None:
    opener = logprob_opener(call_motor_reply, {})
    code, out, err = invoke(["bench", "bfcl", "--system", "ctm", "--scores", "logprob", "--motor", "call", "--data",
                             str(gated), "--category", "simple_python", "--out", str(tmp_path / "runs"), "--quiet",
                             "--no-cache"], opener)
    assert code == 0, err
    assert '"simple_python_accuracy": 100.0' in out
    from noosphere.llm.tools import tool_calls_schema

    [motor] = [r for r in opener.backend.history if r.agent == "motor"]
    [simple] = load_bfcl("simple_python", gated)
    # a function-calling request with every function (the scripted backend emulates tools as JSON constrained to
    # their schemas), not the select motor's form
    assert [tool.name for tool in simple.tools] == ["area_circle.calculate", "area_rectangle.calculate"]
    assert motor.json_schema == tool_calls_schema(simple.tools)
    prompt = motor.messages[-1].content
    assert "simple: area of a circle of radius 5" in prompt
    assert "The workspace concluded: the circle's area is asked for" in prompt
    assert '- area_circle.calculate({"radius": 5})' in prompt
    assert '- area_rectangle.calculate({"length": 7, "breadth": 3})' in prompt
    assert not [r for r in opener.backend.score_history if r.agent == "gate"]  # no gate given: none asked
    [row] = [json.loads(line) for line in next((tmp_path / "runs").iterdir()).joinpath("items.jsonl").read_text()
             .splitlines()]
    assert row["motor"] == "call" and row["gate_p_true"] is None and row["gated"] is False
    assert row["motor_calls"] == [{"area_circle.calculate": {"radius": 5}}]


@pytest.mark.parametrize(("simple_p", "irrelevant_p"), [(0.9, 0.3), (0.3, 0.9)])
def test_the_gate_drops_the_motors_calls_below_it_and_keeps_them_above(gated: Path, tmp_path: Path,
                                                                       simple_p: float, irrelevant_p: float) -> None:
    from noosphere.bench.bfcl import CALLS_QUESTION

    opener = logprob_opener(call_motor_reply, {"simple": simple_p, "irrelevant": irrelevant_p})
    code, _, err = invoke(["bench", "bfcl", "--system", "ctm", "--scores", "logprob", "--motor", "call", "--gate",
                           "0.8", "--data", str(gated), "--category", "simple_python", "--category", "irrelevance",
                           "--out", str(tmp_path / "runs"), "--quiet", "--no-cache"], opener)
    assert code == 0, err
    run_dir = next((tmp_path / "runs").iterdir())
    rows = {r["category"]: r for r in map(json.loads, (run_dir / "items.jsonl").read_text().splitlines())}
    gates = [r for r in opener.backend.score_history if r.agent == "gate"]
    assert len(gates) == 2 and all(r.messages[-1].content == CALLS_QUESTION for r in gates)
    assert all(r.messages[-2].content == 'Function calls: [{"area_circle.calculate": {"radius": 5}}]' for r in gates)
    for category, p in (("simple_python", simple_p), ("irrelevance", irrelevant_p)):
        row = rows[category]
        assert row["motor"] == "call" and row["motor_calls"] == [{"area_circle.calculate": {"radius": 5}}]
        assert row["gate_p_true"] == pytest.approx(p) and row["confidence"] == pytest.approx(p)
        assert row["gated"] is (p < 0.8)
        assert row["prediction"] == ([] if p < 0.8 else [{"area_circle.calculate": {"radius": 5}}])
    # kept above the gate, the right call scores on the simple item; dropped below it, no call scores on irrelevance
    assert rows["simple_python"]["correct"] is (simple_p >= 0.8)
    assert rows["irrelevance"]["correct"] is (irrelevant_p < 0.8)


@pytest.mark.parametrize(("system", "extra", "message"), [
    ("ctm", ("--motor", "call", "--gate", "0.8"), "--gate takes P(True) from probabilities"),
    ("ctm", ("--scores", "logprob", "--gate", "0.8"), "--gate gates the call motor's calls"),
    ("ctm", ("--scores", "logprob", "--motor", "call", "--gate", "1.0"), "--gate must be in (0, 1), not 1.0"),
    ("ctm", ("--scores", "logprob", "--motor", "call", "--gate", "0"), "--gate must be in (0, 1), not 0.0"),
    ("ctm", ("--motor", "pick"), "pick"),
    ("base", ("--gate", "0.8"), "--gate takes P(True) from probabilities"),
    ("base", ("--scores", "logprob"), "this benchmark's base system has no scores to take from probabilities"),
    ("base", ("--scores", "samples"), "this benchmark's base system has no scores to take from probabilities"),
    ("base", ("--scores", "logprob", "--gate", "1.5"), "--gate must be in (0, 1), not 1.5"),
    ("base", ("--scores", "logprob", "--motor", "call", "--gate", "0.8"), "--motor is the ctm's last step"),
    ("base", ("--scores", "logprob", "--gate", "0.8", "--processors", "functions+generalist"),
     "--processors chooses the ctm's processors: give --system ctm"),
    ("ctm", ("--processors", "functions+generalist"), "scores the generalist by P(True) of its calls"),
    ("ctm", ("--scores", "logprob", "--processors", "generalist"), "generalist"),
])
def test_motor_and_gate_usage_errors_come_before_any_call(
        gated: Path, tmp_path: Path, system: str, extra: tuple[str, ...], message: str) -> None:
    """A gate needs probability scores and (ctm) the call motor, in (0, 1); base takes scores only for its gate."""
    opener = logprob_opener(call_motor_reply if system == "ctm" else base_reply, {"simple": 0.9, "irrelevant": 0.3})
    code, _, err = invoke(["bench", "bfcl", "--system", system, *extra, "--data", str(gated), "--out",
                           str(tmp_path / "runs"), "--quiet", "--no-cache"], opener)
    assert code == 2 and message in err
    assert not (tmp_path / "runs").exists() and not opener.backend.history and not opener.backend.score_history


@pytest.mark.parametrize(("system", "extra"), [("ctm", ()), ("base", ("--gate", "0.8"))])
def test_probability_scores_from_a_model_that_cannot_give_them_are_refused_before_a_run_folder(
        gated: Path, tmp_path: Path, system: str, extra: tuple[str, ...]) -> None:
    opener = opener_for(lambda request: {"calls": []})  # no logprobs
    code, _, err = invoke(["bench", "bfcl", "--system", system, "--scores", "logprob", *extra, "--data", str(gated),
                           "--category", "simple_python", "--out", str(tmp_path / "runs"), "--quiet", "--no-cache"],
                          opener)
    assert code == 2 and "logprobs" in err
    assert not list((tmp_path / "runs").glob("*")) and not opener.backend.history


@pytest.mark.parametrize("system", ["ctm", "base"])
def test_resume_keeps_the_system_s_gate(gated: Path, tmp_path: Path, system: str) -> None:
    """A run killed after its first item resumes with the gate (and, for ctm, the call motor) it was started with."""
    from tests.test_bench_mustard import SimulatedKill

    reply = call_motor_reply if system == "ctm" else base_reply
    started = ["--system", system, "--scores", "logprob", *(["--motor", "call"] if system == "ctm" else []),
               "--gate", "0.8"]

    def first(request: Request) -> Any:  # the first item is scored, then the process is "killed"
        if any("Hamlet" in m.content for m in request.messages):
            raise SimulatedKill
        return reply(request)

    args = ["--data", str(gated), "--category", "simple_python", "--category", "irrelevance", "--quiet", "--no-cache"]
    with pytest.raises((SimulatedKill, ExceptionGroup)):
        invoke(["bench", "bfcl", *started, "--out", str(tmp_path / "runs"), "--parallel", "1", *args],
               logprob_opener(first, {"simple": 0.9, "irrelevant": 0.3}))
    [run_dir] = list((tmp_path / "runs").iterdir())
    config = json.loads((run_dir / "config.json").read_text())
    assert config["system"] == system and config["gate"] == 0.8 and config["scores"] == "logprob"
    assert config.get("motor", "select") == ("call" if system == "ctm" else "select")
    resumed = logprob_opener(reply, {"simple": 0.9, "irrelevant": 0.3})
    code, _, err = invoke(["bench", "bfcl", "--resume", str(run_dir), *args], resumed)
    assert code == 0, err
    if system == "ctm":
        [motor] = [r for r in resumed.backend.history if r.agent == "motor"]
        assert "Hints: the workspace's processors" in motor.messages[-1].content  # the call motor, not select
    else:
        assert [r.agent for r in resumed.backend.history] == ["base"]
    [gate] = [r for r in resumed.backend.score_history if r.agent == "gate"]
    assert gate.messages[1].content == "irrelevant: who wrote Hamlet?"
    rows = {r["category"]: r for r in map(json.loads, (run_dir / "items.jsonl").read_text().splitlines())}
    assert rows["irrelevance"]["gated"] is True and rows["irrelevance"]["correct"] is True
    if system == "base":
        assert rows["irrelevance"]["base_calls"] == [{"area_circle.calculate": {"radius": 5}}]


def test_a_run_saved_before_the_motor_option_resumes_with_the_select_motor(data: Path, tmp_path: Path) -> None:
    from noosphere.bench.bfcl import solve_ctm

    captured: dict[str, Any] = {}

    def reply(request: Request) -> Any:
        captured.setdefault("first", request.agent)
        raise RuntimeError("stop")  # nothing needs to be scored: the solver's arguments are what is checked

    with pytest.raises((RuntimeError, ExceptionGroup)):
        invoke(["bench", "bfcl", "--system", "ctm", "--data", str(data), "--category", "irrelevance", "--out",
                str(tmp_path / "runs"), "--quiet", "--no-cache"], opener_for(reply))
    [run_dir] = list((tmp_path / "runs").iterdir())
    config = json.loads((run_dir / "config.json").read_text())
    assert config["motor"] == "select" and config["gate"] is None and config["processors"] == "functions"
    del config["motor"], config["gate"], config["processors"]  # as an older run saved it
    (run_dir / "config.json").write_text(json.dumps(config))
    import noosphere.bench.bfcl as bfcl_module

    seen: list[tuple[str, float | None, str]] = []

    async def spy(model: Any, settings: Any, item: Any, *, motor: str = "?", gate: float | None = -1.0,
                  processors: str = "?") -> Any:
        seen.append((motor, gate, processors))
        return await solve_ctm(model, settings, item, motor="select", gate=None)

    original = bfcl_module.solve_ctm
    bfcl_module.solve_ctm = spy  # type: ignore[assignment]
    try:
        code, _, err = invoke(["bench", "bfcl", "--resume", str(run_dir), "--quiet", "--no-cache"],
                              opener_for(lambda request: {"answer": "no", "confidence": 0.9}
                                         if request.agent == "stm" else
                                         {"calls": [], "relevance": 0.1, "response": "r", "additional_question": "",
                                          "confidence": 0.9, "surprise": 0.0}))
    finally:
        bfcl_module.solve_ctm = original  # type: ignore[assignment]
    assert code == 0, err
    assert seen == [("select", None, "functions")]


def base_reply(request: Request) -> Any:
    """The base calls the circle's area, even on the irrelevant request."""
    return {"tool_calls": [{"name": "area_circle.calculate", "arguments": {"radius": 5}}]}


@pytest.mark.parametrize(("simple_p", "irrelevant_p"), [(0.9, 0.3), (0.3, 0.9)])
def test_the_base_gate_drops_the_base_calls_below_it_and_keeps_them_above(gated: Path, tmp_path: Path,
                                                                          simple_p: float, irrelevant_p: float) -> None:
    from noosphere.bench.bfcl import CALLS_QUESTION

    opener = logprob_opener(base_reply, {"simple": simple_p, "irrelevant": irrelevant_p})
    code, _, err = invoke(["bench", "bfcl", "--system", "base", "--scores", "logprob", "--gate", "0.8", "--data",
                           str(gated), "--category", "simple_python", "--category", "irrelevance", "--out",
                           str(tmp_path / "runs"), "--quiet", "--no-cache"], opener)
    assert code == 0, err
    assert {r.agent for r in opener.backend.history} == {"base"}  # no workspace, no motor
    gates = [r for r in opener.backend.score_history if r.agent == "gate"]
    assert len(gates) == 2 and all(r.messages[-1].content == CALLS_QUESTION for r in gates)
    assert all(r.messages[-2].content == 'Function calls: [{"area_circle.calculate": {"radius": 5}}]' for r in gates)
    run_dir = next((tmp_path / "runs").iterdir())
    rows = {r["category"]: r for r in map(json.loads, (run_dir / "items.jsonl").read_text().splitlines())}
    for category, p in (("simple_python", simple_p), ("irrelevance", irrelevant_p)):
        row = rows[category]
        assert row["base_calls"] == [{"area_circle.calculate": {"radius": 5}}] and "motor" not in row
        assert row["gate_p_true"] == pytest.approx(p) and row["confidence"] == pytest.approx(p)
        assert row["gated"] is (p < 0.8)
        assert row["prediction"] == ([] if p < 0.8 else [{"area_circle.calculate": {"radius": 5}}])
    assert rows["simple_python"]["correct"] is (simple_p >= 0.8)
    assert rows["irrelevance"]["correct"] is (irrelevant_p < 0.8)
    config = json.loads((run_dir / "config.json").read_text())
    assert config["system"] == "base" and config["scores"] == "logprob" and config["gate"] == 0.8


def test_the_base_without_a_gate_asks_no_gate_and_records_none(gated: Path, tmp_path: Path) -> None:
    opener = logprob_opener(base_reply, {"simple": 0.3, "irrelevant": 0.3})
    code, _, err = invoke(["bench", "bfcl", "--system", "base", "--data", str(gated), "--category", "irrelevance",
                           "--out", str(tmp_path / "runs"), "--quiet", "--no-cache"], opener)
    assert code == 0, err
    assert not opener.backend.score_history
    [row] = [json.loads(line) for line in next((tmp_path / "runs").iterdir()).joinpath("items.jsonl").read_text()
             .splitlines()]
    assert row["prediction"] == [{"area_circle.calculate": {"radius": 5}}] and row["correct"] is False
    assert row["confidence"] is None and not {"base_calls", "gate_p_true", "gated"} & set(row)


def test_solve_base_refuses_a_gate_without_probability_scores(gated: Path) -> None:
    import asyncio

    from noosphere.bench.bfcl import solve_base
    from noosphere.errors import UsageError
    from tests.helpers import scripted

    model, backend, _ = scripted([])
    [simple] = load_bfcl("simple_python", gated)
    with pytest.raises(UsageError, match="needs probability scores"):
        asyncio.run(solve_base(model, simple, scores="verbal", gate=0.8))
    assert not backend.history




GENERALIST_CIRCLE = [{"name": "area_circle.calculate", "arguments": {"radius": 5}}]


def generalist_reply(generalist_calls: list[dict[str, Any]], motor_calls: list[dict[str, Any]]) -> Any:
    """The generalist's function-calling request makes `generalist_calls` (its answers to other processors'
    questions are plain text); the circle's proposer proposes radius 7, the rectangle's 7 by 3; the call motor makes
    `motor_calls`, the select motor picks the first proposal; the STM concludes."""
    def reply(request: Request) -> Any:
        properties = (request.json_schema or {}).get("properties", {})
        if request.agent == "stm":
            return {"answer": "the workspace's conclusion"}
        if request.agent == "motor":
            return ({"asks": ["the area"], "make": ["A"]} if "asks" in properties else {"tool_calls": motor_calls})
        if request.agent == "generalist":
            return ({"tool_calls": generalist_calls} if "tool_calls" in properties else
                    {"response": "an answer", "additional_question": ""})
        if request.agent and request.agent.endswith("area_circle.calculate"):
            return {"calls": [{"radius": 7}], "response": "r", "additional_question": ""}
        return {"calls": [{"length": 7, "breadth": 3}], "response": "r", "additional_question": ""}
    return reply


def generalist_opener(reply: Any, p_yes: Any) -> Any:
    """A scripted model whose P(Yes) is `p_yes(agent, question)` (the question: the last message's text)."""
    from noosphere.llm import Model, ScriptedBackend

    def scorer(request: Any) -> dict[str, float]:
        p = p_yes(request.agent, request.messages[-1].content)
        return {"Yes": p, "No": 1 - p}

    backend = ScriptedBackend(reply, scorer=scorer)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    opener.backend = backend  # type: ignore[attr-defined]
    return opener


def by_agent(p: dict[str, float], default: float = 0.9) -> Any:
    """Every question of an agent answered with its P(Yes) (weight 2.2 p for a processor); the STM's 0.9 stops."""
    return lambda agent, question: p.get(agent, default)


GENERALIST_RUN = ["--system", "ctm", "--scores", "logprob", "--processors", "functions+generalist"]
CIRCLE, RECTANGLE = "f0:area_circle.calculate", "f1:area_rectangle.calculate"


def run_rows(opener: Any, data: Path, out: Path, *args: str) -> list[dict[str, Any]]:
    code, _, err = invoke(["bench", "bfcl", *args, "--data", str(data), "--out", str(out), "--quiet", "--no-cache"],
                          opener)
    assert code == 0, err
    [run_dir] = list(out.iterdir())
    return [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("motor", [(), ("--motor", "call", "--gate", "0.8")])
def test_a_winning_generalist_makes_the_bases_own_calls(gated: Path, tmp_path: Path, motor: tuple[str, ...]) -> None:
    from noosphere.bench.bfcl import CALLS_QUESTION
    from noosphere.workspace.scores import SURPRISE_QUESTION

    # the generalist wins (weight 2.2 x 0.95 against 2.2 x 0.6); the motor, were it asked, would call the rectangle
    opener = generalist_opener(generalist_reply(GENERALIST_CIRCLE, [{"name": "area_rectangle.calculate", "arguments":
                                                                     {"length": 1, "breadth": 1}}]),
                               by_agent({"generalist": 0.95, CIRCLE: 0.6, RECTANGLE: 0.6}))
    [row] = run_rows(opener, gated, tmp_path / "runs", *GENERALIST_RUN, *motor, "--category", "simple_python")
    assert row["winner"] == "generalist" and row["winner_relevance"] == 0.95 and row["path"] == "generalist"
    assert row["relevance"] == {CIRCLE: 0.6, RECTANGLE: 0.6, "generalist": 0.95}
    assert row["generalist_calls"] == row["prediction"] == [{"area_circle.calculate": {"radius": 5}}]
    assert row["correct"] is True and row["winner_only"] is True
    history = opener.backend.history
    assert "motor" not in {r.agent for r in history}
    gated_run = bool(motor)
    assert row["gate_p_true"] == (pytest.approx(0.95) if gated_run else None) and row["gated"] is False
    assert row["confidence"] == pytest.approx(0.95 if gated_run else 0.9)  # the gate's P(True), else the STM's
    # the gate reads the generalist's relevance, the same question after the same calls: not asked again
    assert not [r for r in opener.backend.score_history if r.agent == "gate"]
    judged = [r.messages for r in opener.backend.score_history if r.agent == "generalist"]
    assert sorted(m[-1].content for m in judged) == sorted([CALLS_QUESTION, SURPRISE_QUESTION])
    assert all(m[-2].content == 'Function calls: [{"area_circle.calculate": {"radius": 5}}]' for m in judged)
    # its request is the base's own, to the message and the schema
    [request] = [r for r in history if r.agent == "generalist"]
    base = generalist_opener(lambda r: {"tool_calls": GENERALIST_CIRCLE}, by_agent({}))
    run_rows(base, gated, tmp_path / "base", "--system", "base", "--category", "simple_python")
    [base_request] = base.backend.history
    assert request.messages == base_request.messages and request.json_schema == base_request.json_schema


@pytest.mark.parametrize("motor", ["call", "select"])
def test_a_winning_function_processor_takes_the_motor_path(gated: Path, tmp_path: Path, motor: str) -> None:
    # the circle's proposer wins (0.9) over the rectangle's (0.6) and the generalist (0.55, above the bar); the
    # generalist's own calls (a 2 by 2 rectangle) would be wrong, the motor's (the circle, radius 5) are right
    opener = generalist_opener(generalist_reply([{"name": "area_rectangle.calculate",
                                                  "arguments": {"length": 2, "breadth": 2}}], GENERALIST_CIRCLE),
                               by_agent({"generalist": 0.55, CIRCLE: 0.9, RECTANGLE: 0.6}))
    rows = run_rows(opener, gated, tmp_path / "runs", *GENERALIST_RUN, "--motor", motor, "--category",
                    "simple_python")
    [row] = rows
    assert row["winner"] == CIRCLE and row["winner_relevance"] == 0.9 and row["path"] == "motor"
    assert row["generalist_calls"] == [{"area_rectangle.calculate": {"length": 2, "breadth": 2}}]
    [request] = [r for r in opener.backend.history if r.agent == "motor"]
    prompt = request.messages[-1].content
    assert '"length": 2' not in prompt  # the motor sees the function processors' proposals only
    assert '{"radius": 7}' in prompt and '{"length": 7, "breadth": 3}' in prompt
    if motor == "call":
        assert row["motor"] == "call" and row["prediction"] == [{"area_circle.calculate": {"radius": 5}}]
        assert row["correct"] is True
    else:  # the select motor picks the circle's own proposal (radius 7): the motor path ran, not the generalist's
        assert row["prediction"] == [{"area_circle.calculate": {"radius": 7}}] and "motor" not in row


@pytest.mark.parametrize(("case", "p_yes"), [
    # every processor below the bar (0.5): a function processor wins, but no one's relevance calls for acting
    ("none clears the bar", by_agent({"generalist": 0.2, CIRCLE: 0.3, RECTANGLE: 0.3})),
    # the generalist wins (weight 0.45 + 0.45 + 0.2 x 0.45 = 0.99) with a relevance below the bar, while the
    # function processors' relevance (P(True) of the serves question, 0.6) clears it on a low confidence (0.1):
    # weight 0.6 + 0.1 + 0.2 x 0.1 = 0.72
    ("the generalist wins below the bar",
     lambda agent, question: 0.45 if agent == "generalist" else 0.6 if "exactly these calls" in question else 0.1
     if agent != "stm" else 0.9),
])
def test_no_call_when_the_workspace_has_nothing_above_the_bar_to_act_on(gated: Path, tmp_path: Path, case: str,
                                                                         p_yes: Any) -> None:
    # the generalist calls the circle on an irrelevant request, and so would the call motor: either is wrong
    opener = generalist_opener(generalist_reply(GENERALIST_CIRCLE, GENERALIST_CIRCLE), p_yes)
    [row] = run_rows(opener, gated, tmp_path / "runs", *GENERALIST_RUN, "--motor", "call", "--category",
                     "irrelevance")
    assert row["path"] == "none" and row["prediction"] == [] and row["correct"] is True
    assert row["generalist_calls"] == [{"area_circle.calculate": {"radius": 5}}]
    assert (row["winner"] == "generalist") is (case == "the generalist wins below the bar")
    assert row["winner_relevance"] < 0.5
    if case == "the generalist wins below the bar":
        assert row["relevance"][CIRCLE] == 0.6 and row["relevance"][RECTANGLE] == 0.6
    assert "motor" not in {r.agent for r in opener.backend.history}


def test_the_generalist_bids_its_calls_once_and_answers_questions_as_a_processor(gated: Path,
                                                                                 tmp_path: Path) -> None:
    """Below the STM's threshold both iterations run: the winner's follow-up question is answered by the generalist
    like any processor, and its second bid is the first one's calls, not a second function-calling request."""
    reply = generalist_reply(GENERALIST_CIRCLE, [])

    def asking(request: Request) -> Any:
        answered = reply(request)
        if request.agent == CIRCLE:
            answered["additional_question"] = "Which unit?"
        return answered

    opener = generalist_opener(asking, lambda agent, question: 0.5 if agent == "stm" else
                               {"generalist": 0.6, CIRCLE: 0.9}.get(agent or "", 0.3))
    [row] = run_rows(opener, gated, tmp_path / "runs", *GENERALIST_RUN, "--motor", "call", "--category",
                     "simple_python", "--parallel", "1")
    requests = [r for r in opener.backend.history if r.agent == "generalist"]
    tool_requests = [r for r in requests if "tool_calls" in (r.json_schema or {}).get("properties", {})]
    assert len(tool_requests) == 1  # the task's calls asked once, bid in both iterations
    assert any("Which unit?" in r.messages[-1].content for r in requests if r not in tool_requests)
    assert row["generalist_calls"] == [{"area_circle.calculate": {"radius": 5}}]
    assert row["winner"] == CIRCLE and row["path"] == "motor"


def test_solve_ctm_refuses_the_generalist_without_probability_scores_and_unknown_processors(gated: Path) -> None:
    import asyncio

    from noosphere.bench.bfcl import solve_ctm
    from noosphere.errors import UsageError
    from noosphere.workspace import WorkspaceSettings
    from tests.helpers import scripted

    model, backend, _ = scripted([])
    [simple] = load_bfcl("simple_python", gated)
    with pytest.raises(UsageError, match="needs probability scores"):
        asyncio.run(solve_ctm(model, WorkspaceSettings(), simple, processors="functions+generalist"))
    with pytest.raises(UsageError, match="everything"):
        asyncio.run(solve_ctm(model, WorkspaceSettings(), simple, processors="everything"))  # type: ignore[arg-type]
    assert not backend.history


def test_a_category_given_twice_is_scored_once_and_the_data_path_is_saved_whole(
        data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--category irrelevance --category irrelevance` scored each item twice; `--data` saved as typed made a resume
    from another directory read other data, or none."""
    opener = opener_for(lambda request: {"tool_calls": []})
    monkeypatch.chdir(data.parent)
    code, _, err = invoke(["bench", "bfcl", "--system", "base", "--data", data.name, "--category", "irrelevance",
                             "--category", "irrelevance", "--out", str(tmp_path / "runs"), "--quiet", "--no-cache"],
                            opener)
    assert code == 0, err
    run_dir = next((tmp_path / "runs").iterdir())
    assert len((run_dir / "items.jsonl").read_text().splitlines()) == 1 and len(opener.backend.history) == 1
    config = json.loads((run_dir / "config.json").read_text())
    assert config["categories"] == ["irrelevance"] and config["data"] == str(data.resolve())


def _no_calls(request: Request) -> Any:
    return {"tool_calls": []}


def _no_call_base_run(data: Path, tmp_path: Path) -> Path:
    """A finished base run on the irrelevance items whose every reply makes no call."""
    code, _, err = invoke(["bench", "bfcl", "--system", "base", "--data", str(data), "--category", "irrelevance",
                           "--out", str(tmp_path / "runs"), "--quiet", "--no-cache"], opener_for(_no_calls))
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    return run_dir


def test_a_resume_refuses_another_category_and_takes_the_runs_own_again(data: Path, tmp_path: Path) -> None:
    """The run saves --category as its `categories`: another category on a resume was ignored silently (the run's
    own were scored), as was the check of the rest of its options' spelling."""
    run_dir = _no_call_base_run(data, tmp_path)
    before = (run_dir / "result.json").read_text()
    opener = opener_for(_no_calls)
    code, _, err = invoke(["bench", "bfcl", "--resume", str(run_dir), "--category", "parallel_multiple", "--quiet",
                           "--no-cache"], opener)
    assert code == 2 and "--category parallel_multiple (the run has irrelevance)" in err, err
    assert "keeps the settings it was made with" in err and len(err.strip().splitlines()) == 1
    assert (run_dir / "result.json").read_text() == before and opener.backend.history == []
    code, _, err = invoke(["bench", "bfcl", "--resume", str(run_dir), "--category", "irrelevance", "--category",
                           "irrelevance", "--quiet", "--no-cache"], opener)  # each once, as a new run saves it
    assert code == 0, err


def test_a_run_made_before_processors_were_saved_keeps_the_functions(data: Path, tmp_path: Path) -> None:
    """A config without `processors` is a run of the function processors (`noosphere.bench.saved`): a resume that
    asks for the generalist is refused, as for a run that saved the option."""
    run_dir = _no_call_base_run(data, tmp_path)
    config = json.loads((run_dir / "config.json").read_text())
    del config["processors"]  # as runs made before the option
    (run_dir / "config.json").write_text(json.dumps(config))
    opener = opener_for(_no_calls)
    code, _, err = invoke(["bench", "bfcl", "--resume", str(run_dir), "--processors", "functions+generalist",
                           "--quiet", "--no-cache"], opener)
    assert code == 2 and "--processors functions+generalist (the run has functions)" in err, err
    code, _, err = invoke(["bench", "bfcl", "--resume", str(run_dir), "--processors", "functions", "--quiet",
                           "--no-cache"], opener)
    assert code == 0, err
