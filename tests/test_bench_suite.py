"""The suite script: which command each configuration runs, fresh or resumed, and its summary row."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "suite.py"


@pytest.fixture(scope="module")
def suite() -> Any:
    return load_script(SCRIPT, "suite_script")


def commands(suite: Any, monkeypatch: pytest.MonkeyPatch, name: str, config: str, out: Path,
             **options: Any) -> list[str]:
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, check: ran.append(command))
    args = argparse.Namespace(**{"limit": None, "model": "local:m", "parallel": None, **options})
    [chosen] = [c for c in suite.SUITES[name].configs if c.name == config]
    suite.run(suite.SUITES[name], chosen, out, args)
    [command] = ran
    return command[3:]


def test_a_new_run_gets_its_configuration_and_an_existing_one_is_resumed(suite: Any, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = commands(suite, monkeypatch, "mustard", "ctm-no-fusion", tmp_path)
    assert fresh[:4] == ["bench", "mustard", "--quiet", "--parallel"] and fresh[4] == "4"
    assert "--ablation" in fresh and fresh[fresh.index("--ablation") + 1] == "no_fusion"
    assert fresh[fresh.index("--limit") + 1] == "100"
    assert fresh[fresh.index("--out") + 1] == str(tmp_path / "ctm-no-fusion")
    folder = tmp_path / "ctm-no-fusion" / "20260101-000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    resumed = commands(suite, monkeypatch, "mustard", "ctm-no-fusion", tmp_path, limit=5)
    assert resumed[-2:] == ["--resume", str(folder)] and "--ablation" not in resumed


def test_data_given_to_the_suite_reaches_each_new_run_whole_and_no_resumed_one(
        suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone away from ../shared could not run a suite: it had no way to say where the data is."""
    monkeypatch.chdir(tmp_path)
    fresh = commands(suite, monkeypatch, "gsm8k", "base", tmp_path / "out", data=Path("d/test.jsonl"))
    assert fresh[fresh.index("--data") + 1] == str(tmp_path / "d" / "test.jsonl")
    folder = tmp_path / "out" / "base" / "20260101-000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    resumed = commands(suite, monkeypatch, "gsm8k", "base", tmp_path / "out", data=Path("d/test.jsonl"))
    assert "--data" not in resumed  # a run reads the data it was made with


