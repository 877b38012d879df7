"""Role-play on the scripted model: stop conditions, and the coding benchmark with hidden tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from noosphere.errors import ModelError
from noosphere.llm import Model, ScriptedBackend
from noosphere.society import Member
from noosphere.society.roleplay import DONE, RolePlay, RolePlayResult
from tests.helpers import by_agent, scripted
from tests.test_cli import invoke

GOOD = "Here it is:\n```python\ndef fizzbuzz(n):\n    return ['FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 " \
       "else 'Buzz' if i % 5 == 0 else str(i) for i in range(1, n + 1)]\n```"
BROKEN = "```python\ndef fizzbuzz(n):\n    return []\n```"


def _run(roleplay: RolePlay, task: str) -> RolePlayResult:
    return asyncio.run(roleplay.run(task))


def test_the_user_stops_the_conversation_with_the_done_signal() -> None:
    model, _, trace = scripted(by_agent({"spec": ["Write fizzbuzz(n) returning strings."],
                                         "user": ["Write the function.", DONE], "assistant": [GOOD]}))
    result = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"),
                           specifier=Member("spec", model, "s")), "fizzbuzz")
    assert result.stopped_by == "done"
    assert [speaker for speaker, _ in result.transcript] == ["specifier", "user", "assistant", "user"]
    assert result.task == "Write fizzbuzz(n) returning strings."
    assert trace.of_kind("soc_finished")[0].decided_by == "done"


def test_the_done_signal_is_recognised_without_its_brackets_but_not_in_plain_words() -> None:
    model, _, _ = scripted(by_agent({"user": ["Let's get the task done: write the function.", "TASK_DONE"],
                                     "assistant": [GOOD]}))
    result = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a")), "fizzbuzz")
    assert result.stopped_by == "done" and len(result.transcript) == 3


def test_an_exchange_repeated_word_for_word_ends_the_conversation() -> None:
    """Measured on the 1.5B model: a user who repeated its instruction got the same code back until the cap."""
    model, _, trace = scripted(by_agent({"user": ["Fix the nesting.", "Fix the nesting."], "assistant": [GOOD]}))
    result = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a")), "fizzbuzz")
    assert result.stopped_by == "repeated" and len(result.transcript) == 4
    assert trace.of_kind("soc_finished")[0].decided_by == "repeated"


def test_the_message_cap_and_the_token_budget_stop_a_conversation_that_never_ends() -> None:
    tweaks = [f"Tweak number {i}, please." for i in range(100)]  # never the same exchange twice
    model, _, _ = scripted(by_agent({"user": tweaks, "assistant": ["Done that."], "spec": ["A precise task."]}))
    capped = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"), max_messages=5), "t")
    assert capped.stopped_by == "message_cap" and len(capped.transcript) == 5
    specified = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"),
                              specifier=Member("spec", model, "s"), max_messages=5), "t")
    assert [speaker for speaker, _ in specified.transcript].count("specifier") == 1
    assert specified.stopped_by == "message_cap" and len(specified.transcript) == 1 + 5  # the cap counts the talk
    budgeted = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"), token_budget=1), "t")
    assert budgeted.stopped_by == "token_budget" and [s for s, _ in budgeted.transcript] == ["user"]
    two, three = (_run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"), max_messages=cap),
                       "t").tokens for cap in (2, 3))
    roomier = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"), token_budget=two + 1), "t")
    # the budget is checked before each turn, the assistant's too: the third turn overshoots it, no fourth
    assert roomier.stopped_by == "token_budget" and len(roomier.transcript) == 3 and roomier.tokens == three


def test_by_default_a_conversation_stops_at_fifty_messages_and_a_society_takes_a_token_budget() -> None:
    from noosphere.society.roleplay import role_play

    tweaks = [f"Tweak number {i}, please." for i in range(100)]
    model, _, _ = scripted(by_agent({"user": tweaks, "assistant": [f"Done tweak {i}." for i in range(100)]}))
    endless = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a")), "t")
    assert endless.stopped_by == "message_cap" and len(endless.transcript) == 50
    model, _, _ = scripted(by_agent({"user": tweaks, "assistant": ["Done that."] * 100}))
    two = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"), max_messages=2), "t").tokens
    society = role_play(Member("user", model, "u"), Member("assistant", model, "a"), token_budget=two)
    assert society.run_sync("t").decided_by == "assistant (token_budget)"  # spent after one exchange


def test_a_failing_turn_ends_the_conversation_as_a_forfeit() -> None:
    model, _, trace = scripted(by_agent({"user": ["Write it."], "assistant": [ModelError("scripted", "boom")]}))
    result = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a")), "t")
    assert result.stopped_by == "forfeit" and trace.of_kind("soc_forfeit")


def test_a_failing_specifier_leaves_the_task_as_given() -> None:
    model, _, trace = scripted(by_agent({"spec": [ModelError("scripted", "boom")], "user": ["Write it.", DONE],
                                         "assistant": [GOOD]}))
    result = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"),
                           specifier=Member("spec", model, "s")), "fizzbuzz")
    assert (result.task, result.stopped_by) == ("fizzbuzz", "done")
    assert [e.member for e in trace.of_kind("soc_forfeit")] == ["spec"]


def test_roleplay_bench_runs_hidden_tests_in_the_sandbox(tmp_path: Path) -> None:
    backend = ScriptedBackend(by_agent({"user": ["Write fizzbuzz.", DONE, "Write it.", DONE],
                                        "assistant": [GOOD, BROKEN]}))

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    def only_row(folder: Path) -> dict[str, Any]:
        [run_dir] = list(folder.iterdir())
        [row] = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
        return row

    code, _, err = invoke(["bench", "roleplay", "--limit", "1", "--out", str(tmp_path / "ok"), "--no-cache",
                           "--quiet", "--no-specify"], opener)
    assert code == 0, err
    row = only_row(tmp_path / "ok")
    assert row["correct"] and row["stopped_by"] == "done"
    [run_dir] = list((tmp_path / "ok").iterdir())
    metrics = json.loads((run_dir / "report.json").read_text())["metrics"]
    assert (metrics["message_cap"], metrics["stopped_by_cap"]) == (12, 0)  # the cap a reader of the table needs
    code, _, err = invoke(["bench", "roleplay", "--limit", "1", "--out", str(tmp_path / "bad"), "--no-cache",
                           "--quiet", "--no-specify"], opener)
    assert code == 0, err
    row = only_row(tmp_path / "bad")
    assert not row["correct"] and "AssertionError" in row["test_output"]


def test_a_run_budget_stops_the_roleplay_bench_before_it_scores_a_cut_conversation(tmp_path: Path) -> None:
    backend = ScriptedBackend(by_agent({"user": ["Write fizzbuzz.", DONE], "assistant": [GOOD]}))
    code, _, err = invoke(["bench", "roleplay", "--limit", "1", "--out", str(tmp_path), "--no-cache", "--quiet",
                           "--no-specify", "--budget", "calls=1"], lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 1 and "calls budget of 1 exceeded" in err
    [run_dir] = list(tmp_path.iterdir())
    assert (run_dir / "items.jsonl").read_text() == ""  # left for a resume with more, not scored as a fail


@pytest.mark.parametrize("cap", ["501", "1000000000"])
def test_the_roleplay_bench_caps_messages_as_a_society_file_does(tmp_path: Path, cap: str) -> None:
    """A society file's role-play takes at most 500 messages; the bench took a billion (a pair that loops would hold
    the CPU for days)."""
    code, _, _ = invoke(["bench", "roleplay", "--max-messages", cap, "--out", str(tmp_path / "runs"), "--quiet",
                           "--no-cache"])
    assert code == 2 and not (tmp_path / "runs").exists()  # typer tells: less than or equal to 500


def test_roleplay_bench_specifies_each_task_before_the_user_instructs(tmp_path: Path) -> None:
    backend = ScriptedBackend(by_agent({"specifier": ["fizzbuzz(n) returns strings 1..n; n = 0 gives []."],
                                        "user": ["Write fizzbuzz.", DONE], "assistant": [GOOD]}))
    code, _, err = invoke(["bench", "roleplay", "--limit", "1", "--out", str(tmp_path), "--no-cache", "--quiet"],
                          lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = list(tmp_path.iterdir())
    [row] = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert row["correct"] and row["messages"] == 4  # the specified task, an instruction, the code, the signal
    first_instruction = next(r for r in backend.history if r.agent == "user").messages[-1].content
    assert "n = 0 gives []" in first_instruction


def test_the_sandbox_passes_only_a_program_that_runs_its_tests_to_the_end() -> None:
    from noosphere.tools.sandbox import run_python_program

    assert run_python_program("def add(a, b):\n    return a + b\nassert add(2, 3) == 5").passed
    dodged = run_python_program("import sys\nsys.exit(0)\nassert False, 'the hidden test'")
    assert not dodged.passed and "exited before its last line" in dodged.output
    assert not run_python_program("import os\nos._exit(0)\nassert False").passed
    waiting = run_python_program("name = input()\nassert name", timeout_s=5)
    assert not waiting.passed and "timed out" not in waiting.output  # no stdin: input() fails at once


def test_a_long_conversation_drops_its_oldest_turns_instead_of_failing() -> None:
    model, backend, trace = scripted(by_agent({"user": [f"Tweak {i} to the code, please, and keep going."
                                                        for i in range(30)],
                                               "assistant": ["Here is the whole code again with that tweak."]}))
    backend.context_window = 300 + 60  # the default reply budget (300 tokens here) plus about 60 words of prompt
    model.settings = replace(model.settings, max_tokens=300)
    result = _run(RolePlay(Member("user", model, "u"), Member("assistant", model, "a"), max_messages=30), "t")
    assert result.stopped_by == "message_cap" and len(result.transcript) == 30
    assert trace.of_kind("prompt_truncated")  # the members' histories outgrew the window and were cut
    assert {request.settings.overflow for request in backend.history} == {"truncate"}
