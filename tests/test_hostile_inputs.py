"""Malformed inputs through the CLI: each is one line (naming the file and the line or key), the right exit code, no
traceback and no run folder left behind; damaged run files are read around, their bad lines told by number.

`python -m tests.test_hostile_inputs` prints the table of inputs, exit codes and messages (for the project note).
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import socket
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from noosphere.cli import make_app, run
from noosphere.llm import Model, ScriptedBackend
from noosphere.memory import MemoryStore
from noosphere.runs import Run
from noosphere.viewer import load_bundle

GSM_ROW = {"question": "Tom has 3 apples and buys 4 more. How many now?", "answer": "3 + 4 = 7\n#### 7"}
MUSTARD_ROW = {"utterance": "Oh great, another Monday.", "speaker": "CHANDLER", "context": ["It is Monday."],
               "context_speakers": ["ROSS"], "show": "FRIENDS", "sarcasm": True}
BFCL_ROW = {"id": "simple_python_0", "question": [[{"role": "user", "content": "Area of a 3-4-5 triangle?"}]],
            "function": [{"name": "area", "description": "Triangle area.",
                          "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}]}
ALFWORLD_GAME = {"pddl_domain": "(define (domain alfred))", "pddl_problem": "(define (problem p))",
                 "grammar": "grammar :: {}", "solvable": True, "walkthrough": ["go to desk 1"]}


def no_model(model_id: str, **kwargs: Any) -> Model:
    raise AssertionError("a malformed input reached the model: it was not refused first")


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str


def cli(args: list[str], opener: Callable[..., Model] = no_model) -> Outcome:
    """The CLI as `main` runs it, with stdout and stderr captured (typer's own errors go to sys.stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(make_app(opener), args)
    return Outcome(code, out.getvalue(), err.getvalue())


def jsonl(*rows: Any) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)


# ---------------------------------------------------------------- malformed data files: refused before any run


@dataclass(frozen=True)
class Refused:
    """A malformed input: what it is, how to make it in a folder, and what the one line must say."""

    name: str
    make: Callable[[Path], list[str]]
    says: tuple[str, ...]
    code: int = 2


def _file(tmp: Path, name: str, content: str | bytes) -> Path:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def mustard(content: str | bytes) -> Callable[[Path], list[str]]:
    return lambda tmp: ["bench", "mustard", "--system", "base", "--data", str(_file(tmp, "mustard.json", content)),
                        "--out", str(tmp / "runs")]


def gsm8k(content: str | bytes, *extra: str) -> Callable[[Path], list[str]]:
    return lambda tmp: ["bench", "gsm8k", "--system", "base", "--data", str(_file(tmp, "gsm8k.jsonl", content)),
                        "--out", str(tmp / "runs"), *extra]


def bfcl(questions: str | bytes, answers: str | None = None) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        _file(tmp, "bfcl/BFCL_v4_simple_python.json", questions)
        if answers is not None:
            _file(tmp, "bfcl/possible_answer/BFCL_v4_simple_python.json", answers)
        return ["bench", "bfcl", "--system", "base", "--category", "simple_python", "--data", str(tmp / "bfcl"),
                "--out", str(tmp / "runs")]
    return make


def alfworld(game: str | bytes | None) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        (tmp / "alf" / "valid_seen").mkdir(parents=True)
        _file(tmp, "alf/valid_seen/pick_and_place_simple-Apple-None-Table-1/trial_1/game.tw-pddl",
              json.dumps(ALFWORLD_GAME))
        if game is not None:
            _file(tmp, "alf/valid_seen/pick_and_place_simple-Apple-None-Table-2/trial_1/game.tw-pddl", game)
        return ["bench", "alfworld", "--system", "react", "--memory", "none", "--data", str(tmp / "alf"),
                "--out", str(tmp / "runs")]
    return make


def textworld_cache(tmp: Path) -> list[str]:
    _file(tmp, "games/tier1/coin_collector-0.z8", b"")  # a compiled game cut to nothing
    return ["bench", "textworld", "--system", "react", "--memory", "none", "--per-challenge", "1",
            "--games-dir", str(tmp / "games"), "--out", str(tmp / "runs")]