def test_data_is_refused_for_a_suite_that_reads_none(suite: Any, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.argv", ["suite.py", "textworld", "--data", "x", "--summary-only"])
    with pytest.raises(SystemExit):
        suite.main()
    assert "--data applies to mustard, gsm8k, bfcl, alfworld, not textworld" in capsys.readouterr().err


def test_a_finished_run_is_not_started_again(suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "base" / "20260101-000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "result.json").write_text(json.dumps({"status": "interrupted"}))
    assert commands(suite, monkeypatch, "gsm8k", "base", tmp_path)[-2:] == ["--resume", str(folder)]
    (folder / "result.json").write_text(json.dumps({"status": "ok"}))
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, check: ran.append(command))
    [base] = [c for c in suite.SUITES["gsm8k"].configs if c.name == "base"]
    suite.run(suite.SUITES["gsm8k"], base, tmp_path, argparse.Namespace(limit=None, model="local:m", parallel=None))
    assert ran == []


def test_a_larger_limit_grows_a_finished_run_and_a_smaller_one_leaves_it(suite: Any, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A run cut to 12 items to fit a session grows in the next with the suite's `--limit 20`: resumed, with the
    limit, not started again beside itself; `--limit 12` or less finds it finished."""
    folder = tmp_path / "base" / "20260101-000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"limit": 12}))
    (folder / "result.json").write_text(json.dumps({"status": "ok"}))
    grown = commands(suite, monkeypatch, "gsm8k", "base", tmp_path, limit=20)
    assert grown[-4:] == ["--resume", str(folder), "--limit", "20"]
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, check: ran.append(command))
    for limit in (12, 5, None):
        [base] = [c for c in suite.SUITES["gsm8k"].configs if c.name == "base"]
        suite.run(suite.SUITES["gsm8k"], base, tmp_path, argparse.Namespace(limit=limit, model="local:m",
                                                                            parallel=None))
        assert ran == [], limit


def test_new_starts_another_run_beside_the_earlier_ones(suite: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name, status in (("20260101-000000-abcdef", "ok"), ("20260102-000000-abcdef", "interrupted")):
        folder = tmp_path / "base" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "result.json").write_text(json.dumps({"status": status}))
    again = commands(suite, monkeypatch, "miniwob", "base", tmp_path, new=True)
    assert "--resume" not in again and again[again.index("--out") + 1] == str(tmp_path / "base")
    assert commands(suite, monkeypatch, "miniwob", "base", tmp_path)[-1] == str(tmp_path / "base" /
                                                                               "20260102-000000-abcdef")


def test_runs_played_together_leave_the_finished_ones_out(suite: Any, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for name, status in (("react", "ok"), ("reflexion", "interrupted")):
        folder = tmp_path / name / "20260101-000000-abcdef"
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "result.json").write_text(json.dumps({"status": status}))
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, **_: ran.append(command))
    configs = [c for c in suite.SUITES["alfworld"].configs if c.name in ("react", "reflexion")]
    suite.run_together(suite.SUITES["alfworld"], configs, tmp_path,
                       argparse.Namespace(limit=None, model="local:m", parallel=None))
    [command] = ran
    assert command[3:] == ["bench", "together", str(tmp_path / "reflexion" / "20260101-000000-abcdef"),
                           "--parallel", str(suite.SUITES["alfworld"].parallel)]


def test_new_with_together_creates_fresh_runs_and_plays_only_them(suite: Any, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "react" / "20260101-000000-abcdef"
    old.mkdir(parents=True)
    (old / "config.json").write_text("{}")
    (old / "result.json").write_text(json.dumps({"status": "ok"}))
    ran: list[list[str]] = []

    def fake(command: list[str], **_: Any) -> None:
        ran.append(command)
        if "--create-only" in command and "reflexion" not in command[command.index("--out") + 1]:
            fresh = Path(command[command.index("--out") + 1]) / "20260202-000000-abcdef"
            fresh.mkdir(parents=True)
            (fresh / "config.json").write_text("{}")

    monkeypatch.setattr(subprocess, "run", fake)
    configs = [c for c in suite.SUITES["alfworld"].configs if c.name in ("react", "reflexion")]
    suite.run_together(suite.SUITES["alfworld"], configs, tmp_path,
                       argparse.Namespace(limit=None, model="local:m", parallel=None, new=True))
    together = ran[-1][3:]
    # the finished run is not resumed, a fresh one is; reflexion's creation failed, so it is left out, not replaced
    assert together[:3] == ["bench", "together", str(tmp_path / "react" / "20260202-000000-abcdef")]
    assert str(old) not in together and not any("reflexion" in part for part in together)


def test_runs_whose_games_share_a_memory_are_never_parallel(suite: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    memory = commands(suite, monkeypatch, "alfworld", "metaagent-k20", tmp_path, parallel=8)
    assert memory[memory.index("--parallel") + 1] == "1" and memory[memory.index("--k") + 1] == "20"
    baseline = commands(suite, monkeypatch, "alfworld", "react", tmp_path, parallel=8)
    assert baseline[baseline.index("--parallel") + 1] == "8"


def reported(folder: Path, correct: dict[str, bool], accuracy: float, **detail: Any) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "items.jsonl").write_text("".join(json.dumps({"id": i, "correct": c, "gold": "7", **detail}) + "\n"
                                                for i, c in correct.items()))
    (folder / "report.json").write_text(json.dumps({"metrics": {"accuracy": accuracy},
                                                    "costs": {"calls_per_item": 1.0}}))


def test_the_summary_has_a_row_per_reported_run(suite: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reported(tmp_path / "base" / "20260101-000000-abcdef", {"1": True, "2": False, "3": True}, 66.7)
    reported(tmp_path / "debate" / "20260101-000000-abcdef", {"1": False, "2": True}, 50.0,  # partial
             standing={"a": "7", "b": "8"})
    in_progress = tmp_path / "monarchy-r1" / "20260101-000000-abcdef"  # its report is from before it went on
    reported(in_progress, {"1": True, "2": True}, 0.0, calls=4, tokens=10, seconds=2.0, error=None)
    (in_progress / "report.json").write_text(json.dumps({"metrics": {"accuracy": 0.0, "n": 0}, "costs": {}}))
    suite.summary(suite.SUITES["gsm8k"], tmp_path)
    rows = capsys.readouterr().out.splitlines()
    run = "20260101-000000-abcdef"
    assert rows[0].startswith("| run | folder | n | accuracy | vs base |")
    assert rows[2].startswith(f"| base | {run} | 3 | 66.7 | - | 1.0 |")
    assert rows[3].startswith(f"| debate | {run} | 2 | 50.0 | +1 / -1 of 2 | 1.0 |")
    # a run in progress: accuracy and costs from its rows, not from its report
    assert rows[4].startswith(f"| monarchy-r1 | {run} | 2 (in progress; report: 0) | 100.0 | +1 / -0 of 2 | 4.0 "
                              "| 10.0 |")
    # a report that says how many rows it covers is stale past them, whatever its metrics are called (BFCL's have
    # no `n`, MiniWoB's count `episodes`)
    (in_progress / "report.json").write_text(json.dumps({"rows": 1, "metrics": {"accuracy": 0.0}, "costs": {}}))
    assert not suite.measured(in_progress).reported
    (in_progress / "report.json").write_text(json.dumps({"rows": 2, "metrics": {"accuracy": 0.0}, "costs": {}}))
    assert suite.measured(in_progress).reported
    # the second table: only the run whose rows record the members' answers
    assert rows[6].startswith("| run | folder | answer_accuracy | gold_among_answers |")
    assert rows[8:] == [f"| debate | {run} | 50.0 | 100.0 | 0.0 | 0 | 1 | 2 |"]


def test_every_run_of_a_configuration_has_its_row_not_only_the_newest(suite: Any, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    reported(tmp_path / "base" / "20260101-000000-aaaaaa", {"1": True, "2": False}, 50.0)
    reported(tmp_path / "base" / "20260102-000000-bbbbbb", {"1": True, "2": True}, 100.0)  # measured again
    reported(tmp_path / "debate" / "20260101-000000-cccccc", {"1": False, "2": True}, 50.0)
    reported(tmp_path / "debate" / "20260103-000000-dddddd", {"1": True, "2": True}, 100.0)  # after a change
    suite.summary(suite.SUITES["gsm8k"], tmp_path)
    rows = [row for row in capsys.readouterr().out.splitlines() if row.startswith(("| base |", "| debate |"))]
    assert [row.split(" | ")[1:4] for row in rows] == [
        ["20260101-000000-aaaaaa", "2", "50.0"], ["20260102-000000-bbbbbb", "2", "100.0"],
        ["20260101-000000-cccccc", "2", "50.0"], ["20260103-000000-dddddd", "2", "100.0"]]
    # every run is set against the first base run, the base's own second run included
    assert [row.split(" | ")[4] for row in rows] == ["-", "+1 / -0 of 2", "+1 / -1 of 2", "+1 / -0 of 2"]


def test_a_held_out_run_is_set_against_the_references_held_out_run(suite: Any, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """TextWorld's held-out games (seed 3) have other ids: the first ReAct run shares none of them."""
    reported(tmp_path / "react" / "20260101-000000-aaaaaa", {"cc-0": True, "th-0": False}, 50.0)
    reported(tmp_path / "react-heldout" / "20260102-000000-bbbbbb", {"cc-3": False, "th-3": True}, 50.0)
    reported(tmp_path / "metaagent-none-percept-heldout" / "20260103-000000-cccccc", {"cc-3": True, "th-3": True},
             100.0)
    reported(tmp_path / "metaagent-none-percept" / "20260103-000000-dddddd", {"cc-0": True}, 100.0)
    # the second held-out set (seed 6): its ReAct run is a reference too
    reported(tmp_path / "react-confirm" / "20260104-000000-eeeeee", {"cc-6": False, "th-6": False}, 0.0)
    reported(tmp_path / "react-scored-confirm" / "20260104-000000-ffffff", {"cc-6": True, "th-6": False}, 50.0)
    suite.summary(suite.SUITES["textworld"], tmp_path)
    rows = {row.split(" | ")[0]: row.split(" | ") for row in capsys.readouterr().out.splitlines()[2:]}
    versus = rows["| metaagent-none-percept-heldout"][-7]
    assert versus == "+1 / -0 of 2" and rows["| metaagent-none-percept"][-7] == "+0 / -0 of 1"
    assert rows["| react-heldout"][-7] == "-" and rows["| react"][-7] == "-"  # no reference run shares its items
    assert rows["| react-confirm"][-7] == "-" and rows["| react-scored-confirm"][-7] == "+1 / -0 of 2"


def test_runs_on_later_items_get_their_own_folders_rows_and_reference(suite: Any, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    reported(tmp_path / "base" / "20260101-000000-aaaaaa", {"gsm8k-0000": True}, 100.0)
    finished = tmp_path / "base" / "20260101-000000-aaaaaa"
    (finished / "result.json").write_text(json.dumps({"status": "ok"}))
    later = commands(suite, monkeypatch, "gsm8k", "base", tmp_path, offset=50)  # not "finished": other items
    assert later[later.index("--offset") + 1] == "50" and "--resume" not in later
    assert later[later.index("--limit") + 1] == "50"
    reported(tmp_path / "base" / "20260102-000000-bbbbbb", {"gsm8k-0050": False}, 0.0)
    (tmp_path / "base" / "20260102-000000-bbbbbb" / "config.json").write_text(json.dumps({"offset": 50}))
    resumed = commands(suite, monkeypatch, "gsm8k", "base", tmp_path, offset=50)
    assert resumed[-2:] == ["--resume", str(tmp_path / "base" / "20260102-000000-bbbbbb")]
    reported(tmp_path / "debate" / "20260103-000000-cccccc", {"gsm8k-0050": True}, 100.0)
    (tmp_path / "debate" / "20260103-000000-cccccc" / "config.json").write_text(json.dumps({"offset": 50}))
    suite.summary(suite.SUITES["gsm8k"], tmp_path)
    rows = [row.split(" | ") for row in capsys.readouterr().out.splitlines() if row.startswith(("| base", "| debate"))]
    assert [row[2] for row in rows] == ["1", "1 from item 51", "1 from item 51"]
    assert rows[2][4] == "+1 / -0 of 1"  # against the base run on the same items, not the first base run


def test_bench_offset_leaves_out_the_items_measured_before(tmp_path: Path) -> None:
    from noosphere.llm import Model, ScriptedBackend
    from tests.test_cli import invoke

    data = tmp_path / "gsm8k.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {n} + 1?", "answer": f"#### {n + 1}"}) + "\n"
                            for n in range(4)))
    backend = ScriptedBackend(lambda request: {"reasoning": "r", "answer": "2"})

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--data", str(data), "--offset", "1", "--limit", "2",
                           "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"], opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["gsm8k-0001", "gsm8k-0002"] and [r["correct"] for r in rows] == [True, False]
    assert json.loads((run_dir / "config.json").read_text())["offset"] == 1
    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--data", str(data), "--offset", "4", "--out",
                           str(tmp_path / "more"), "--no-cache", "--quiet"], opener)
    assert code == 2 and "--offset 4 leaves none of the 4 items" in err and not (tmp_path / "more").exists()


