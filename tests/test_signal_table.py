"""The signal table's miniwob task (benchmarks/signal_table.py), on the scripted model: from a finished MiniWoB run
folder, each episode's first step (its prompt and the agent's reply, as the trace holds them) is scored with P(True)
of "does the action above move the task toward its goal?" against whether the episode was won."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from noosphere.bench.calibration import auroc_interval
from noosphere.bench.runner import BenchItemStarted
from noosphere.envs.web_events import WebEpisodeStarted, WebStepTaken
from noosphere.errors import UsageError
from noosphere.llm import CallCache, Message, Model, ScriptedBackend
from noosphere.metaagent.events import ActionTaken
from noosphere.scope import item_scope
from noosphere.systems.web_prompts import AGENT_ROLE
from noosphere.trace import Trace
from tests.helpers import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "signal_table.py"


@pytest.fixture(scope="module")
def signal() -> Any:
    return load_script(SCRIPT, "signal_table_script")


class Step(BaseModel):
    action: str


def reply(action: str) -> str:
    return json.dumps({"action": action})


# P(Yes) by the action the probe shows: the first steps' actions score right 0.9, 0.6 and wrong 0.7, 0.2
# (AUROC 3/4); an action that is not a first step's (a later step, a play a resume replaced) would change it
P_YES = {'click("1")': 0.9, 'click("3")': 0.6, 'click("4")': 0.7, 'click("5")': 0.2, 'click("2")': 0.05,
         'click("8")': 0.99}


def prompt(goal: str, step: int) -> list[Message]:
    return [Message.system(AGENT_ROLE), Message.user(f"Goal: {goal}\n\nstep {step}\n\nWhat is the next action?")]


async def play(model: Model, trace: Trace, episode: str, actions: list[str], *, goal: str | None = None) -> None:
    """One episode as `bench miniwob --system base` traces it: started, then a base call and a web step a step."""
    goal = goal or f"the goal of {episode}"
    with item_scope(episode):
        trace.emit(BenchItemStarted(item_id=episode))
        trace.emit(WebEpisodeStarted(env=episode, task=episode.rsplit("-", 1)[0], seed=0, goal=goal, system="base",
                                     url="file:///page.html"))
        for step, action in enumerate(actions, 1):
            done = await model.complete(prompt(goal, step), output=Step, agent="base")
            assert done.output is not None and done.output.action == action
            trace.emit(WebStepTaken(env=episode, step=step, action=action, performed=action))


def fake_run(folder: Path, cache: CallCache) -> None:
    """Five episodes: a won in two steps; b won, its first reply sent back for repair; c lost, played again after a
    resume (the first play's step does not count); d lost, its call a cached one; e lost before any call (skipped)."""
    folder.mkdir(parents=True)
    script = [reply('click("5")'), reply('click("1")'), reply('click("2")'), "no JSON here", reply('click("3")'),
              reply('click("8")'), reply('click("4")')]
    backend = ScriptedBackend(script)
    # an earlier run left d's first call in the cache, so this run's is a cached reply
    asyncio.run(Model(backend, cache=cache).complete(prompt("the goal of click-d-0", 1), output=Step, agent="base"))
    trace = Trace(folder / "trace.jsonl")
    model = Model(backend, trace=trace, cache=cache)

    async def episodes() -> None:
        await play(model, trace, "click-a-0", ['click("1")', 'click("2")'])
        await play(model, trace, "click-b-0", ['click("3")'])
        await play(model, trace, "click-c-0", ['click("8")'], goal="the goal before the resume")
        await play(model, trace, "click-c-0", ['click("4")'])
        await play(model, trace, "click-d-0", ['click("5")'])
        await play(model, trace, "click-e-0", [])

    asyncio.run(episodes())
    trace.close()
    events = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["kind"] == "model_call"]
    assert [e["item_id"] for e in calls if e["cached"]] == ["click-d-0"]  # the cached call is in the trace
    assert [e["attempt"] for e in calls if e["item_id"] == "click-b-0"] == [1, 2]
    rows = [("click-a-0", True, 2), ("click-b-0", True, 1), ("click-c-0", False, 1), ("click-d-0", False, 1),
            ("click-e-0", False, 0)]
    (folder / "items.jsonl").write_text("".join(
        json.dumps({"id": id_, "prediction": "won" if won else "done", "gold": "won", "correct": won,
                    "task": id_.rsplit("-", 1)[0], "seed": 0, "reward": 1.0 if won else -1.0, "steps": steps}) + "\n"
        for id_, won, steps in rows))


