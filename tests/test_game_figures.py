"""Issue 27's figures and tables for the game benchmarks, on the scripted model: success rate with its 95 %
interval and actions per success in a run's report, a suite's summary and the viewer; the transition heatmaps of
the meta-agent with memory and without, side by side; and the TextWorld and ALFWorld suites sized to this machine."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench import games as games_bench
from noosphere.bench.game_figures import _mean_label, outcomes_by_type, success_interval, write_transition_pair
from noosphere.envs import Reset, Step
from noosphere.errors import ContextOverflowError
from noosphere.llm import Model, ScriptedBackend
from noosphere.llm.types import Request
from noosphere.runs import Run
from tests.helpers import load_script
from tests.skip_policy import GAME_EXTRAS
from tests.test_cli import invoke

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
PNG = b"\x89PNG\r\n\x1a\n"


def script(name: str) -> Any:
    """A script of benchmarks/ as a module."""
    return load_script(BENCHMARKS / f"{name}.py")


@pytest.fixture(scope="module")
def suite() -> Any:
    return script("suite")


def row(item: str, won: bool, actions: int, kind: str = "fetch", moves: list[list[str]] | None = None) -> dict:
    return {"id": item, "correct": won, "prediction": "won" if won else "lost", "gold": "won", "task_type": kind,
            "actions": actions, "calls": 2 * actions, "tokens": 100 * actions, "seconds": 1.0, "error": None,
            "transitions": len(moves or []), "focus_loops": 0, "focus_recoveries": 0, "moves": moves or []}


AUTOPILOT = [["conscious", "planning"], ["planning", "motor"], ["motor", "external_perception"],
             ["external_perception", "conscious"]]
DETOUR = [["conscious", "retrieve_memory"], ["retrieve_memory", "idea"], ["idea", "planning"], ["planning", "motor"],
          ["motor", "external_perception"], ["external_perception", "conscious"]]


def test_success_rates_carry_their_wilson_interval() -> None:
    assert success_interval(3, 12) == (8.9, 53.2)
    assert success_interval(0, 12) == (0.0, 24.2)  # a width at the edges, where a normal interval has none
    assert success_interval(12, 12) == (75.8, 100.0)
    assert success_interval(0, 0) == (0.0, 100.0)


def test_a_games_report_has_the_interval_costs_per_action_and_the_outcomes_it_draws() -> None:
    rows = [row("a", True, 10, "cooking"), row("b", False, 40, "cooking"), row("c", True, 4, "custom"),
            row("d", True, 6, "custom")]
    metrics = games_bench.summarise(rows)
    assert metrics["success_rate"] == 75.0 and metrics["success_ci95"] == [30.1, 95.4]
    assert metrics["actions_per_success"] == 6.67
    assert metrics["calls_per_action"] == 2.0 and metrics["tokens_per_action"] == 100  # per action, not per game
    assert list(metrics["outcomes"]) == ["all games", "cooking", "custom"]
    assert metrics["outcomes"]["cooking"] == {"games": 2, "won": 1, "success_rate": 50.0, "ci95": [9.5, 90.5],
                                              "actions_per_success": 10.0}
    assert [o.label for o in outcomes_by_type(rows[2:])] == ["all games"]  # one task type: no repeat of it


class TwoRooms:
    """The key is in the east room; taking it wins."""

    kind = "fetch"

    def __init__(self, name: str) -> None:
        self.name = name

    def reset(self) -> Reset:
        self.room = "west"
        return Reset("Your task is to: take the key.", "You are in the west room.", ("go east", "look"))

    def step(self, action: str) -> Step:
        if action == "go east":
            self.room = "east"
            return Step("A key lies here.", 0.0, False, False, ("take key", "go west"))
        won = action == "take key" and self.room == "east"
        return Step("You take the key." if won else "Nothing happens.", float(won), won, won, ("go east", "look"))

    def close(self) -> None:
        pass


def walk_to_the_key(request: Request) -> dict[str, Any]:
    """Every call in form: the usual next agent, the action that leads to the key, a sentence elsewhere."""
    answer: dict[str, Any] = {}
    for name, field in ((request.json_schema or {}).get("properties") or {}).items():
        offered = field.get("enum")
        answer[name] = (next((a for a in ("take key", "go east") if a in offered), offered[0]) if offered
                        else "The key lies in the east room, take it.")
    return answer


def test_a_games_run_draws_its_outcomes_and_links_its_figures_from_its_report(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    import noosphere.envs

    monkeypatch.setattr(noosphere.envs, "textworld_games", lambda folder, **options: [TwoRooms("g1"), TwoRooms("g2")])
    backend = ScriptedBackend(walk_to_the_key)
    code, out, err = invoke(["bench", "textworld", "--system", "metaagent", "--memory", "none", "--games-dir",
                             str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"],
                            lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 0, err
    [run_dir] = (tmp_path / "runs").iterdir()
    assert (run_dir / "outcomes.png").read_bytes().startswith(PNG)
    report = (run_dir / "report.md").read_text()
    assert "| success_ci95 | [34.2, 100.0] |" in report and "| calls_per_action | 2.0 |" in report
    assert report.rstrip().endswith("## Figures\n\n![transition probabilities](transition_probabilities.png)\n"
                                    "![outcomes](outcomes.png)")
    metrics = json.loads((run_dir / "report.json").read_text())["metrics"]
    assert metrics["outcomes"]["all games"]["actions_per_success"] == 2.0
    assert f"wrote: {run_dir}/outcomes.png" in out.replace("\n", "")


def fake_run(folder: Path, config: dict[str, Any], rows: list[dict]) -> Path:
    """A finished games run folder with its items and report, as `bench` writes them."""
    with Run(folder, command="bench", config={"benchmark": "textworld", "tier": 1, "model": "scripted",
                                               "max_actions": 40, **config}) as run:
        (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        report = {"benchmark": "TextWorld tier 1", "system": config["system"], "model": "scripted",
                  "metrics": games_bench.summarise(rows), "costs": {"calls_per_item": 2.0}}
        (folder / "report.json").write_text(json.dumps(report))
        run.finish({"report": report})
    return folder


def memory_runs(root: Path) -> tuple[Path, Path]:
    off = fake_run(root / "metaagent-none-percept" / "20260101-000000-aaaaaa",
                   {"system": "metaagent", "memory": "none"},
                   [row("g1", True, 6, "cooking", AUTOPILOT * 6), row("g2", False, 40, "custom", AUTOPILOT * 40)])
    on = fake_run(root / "metaagent-both-percept" / "20260101-000000-bbbbbb",
                  {"system": "metaagent", "memory": "both"},
                  [row("g1", True, 3, "cooking", DETOUR + AUTOPILOT * 2), row("g2", True, 5, "custom", AUTOPILOT * 5)])
    return off, on


def test_the_suite_summary_draws_a_row_per_run_and_memory_off_and_on_side_by_side(
        suite: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory_runs(tmp_path)
    fake_run(tmp_path / "react" / "20260101-000000-cccccc", {"system": "react"},
             [row("g1", True, 9), row("g2", False, 40)])
    suite.summary(suite.SUITES["textworld"], tmp_path)
    written = suite.game_figures(suite.SUITES["textworld"], tmp_path, "textworld")
    assert written == [tmp_path / "outcomes.png", tmp_path / "transitions_memory.png"]
    assert all(path.read_bytes().startswith(PNG) for path in written)
    header, _, *lines = capsys.readouterr().out.splitlines()
    assert "| success_rate | success_ci95 | actions_per_success | calls_per_action |" in header
    assert lines[0].startswith("| react | 20260101-000000-cccccc | 2 | 50.0 | [9.5, 90.5] | 9.0 | 2.0 |")
    alone = tmp_path / "alone"
    fake_run(alone / "react" / "20260101-000000-dddddd", {"system": "react"}, [row("g1", True, 9)])
    assert suite.game_figures(suite.SUITES["textworld"], alone, "textworld") == [alone / "outcomes.png"]
    assert write_transition_pair(tmp_path / "none.png", ("react", [row("g", True, 1)]), ("react", []), "t") is None


def test_the_textworld_table_is_six_configurations_and_react_scored_on_the_same_12_games_of_40_actions(
        suite: Any) -> None:
    table = suite.SUITES["textworld"]
    assert [c.name for c in table.configs] == ["react", "reflexion", "react-scored", "react-scored-nomargin",
                                               "react-heldout", "react-scored-heldout", "react-confirm",
                                               "react-scored-confirm", "metaagent-none",
                                               "metaagent-episodic", "metaagent-conceptual", "metaagent-both",
                                               "metaagent-none-judged", "metaagent-both-judged",
                                               *(f"metaagent-{memory}-percept"
                                                 for memory in ("none", "episodic", "conceptual", "both")),
                                               "metaagent-both-percept-planner", "metaagent-none-percept-strike",
                                               "metaagent-both-percept-strike", "metaagent-none-percept-mask",
                                               "metaagent-both-percept-mask", "metaagent-both-percept-stuck",
                                               "metaagent-none-percept-paired",
                                               "metaagent-episodic-percept-stuck",
                                               "metaagent-conceptual-percept-stuck",
                                               "metaagent-both-percept-stuck-heldout",
                                               "metaagent-none-percept-paired-heldout",
                                               "metaagent-none-percept-heldout",
                                               "metaagent-none-percept-strike-heldout",
                                               "metaagent-none-percept-mask-heldout"]
    assert [c.name for c in table.configs if "--judge" in c.args] == ["metaagent-none-judged", "metaagent-both-judged"]
    margins = {c.name: c.args[c.args.index("--margin") + 1] for c in table.configs if "--margin" in c.args}
    assert margins == {"react-scored": "0.05", "react-scored-nomargin": "0", "react-scored-heldout": "0.05",
                       "react-scored-confirm": "0.05"}
    seeds = {c.name: c.args[c.args.index("--seed") + 1] for c in table.configs if "--seed" in c.args}
    assert seeds == {**{name: "3" for name in (
        "react-heldout", "react-scored-heldout", "metaagent-none-percept-heldout",
        "metaagent-none-percept-strike-heldout", "metaagent-none-percept-mask-heldout",
        "metaagent-both-percept-stuck-heldout", "metaagent-none-percept-paired-heldout")},
        "react-confirm": "6", "react-scored-confirm": "6"}
    games = {c.args[c.args.index("--tier"):] for c in table.configs}
    assert games == {("--tier", "1", "--challenges", "coin_collector,treasure_hunter,cooking,custom",
                      "--per-challenge", "3", "--max-actions", "40")}
    assert {c.limit for c in table.configs} == {12}
    assert [c.name for c in table.configs if c.in_order] == ["metaagent-episodic", "metaagent-conceptual",
                                                             "metaagent-both", "metaagent-both-judged",
                                                             *(f"metaagent-{memory}-percept"
                                                               for memory in ("episodic", "conceptual", "both")),
                                                             "metaagent-both-percept-planner",
                                                             "metaagent-both-percept-strike",
                                                             "metaagent-both-percept-mask",
                                                             "metaagent-both-percept-stuck",
                                                             "metaagent-none-percept-paired",
                                                             "metaagent-episodic-percept-stuck",
                                                             "metaagent-conceptual-percept-stuck",
                                                             "metaagent-both-percept-stuck-heldout",
                                                             "metaagent-none-percept-paired-heldout"]
    config = {c.name: c for c in table.configs}  # the pair's other half is the run without memory, game for game
    assert config["metaagent-none-percept-paired"].args == config["metaagent-none-percept"].args
    assert config["metaagent-none-percept-paired-heldout"].args == config["metaagent-none-percept-heldout"].args
    heldout = list(config["metaagent-both-percept-stuck-heldout"].args)
    del heldout[heldout.index("--seed"):heldout.index("--seed") + 2]
    assert heldout == list(config["metaagent-both-percept-stuck"].args)
    for memory in ("episodic", "conceptual"):  # each memory alone: the stuck run's options but its memory mode
        alone = list(config[f"metaagent-{memory}-percept-stuck"].args)
        assert alone[alone.index("--memory") + 1] == memory
        alone[alone.index("--memory") + 1] = "both"
        assert alone == list(config["metaagent-both-percept-stuck"].args)
    focus = {c.name: c.args[c.args.index("--focus") + 1] for c in table.configs if "--focus" in c.args}
    assert focus == {name: name.split("-")[3] for name in (
        "metaagent-none-percept-strike", "metaagent-both-percept-strike", "metaagent-none-percept-strike-heldout",
        "metaagent-none-percept-mask", "metaagent-both-percept-mask", "metaagent-none-percept-mask-heldout")}
    assert all(c.args[c.args.index("--planner-view") + 1] == "percept" for c in table.configs if "percept" in c.name)
    recall_views = {c.name: c.args[c.args.index("--recall-view") + 1]
                    for c in table.configs if "--recall-view" in c.args}
    assert recall_views == {name: "planner" for name in (
        "metaagent-both-percept-planner", "metaagent-both-percept-stuck", "metaagent-both-percept-stuck-heldout",
        "metaagent-episodic-percept-stuck", "metaagent-conceptual-percept-stuck")}
    recall_at = {c.name: c.args[c.args.index("--recall-at") + 1] for c in table.configs if "--recall-at" in c.args}
    assert recall_at == {name: "stuck" for name in (
        "metaagent-both-percept-stuck", "metaagent-both-percept-stuck-heldout", "metaagent-episodic-percept-stuck",
        "metaagent-conceptual-percept-stuck")}
    assert table.memory_pair == ("metaagent-none-percept", "metaagent-both-percept")  # the view that wins games
    assert [c.name for c in suite.SUITES["textworld-tiers"].configs][:3] == ["tier1-react", "tier1-reflexion",
                                                                             "tier1-metaagent"]


def test_alfworld_12_is_react_and_the_meta_agent_with_both_memories_in_a_folder_of_its_own(
        suite: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    small = suite.SUITES["alfworld-12"]
    assert small.folder == "alfworld/12-games" and small.benchmark == "alfworld"
    ran: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, **_: ran.append(command))
    args = argparse.Namespace(limit=None, model="local:m", parallel=None)
    for config in small.configs:
        suite.run(small, config, tmp_path, args)
    react, metaagent, percept, strike, mask = (command[3:] for command in ran)
    assert react[:8] == ["bench", "alfworld", "--quiet", "--parallel", "4", "--system", "react", "--per-type"]
    assert metaagent[:12] == ["bench", "alfworld", "--quiet", "--parallel", "1", "--system", "metaagent", "--memory",
                              "both", "--per-type", "2", "--max-actions"]
    assert metaagent[12:16] == ["30", "--limit", "12", "--model"]
    assert percept[5:11] == [*metaagent[5:9], "--planner-view", "percept"] and percept[11:-1] == metaagent[9:-1]
    assert percept[-1].endswith("metaagent-both-percept")
    assert strike[5:13] == [*percept[5:11], "--focus", "strike"] and strike[13:-1] == percept[11:-1]
    assert mask[5:13] == [*percept[5:11], "--focus", "mask"] and mask[13:-1] == percept[11:-1]
    folder = tmp_path / "alfworld" / "12-games"  # under the alfworld suite's results, apart from its runs
    fake_run(folder / "react" / "20260101-000000-eeeeee", {"system": "react"}, [row("g1", True, 7, "look")])
    monkeypatch.setattr(sys, "argv", ["suite.py", "alfworld-12", "--summary-only", "--out", str(tmp_path)])
    suite.main()
    out = capsys.readouterr().out
    assert "| react | 20260101-000000-eeeeee | 1 | 100.0 |" in out and f"wrote: {folder / 'outcomes.png'}" in out


def test_textworld_challenges_are_chosen_checked_and_saved(tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    code, _, err = invoke(["bench", "textworld", "--challenges", "cooking,cokking", "--out", str(tmp_path / "runs"),
                             "--games-dir", str(tmp_path / "games")])
    assert code == 2 and "unknown TextWorld challenge 'cokking'. Did you mean cooking" in err
    assert not (tmp_path / "runs").exists()
    code, _, err = invoke(["bench", "textworld", "--challenges", "custom,cooking", "--per-challenge", "2", "--out",
                             str(tmp_path / "runs"), "--games-dir", str(tmp_path / "games"), "--create-only"])
    assert code == 0, err
    [run_dir] = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "config.json").read_text())["challenges"] == ["custom", "cooking"]


def test_the_scripted_stand_in_answers_every_call_in_form() -> None:
    stand_in = script("game_step_cost").stand_in
    plan = {"properties": {"plan": {"type": "string", "maxLength": 10}, "action": {"enum": ["go east", "look"]},
                           "next_agent": {"enum": ["planning", "focus", "idea"]}}}
    request = Request(messages=(), json_schema=plan)
    usual = stand_in("usual")(request)
    assert len(usual["plan"]) == 10 and usual["action"] in ("go east", "look") and usual["next_agent"] == "planning"
    picked = {stand_in("random", seed)(request)["next_agent"] for seed in range(20)}
    assert picked == {"planning", "focus", "idea"}


@pytest.mark.parametrize(("given", "says"), [
    (["--games", "0"], "argument --games: 0 must be 1 or more"),
    (["--actions", "0"], "argument --actions: 0 must be 1 or more"),
    (["--games", "-1"], "argument --games: -1 must be 1 or more"),
    (["--model", "nosuch"], "error: unknown model id 'nosuch'"),
    (["--model", "scripted", "--data", "/nonexistent/alfworld"], "error: no data at /nonexistent/alfworld"),
    (["--system", "react", "--memory", "both"], "--memory both is the meta-agent's; --system react keeps no memory"),
    (["--system", "react", "--planner-view", "percept"],
     "--planner-view percept is the meta-agent's; --system react has no planner"),
    (["--picks", "random", "--model", "litellm:openai/gpt-4o"],
     "--picks random is how the scripted stand-in picks; --model litellm:openai/gpt-4o picks for itself"),
], ids=["no game", "no action", "games below zero", "unknown model", "alfworld data given", "react with memory",
        "react with a planner view", "a real model with picks"])
def test_game_step_cost_refuses_bad_input_in_one_line_before_making_games(
        given: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`--games 0` compiled games then crashed on a NaN, `--games -1` played 3, an unknown model was a traceback after
    the games were made, and ALFWorld's "pass --data PATH" named an option the script did not have."""
    step_cost = script("game_step_cost")
    made: list[str] = []
    if given[-2] != "--data":
        monkeypatch.setattr(step_cost, "games", lambda env, *_: made.append(env) or [])
    with pytest.raises(SystemExit) as exited:
        step_cost.main(given)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and made == [] and "Traceback" not in err
    assert says in err.strip().splitlines()[-1]