def test_best_of_n_matches_the_calls_of_the_society_run_once_there_is_one(suite: Any, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, check: ran.append(command))
    args = argparse.Namespace(limit=None, model="local:m", parallel=None)
    [best_of_n] = [c for c in suite.SUITES["gsm8k"].configs if c.name == "best-of-n"]
    suite.run(suite.SUITES["gsm8k"], best_of_n, tmp_path, args)
    assert ran == []  # the monarchy has not run yet
    monarchy = tmp_path / "monarchy" / "20260101-000000-abcdef"
    monarchy.mkdir(parents=True)
    (monarchy / "config.json").write_text("{}")
    suite.run(suite.SUITES["gsm8k"], best_of_n, tmp_path, args)
    assert ran[0][-2:] == ["--match-run", str(monarchy)]


def test_a_held_out_configuration_resumes_its_own_run_and_matches_the_society_on_its_items(
        suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configuration with its own `--offset` finds its runs by that offset, whatever the suite's; best-of-N
    matched to it takes N from the society's run on the same held-out items."""
    fresh = commands(suite, monkeypatch, "gsm8k", "democracy-sequence", tmp_path)
    assert fresh.count("--offset") == 1 and fresh[fresh.index("--offset") + 1] == "50"
    assert fresh[fresh.index("--vote") + 1] == "sequence"
    society = tmp_path / "democracy-sequence" / "20260101-000000-abcdef"
    society.mkdir(parents=True)
    (society / "config.json").write_text(json.dumps({"offset": 50}))
    assert commands(suite, monkeypatch, "gsm8k", "democracy-sequence", tmp_path)[-2:] == ["--resume", str(society)]
    matched = commands(suite, monkeypatch, "gsm8k", "best-of-n-sequence-match", tmp_path)
    assert matched[-2:] == ["--match-run", str(society)] and matched[matched.index("--offset") + 1] == "50"
    held_out = tmp_path / "best-of-n-sequence-heldout" / "20260102-000000-abcdef"
    held_out.mkdir(parents=True)
    (held_out / "config.json").write_text(json.dumps({"offset": 50}))
    resumed = commands(suite, monkeypatch, "gsm8k", "best-of-n-sequence-heldout", tmp_path, offset=10)
    assert resumed[-2:] == ["--resume", str(held_out)]


def test_bfcl_base_gate_is_the_call_motors_gate_without_the_workspace(suite: Any, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    base_gate = commands(suite, monkeypatch, "bfcl", "base-gate", tmp_path)
    call = commands(suite, monkeypatch, "bfcl", "ctm-logprob-call", tmp_path)

    def value(command: list[str], option: str) -> str:
        return command[command.index(option) + 1]

    assert value(base_gate, "--system") == "base" and "--motor" not in base_gate
    assert value(base_gate, "--gate") == value(call, "--gate") == "0.8"
    assert value(base_gate, "--scores") == value(call, "--scores") == "logprob"
    assert value(base_gate, "--limit") == "10"


def test_bfcl_generalist_configuration_is_a_command_bench_bfcl_runs(suite: Any, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The held-out command of `ctm-logprob-generalist`, as the suite builds it, runs on the scripted model."""
    from tests.test_bench_bfcl import (
        AREA,
        GENERALIST_CIRCLE,
        RECT,
        by_agent,
        generalist_opener,
        generalist_reply,
        write_category,
    )
    from tests.test_cli import invoke

    command = commands(suite, monkeypatch, "bfcl", "ctm-logprob-generalist", tmp_path / "suite", offset=10)
    assert command[command.index("--offset") + 1] == "10"
    assert command[command.index("--processors") + 1] == "functions+generalist"
    data = tmp_path / "bfcl"
    write_category(data, "simple_python", [f"item {n}: area of a circle of radius 5" for n in range(11)], [AREA, RECT],
                   [{"area_circle.calculate": {"radius": [5.0], "unit": [""]}}])
    out = command.index("--out")
    opener = generalist_opener(generalist_reply(GENERALIST_CIRCLE, []), by_agent({"generalist": 0.95}, 0.6))
    code, _, err = invoke([*command[:out], "--out", str(tmp_path / "runs"), "--data", str(data), "--category",
                           "simple_python", "--no-cache"], opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    [row] = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert row["id"] == "simple_python_10" and row["path"] == "generalist" and row["correct"] is True
    config = json.loads((run_dir / "config.json").read_text())
    assert config["processors"] == "functions+generalist" and config["gate"] == 0.8 and config["offset"] == 10


@pytest.mark.parametrize("given", [["--limit", "0"], ["--parallel", "0"], ["--limit", "-1"], ["--only"]],
                         ids=["limit 0", "parallel 0", "limit -1", "only with no name"])
def test_a_count_below_one_or_only_with_no_name_is_refused(suite: Any, given: list[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`--limit 0` became every item and `--parallel 0` the suite's own count; `--only` alone chose every
    configuration."""
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, **_: ran.append(command))
    monkeypatch.setattr(sys, "argv", ["suite.py", "gsm8k", *given, "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as exited:
        suite.main()
    assert exited.value.code == 2 and ran == []
    assert given[0] in capsys.readouterr().err


@pytest.mark.parametrize("together", [False, True], ids=["one by one", "together"])
def test_the_suite_exits_non_zero_when_a_bench_command_fails(suite: Any, together: bool, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`--only react --model nosuch` printed the bench command's error and exited 0."""
    ran: list[list[str]] = []

    def refused(command: list[str], **_: Any) -> subprocess.CompletedProcess[bytes]:
        ran.append(command)
        return subprocess.CompletedProcess(command, 2)  # nothing created either

    monkeypatch.setattr(subprocess, "run", refused)
    monkeypatch.setattr(sys, "argv", ["suite.py", "alfworld", "--only", "react", "--model", "nosuch", "--out",
                                      str(tmp_path), *(["--together"] if together else [])])
    with pytest.raises(SystemExit) as exited:
        suite.main()
    assert exited.value.code not in (0, None) and "react" in str(exited.value.code)
    assert len(ran) == 1


def test_list_prints_the_names_only_takes_and_runs_nothing(suite: Any, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[Any] = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    monkeypatch.setattr("sys.argv", ["suite.py", "textworld", "--list"])
    suite.main()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [c.name for c in suite.SUITES["textworld"].configs]
    assert lines[0].startswith("react: textworld ") and ran == []


@pytest.mark.parametrize("together", [False, True], ids=["one by one", "together"])
def test_ctrl_c_stops_the_suite_in_one_line_and_starts_no_other_run(suite: Any, together: bool, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C while a bench command ran printed the suite's KeyboardInterrupt traceback (the command, which gets the
    Ctrl-C too, stops on its own and keeps what it scored)."""
    ran: list[list[str]] = []

    def interrupted(command: list[str], **_: Any) -> subprocess.CompletedProcess[bytes]:
        ran.append(command)
        raise KeyboardInterrupt  # as subprocess.run raises it while it waits for the command

    monkeypatch.setattr(subprocess, "run", interrupted)
    monkeypatch.setattr(sys, "argv", ["suite.py", "alfworld", "--only", "react", "reflexion", "--model", "m",
                                      "--out", str(tmp_path), *(["--together"] if together else [])])
    code: Any = None
    try:
        suite.main()
    except KeyboardInterrupt:  # let out of a test, it would stop the whole session
        pytest.fail("the suite let the Ctrl-C out (a traceback)")
    except SystemExit as exited:
        code = exited.code
    assert code == 130 and len(ran) == 1
    assert capsys.readouterr().err.strip() == "suite: stopped (Ctrl-C); run it again to go on where each run stopped"


def test_ctrl_c_waits_for_the_bench_command_to_stop_on_its_own(suite: Any, tmp_path: Path) -> None:
    """Interrupted inside `subprocess.run`, the suite killed the bench command 0.25 s later, in the middle of its own
    stop (its result left "running", its report stale). Now the suite waits for the command, which has the Ctrl-C
    too and stops when it has written what it scored, and then stops as interrupted."""
    import os
    import signal
    import threading
    import time

    started, stopped = tmp_path / "started", tmp_path / "stopped"
    command = [sys.executable, "-c", "import pathlib, sys, time; pathlib.Path(sys.argv[1]).touch(); time.sleep(1.5); "
                                     "pathlib.Path(sys.argv[2]).touch()", str(started), str(stopped)]

    def ctrl_c() -> None:  # to the suite alone: the command, as if it had the Ctrl-C too, takes its time to stop
        while not started.exists():
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    handler = signal.getsignal(signal.SIGINT)
    threading.Thread(target=ctrl_c, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        suite.bench(command)
    assert stopped.exists()  # the command was waited for, not killed mid-stop
    assert signal.getsignal(signal.SIGINT) is handler  # the suite's own Ctrl-C handling is back