def scoring_opener() -> Any:
    def scorer(request: Any) -> dict[str, float]:
        p = P_YES[json.loads(request.messages[-2].content)["action"]]
        return {"Yes": p, "No": 1 - p}

    backend = ScriptedBackend([], scorer=scorer, model_id="scripted")

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    opener.backend = backend  # type: ignore[attr-defined]
    return opener


def args(run: Path | None, out: Path) -> argparse.Namespace:
    return argparse.Namespace(tasks="miniwob", miniwob_run=str(run) if run else None, out=str(out),
                              model="scripted", parallel=2, limit_mustard=0, limit_gsm8k=0, bfcl_per_category=0)


def test_miniwob_rows_score_each_episodes_first_action_against_the_win(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "runs" / "20261127-000000-abcdef"
    fake_run(run, CallCache(tmp_path / "calls.sqlite"))
    opener = scoring_opener()
    monkeypatch.setattr(signal, "open_model", opener)
    out = tmp_path / "signal"
    asyncio.run(signal.main_async(args(run, out)))
    assert "4 episodes with their first call in the trace; 1 skipped" in capsys.readouterr().out

    rows = {r["id"]: r for r in map(json.loads, (out / "miniwob.jsonl").read_text().splitlines())}
    assert {id_: (r["truth"], r["action"], r["p_true"]) for id_, r in rows.items()} == {
        "click-a-0": (True, 'click("1")', 0.9), "click-b-0": (True, 'click("3")', 0.6),
        "click-c-0": (False, 'click("4")', 0.7), "click-d-0": (False, 'click("5")', 0.2)}
    assert all(r["run"] == run.name and r["agent"] == "base" for r in rows.values())
    assert rows["click-a-0"]["steps"] == 2 and rows["click-b-0"]["reward"] == 1.0

    probes = opener.backend.score_history
    assert len(probes) == 4 and all(p.agent == "judge" and p.options == ("Yes", "No") for p in probes)
    for probe in probes:  # the agent's prompt without the format instruction, its reply, then the question
        system, user, assistant, question = probe.messages
        assert system == Message.system(AGENT_ROLE) and user.role == "user" and user.content.startswith("Goal: ")
        assert "step 1" in user.content and assistant.role == "assistant"
        assert question == Message.user(signal.MINIWOB_QUESTION)
    repaired = next(p for p in probes if "click-b-0" in p.messages[1].content)
    assert repaired.messages[2].content == reply('click("3")')  # the accepted reply, not the one sent back

    table = json.loads((out / "signal.json").read_text())
    assert table["model"] == "scripted"
    [row] = table["rows"]
    assert row["task"] == "miniwob" and row["n"] == 4 and row["positives"] == 2
    assert row["auroc"] == pytest.approx(0.75)
    assert row["ci95"] == pytest.approx(list(auroc_interval([0.9, 0.6, 0.7, 0.2], [True, True, False, False])))
    assert row["mean_p_positive"] == 0.75 and row["mean_p_negative"] == 0.45 and row["signal"] is True
    assert "| miniwob | 4 | 2 | 0.750 |" in (out / "signal.md").read_text()

    asyncio.run(signal.main_async(args(run, out)))  # a rerun resumes: nothing scored again
    assert len(probes) == 4 and len((out / "miniwob.jsonl").read_text().splitlines()) == 4

    other = tmp_path / "runs" / "20261127-111111-fedcba"
    fake_run(other, CallCache(tmp_path / "other.sqlite"))
    with pytest.raises(UsageError, match="holds the rows of run 20261127-000000-abcdef"):
        asyncio.run(signal.main_async(args(other, out)))  # episode ids repeat across runs: not resumed from another
    assert len(probes) == 4


def test_a_missing_run_folder_or_trace_fails_before_any_model(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model(model_id: str, **kwargs: Any) -> Model:
        raise AssertionError("a model was opened")

    monkeypatch.setattr(signal, "open_model", no_model)
    out = tmp_path / "signal"
    with pytest.raises(UsageError, match=r"--miniwob-run .*nowhere: no folder there"):
        asyncio.run(signal.main_async(args(tmp_path / "nowhere", out)))
    no_trace = tmp_path / "no-trace"
    no_trace.mkdir()
    (no_trace / "items.jsonl").write_text(json.dumps({"id": "click-a-0", "correct": True}) + "\n")
    with pytest.raises(UsageError, match=r"no trace\.jsonl there"):
        asyncio.run(signal.main_async(args(no_trace, out)))
    with pytest.raises(UsageError, match="give its folder with --miniwob-run"):
        asyncio.run(signal.main_async(args(None, out)))
    assert not out.exists()  # refused before anything was written

    monkeypatch.setattr(sys, "argv", ["signal_table.py", "--tasks", "miniwob", "--miniwob-run",
                                      str(tmp_path / "nowhere"), "--out", str(out)])
    with pytest.raises(SystemExit, match=r"signal_table: --miniwob-run .* no folder there"):
        signal.main()


# the textworld task: every action of a react game, against whether the game's score rose at it
TW_P_YES = {"go west": 0.3, "take coin": 0.8, "open fridge": 0.4, "take apple": 0.9, "eat apple": 0.2,
            "look": 0.6}


class TwStep(BaseModel):
    thought: str
    action: str


async def play_game(model: Model, trace: Trace, game: str, moves: list[tuple[str, float]]) -> None:
    """A game as `bench textworld --system react` traces it: started, then a react call and an action a step, the
    action's reward the running score."""
    with item_scope(game):
        trace.emit(BenchItemStarted(item_id=game))
        for step, (action, score) in enumerate(moves, 1):
            messages = [Message.system("You play a text game."), Message.user(f"{game} step {step}: act")]
            if action == "forfeit":  # a step whose every repair failed: the reply names no action, react plays "look"
                await model.complete(messages, agent="react")
                trace.emit(ActionTaken(step=step, action="look", observation="...", reward=score, done=False,
                                       won=False))
                continue
            done = await model.complete(messages, output=TwStep, agent="react")
            assert done.output is not None and done.output.action == action
            trace.emit(ActionTaken(step=step, action=action, observation="...", reward=score, done=False, won=False))


def fake_game_run(folder: Path) -> None:
    """Three games: coin (go west, a step whose reply names no action and plays "look" (skipped), then take coin:
    score 0 -> 1), kitchen played twice (a resume; only the second play
    counts: open fridge 0, take apple 1, eat apple stays 1, so only take apple scored), and lost (not finished: not
    in items.jsonl, left out)."""
    folder.mkdir(parents=True)
    moves = {"coin": [("go west", 0.0), ("forfeit", 0.0), ("take coin", 1.0)], "kitchen-old": [("look", 1.0)],
             "kitchen": [("open fridge", 0.0), ("take apple", 1.0), ("eat apple", 1.0)], "lost": [("look", 0.0)]}
    script = [json.dumps({"thought": "t", "action": a}) if a != "forfeit" else "gave up"
              for play in moves.values() for a, _ in play]
    script.insert(1, "no JSON")  # coin's first reply is sent back for repair: the accepted one is the action's
    trace = Trace(folder / "trace.jsonl")
    model = Model(ScriptedBackend(script), trace=trace)

    async def games() -> None:
        await play_game(model, trace, "tier1/coin-0", moves["coin"])
        await play_game(model, trace, "tier1/kitchen-0", moves["kitchen-old"])
        await play_game(model, trace, "tier1/kitchen-0", moves["kitchen"])
        await play_game(model, trace, "tier1/lost-0", moves["lost"])

    asyncio.run(games())
    trace.close()
    (folder / "items.jsonl").write_text("".join(json.dumps({"id": g, "correct": False}) + "\n"
                                                for g in ("tier1/coin-0", "tier1/kitchen-0")))


def test_textworld_rows_score_every_action_against_a_rise_of_the_score(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "runs" / "20261127-000000-abcdef"
    fake_game_run(run)

    def scorer(request: Any) -> dict[str, float]:
        p = TW_P_YES[json.loads(request.messages[-2].content)["action"]]
        return {"Yes": p, "No": 1 - p}

    backend = ScriptedBackend([], scorer=scorer, model_id="scripted")
    monkeypatch.setattr(signal, "open_model", lambda model_id, **kwargs: Model(backend, **kwargs))
    out = tmp_path / "signal"
    arguments = argparse.Namespace(tasks="textworld", textworld_run=str(run), out=str(out), model="scripted",
                                   parallel=2, limit_mustard=0, limit_gsm8k=0, bfcl_per_category=0)
    asyncio.run(signal.main_async(arguments))
    assert "5 actions with their call in the trace, 2 of them scored; 1 skipped" in capsys.readouterr().out

    rows = {r["id"]: r for r in map(json.loads, (out / "textworld.jsonl").read_text().splitlines())}
    assert {id_: (r["truth"], r["action"], r["p_true"]) for id_, r in rows.items()} == {
        "tier1/coin-0#1": (False, "go west", 0.3), "tier1/coin-0#3": (True, "take coin", 0.8),
        "tier1/kitchen-0#1": (False, "open fridge", 0.4), "tier1/kitchen-0#2": (True, "take apple", 0.9),
        "tier1/kitchen-0#3": (False, "eat apple", 0.2)}
    probes = backend.score_history
    assert len(probes) == 5 and all(p.agent == "judge" for p in probes)
    for probe in probes:
        *_, user, assistant, question = probe.messages
        assert "step" in user.content and assistant.role == "assistant"
        assert question == Message.user(signal.TEXTWORLD_QUESTION)
    coin = next(p for p in probes if "tier1/coin-0 step 1" in p.messages[1].content)
    assert json.loads(coin.messages[2].content)["action"] == "go west"  # the accepted reply, not the one sent back
    [row] = json.loads((out / "signal.json").read_text())["rows"]
    assert row["task"] == "textworld" and row["positives"] == 2 and row["auroc"] == pytest.approx(1.0)

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "items.jsonl").write_text("")
    (empty / "trace.jsonl").write_text("")
    with pytest.raises(UsageError, match="no action of the react agent"):
        asyncio.run(signal.main_async(argparse.Namespace(**{**vars(arguments), "textworld_run": str(empty),
                                                            "out": str(tmp_path / "o2")})))
    assert not (tmp_path / "o2").exists()


def test_a_model_that_cannot_score_is_refused_before_any_call_or_file(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the tasks that generate first (gsm8k, bfcl) spent their calls, then every P(True) was refused."""
    backend = ScriptedBackend(["{}"] * 10)
    monkeypatch.setattr(signal, "open_model", lambda model_id, **kwargs: Model(backend))
    out = tmp_path / "signal"
    namespace = args(None, out)
    namespace.tasks, namespace.limit_gsm8k = "gsm8k", 2
    with pytest.raises(UsageError, match="logprobs"):
        asyncio.run(signal.main_async(namespace))
    assert backend.history == [] and not out.exists()


@pytest.mark.parametrize(("flags", "says"), [
    (["--parallel", "0"], "0 must be 1 or more"),  # a semaphore of 0: the script hung once the model was open
    (["--parallel", "-1"], "-1 must be 1 or more"),  # a ValueError's traceback
    (["--limit-mustard", "0"], "0 must be 1 or more"),  # 0 scored every item, -5 all but the last five
    (["--limit-gsm8k", "-5"], "-5 must be 1 or more"),
    (["--bfcl-per-category", "0"], "0 must be 1 or more"),
])
def test_counts_below_one_are_refused_by_the_parser(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        flags: list[str], says: str) -> None:
    monkeypatch.setattr(signal, "open_model", lambda model_id, **kwargs: pytest.fail("a model was opened"))
    monkeypatch.setattr(sys, "argv", ["signal_table.py", *flags, "--out", str(tmp_path / "signal")])
    with pytest.raises(SystemExit) as stopped:
        signal.main()
    assert stopped.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "signal").exists()


def test_no_task_is_refused(signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signal, "open_model", lambda model_id, **kwargs: pytest.fail("a model was opened"))
    monkeypatch.setattr(sys, "argv", ["signal_table.py", "--tasks", " , ", "--out", str(tmp_path / "signal")])
    with pytest.raises(SystemExit, match="--tasks names no task"):
        signal.main()
    assert not (tmp_path / "signal").exists()


def test_a_later_tasks_missing_data_is_refused_before_the_first_task_is_scored(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks ran one after another, each loading its data when its turn came: the last one's missing file was
    found after the first had spent its calls."""
    run = tmp_path / "runs" / "20261127-000000-abcdef"
    fake_run(run, CallCache(tmp_path / "calls.sqlite"))
    opener = scoring_opener()
    monkeypatch.setattr(signal, "open_model", opener)

    def no_data(**kwargs: Any) -> list[Any]:
        raise UsageError("gsm8k data not found")

    monkeypatch.setattr(signal.gsm_bench, "load_gsm8k", no_data)
    namespace = args(run, tmp_path / "signal")
    namespace.tasks = "miniwob,gsm8k"
    with pytest.raises(UsageError, match="gsm8k data not found"):
        asyncio.run(signal.main_async(namespace))
    assert opener.backend.score_history == [] and opener.backend.history == []
    assert not (tmp_path / "signal").exists()


def test_table_only_writes_the_table_from_the_rows_files_with_no_model(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone has the rows but not the miniwob and textworld runs' traces: the table is written from the rows."""
    monkeypatch.setattr(signal, "open_model", lambda model_id, **kwargs: pytest.fail("a model was opened"))
    out = tmp_path / "signal"
    out.mkdir()
    gsm = [{"id": "a", "truth": True, "p_true": 0.9}, {"id": "b", "truth": False, "p_true": 0.8},
           {"id": "c", "truth": True, "p_true": 0.7}, {"id": "c", "truth": False, "p_true": 0.1}]  # c rewritten
    tw = [{"id": "s1", "truth": True, "p_true": 0.6}, {"id": "s2", "truth": False, "p_true": 0.7}]
    (out / "gsm8k.jsonl").write_text("\n".join(json.dumps(row) for row in gsm) + "\n{\"id\": \"torn")
    (out / "textworld.jsonl").write_text("\n".join(json.dumps(row) for row in tw) + "\n")
    monkeypatch.setattr(sys, "argv", ["signal_table.py", "--table-only", "--tasks", "gsm8k,textworld",
                                      "--out", str(out)])
    signal.main()
    table = json.loads((out / "signal.json").read_text())["rows"]
    assert [(row["task"], row["n"], row["positives"], row["auroc"]) for row in table] == [
        ("gsm8k", 3, 1, 1.0), ("textworld", 2, 1, 0.0)]
    assert "| gsm8k | 3 | 1 | 1.000 |" in (out / "signal.md").read_text()


def test_table_only_refuses_a_missing_rows_file_and_leaves_the_table(
        signal: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signal, "open_model", lambda model_id, **kwargs: pytest.fail("a model was opened"))
    out = tmp_path / "signal"
    out.mkdir()
    (out / "gsm8k.jsonl").write_text(json.dumps({"id": "a", "truth": True, "p_true": 0.9}) + "\n")
    (out / "signal.md").write_text("the table before\n")
    monkeypatch.setattr(sys, "argv", ["signal_table.py", "--table-only", "--tasks", "gsm8k,miniwob",
                                      "--out", str(out)])
    with pytest.raises(SystemExit, match="no rows for miniwob"):
        signal.main()
    assert (out / "signal.md").read_text() == "the table before\n" and not (out / "signal.json").exists()