def test_game_step_cost_tells_a_fault_while_the_games_play_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A model that fails mid-game (a prompt past its context window, a provider down) was a traceback."""
    step_cost = script("game_step_cost")

    async def overflowing(*_: Any, **__: Any) -> None:
        raise ContextOverflowError("scripted", 5000, 400, 4096)

    monkeypatch.setattr(step_cost, "games", lambda *_: [])
    monkeypatch.setattr(step_cost, "play", overflowing)
    with pytest.raises(SystemExit) as exited:
        step_cost.main(["--model", "scripted"])
    err = capsys.readouterr().err
    assert exited.value.code == 1 and "Traceback" not in err
    assert err.strip().splitlines() == ["game_step_cost: error: scripted: prompt of 5000 tokens plus 400 output "
                                        "tokens exceeds the context window of 4096"]


# ---------------------------------------------------------------- the viewer, in Chromium


def test_the_viewer_draws_outcomes_and_sets_memory_off_and_on_side_by_side(tmp_path: Path) -> None:
    from tests.test_viewer import CHROMIUM, NO_CHROMIUM, Viewer, card

    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[test]')")
    off, on = memory_runs(tmp_path)
    with sync_api.sync_playwright() as playwright:
        if CHROMIUM.exists():
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        elif Path(playwright.chromium.executable_path).exists():
            browser = playwright.chromium.launch()
        else:
            pytest.skip(NO_CHROMIUM)
        try:
            viewer = Viewer(browser, tmp_path, off)
            figure = card(viewer.tab("benchmark"), "Success and actions per success").locator("svg.outcomes")
            labels = figure.locator("rect.success")
            assert [labels.nth(i).get_attribute("data-label") for i in range(labels.count())] == [
                "all games", "cooking", "custom"]
            assert figure.locator("rect.actions").count() == 2  # custom has no win: no bar, "no win"
            assert "1/2" in figure.text_content() and "no win" in figure.text_content()
            assert "outcomes" not in card(viewer.tab("benchmark"), "Metrics").inner_text()
            viewer.close()

            viewer = Viewer(browser, tmp_path, off, compare=str(on))
            panel = viewer.tab("compare")
            both = card(panel, "Success and actions per success").locator("svg.outcomes rect.success")
            assert [both.nth(i).get_attribute("data-label") for i in range(2)] == [
                "A: metaagent, memory none", "B: metaagent, memory both"]
            maps = card(panel, "Transitions side by side (share of each agent's hand-overs)").locator("figure")
            assert maps.count() == 2
            heads = [maps.nth(i).locator("thead").inner_text() for i in range(2)]
            assert heads[0] == heads[1] and "retrieve_memory" in heads[0]  # one agent order for both
            assert "memory both" in maps.nth(1).locator("figcaption").inner_text()
            conscious = maps.nth(1).locator("tbody tr").first
            assert conscious.locator("td").nth(2).inner_text() == "0.88"  # planning: 7 of conscious's 8 hand-overs
            viewer.shot("compare-memory")
            viewer.close()
        finally:
            browser.close()


def test_the_recall_probe_rebuilds_the_memory_each_game_started_with_and_shows_it_five_ways(tmp_path: Path) -> None:
    import random

    from noosphere.memory import Episode, EpisodeStep, HashingEmbedder, MemoryStore, recall, sleep

    probe = script("recall_probe")
    source = MemoryStore(tmp_path / "run")
    played = ["g0", "g1", "g2"]
    for game, won in (("g0", True), ("g1", False)):
        steps = (EpisodeStep(0, "", "You are in a hall."), EpisodeStep(1, "go east", "-= Den =-", "At: den."))
        rules = [f"A rule taught by {game} alone: search the neighbouring room first."]
        source.add_game(Episode(f"task of {game}", "fetch", game, steps, won), rules, game)
    first = probe.memory_before(source.folder, "g0", played, tmp_path / "m0")
    third = probe.memory_before(source.folder, "g2", played, tmp_path / "m2")
    assert not first.episodes() and not first.concepts()
    assert [e.game for e in third.episodes()] == ["g0", "g1"] and len(third.concepts()) == 2
    sleep(third, HashingEmbedder())
    found = recall(third, "", k=4, method="random", rng=random.Random(0), embedder=HashingEmbedder())
    shown = {view: probe.shown(view, found) for view in probe.VIEWS}
    assert shown["none"] == "" and "rule taught by g0" in shown["rules"] and "Episode" not in shown["rules"]
    assert "belief: At: den." in shown["team"] and "belief:" not in shown["planner"]
    assert "not in this one" in shown["planner"] and "-= Den =-" in shown["planner"]
    assert "- task of g0 (solved in 1 actions): go east" in shown["actions"] and "-= Den =-" not in shown["actions"]
    from noosphere.metaagent.state import EpisodeState

    state = EpisodeState("Take the key.", "You are in a hall.", ("go east", "look"))
    state.recall = shown["actions"]
    before, after = (probe.asked(state, place)[-1].content for place in ("before", "after"))
    assert before.index("Memory:") < before.index("Take the key.") < before.index("You are in a hall.")
    assert after.index("Take the key.") < after.index("You are in a hall.") < after.index("Memory:")
    rows = [{"game": "g1", "view": view, "action": "go east", "expert_first": "go east", "first_right": view != "team"}
            for view in ("none", "team")]
    assert probe.table(rows, ["none", "team"]).splitlines()[-1] == "| expert's first action taken | | 1 of 1 | 0 of 1 |"


def test_focus_loops_reads_each_games_loops_what_was_struck_and_the_action_after_from_a_runs_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from noosphere.errors import UsageError
    from noosphere.metaagent import MetaAgent
    from noosphere.scope import item_scope
    from noosphere.trace import Trace
    from tests.test_metaagent import TwoRooms, by_role, reply, winning_script

    focus_loops = script("focus_loops")
    script_ = {**winning_script(), "focus": [reply(situation="Waiting did nothing.", action="go east")],
               "planning": [reply(plan="rest", action="wait")] * 2 + winning_script()["planning"]}
    runs = {}
    for focus in ("strike", "replay"):
        run = tmp_path / focus / "20260101-000000-aaaaaa"  # a suite's layout: the configuration names the run
        run.mkdir(parents=True)
        trace = Trace(run / "trace.jsonl")
        with item_scope("two-rooms"):
            result = asyncio.run(MetaAgent(Model(ScriptedBackend(by_role(script_)), trace=trace), focus=focus)
                                 .play(TwoRooms()))
        trace.close()
        (run / "items.jsonl").write_text(json.dumps({"id": "two-rooms", "prediction": "won",
                                                     "actions": result.actions}) + "\n")
        runs[focus] = run
    with (runs["strike"] / "trace.jsonl").open("a") as torn:
        torn.write('{"kind": "ma_focus", "item_id": "two-ro')  # a killed run's last line
    [loop] = focus_loops.loops_by_game(runs["strike"])["two-rooms"]
    assert (loop["struck"], loop["action"], loop["recovered"]) == (["wait"], "go east", True)
    assert loop["advice"] == "Waiting did nothing. Next action: go east."
    focus_loops.main([str(runs["strike"]), "--against", str(runs["replay"])])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "two-rooms" and out[1] == "  strike: won in 4; 1 focus loops, 1 recovered, 1 to something new"
    assert out[2] == ("    step 2: 2 actions in a row did nothing; struck [wait]; advised `go east`, took `go east` "
                      "(did something, new)")
    assert out[4].startswith("    step 2: 2 actions in a row did nothing; advised `go east`")
    with pytest.raises(UsageError, match=r"no trace\.jsonl in"):
        focus_loops.loops_by_game(tmp_path / "strike")
    shuffle = tmp_path / "shuffle" / "run"  # the cookbook into the fridge and out: something done, nothing new
    shuffle.mkdir(parents=True)
    events = [{"kind": "ma_episode"}, *({"kind": "ma_action", "observation": text} for text in ("In.", "Out.")),
              {"kind": "ma_focus", "step": 2, "reason": "a loop"}, {"kind": "ma_action", "observation": "In."},
              {"kind": "ma_focus_outcome", "action": "put cookbook in fridge", "recovered": True}]
    (shuffle / "trace.jsonl").write_text("".join(json.dumps(e | {"item_id": "cooking"}) + "\n" for e in events))
    [loop] = focus_loops.loops_by_game(shuffle)["cooking"]
    assert (loop["recovered"], loop["new"]) == (True, False)
    assert focus_loops.describe(shuffle, "cooking", [loop])[0].endswith("1 recovered, 0 to something new")


def test_first_prompt_tells_a_planning_prompt_without_memory_from_one_that_read_memory(tmp_path: Path) -> None:
    import asyncio

    from noosphere.memory import HashingEmbedder, MemoryStore
    from noosphere.metaagent import MemorySettings, MetaAgent
    from noosphere.scope import item_scope
    from noosphere.trace import Trace
    from tests.test_metaagent import TwoRooms, by_role, reply, winning_script

    first_prompt = script("first_prompt")
    steps = {"planning": [reply(thought="the key is east", action="go east"), reply(thought="grab", action="take key")]}
    store = MemoryStore(tmp_path / "memory")
    same = {}
    for at in ("stuck", "start"):  # the first game has nothing to recall and is stored; the second recalls it first
        memory = MemorySettings(store, conceptual=False, k=1, embedder=HashingEmbedder(), at=at, view="planner")
        run = tmp_path / at
        run.mkdir()
        trace = Trace(run / "trace.jsonl")
        with item_scope("two-rooms"):
            agent = MetaAgent(Model(ScriptedBackend(by_role(winning_script() | steps)), trace=trace), memory=memory,
                              planner_view="percept")
            asyncio.run(agent.play(TwoRooms()))
        trace.close()
        calls = first_prompt.recorded_calls(run, "two-rooms")
        same[at] = first_prompt.same_first_prompt(calls, TwoRooms(), {"planner_view": "percept"})
    assert all(same["stuck"]) and len(same["stuck"]) == 3  # the message count, then each message
    assert same["start"][:2] == [True, True] and same["start"][2] is False  # the user message read the memory


def test_pair_divergence_finds_where_a_run_recalling_when_stuck_parts_from_the_run_without_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from noosphere.errors import UsageError
    from noosphere.memory import HashingEmbedder, MemoryStore
    from noosphere.metaagent import MemorySettings, MetaAgent
    from noosphere.scope import item_scope
    from noosphere.trace import Trace
    from tests.test_metaagent import TwoRooms, by_role, reply, winning_script

    pair = script("pair_divergence")
    stuck = {**winning_script(), "focus": [reply(situation="Waiting did nothing.", action="go east")],
             "planning": [reply(plan="rest", action="wait")] * 2 + winning_script()["planning"]}
    store = MemoryStore(tmp_path / "memory")
    runs = {}
    for name, memory in (("stuck", MemorySettings(store, conceptual=False, k=1, embedder=HashingEmbedder(),
                                                  at="stuck", view="planner")), ("none", None)):
        run = tmp_path / name / "20260101-000000-aaaaaa"
        run.mkdir(parents=True)
        trace = Trace(run / "trace.jsonl")
        rows = []
        for game, script_ in (("easy", winning_script()), ("hard", stuck)):  # never stuck, then stuck at action 2
            with item_scope(game):
                result = asyncio.run(MetaAgent(Model(ScriptedBackend(by_role(script_)), trace=trace),
                                               memory=memory).play(TwoRooms()))
            rows.append(json.dumps({"id": game, "correct": result.won, "actions": result.actions}))
        trace.close()
        (run / "items.jsonl").write_text("\n".join(rows[:1]) + "\n")  # the second game still in play
        runs[name] = run
    pair.main([str(runs["stuck"]), str(runs["none"])])
    lines = capsys.readouterr().out.splitlines()
    easy, hard = (line.split(" | ") for line in lines[2:])
    assert easy[1:3] == ["won 2", "won 2"] and easy[4:] == ["-", "-", "the same game, then the calls that store it |"]
    assert hard[1:3] == ["in play", "in play"] and int(hard[3]) > 0
    assert hard[4] == hard[5] == "2"  # they part where memory was first recalled, and not before
    with pytest.raises(UsageError, match=r"no trace\.jsonl in"):
        pair.games(tmp_path)



@pytest.mark.parametrize(("name", "argv"), [
    ("focus_loops", ["{run}"]), ("focus_loops", ["{full}", "--against", "{run}"]),
    ("pair_divergence", ["{full}", "{run}"]), ("first_prompt", ["{run}", "--game", "two-rooms"]),
    ("rule_probe", ["{full}", "{run}", "--out", "{full}/out.jsonl"]), ("standing_answers", ["{full}", "{run}"]),
    ("cache_policy", ["{full}", "{run}"])])
def test_a_script_given_a_run_without_its_trace_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str,
        argv: list[str]) -> None:
    """A run committed under benchmarks/results keeps no trace.jsonl: the scripts that read one say so in one line,
    not a traceback, before any work (rule_probe opens no model, standing_answers backfills no other run)."""
    full, run = tmp_path / "full", tmp_path / "committed"
    for folder in (full, run):
        folder.mkdir()
        (folder / "items.jsonl").write_text("")
    (full / "trace.jsonl").write_text("")
    module = script(name)

    def no_model(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("opened a model")

    monkeypatch.setattr(module, "open_model", no_model, raising=False)
    monkeypatch.setattr(module, "tokenizer", no_model, raising=False)
    with pytest.raises(SystemExit) as exited:
        module.main([arg.format(full=full, run=run) for arg in argv])
    message = str(exited.value.code)
    assert message.startswith(f"{name}: no trace.jsonl in {run}: ") and "\n" not in message
    assert capsys.readouterr().out == ""


def test_the_recall_probe_refuses_a_kin_source_without_its_trace(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"benchmark": "textworld", "tier": 1, "per_challenge": 3,
                                                      "seed": 0, "system": "metaagent", "memory": "none"}))
    with pytest.raises(SystemExit, match=r"no trace\.jsonl"):
        script("recall_probe").check_kin_source(tmp_path)
    (tmp_path / "trace.jsonl").write_text("")
    script("recall_probe").check_kin_source(tmp_path)


def test_the_figure_prints_each_mean_in_two_decimals_at_most() -> None:
    """The right panel's means sit in a column past the dots: "3.86" (not 3.857142...), "6" (not 6.0)."""
    assert [_mean_label(v) for v in (27 / 7, 6.0, 4.5, 8.333333, None)] == ["3.86", "6", "4.5", "8.33", "no win"]