def memory(make_db: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        (tmp / "memory").mkdir()
        make_db(tmp / "memory" / "memory.sqlite")
        return ["memory", "show", str(tmp / "memory")]
    return make


def _foreign_database(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE songs (title TEXT)")
        db.commit()


def _episode_steps_not_json(path: Path) -> None:
    MemoryStore(path.parent)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("INSERT INTO episodes (task, kind, game, won, steps) VALUES ('t', 'k', 'g', 1, '[[0, \"go\"')")
        db.commit()


def _episode_step_of_wrong_type(path: Path) -> None:
    MemoryStore(path.parent)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("INSERT INTO episodes (task, kind, game, won, steps) VALUES ('t', 'k', 'g', 1, '[[\"one\", 2]]')")
        db.commit()


def _resume_config_not_json(tmp: Path) -> list[str]:
    _file(tmp, "runs/old/config.json", '{"benchmark": "gsm8k", "model"')
    _file(tmp, "runs/old/trace.jsonl", "")
    return ["bench", "gsm8k", "--resume", str(tmp / "runs" / "old")]


def _resume_another_benchmark(command: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        _file(tmp, "runs/old/config.json", json.dumps({"benchmark": "mustard", "model": "scripted", "seed": 0,
                                                       "system": "base"}))
        _file(tmp, "runs/old/trace.jsonl", "")
        return ["bench", command, "--resume", str(tmp / "runs" / "old")]
    return make


def _resume_config_edited(**edited: Any) -> Callable[[Path], list[str]]:
    """A GSM8K run whose config.json was edited by hand: its item selection (limit, offset, data) of another type."""
    def make(tmp: Path) -> list[str]:
        data = _file(tmp, "gsm8k.jsonl", jsonl(GSM_ROW, GSM_ROW))
        saved = {"benchmark": "gsm8k", "model": "scripted", "seed": 0, "system": "base", "limit": None, "offset": 0,
                 "data": str(data), **edited}
        _file(tmp, "runs/old/config.json", json.dumps({k: v for k, v in saved.items() if v != "(absent)"}))
        _file(tmp, "runs/old/trace.jsonl", "")
        return ["bench", "gsm8k", "--resume", str(tmp / "runs" / "old")]
    return make


def _resume_workspace_config_edited(benchmark: str, **edited: Any) -> Callable[[Path], list[str]]:
    """A MUStARD or BFCL run whose config.json was edited by hand: its system or workspace settings."""
    def make(tmp: Path) -> list[str]:
        data = _file(tmp, "mustard.json", json.dumps({"1_60": MUSTARD_ROW}))
        saved = {"benchmark": benchmark, "model": "scripted", "seed": 0, "system": "ctm", "iterations": 3,
                 "threshold": 0.8, "scores": "verbal", "limit": None, "offset": 0,
                 "data": str(data) if benchmark == "mustard" else str(tmp), **edited}
        _file(tmp, "runs/old/config.json", json.dumps({k: v for k, v in saved.items() if v != "(absent)"}))
        _file(tmp, "runs/old/trace.jsonl", "")
        return ["bench", benchmark, "--resume", str(tmp / "runs" / "old")]
    return make


def _together_without_a_model(tmp: Path) -> list[str]:
    _file(tmp, "runs/old/config.json", json.dumps({"benchmark": "textworld", "seed": 0, "system": "react"}))
    _file(tmp, "runs/old/trace.jsonl", "")
    return ["bench", "together", str(tmp / "runs" / "old")]


def _bfcl_id_in_two_categories(tmp: Path) -> list[str]:
    row = {**BFCL_ROW, "id": "q_0"}
    _file(tmp, "bfcl/BFCL_v4_simple_python.json", jsonl(row))
    _file(tmp, "bfcl/possible_answer/BFCL_v4_simple_python.json", jsonl({"id": "q_0",
                                                                         "ground_truth": [{"area": {"a": [3]}}]}))
    _file(tmp, "bfcl/BFCL_v4_irrelevance.json", jsonl(row))
    return ["bench", "bfcl", "--system", "base", "--category", "simple_python", "--category", "irrelevance",
            "--data", str(tmp / "bfcl"), "--out", str(tmp / "runs")]


def _unwritable_out(tmp: Path) -> list[str]:
    blocker = _file(tmp, "runs", "a file where the run folders should go")
    return ["bench", "gsm8k", "--system", "base", "--data", str(_file(tmp, "g.jsonl", jsonl(GSM_ROW))),
            "--out", str(blocker / "sub")]


def _ask_unwritable_out(tmp: Path) -> list[str]:
    blocker = _file(tmp, "runs", "a file")
    return ["ask", "Is it sarcastic?", "--out", str(blocker), "--no-cache"]


def _report_unwritable(tmp: Path) -> list[str]:
    with Run.create(tmp / "runs", command="ask", config={}) as made:
        made.finish({})
    blocker = _file(tmp, "blocker", "a file")
    folder = made.directory
    return ["report", str(folder), "-o", str(blocker / "page.html")]


def _report_over_the_trace(tmp: Path) -> list[str]:
    with Run.create(tmp / "runs", command="ask", config={}) as made:
        made.finish({})
    return ["report", str(made.directory), "-o", str(made.directory / "trace.jsonl")]


REFUSED = [
    Refused("MUStARD: not JSON", mustard('{"1_60": {"utterance": '), ("mustard.json:1", "not JSON")),
    Refused("MUStARD: a list, not an object", mustard("[1, 2, 3]"), ("mustard.json", "valid dictionary", "expected")),
    Refused("MUStARD: item without `sarcasm`",
            mustard(json.dumps({"1_60": {k: v for k, v in MUSTARD_ROW.items() if k != "sarcasm"}})),
            ("mustard.json", "'1_60.sarcasm' is missing")),
    Refused("MUStARD: `sarcasm` is a string", mustard(json.dumps({"1_60": {**MUSTARD_ROW, "sarcasm": "maybe"}})),
            ("mustard.json", "'1_60.sarcasm'", "boolean")),
    Refused("MUStARD: context and speakers differ", mustard(json.dumps({"1": {**MUSTARD_ROW, "context": ["a", "b"]}})),
            ("mustard.json", "'context' has 2 lines")),
    Refused("MUStARD: empty file", mustard(""), ("mustard.json", "is empty")),
    Refused("MUStARD: empty object", mustard("{}"), ("mustard.json", "holds no items")),
    Refused("MUStARD: binary, not UTF-8", mustard(b"\x89PNG\r\n\x1a\n\x00\xff\xfe"), ("mustard.json:1", "not UTF-8")),
    Refused("MUStARD: JSON nested 100,000 deep", mustard("[" * 100_000 + "]" * 100_000),
            ("mustard.json", "nested too deeply")),
    Refused("MUStARD: --data is a folder", lambda tmp: ["bench", "mustard", "--data", str(tmp), "--out",
                                                        str(tmp / "runs")], ("is a folder",)),
    Refused("GSM8K: line 2 is not JSON", gsm8k(jsonl(GSM_ROW, '{"question": "x", "ans')),
            ("gsm8k.jsonl:2", "not JSON")),
    Refused("GSM8K: line 3 lacks `answer`", gsm8k(jsonl(GSM_ROW, GSM_ROW, {"question": "q"})),
            ("gsm8k.jsonl:3", "'answer' is missing")),
    Refused("GSM8K: answer without `#### n`", gsm8k(jsonl({"question": "q", "answer": "seven"})),
            ("gsm8k.jsonl:1", "'answer'", "#### <number>")),
    Refused("GSM8K: question is a number", gsm8k(jsonl({"question": 7, "answer": "#### 7"})),
            ("gsm8k.jsonl:1", "'question'", "valid string")),
    Refused("GSM8K: a line that is a list", gsm8k(jsonl(GSM_ROW, [1, 2])), ("gsm8k.jsonl:2", "a list where")),
    Refused("GSM8K: only blank lines", gsm8k("\n\n  \n"), ("gsm8k.jsonl", "is empty")),
    Refused("GSM8K: a lone surrogate escape on line 2 (JSON, but no text a prompt or trace can carry)",
            gsm8k(jsonl(GSM_ROW) + '{"question": "half \\udc00 a pair", "answer": "#### 1"}\n'),
            ("gsm8k.jsonl:2", "lone surrogate")),
    Refused("MUStARD: a lone surrogate escape", mustard(json.dumps({"1": {**MUSTARD_ROW, "utterance": "oh \ud800"}})),
            ("mustard.json", "lone surrogate")),
    Refused("GSM8K: byte 0xff on line 2", gsm8k(jsonl(GSM_ROW).encode() + b'{"question": "\xff"}\n'),
            ("gsm8k.jsonl:2", "0xff", "not UTF-8")),
    Refused("BFCL: row without `function`", bfcl(jsonl({k: v for k, v in BFCL_ROW.items() if k != "function"})),
            ("BFCL_v4_simple_python.json:1", "'function' is missing")),
    Refused("BFCL: question is a string", bfcl(jsonl({**BFCL_ROW, "question": "hi"})),
            ("BFCL_v4_simple_python.json:1", "'question'", "valid list")),
    Refused("BFCL: role `wizard`", bfcl(jsonl({**BFCL_ROW, "question": [[{"role": "wizard", "content": "x"}]]})),
            ("BFCL_v4_simple_python.json:1", "'question[0][0].role'")),
    Refused("BFCL: an id given twice", bfcl(jsonl(BFCL_ROW, BFCL_ROW)),
            ("BFCL_v4_simple_python.json:2", "given again (first on line 1)")),
    Refused("BFCL: properties is a list",
            bfcl(jsonl({**BFCL_ROW, "function": [{"name": "f", "parameters": {"type": "dict", "properties": ["a"]}}]})),
            ("BFCL_v4_simple_python.json:1", "'function[0].parameters.properties'")),
    Refused("BFCL: ground truth of the wrong shape", bfcl(jsonl(BFCL_ROW), jsonl({"id": "simple_python_0",
                                                                                 "ground_truth": {"area": 1}})),
            ("possible_answer/BFCL_v4_simple_python.json:1", "'ground_truth'")),
    Refused("BFCL: empty file", bfcl(""), ("BFCL_v4_simple_python.json", "is empty")),
    Refused("MUStARD: an item id given twice", mustard(f'{{"a": {json.dumps(MUSTARD_ROW)}, "a": '
                                                       f'{json.dumps(MUSTARD_ROW)}}}'),
            ("mustard.json", "the key 'a' is given twice")),
    Refused("MUStARD: an empty item id", mustard(json.dumps({"": MUSTARD_ROW, "b": MUSTARD_ROW})),
            ("mustard.json", "at least 1 character")),
    Refused("BFCL: no possible answers beside the questions", bfcl(jsonl(BFCL_ROW)),
            ("BFCL_v4_simple_python.json", "has no possible answers beside it")),
    Refused("BFCL: a question without its possible answer", bfcl(jsonl(BFCL_ROW), jsonl({
        "id": "simple_python_9", "ground_truth": [{"area": {"a": [3]}}]})),
        ("no possible answer for simple_python_0",)),
    Refused("BFCL: one id in two categories", _bfcl_id_in_two_categories, ("'q_0' is in both",)),
    Refused("ALFWorld: a game file that is not JSON", alfworld("(define (problem"),
            ("trial_1/game.tw-pddl:1", "not JSON")),
    Refused("ALFWorld: a game file with a byte-order mark",
            alfworld(b"\xef\xbb\xbf" + json.dumps(ALFWORLD_GAME).encode()),
            ("game.tw-pddl", "byte-order mark")),
    Refused("ALFWorld: walkthrough is not a list", alfworld(json.dumps({**ALFWORLD_GAME, "walkthrough": "go"})),
            ("game.tw-pddl", "'walkthrough'", "valid list")),
    Refused("ALFWorld: no games in the folder", lambda tmp: ["bench", "alfworld", "--data", str(tmp), "--out",
                                                            str(tmp / "runs")], ("no ALFWorld games",)),
    Refused("TextWorld: a cached game cut to 0 bytes", textworld_cache, ("coin_collector-0.z8", "damaged")),
    Refused("graph file: bytes that are not UTF-8",
            lambda tmp: ["bench", "alfworld", "--graph", str(_file(tmp, "graph.yaml", b"edges: \xff\xfe")), "--out",
                         str(tmp / "runs")], ("graph.yaml", "cannot read the transition graph")),
    Refused("graph file: YAML cut short", lambda tmp: ["bench", "alfworld", "--graph",
                                                       str(_file(tmp, "graph.yaml", "edges: [a, b\n")), "--out",
                                                       str(tmp / "runs")], ("graph.yaml:2", "flow sequence")),
    Refused("society file: bytes that are not UTF-8",
            lambda tmp: ["ask", "q", "--system", "society", "--society",
                         str(_file(tmp, "s.yaml", b"organisation: monarchy\n\xff")), "--out", str(tmp / "runs")],
            ("s.yaml:2", "not UTF-8")),
    Refused("society file: YAML cut short",
            lambda tmp: ["ask", "q", "--system", "society", "--society", str(_file(tmp, "s.yaml", "members: [a, b\n")),
                         "--out", str(tmp / "runs")], ("s.yaml:2", "not valid YAML")),
    Refused("--limit 0", gsm8k(jsonl(GSM_ROW), "--limit", "0"), ("--limit",)),
    Refused("--limit -3", lambda tmp: [*mustard(json.dumps({"1": MUSTARD_ROW}))(tmp), "--limit", "-3"], ("--limit",)),
    Refused("--out under a file (bench)", _unwritable_out, ("cannot write a run folder",)),
    Refused("--out is a file (ask)", _ask_unwritable_out, ("cannot write a run folder",)),
    Refused("report -o under a file", _report_unwritable, ("cannot write", "page.html")),
    Refused("report -o over the run's trace", _report_over_the_trace, ("is one of the run's own files",)),
    Refused("--resume: config.json is not JSON", _resume_config_not_json,
            ("can be resumed", "config.json is not JSON")),
    Refused("--resume: a run of another benchmark (gsm8k)", _resume_another_benchmark("gsm8k"),
            ("is a run of mustard, not gsm8k", "noosphere bench mustard --resume")),
    Refused("--resume: a run of another benchmark (textworld)", _resume_another_benchmark("textworld"),
            ("is a run of mustard, not textworld",)),
    Refused("--resume: config's limit is a string", _resume_config_edited(limit="2"), ("key 'limit'", "integer")),
    Refused("--resume: config's limit is below 1 (fewer items, silently)", _resume_config_edited(limit=-1),
            ("key 'limit'", "greater than or equal to 1")),
    Refused("--resume: config's offset is a fraction", _resume_config_edited(offset=1.5), ("key 'offset'",)),
    Refused("--resume: config's data is a number", _resume_config_edited(data=7), ("key 'data'", "string")),
    Refused("--resume: gsm8k config without its system (a KeyError)", _resume_config_edited(system="(absent)"),
            ("key 'system' is missing",)),
    Refused("--resume: gsm8k config's system is another (played as a society)", _resume_config_edited(system="solo"),
            ("key 'system'", "'base', 'best-of-n' or 'society'")),
    Refused("--resume: gsm8k best-of-n config without its n", _resume_config_edited(system="best-of-n"),
            ("best-of-n run lacks its n",)),
    Refused("--resume: mustard config without its system (a KeyError)",
            _resume_workspace_config_edited("mustard", system="(absent)"), ("key 'system' is missing",)),
    Refused("--resume: mustard config's system is another (the ctm ran silently)",
            _resume_workspace_config_edited("mustard", system="society"), ("key 'system'", "'base' or 'ctm'")),
    Refused("--resume: mustard config's threshold is a string",
            _resume_workspace_config_edited("mustard", threshold="0.8"), ("key 'threshold'", "number")),
    Refused("--resume: bfcl config's iterations is 0", _resume_workspace_config_edited("bfcl", iterations=0),
            ("key 'iterations'", "greater than or equal to 1")),
    Refused("together: a run whose config lacks its model", _together_without_a_model,
            ("can be resumed", "model")),
    Refused("memory: memory.sqlite is random bytes", memory(lambda p: p.write_bytes(b"\x00\x01garbage" * 50)),
            ("memory.sqlite", "not a SQLite database")),
    Refused("memory: memory.sqlite is empty", memory(lambda p: p.write_bytes(b"")), ("memory.sqlite", "is empty")),
    Refused("memory: another program's database", memory(_foreign_database),
            ("memory.sqlite", "no table 'episodes'")),
    Refused("memory: an episode's steps are not JSON", memory(_episode_steps_not_json),
            ("memory.sqlite", "row id=1", "'steps' is not JSON")),
    Refused("memory: a step of the wrong type", memory(_episode_step_of_wrong_type),
            ("memory.sqlite", "row id=1", "'steps[0]")),
]


@pytest.mark.parametrize("case", REFUSED, ids=[case.name for case in REFUSED])
def test_a_malformed_input_is_one_line_and_leaves_no_run_folder(case: Refused, tmp_path: Path) -> None:
    args = case.make(tmp_path)
    runs_before = _run_folders(tmp_path)
    outcome = cli(args)
    assert outcome.code == case.code, outcome
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    assert lines and "Traceback" not in outcome.err + outcome.out
    assert lines[-1].startswith(("error:", "Error:")), outcome.err
    if lines[-1].startswith("error:"):  # ours: exactly one line; typer's own adds its usage lines above
        assert len(lines) == 1, outcome.err
    for words in case.says:
        assert words in lines[-1], (words, lines[-1])
    assert _run_folders(tmp_path) == runs_before  # nothing new: no run folder was made


def _run_folders(root: Path) -> set[Path]:
    return {path.parent for path in root.rglob("config.json")}


# ---------------------------------------------------------------- damaged run files: read around, lines told


def _run_with_trace(tmp: Path, tail: bytes) -> Path:
    with Run.create(tmp / "runs", command="ask", config={"query": "q"}) as made:
        made.finish({"answer": "a"})
    with (made.directory / "trace.jsonl").open("ab") as trace:
        trace.write(tail)
    return made.directory


DAMAGED_TRACES = {
    "a line of bytes that are not UTF-8": (b"\xff\xfe\xfd\n", "not UTF-8"),
    "a line that is a JSON list": (b"[1, 2]\n", "a list, not a JSON object"),
    # `trace show` reads typed events; the page draws events as written, so only the first refuses this one
    "a model call without its fields": (b'{"kind": "model_call", "ts": 1}\n', "not a model_call event"),
    "a kind that is not a string": (b'{"kind": ["x"]}\n', "its kind is not a string"),
    # `trace show` counted it as an event of kind "event", and `trace export` sent it as a span
    "an object without a kind": (b'{"ts": 1.0, "text": "note"}\n', "an object without a kind, not an event"),
    "a last line torn by a kill": (b'{"kind": "run_finished", "run_i', "not JSON"),
    # JSON, but no text: a terminal or the page's UTF-8 file could not write it (a traceback before)
    "a line holding a lone surrogate": (b'{"kind": "note", "text": "\\ud800"}\n', "holds a lone surrogate"),
    # read, but the page's walk over it ran out of Python's recursion limit (a RecursionError traceback before)
    "a line nested 600 deep": (b'{"kind": "note", "x": ' + b"[" * 600 + b"]" * 600 + b"}\n", "nested too deeply"),
}


def test_a_web_step_naming_a_screenshot_no_file_can_have_is_drawn_without_it(tmp_path: Path) -> None:
    """Before, a NUL in the screenshot's path was a ValueError traceback out of `report` (and `view`)."""
    folder = _run_with_trace(tmp_path, b"")
    (folder / "web").mkdir()
    (folder / "web" / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with (folder / "trace.jsonl").open("a") as trace:
        for name in ("web/a\x00b.png", "web/a.png"):
            trace.write(json.dumps({"kind": "web_step", "ts": 1.0, "screenshot": name}) + "\n")
    outcome = cli(["report", str(folder), "-o", str(tmp_path / "page.html")])
    assert outcome.code == 0 and "Traceback" not in outcome.err, outcome
    assert list(load_bundle(folder)["media"]) == ["web/a.png"]


@pytest.mark.parametrize("command", ["trace", "report"])
@pytest.mark.parametrize("damage", list(DAMAGED_TRACES), ids=list(DAMAGED_TRACES))
def test_a_damaged_trace_is_read_around_and_its_bad_line_told(command: str, damage: str, tmp_path: Path) -> None:
    tail, reason = DAMAGED_TRACES[damage]
    folder = _run_with_trace(tmp_path, tail)
    bad_line = len((folder / "trace.jsonl").read_bytes().splitlines())
    args = (["trace", "show", str(folder)] if command == "trace"
            else ["report", str(folder), "-o", str(tmp_path / "page.html")])
    outcome = cli(args)
    assert outcome.code == 0, outcome
    assert "Traceback" not in outcome.err + outcome.out
    if command == "trace" or damage != "a model call without its fields":
        assert f"trace.jsonl:{bad_line}: {reason}" in outcome.err.replace("\n", ""), outcome.err
    if command == "trace":
        assert "run_started=1" in outcome.out  # the good lines are still read
    else:
        assert (tmp_path / "page.html").stat().st_size > 0


def test_markup_in_a_trace_is_shown_as_text(tmp_path: Path) -> None:
    line = {"kind": "model_call", "model": "m[/bold]", "agent": "[/]", "messages": [], "response": "[red]x[/blue]",
            "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 0.1}
    folder = _run_with_trace(tmp_path, (json.dumps(line) + "\n").encode())
    outcome = cli(["trace", "show", str(folder)])
    assert outcome.code == 0 and "[red]x[/blue]" in outcome.out, outcome


def test_a_report_of_a_run_whose_config_holds_a_lone_surrogate_is_written(tmp_path: Path) -> None:
    folder = _run_with_trace(tmp_path, b"")
    (folder / "config.json").write_text('{"command": "ask", "query": "\\ud800 <b>"}')  # JSON, but no text
    outcome = cli(["report", str(folder), "-o", str(tmp_path / "page.html")])
    assert outcome.code == 0, outcome
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "\\ud800 \\u003cb\\u003e" in page  # escaped in the page's JSON, as JSON.parse reads it back


@pytest.mark.parametrize("command", ["report", "view"])
def test_run_files_nested_too_deeply_are_left_out_of_the_page(command: str, tmp_path: Path) -> None:
    """Before, a config.json nested past the parser's depth was a RecursionError traceback out of `report` and `view`
    (and a result.json or results row nested 600 deep one while the page was drawn)."""
    folder = _run_with_trace(tmp_path, b"")
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "result.json").write_text('{"x": ' + "[" * 600 + "]" * 600 + "}")
    (folder / "items.jsonl").write_text('{"id": "deep", "x": ' + '{"a": ' * 600 + "1" + "}" * 600 + "}\n")
    other = _run_with_trace(tmp_path, b"")
    with socket.socket() as taken:  # view: everything up to listening, on a port that is taken
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        args = ["report", str(folder), "-o", str(tmp_path / "page.html")] if command == "report" else [
            "view", str(folder), "--port", str(taken.getsockname()[1])]
        outcome = cli([*args, "--compare", str(other)])
    assert "Traceback" not in outcome.err + outcome.out, outcome
    assert "items.jsonl:1: nested too deeply" in outcome.err.replace("\n", ""), outcome.err
    if command == "report":
        assert outcome.code == 0 and (tmp_path / "page.html").stat().st_size > 0


def test_a_trace_saved_with_a_byte_order_mark_keeps_its_first_event(tmp_path: Path) -> None:
    """Before, the mark made the first line "not JSON (a line torn by a kill?)": the run_started event was lost."""
    folder = _run_with_trace(tmp_path, b"")
    trace = folder / "trace.jsonl"
    trace.write_bytes(codecs.BOM_UTF8 + trace.read_bytes().replace(b"\n", b"\r\n"))  # as a Windows editor saves it
    outcome = cli(["trace", "show", str(folder)])
    assert outcome.code == 0 and "run_started=1" in outcome.out and "warning" not in outcome.err, outcome
    outcome = cli(["report", str(folder), "-o", str(tmp_path / "page.html")])
    assert outcome.code == 0 and "warning" not in outcome.err, outcome
    assert load_bundle(folder)["events"][0]["kind"] == "run_started"


def test_trace_show_of_a_run_whose_result_holds_a_lone_surrogate_prints_text(tmp_path: Path) -> None:
    """Before, the result was printed as it was read: writing it to a UTF-8 terminal raised UnicodeEncodeError, a
    traceback halfway through the summary."""
    folder = _run_with_trace(tmp_path, b"")
    (folder / "config.json").write_text('{"command": "ask \\udc80"}')
    (folder / "result.json").write_text('{"status": "ok \\ud800", "answer": "\\ud800 and \\ud83d\\ude00"}')
    outcome = cli(["trace", "show", str(folder)])
    assert outcome.code == 0, outcome
    outcome.out.encode("utf-8")  # what a terminal must be able to write
    assert "command=ask \ufffd" in outcome.out and "status=ok \ufffd" in outcome.out
    assert "\ufffd and \U0001f600" in outcome.out


def test_a_character_escaped_as_a_surrogate_pair_is_read_as_text(tmp_path: Path) -> None:
    line = {"kind": "model_call", "model": "m", "agent": "a", "messages": [], "response": "\U0001f600 done"}
    folder = _run_with_trace(tmp_path, (json.dumps(line) + "\n").encode())  # escaped as "\ud83d\ude00"
    outcome = cli(["trace", "show", str(folder)])
    assert outcome.code == 0 and "model_call=1" in outcome.out and "warning" not in outcome.err, outcome


def test_memory_show_of_a_whole_memory_still_works(tmp_path: Path) -> None:
    MemoryStore(tmp_path).add_concept("Keep the apple cold: take it to the fridge before the table.", "g")
    outcome = cli(["memory", "show", str(tmp_path)])
    assert outcome.code == 0 and "1 concepts" in outcome.out, outcome


# ---------------------------------------------------------------- results: a damaged line is scored again


def scripted_gsm8k(answer: str = "7") -> Callable[..., Model]:
    backend = ScriptedBackend(lambda request: json.dumps({"reasoning": "3 + 4 = 7", "answer": answer}))

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    return opener


@pytest.mark.parametrize("damage", [b"\xff\xfe not utf-8\n", b'{"prediction": "7", "correct": true}\n', b"[]\n",
                                    b'{"id": "gsm8k-0001", "correct": "yes"}\n', b'{"id": "gsm8k-0002", "pred'],
                         ids=["not UTF-8", "no id", "not an object", "correct is a string", "torn"])
def test_a_damaged_results_line_is_scored_again_and_the_run_ends_ok(damage: bytes, tmp_path: Path) -> None:
    data = _file(tmp_path, "g.jsonl", jsonl(GSM_ROW, GSM_ROW, GSM_ROW))
    first = cli(["bench", "gsm8k", "--system", "base", "--data", str(data), "--out", str(tmp_path / "runs"),
                 "--no-cache", "--quiet"], scripted_gsm8k())
    assert first.code == 0, first
    [folder] = (tmp_path / "runs").iterdir()
    items = folder / "items.jsonl"
    lines = items.read_bytes().splitlines(keepends=True)
    items.write_bytes(lines[0] + damage)  # row 2 damaged (a torn one has no newline), row 3 lost

    resumed = cli(["bench", "gsm8k", "--resume", str(folder), "--no-cache", "--quiet"], scripted_gsm8k())
    assert resumed.code == 0, resumed
    assert "Traceback" not in resumed.err + resumed.out
    assert "items.jsonl:2:" in resumed.err.replace("\n", ""), resumed.err  # told, by its line
    rows = [json.loads(line) for line in items.read_bytes().splitlines()[2:]]  # what the resume wrote
    scored = [json.loads(lines[0])["id"], *(row["id"] for row in rows)]
    assert sorted(scored) == ["gsm8k-0000", "gsm8k-0001", "gsm8k-0002"]  # every item exactly once
    result = json.loads((folder / "result.json").read_text())
    assert result["status"] == "ok" and result["report"]["metrics"]["n"] == 3


def table(in_process: bool = False) -> list[tuple[str, int, str, bool]]:
    """Every refused input run through the CLI, by default in a process of its own (`tests/bench_driver.py`: the
    real entry point on a scripted model): (input, exit code, last line of stderr, whether a traceback or a run
    folder appeared)."""
    import subprocess
    import sys

    rows = []
    for case in REFUSED:
        with tempfile.TemporaryDirectory() as folder:
            args = case.make(Path(folder))
            before = _run_folders(Path(folder))
            if in_process:
                outcome = cli(args)
            else:
                done = subprocess.run([sys.executable, "-m", "tests.bench_driver", *args], capture_output=True,
                                      text=True, cwd=Path(__file__).resolve().parents[1], timeout=300)
                outcome = Outcome(done.returncode, done.stdout, done.stderr)
            shown = [line for line in outcome.err.splitlines() if line.strip()][-1].replace(folder, "TMP")
            broken = "Traceback" in outcome.err + outcome.out or _run_folders(Path(folder)) != before
            rows.append((case.name, outcome.code, shown, broken))
    return rows


if __name__ == "__main__":  # the table for the project note: `python -m tests.test_hostile_inputs`
    rows = table()
    print("| # | input | exit | message |\n|---|---|---|---|")
    for number, (name, code, shown, _) in enumerate(rows, 1):
        print(f"| {number} | {name} | {code} | `{shown.replace('|', '/')}` |")
    print(f"\n{len(rows)} inputs, {sum(broken for *_, broken in rows)} with a traceback or a stray run folder")
