"""The embodied society on MiniGrid/BabyAI: the world and its coverage, the four systems, EQA, the command, the viewer.

Random and frontier explore real worlds (`minigrid`, the embodied extra); the models are scripted, routed by the
form they are asked to fill.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import subprocess
import sys
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench.embodied import interval, summarise
from noosphere.embodied import (
    NOT_SEEN,
    Crew,
    FrontierExplorer,
    Question,
    RandomExplorer,
    SingleAgent,
    ask_all,
    canonical,
    explore,
    make_questions,
    parse_action,
    seen_text,
)
from noosphere.embodied.eqa import FORMS, memory_answerer
from noosphere.envs.gridworld import ACTIONS, FORWARD, MOVES, OPEN, GridWorld, check_world
from noosphere.errors import CapabilityError, ConfigError, UsageError
from noosphere.llm import DEFAULT_MODEL, Capabilities, Model, ScriptedBackend
from noosphere.society.config import build_society, load_society_spec
from noosphere.trace import Trace
from noosphere.viewer import load_bundle, render_page
from tests.helpers import opener_for
from tests.test_cli import invoke

pytest.importorskip("minigrid", reason="needs the embodied extra (pip install -e '.[embodied]'; make test installs it)")

ROOMS = "MiniGrid-MultiRoom-N4-S5-v1"
OBJECTS = "BabyAI-GoToSeqS5R2-v0"
SOCIETY = Path(__file__).resolve().parent.parent / "examples" / "societies" / "embodied.yaml"
TEXT_ONLY = Capabilities(json_schema=True)
SCORING = Capabilities(json_schema=True, logprobs=True)


def play(world: GridWorld, policy: Any, steps: int, trace: Trace | None = None) -> Any:
    return asyncio.run(explore(world, policy, max_steps=steps, trace=trace or Trace(None)))


def crew_reply(actions: list[str], eqa: str = NOT_SEEN) -> Any:
    """A scripted society: the observer reports, the first mate asks and sums up, the captain says `actions` in turn
    and answers every question `eqa`; the single agent (`seen` + `action`) says `actions` in turn too."""
    said = {"n": 0}

    def reply(request: Any) -> Any:
        fields = (request.json_schema or {}).get("properties", {})
        if "question" in fields:
            return {"question": "What blocks the way ahead?"}
        if "summary" in fields:
            return {"summary": "A small room; a wall ahead."}
        if "action" in fields or "reasoning" in fields:
            action = actions[said["n"] % len(actions)]
            said["n"] += 1
            return {"seen": "a room", "action": action} if "action" in fields else {"reasoning": "go", "answer": action}
        if request.agent == "observer":
            return {"answer": "A wall ahead and a door on the left."}
        return {"answer": eqa}

    return reply


def model(script: Any, *, vision: bool = False) -> tuple[Model, ScriptedBackend, Trace]:
    backend = ScriptedBackend(script, capabilities=Capabilities(json_schema=True, vision=vision))
    trace = Trace(None)
    return Model(backend, trace=trace), backend, trace


def crew(llm: Model, steps: int) -> Crew:
    spec = load_society_spec(SOCIETY)
    society = build_society(spec, lambda model_id: llm, "scripted")
    return Crew(society, captain=next(m for m in society.staff if m.name == "captain"), max_steps=steps)


# the world ----------------------------------------------------------------------------------------------------
def test_a_seed_lays_out_the_same_world_and_coverage_counts_seen_floor() -> None:
    first, again, other = GridWorld(OBJECTS, 4), GridWorld(OBJECTS, 4), GridWorld(OBJECTS, 5)
    for world in (first, again, other):
        world.reset()
    assert first.layout() == again.layout() and first.things == again.things
    assert first.layout() != other.layout()
    assert first.seen & first.floor and 0 < first.coverage < 1
    assert first.coverage == len(first.seen & first.floor) / len(first.floor)
    view = first.view_text()
    assert view.startswith("You are in room 1, facing") and "Straight ahead:" in view and "^" in view


def test_the_text_view_places_objects_relative_to_the_robot() -> None:
    for seed in range(20):  # the first layout that shows an object from the start
        world = GridWorld(OBJECTS, seed)
        world.reset()
        ahead = next((t for t in world.things if t.cell in world.seen and t.kind != "door"), None)
        if ahead is not None:
            break
    assert ahead is not None
    x, y, heading = world.pose
    step = ((1, 0), (0, 1), (-1, 0), (0, -1))[heading]
    forward = (ahead.cell[0] - x) * step[0] + (ahead.cell[1] - y) * step[1]
    right = (ahead.cell[0] - x) * -step[1] + (ahead.cell[1] - y) * step[0]
    words = [f"{forward} ahead"] if forward else []
    if right:
        words.append(f"{abs(right)} to the {'right' if right > 0 else 'left'}")
    assert f"a {ahead.colour} {ahead.kind}, {' and '.join(words)}" in world.view_text()


def test_open_door_opens_only_a_closed_door_in_front_and_unknown_actions_are_refused() -> None:
    world = GridWorld(ROOMS, 0)
    world.reset()
    with pytest.raises(UsageError, match="not an action of this world"):
        world.step("jump")
    before = world.content(world.front)
    world.step(OPEN)
    assert world.content(world.front) == ("door-open" if before == "door-closed" else before)


def test_the_robot_starts_in_room_1_even_when_another_room_is_in_view_first() -> None:
    """In BabyAI-GoToOpen the first cells in view at the start can belong to a room beyond an open doorway; the
    robot's own room is numbered first all the same (it said "You are in room 2" at its first step)."""
    for seed in (0, 1, 3):
        world = GridWorld("BabyAI-GoToOpen-v0", seed)
        world.reset()
        assert world.view_text().startswith("You are in room 1,")
        world.close()


def test_an_unknown_world_says_did_you_mean() -> None:
    with pytest.raises(UsageError, match="Did you mean MiniGrid-MultiRoom-N4-S5-v1"):
        check_world("MiniGrid-MultiRoom-N4-S5")


def test_the_wfc_worlds_the_wheel_cannot_lay_out_are_refused_by_name_and_not_listed() -> None:
    """The sweep of every world found them: registered by minigrid 3.0, but drawn from pattern images its wheel
    does not ship (a FileNotFoundError deep in gymnasium, or a missing imageio)."""
    from noosphere.envs.gridworld import world_names

    assert not any("WFC" in name for name in world_names()) and len(world_names()) > 150
    with pytest.raises(UsageError, match="pattern images"):
        check_world("MiniGrid-WFC-MazeSimple-v0")


def test_the_sweep_plays_each_world_once_resumes_and_says_why_frontier_fell_short(tmp_path: Path) -> None:
    """`benchmarks/embodied_sweep.py` on two worlds: KeyCorridor's floor lies partly behind a locked door, which the
    robot (no keys, no pick-up) cannot open; a second call with the same file plays nothing again."""
    from tests.helpers import load_script

    sweep = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "embodied_sweep.py")
    out = tmp_path / "sweep.jsonl"
    worlds = f"{ROOMS},MiniGrid-KeyCorridorS3R3-v0"
    assert sweep.main(["--worlds", worlds, "--out", str(out), "--frontier-steps", "200"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["world"] for r in rows] == [ROOMS, "MiniGrid-KeyCorridorS3R3-v0"] and not any(r["error"] for r in rows)
    rooms, corridor = rows
    assert rooms["frontier_coverage"] == 1.0 and rooms["frontier_blocked_by"] == []
    assert rooms["random_coverage"] < 1.0 and sum(rooms["questions"].values()) >= 4
    assert corridor["frontier_coverage"] < 1.0 and "door-locked" in corridor["frontier_blocked_by"]
    assert sweep.main(["--worlds", worlds, "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2


# the systems in code ------------------------------------------------------------------------------------------
def test_frontier_explores_more_than_random_after_the_same_actions() -> None:
    random_cover, frontier_cover = [], []
    for world_name in (ROOMS, OBJECTS):
        for seed in range(3):
            random_cover.append(play(GridWorld(world_name, seed), RandomExplorer(random.Random(seed)), 30).coverage)
            frontier_cover.append(play(GridWorld(world_name, seed), FrontierExplorer(), 30).coverage)
    assert sum(frontier_cover) / 6 > sum(random_cover) / 6 + 0.3
    assert min(frontier_cover) > 0.8


def test_random_is_seeded_and_moves_only() -> None:
    runs = [play(GridWorld(ROOMS, 2), RandomExplorer(random.Random(7)), 20) for _ in range(2)]
    assert runs[0] == runs[1]
    assert {move.action for move in runs[0].moves} <= set(ACTIONS) - {"stop"}
    assert len(runs[0].curve) == 21 and runs[0].curve == tuple(sorted(runs[0].curve))


def test_frontier_stops_when_nothing_unseen_is_reachable_and_the_curve_holds_its_coverage() -> None:
    trajectory = play(GridWorld(ROOMS, 0), FrontierExplorer(), 60)
    assert trajectory.stopped and trajectory.coverage == 1.0
    assert len(trajectory.moves) < 60 and len(trajectory.curve) == 61 and trajectory.curve[-1] == 1.0


# actions as models write them -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("said", "action"), [
    ("move forward", FORWARD), ("Forward.", FORWARD), ("go ahead", FORWARD), ("Turn left", "turn left"),
    ("open the yellow door", OPEN), ("stop", "stop"), ("jump", None), ("turn left, then move forward", None),
    ("", None), ("move forward through the open door", FORWARD), ("turn left to face the open door", "turn left")])
def test_actions_are_read_from_what_a_model_writes(said: str, action: str | None) -> None:
    assert parse_action(said) == action


def test_an_invented_action_is_recorded_and_done_as_nothing_and_the_episode_goes_on() -> None:
    llm, _, trace = model(crew_reply(["jump", "turn left", "fly away", "move forward"]))
    world = GridWorld(ROOMS, 0)
    trajectory = play(world, SingleAgent(llm, max_steps=8), 8, trace)
    assert len(trajectory.moves) == 8 and trajectory.invented == 4
    steps = trace.of_kind("emb_step")
    assert [(e.said, e.action, e.invented) for e in steps[:2]] == [("jump", None, True), ("turn left", "turn left",
                                                                                               False)]
    assert steps[0].pose == trace.of_kind("emb_episode")[0].pose  # nothing happened
    second = llm.backend.history[1].messages[-1].content  # type: ignore[attr-defined]
    assert "Your last action: 'jump', which is no action, so nothing." in second
    assert "Step 1: a room. You chose: jump." in second


def test_the_single_agents_prompt_only_grows_so_the_cache_keeps_it() -> None:
    llm, backend, trace = model(crew_reply(["turn left", "move forward"]))
    play(GridWorld(ROOMS, 1), SingleAgent(llm, max_steps=12), 12, trace)
    logs = [request.messages[-1].content.split("\n\nStep ")[0] for request in backend.history]
    assert len(logs) == 12 and "(nothing yet" in logs[0]
    assert all(later.startswith(earlier) for earlier, later in pairwise(logs[1:]))
    assert "Step 1: a room. You chose: turn left." in logs[-1] and "Actions so far" not in logs[-1]


def test_an_action_that_changes_nothing_is_told_as_such_to_the_next_step() -> None:
    """The 1.5B model drove into the same wall for twenty steps when the next prompt said only "your last action:
    move forward"; the next step is now told that the wall was in the way and the robot did not move."""
    llm, _, trace = model(crew_reply(["move forward"] * 12 + ["open door"]))
    world = GridWorld(ROOMS, 0)
    play(world, SingleAgent(llm, max_steps=13), 13, trace)
    steps = trace.of_kind("emb_step")
    blocked = [e for e in steps if e.action == "move forward" and e.effect]
    assert blocked and all("was in the way: the robot did not move" in e.effect for e in blocked)
    moved = [e for e in steps if e.action == "move forward" and not e.effect]
    assert moved  # it did move before it met the wall
    after = llm.backend.history[steps.index(blocked[0]) + 1].messages[-1].content  # type: ignore[attr-defined]
    assert f"Your last action: move forward, but {blocked[0].effect}." in after
    if world.content(world.front) not in ("door-closed",):
        assert steps[-1].effect.endswith("nothing changed") or "locked" in steps[-1].effect


# EQA --------------------------------------------------------------------------------------------------------
def test_questions_come_from_ground_truth_and_what_was_never_seen_is_not_seen() -> None:
    world = GridWorld(OBJECTS, 3)
    play(world, RandomExplorer(random.Random(0)), 5)
    questions = make_questions(world, random.Random(0))
    assert {q.kind for q in questions} >= {"present", "count", "room"}
    for question in questions:
        if question.kind == "room" and question.gold != NOT_SEEN:
            thing = next(t for t in world.things if f"the {t.colour} {t.kind} in" in question.text)
            assert thing.cell in world.seen and question.gold == f"room {world.thing_room(thing)}"
        if question.kind == "count" and question.gold != NOT_SEEN:
            kind = question.text.split()[2].removesuffix("es").removesuffix("s")
            assert int(question.gold) == sum(t.cell in world.seen and t.kind.startswith(kind) for t in world.things)
    assert any(q.gold == NOT_SEEN for q in questions) and any(q.gold != NOT_SEEN for q in questions)
    unseen = [t for t in world.things if t.cell not in world.seen]
    assert all(f"{t.colour} {t.kind}" not in seen_text(world) or any(
        s.colour == t.colour and s.kind == t.kind and s.cell in world.seen for s in world.things) for t in unseen)


def test_a_question_about_what_was_never_seen_is_scored_right_only_when_answered_not_seen() -> None:
    world = GridWorld(OBJECTS, 3)
    play(world, RandomExplorer(random.Random(0)), 5)
    unseen = [q for q in make_questions(world, random.Random(0)) if q.gold == NOT_SEEN]
    assert len({q.kind for q in unseen}) >= 2, unseen

    async def honest(question: Question) -> str:
        return NOT_SEEN

    async def in_words(question: Question) -> str:
        return "I never saw one."

    async def guess(question: Question) -> str:
        return FORMS[question.kind][1][0]  # yes, red, 1, room 1: an answer that claims it was seen

    trace = Trace(None)
    graded = asyncio.run(ask_all({"honest": honest, "in_words": in_words, "guess": guess}, unseen, trace))
    assert {(g.answerer, g.canonical, g.correct) for g in graded if g.answerer != "guess"} == {
        ("honest", NOT_SEEN, True), ("in_words", NOT_SEEN, True)}
    assert not any(g.correct for g in graded if g.answerer == "guess")
    told = trace.of_kind("emb_question")
    assert len(told) == 3 * len(unseen) and all(e.gold == NOT_SEEN and e.correct == (e.answerer != "guess")
                                                for e in told)


def test_each_kind_of_question_is_asked_for_its_own_form_and_decoded_within_it() -> None:
    """One rule for every kind let the 1.5B model answer "yes" to every "how many" question: each kind now names its
    form and the decoder's schema holds only that kind's answers."""
    seen: list[Any] = []

    def reply(request: Any) -> Any:
        seen.append(request)
        return {"answer": "3"}

    llm, _, trace = model(reply)
    ask = memory_answerer(llm, "seen-text", "You answer.", lambda: "Objects seen: three keys.", "What was seen:")
    questions = [Question("count-1", "count", "How many keys did you see?", "3"),
                 Question("present-1", "present", "Did you see a red key?", "yes")]
    graded = asyncio.run(ask_all({"seen-text": ask}, questions, trace))
    asked = {request.messages[1].content.split("Question: ")[1].split("?")[0]: request for request in seen}
    count, present = (asked[text].json_schema["properties"]["answer"]["enum"]
                      for text in ("How many keys did you see", "Did you see a red key"))
    assert "3" in count and NOT_SEEN in count and "yes" not in count
    assert present == ["yes", NOT_SEEN]
    assert "number" in asked["How many keys did you see"].messages[1].content
    assert "number" not in asked["Did you see a red key"].messages[1].content
    assert [g.correct for g in graded] == [True, False]  # "3" is outside the yes / not seen form: no answer


def test_no_question_is_asked_whose_gold_the_answer_form_cannot_hold() -> None:
    """LavaCrossingS11N5 shows the robot some 30 lava cells; the count form goes to 20, so "How many lava cells did
    you see?" with gold 34 could be answered right by no constrained decoder."""
    world = GridWorld("MiniGrid-LavaCrossingS11N5-v0", 0)
    play(world, FrontierExplorer(), 36)
    assert sum(t.kind == "lava" and t.cell in world.seen for t in world.things) > 20
    questions = make_questions(world, random.Random(0))
    assert any(q.kind == "count" for q in questions)
    assert all(q.gold in FORMS[q.kind][1] for q in questions), [(q.text, q.gold) for q in questions]


@pytest.mark.parametrize(("kind", "said", "form"), [
    ("present", "Yes, I did.", "yes"), ("present", "No.", NOT_SEEN), ("present", "I never saw one", NOT_SEEN),
    ("colour", "It was Gray.", "grey"), ("count", "three", "3"), ("count", "0", NOT_SEEN),
    ("count", "I did not see any", NOT_SEEN), ("room", "Room 2.", "room 2"), ("room", "2", "room 2"),
    ("room", "the kitchen", "the kitchen")])
def test_answers_are_compared_in_canonical_form(kind: str, said: str, form: str) -> None:
    assert canonical(kind, said) == form


# the society ------------------------------------------------------------------------------------------------
def test_the_society_file_is_an_interview_of_observer_first_mate_and_captain() -> None:
    spec = load_society_spec(SOCIETY)
    assert spec.organisation == "interview" and [m.name for m in spec.members] == ["observer"]
    assert spec.organizer and spec.organizer.sees == [] and spec.leader and spec.leader.sees == ["logbook"]
    society = build_society(spec, lambda model_id: model(crew_reply(["stop"]))[0], "scripted")
    assert [phase.name for phase in society.phases] == ["mission", "mindstorm", "opinion", "execution"]


def test_only_the_observer_sees_the_view_and_the_captain_reads_only_reports_and_its_log() -> None:
    llm, backend, trace = model(crew_reply(["move forward", "turn left", "open door"], eqa="room 1"))
    world = GridWorld(ROOMS, 1)
    system = crew(llm, 3)
    trajectory = play(world, system, 3, trace)
    assert len(trajectory.moves) == 3 and trajectory.invented == 0
    prompts = {agent: [r.messages[-1].content for r in backend.history if r.agent == agent]
               for agent in ("observer", "first_mate", "captain")}
    assert len(prompts["observer"]) == 3 * 3 and len(prompts["first_mate"]) == 3 * 3 and len(prompts["captain"]) == 3
    assert all("Straight ahead:" in p for p in prompts["observer"][::3])  # each step's opening carries the view
    assert not any("Straight ahead:" in p or "logbook" in p for p in prompts["first_mate"])
    assert not any("Straight ahead:" in p or "wall ahead and a door" in p for p in prompts["captain"])
    assert all(p.startswith("logbook:") and "Report: A small room; a wall ahead." in p for p in prompts["captain"])
    assert "Step 1: A small room; a wall ahead. You chose: move forward." in prompts["captain"][1]
    assert "Step 2 (after move forward): A small room; a wall ahead. You chose: turn left." in prompts["captain"][2]
    phases = [(e.phase, e.round) for e in trace.of_kind("soc_phase")][:4]
    assert phases == [("mission", 0), ("mindstorm", 1), ("mindstorm", 2), ("opinion", 3)]
    assert [e.note for e in trace.of_kind("emb_step")] == ["A small room; a wall ahead."] * 3
    assert system.memory().count("You chose:") == 3


def test_a_vision_observer_gets_the_camera_frame_instead_of_the_text() -> None:
    llm, backend, trace = model(crew_reply(["turn right"]), vision=True)
    play(GridWorld(ROOMS, 1), crew(llm, 1), 1, trace)
    opening = next(r for r in backend.history if r.agent == "observer").messages[-1]
    assert [part.kind for part in opening.media] == ["image"] and opening.media[0].data.startswith(b"\x89PNG")
    assert "Straight ahead:" not in opening.content


def test_an_interview_needs_its_interviewer_and_decider_and_instructions_belong_to_it(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("organisation: interview\nmembers: [{name: o, role: r}]\norganizer: {name: f, role: r}\n")
    with pytest.raises(ConfigError, match="interview needs: leader"):
        load_society_spec(path)
    path.write_text("organisation: monarchy\nmembers: [{name: o, role: r}]\norganizer: {name: f, role: r}\n"
                    "leader: {name: c, role: r}\ninstructions: {summary: s}\n")
    with pytest.raises(ConfigError, match="instructions means nothing to a monarchy"):
        load_society_spec(path)


# the benchmark command ----------------------------------------------------------------------------------------
def text_only_opener(script: Any) -> Any:
    return opener_for(script, capabilities=TEXT_ONLY)


def bench(tmp_path: Path, system: str, *extra: str, script: Any = None) -> tuple[int, str, str, Path | None]:
    opener = text_only_opener(script or crew_reply(["move forward", "turn left", "open door"]))
    code, out, err = invoke(["bench", "embodied", "--system", system, "--episodes", "2", "--max-steps", "6",
                             "--model", "scripted", "--out", str(tmp_path / system), "--no-cache", "--quiet", *extra],
                            opener)
    folders = list((tmp_path / system).iterdir()) if (tmp_path / system).exists() else []
    return code, out, err, folders[0] if folders else None


def test_bench_embodied_writes_coverage_eqa_and_costs_per_system(tmp_path: Path) -> None:
    for system in ("random", "frontier", "single", "society"):
        code, out, err, folder = bench(tmp_path, system, "--env", ROOMS, *(("--rounds", "1") if system == "society"
                                                                          else ()))
        assert code == 0, out + err
        assert folder is not None and (folder / "coverage.png").exists()
        report = json.loads((folder / "report.json").read_text())["metrics"]
        rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
        assert [row["id"] for row in rows] == [f"{ROOMS}#0", f"{ROOMS}#1"]
        assert report["n"] == 2 and len(report["curve"]) == 7 and "seen-text" in rows[0]["eqa"]
        assert report["coverage_ci95"][0] <= report["coverage"] <= report["coverage_ci95"][1]
        per_action = {"random": 0, "frontier": 0, "single": 1, "society": 5}[system]
        assert report["calls_per_action"] == per_action  # 1 report + R=1 question and answer + summary + decision
        if system in ("single", "society"):
            assert f"eqa_{'captain' if system == 'society' else 'single'}" in report
        assert "![coverage after each action](coverage.png)" in (folder / "report.md").read_text()


def test_bench_embodied_resumes_where_it_stopped(tmp_path: Path) -> None:
    code, _, _, folder = bench(tmp_path, "frontier", "--no-eqa", "--env", OBJECTS, "--max-steps", "3")
    assert code == 0 and folder is not None
    items = folder / "items.jsonl"
    rows = items.read_text().splitlines()
    assert len(rows) == 2 and all(json.loads(row)["questions"] == [] for row in rows)
    assert load_bundle(folder)["sections"] == ["embodied", "benchmark"]  # traced without a model
    items.write_text(rows[0] + "\n")
    code, out, err = invoke(["bench", "embodied", "--resume", str(folder), "--quiet", "--no-cache"],
                            text_only_opener(crew_reply(["stop"])))
    assert code == 0, out + err
    again = items.read_text().splitlines()
    assert again[0] == rows[0] and [json.loads(r)["id"] for r in again] == [f"{OBJECTS}#0", f"{OBJECTS}#1"]


def test_a_resume_refuses_another_env_and_takes_the_runs_own_again(tmp_path: Path) -> None:
    """The run saves --env as its `worlds`: another world on a resume was ignored silently (the run's own played)."""
    code, _, _, folder = bench(tmp_path, "random", "--no-eqa", "--env", OBJECTS, "--max-steps", "1")
    assert code == 0 and folder is not None
    before = (folder / "result.json").read_text()
    code, _, err = invoke(["bench", "embodied", "--resume", str(folder), "--env", ROOMS, "--quiet", "--no-cache"])
    assert code == 2 and f"--env {ROOMS} (the run has {OBJECTS})" in err and "keeps the settings" in err, err
    assert (folder / "result.json").read_text() == before
    code, out, err = invoke(["bench", "embodied", "--resume", str(folder), "--env", OBJECTS, "--quiet", "--no-cache"])
    assert code == 0, out + err


def test_a_society_runs_resume_takes_its_own_society_file_again_and_refuses_another(tmp_path: Path) -> None:
    """The run saves the society the file declared, whole: the same --society again was refused, the whole society
    dumped into the message as "what the run has"."""
    code, out, err, folder = bench(tmp_path, "society", "--no-eqa", "--env", OBJECTS, "--max-steps", "1",
                                   "--rounds", "1", "--society", str(SOCIETY))
    assert code == 0 and folder is not None, out + err
    other = tmp_path / "other.yaml"
    other.write_text(SOCIETY.read_text())
    code, _, err = invoke(["bench", "embodied", "--resume", str(folder), "--society", str(other), "--quiet"])
    assert code == 2 and f"--society {other} (the run has {SOCIETY})" in err and "organisation" not in err
    code, out, err = invoke(["bench", "embodied", "--resume", str(folder), "--society", str(SOCIETY), "--quiet",
                             "--no-cache"], text_only_opener(crew_reply(["stop"])))
    assert code == 0, out + err


def test_bench_embodied_refuses_bad_input_before_any_folder(tmp_path: Path) -> None:
    code, _, err, folder = bench(tmp_path, "random", "--env", "MiniGrid-MultiRoom-N4-S5")
    assert code == 2 and "Did you mean MiniGrid-MultiRoom-N4-S5-v1" in err and folder is None
    code, _, err, _ = bench(tmp_path, "swarm")
    assert code == 2 and "unknown system 'swarm'" in err
    code, _, err, _ = bench(tmp_path, "single", "--rounds", "2")
    assert code == 2 and "--rounds are for --system society" in err


def test_summary_intervals_and_the_viewer_page(tmp_path: Path) -> None:
    assert interval([0.5]) is None and interval([0.4, 0.6]) == (0.0, 1.0)
    low, high = interval([0.5, 0.52, 0.48, 0.5])  # type: ignore[misc]
    assert low < 0.5 < high and high - low < 0.1
    code, _, _, folder = bench(tmp_path, "society", "--env", OBJECTS, "--rounds", "0")
    assert code == 0 and folder is not None
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    assert summarise({"max_steps": 6}, rows)["eqa_captain_n"] == sum(len(r["questions"]) for r in rows)
    bundle = load_bundle(folder)
    assert bundle["sections"] == ["society", "embodied", "benchmark"]
    kinds = [e["kind"] for e in bundle["events"]]
    assert kinds.count("emb_episode") == 2 and kinds.count("emb_step") == 12 and "emb_question" in kinds
    assert "function embodiedView" in render_page(folder)


def test_the_viewer_gives_interleaved_episodes_each_their_own_steps(tmp_path: Path) -> None:
    """A benchmark at --parallel 4 interleaves its episodes' events; the viewer gave the steps of all but the latest
    episode begun to nobody (episodes 0 to 2 of the single run showed no step and no question)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to run the viewer's script")
    events = [{"kind": "emb_episode", "item_id": "a"}, {"kind": "emb_episode", "item_id": "b"},
              {"kind": "soc_message", "item_id": "a", "text": "a1"}, {"kind": "emb_step", "item_id": "a", "step": 1},
              {"kind": "soc_message", "item_id": "b", "text": "b1"}, {"kind": "emb_step", "item_id": "b", "step": 1},
              {"kind": "emb_step", "item_id": "a", "step": 2}, {"kind": "emb_question", "item_id": "a"},
              {"kind": "emb_question", "item_id": "b"}]
    script = Path(__file__).resolve().parent.parent / "noosphere" / "viewer" / "static" / "embodied.js"
    runner = tmp_path / "run.js"
    runner.write_text(
        "const fs = require('fs'), vm = require('vm');\n"
        f"const context = {{events: {json.dumps(events)}}};\nvm.createContext(context);\n"
        f"vm.runInContext(fs.readFileSync({json.dumps(str(script))}, 'utf8') + '\\n;globalThis.out = "
        "embodiedEpisodes(events).map((e) => [e.item, e.steps.map((s) => [s.event.step, s.messages.map((m) => "
        "m.text)]), e.questions.length]);', context);\nconsole.log(JSON.stringify(context.out));\n")
    done = subprocess.run([node, str(runner)], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [["a", [[1, ["a1"]], [2, []]], 1], ["b", [[1, ["b1"]]], 1]]


def test_forfeited_turns_of_the_society_leave_the_robot_idle_and_the_episode_going() -> None:
    base = crew_reply(["move forward"])

    def reply(request: Any) -> Any:
        fields = (request.json_schema or {}).get("properties", {})
        if "summary" in fields or "reasoning" in fields:  # the first mate's report and the captain's decision fail
            return {"nothing": "useful"}
        return base(request)

    llm, backend, trace = model(reply)
    trajectory = play(GridWorld(ROOMS, 3), crew(llm, 2), 2, trace)
    assert len(trajectory.moves) == 2 and trajectory.invented == 2
    assert {e.member for e in trace.of_kind("soc_forfeit")} == {"first_mate", "captain"}
    captain = [r.messages[-1].content for r in backend.history if r.agent == "captain"]
    assert "Report: observer: A wall ahead and a door on the left." in captain[0]  # the members' own words
    assert [e.decided_by for e in trace.of_kind("soc_finished")] == ["none", "none"]


def test_without_minigrid_the_command_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "minigrid", None)
    code, _, err, folder = bench(tmp_path, "random")
    assert code == 2 and 'pip install -e ".[embodied]"' in err and folder is None


# the scored single agent (beside the paper's systems) ---------------------------------------------------------
def habit_scorer(request: Any) -> list[float]:
    """A model with a habit: it favours "move forward" 10:1 whatever it sees, and when the view says a wall is right
    ahead it also favours turning left three times more than without a view."""
    text = request.messages[-1].content
    blocked = "Straight ahead: 0 free cells, then a wall" in text
    weights = {"turn left": 3.0 if blocked else 1.0, "turn right": 1.0, "move forward": 10.0, "open door": 1.0}
    return [weights[option] for option in request.options]


def scored_model() -> tuple[Model, ScriptedBackend]:
    backend = ScriptedBackend(crew_reply(["stop"]), capabilities=SCORING, scorer=habit_scorer)
    return Model(backend, trace=Trace(None)), backend


def blocked_world() -> GridWorld:
    """A world and seed whose first view has a wall right ahead."""
    for seed in range(40):
        world = GridWorld(OBJECTS, seed)
        world.reset()
        if "Straight ahead: 0 free cells, then a wall" in world.view_text():
            return world
        world.close()
    raise AssertionError("no seed starts facing a wall")


def test_the_scored_agent_takes_the_most_probable_action_and_calibration_removes_the_habit() -> None:
    from noosphere.embodied.scored import CONTENT_FREE, ScoredSingleAgent, observed

    world = blocked_world()
    llm, backend = scored_model()
    raw = asyncio.run(ScoredSingleAgent(llm, max_steps=5, calibrate=False).decide(world, 1, ""))
    assert raw.said == FORWARD and len(backend.score_history) == 1
    calibrated_agent = ScoredSingleAgent(llm, max_steps=5)
    calibrated = asyncio.run(calibrated_agent.decide(world, 1, ""))
    assert calibrated.said == "turn left"  # 3/1 against the prior beats forward's 10/10
    first, prior = backend.score_history[1:]
    assert prior.options == first.options and "stop" not in first.options
    assert CONTENT_FREE in prior.messages[-1].content and CONTENT_FREE not in first.messages[-1].content
    assert calibrated.detail["calibrated"]["turn left"] > calibrated.detail["calibrated"]["move forward"]
    assert calibrated_agent.log[0].chose == "turn left" and calibrated_agent.log[0].seen == observed(world.view_text())
    assert observed("You are in room 2, facing west.\nYou see:\n- a red ball, 1 ahead") == \
        "room 2, facing west; a red ball, 1 ahead"
    world.close()


def test_bench_embodied_scored_system_runs_and_a_model_that_cannot_score_is_refused(tmp_path: Path) -> None:
    backend = ScriptedBackend(crew_reply(["stop"]), capabilities=SCORING, scorer=habit_scorer)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    code, out, err = invoke(["bench", "embodied", "--system", "single-scored", "--episodes", "1", "--max-steps", "4",
                             "--env", OBJECTS, "--model", "scripted", "--out", str(tmp_path / "s"), "--no-cache",
                             "--quiet"], opener)
    assert code == 0, out + err
    folder = next((tmp_path / "s").iterdir())
    row = json.loads((folder / "items.jsonl").read_text().splitlines()[0])
    assert row["system"] == "single-scored" and row["actions"] == 4 and "single" in row["eqa"]
    assert len(backend.score_history) == 8  # two scorings a step: the view and the content-free prior
    code, _, err, folder = bench(tmp_path, "single-scored")  # the text-only scripted model has no log-probabilities
    assert code == 2 and "logprobs" in err and folder is None  # refused before any episode, no folder left


def test_the_curves_script_tells_what_each_system_did_from_its_trace(tmp_path: Path) -> None:
    from tests.helpers import load_script

    curves = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "embodied_curves.py")
    run = tmp_path / "single" / "20260101-000000-aaaaaa"
    run.mkdir(parents=True)
    steps = [{"kind": "emb_step", "action": "move forward", "effect": "a wall was in the way"},
             {"kind": "emb_step", "action": "move forward", "effect": ""},
             {"kind": "emb_step", "action": "turn left", "effect": ""},
             {"kind": "emb_step", "action": None, "effect": ""}]
    (run / "trace.jsonl").write_text("".join(json.dumps(step) + "\n" for step in steps))
    row = curves.behaviour("single", run)
    assert row == "| single | 4 | 50% | 25% | 0% | 0% | 0% | 25% | 25% |"
    (run / "trace.jsonl").unlink()
    assert curves.behaviour("single", run) is None


def test_the_record_of_what_was_seen_shows_a_door_the_robot_opened_as_open() -> None:
    for seed in range(30):
        world = GridWorld(ROOMS, seed)
        world.reset()
        if world.content(world.front) == "door-closed":
            break
        world.close()
    else:
        raise AssertionError("no seed starts in front of a closed door")
    door = next(t for t in world.things if t.cell == world.front)
    assert f"closed {door.colour} door" in seen_text(world)
    world.step(OPEN)
    assert f"open {door.colour} door" in seen_text(world) and f"closed {door.colour} door" not in seen_text(world)
    world.close()


# the scored captain (beside the paper's systems) --------------------------------------------------------------
def report_scorer(request: Any) -> list[float]:
    """A captain with a habit: "move forward" 10:1 whatever it reads; a report of a wall ahead makes turning right
    four times likelier than without a report."""
    text = request.messages[-1].content
    wall = "Report: A small room; a wall ahead." in text
    weights = {"turn left": 1.0, "turn right": 4.0 if wall else 1.0, "move forward": 10.0, "open door": 1.0}
    return [weights[option] for option in request.options]


def test_the_scored_captain_chooses_by_calibrated_probabilities_and_writes_nothing() -> None:
    from noosphere.society.interview import NO_REPORT

    backend = ScriptedBackend(crew_reply(["stop"]), capabilities=SCORING, scorer=report_scorer)
    trace = Trace(None)
    llm = Model(backend, trace=trace)
    spec = load_society_spec(SOCIETY)
    society = build_society(spec, lambda model_id: llm, "scripted")
    system = Crew(society, captain=next(m for m in society.staff if m.name == "captain"), max_steps=2, scored=True)
    trajectory = play(GridWorld(ROOMS, 1), system, 2, trace)
    assert [move.said for move in trajectory.moves] == ["turn right", "turn right"]  # 4/1 beats forward's 10/10
    assert not [r for r in backend.history if r.agent == "captain"]  # the captain generated nothing
    scored = [r for r in backend.score_history if r.agent == "captain"]
    assert len(scored) == 4 and all(r.options == MOVES for r in scored)  # stop is never offered
    assert "Report: A small room; a wall ahead." in scored[0].messages[-1].content
    assert f"Report: {NO_REPORT}" in scored[1].messages[-1].content  # the content-free prior
    assert all(p.startswith("logbook:") and "Choose one action: turn left, turn right, move forward, open door."
               in p for p in (r.messages[-1].content for r in scored))
    spoke = [e for e in trace.of_kind("soc_message") if e.member == "captain"]
    assert [e.answer for e in spoke] == ["turn right"] * 2 and "probabilities (calibrated)" in spoke[0].text
    finished = trace.of_kind("soc_finished")
    assert [e.decided_by for e in finished] == ["captain", "captain"]
    assert "turn right 0.571" in spoke[0].text  # 4 / (1 + 4 + 1 + 1): the habit divided out


def test_a_scored_crew_needs_a_model_that_scores_and_distinct_options(tmp_path: Path) -> None:
    from noosphere.society import ChooseOnReport

    llm, _, _ = model(crew_reply(["stop"]))  # text only: no log-probabilities
    spec = load_society_spec(SOCIETY)
    society = build_society(spec, lambda model_id: llm, "scripted")
    captain = next(m for m in society.staff if m.name == "captain")
    with pytest.raises(CapabilityError, match="logprobs"):
        Crew(society, captain=captain, max_steps=2, scored=True)
    with pytest.raises(UsageError, match="two or more distinct"):
        ChooseOnReport(captain, ("move forward", "move forward"))
    code, _, err, folder = bench(tmp_path, "society-scored", "--rounds", "1")
    assert code == 2 and "logprobs" in err and "use --system society" in err and folder is None


def test_a_provider_that_scores_first_tokens_is_refused_the_grids_moves_before_a_run_folder(tmp_path: Path) -> None:
    """"turn left" and "turn right" begin with the same word: a first token cannot tell them apart."""
    backend = ScriptedBackend(crew_reply(["stop"]), capabilities=replace(SCORING, first_token_scores=True),
                              scorer=report_scorer)
    code, _, err = invoke(["bench", "embodied", "--system", "single-scored", "--episodes", "1", "--max-steps", "2",
                           "--env", ROOMS, "--model", "scripted", "--out", str(tmp_path / "s"), "--no-cache",
                           "--quiet"], lambda model_id, **kwargs: Model(backend, **kwargs))
    assert code == 2 and "'turn left' and 'turn right' begin with the same word" in err and "--system single" in err
    assert not list((tmp_path / "s").glob("*/*"))
    assert backend.history == [] and backend.score_history == []


def test_bench_embodied_society_scored_runs_with_the_captain_scoring(tmp_path: Path) -> None:
    backend = ScriptedBackend(crew_reply(["stop"], eqa="room 1"), capabilities=SCORING, scorer=report_scorer)

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backend, **kwargs)

    code, out, err = invoke(["bench", "embodied", "--system", "society-scored", "--rounds", "1", "--episodes", "1",
                             "--max-steps", "3", "--env", ROOMS, "--model", "scripted", "--out", str(tmp_path / "s"),
                             "--no-cache", "--quiet"], opener)
    assert code == 0, out + err
    folder = next((tmp_path / "s").iterdir())
    row = json.loads((folder / "items.jsonl").read_text().splitlines()[0])
    assert row["system"] == "society-scored" and row["actions"] == 3 and "captain" in row["eqa"]
    assert len([r for r in backend.score_history if r.agent == "captain"]) == 6
    assert json.loads((folder / "config.json").read_text())["society"]["organisation"] == "interview"


def test_bench_embodied_society_scored_asks_the_captains_own_model_to_score(tmp_path: Path) -> None:
    """The captain's model is the society file's to name: it must score, and the run's model (observer, first mate,
    the seen-text baseline: all writing) need not."""
    society_file = tmp_path / "captain.yaml"
    society_file.write_text(SOCIETY.read_text().replace("  sees: [logbook]", "  sees: [logbook]\n  model: scripted"))
    script = crew_reply(["stop"], eqa="room 1")
    backends = {"scripted": ScriptedBackend(script, capabilities=SCORING, scorer=report_scorer),
                "litellm:openai/gpt-4o": ScriptedBackend(script, capabilities=TEXT_ONLY, model_id="gpt")}

    def opener(model_id: str, **kwargs: Any) -> Model:
        return Model(backends[model_id], **kwargs)

    def run(out: str) -> tuple[int, str, str]:
        return invoke(["bench", "embodied", "--system", "society-scored", "--society", str(society_file), "--rounds",
                       "1", "--episodes", "1", "--max-steps", "2", "--env", ROOMS, "--model", "litellm:openai/gpt-4o",
                       "--out", str(tmp_path / out), "--no-cache", "--quiet"], opener)

    code, out, err = run("scores")
    assert code == 0, out + err
    assert len([r for r in backends["scripted"].score_history if r.agent == "captain"]) == 4
    backends["scripted"] = ScriptedBackend(script, capabilities=TEXT_ONLY)  # the captain's own model cannot score
    backends["litellm:openai/gpt-4o"] = ScriptedBackend(script, capabilities=SCORING, scorer=report_scorer,
                                                        model_id="gpt")
    code, _, err = run("refused")
    assert code == 2 and "model scripted does not support logprobs" in err and "use --system society" in err
    assert not list((tmp_path / "refused").glob("*"))  # refused before any episode, no folder left


def test_the_curves_script_compares_each_system_episode_by_episode_with_random_and_single() -> None:
    from tests.helpers import load_script

    curves = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "embodied_curves.py")

    def run(*ends: float) -> list[dict[str, Any]]:
        return [{"id": f"w#{i}", "curve": [0.2, end]} for i, end in enumerate(ends)]

    society, random_, single = run(0.3, 0.2, 0.5), run(0.3, 0.4, 0.1), run(0.2, 0.2)
    row = curves.at_step("society", society, 1, random_, single)
    assert row.startswith("| society | 3 | 0.333 | ") and row.endswith(" | +1 / -1 of 3 | +1 / -0 of 2 |")
    assert curves.versus(random_, random_, 1) == "-" and curves.versus(society, None, 1) == "-"


def test_an_interviewer_whose_question_forfeits_is_told_the_task_again_next_round() -> None:
    from noosphere.errors import ModelError

    answer, failed = crew_reply(["stop"]), {"once": False}

    def reply(request: Any) -> Any:
        if "question" in (request.json_schema or {}).get("properties", {}) and not failed["once"]:
            failed["once"] = True
            raise ModelError("scripted", "down for a moment")
        return answer(request)

    llm, backend, trace = model(reply)
    play(GridWorld(ROOMS, 1), crew(llm, 1), 1, trace)
    asked = [r.messages[-1].content for r in backend.history if r.agent == "first_mate"]
    assert asked[0].startswith("Task:")  # the round that forfeited was told the task...
    assert asked[1].startswith("Task:") and "reports: A wall ahead" in asked[1]  # ...so the next is told it again
    assert any(e.text.startswith("(standing question)") for e in trace.of_kind("soc_message"))


def test_a_run_that_calls_no_model_opens_none(tmp_path: Path) -> None:
    """`--system random --no-eqa` (or frontier) calls no model, yet the run's model was opened: the default local
    model's weights found, assembled and verified (a machine without them was refused a run that needs none).
    Now none is opened; a run that asks questions opens its model as before."""
    asked: list[str] = []
    scripted = text_only_opener(crew_reply(["move forward"]))

    def recording(model_id: str, **kwargs: Any) -> Model:
        asked.append(model_id)
        return scripted(model_id, **kwargs)

    for system in ("random", "frontier"):
        code, out, err = invoke(["bench", "embodied", "--system", system, "--no-eqa", "--env", OBJECTS, "--episodes",
                                 "1", "--max-steps", "2", "--out", str(tmp_path / system), "--quiet", "--no-cache"],
                                recording)
        assert code == 0, out + err
        assert asked == [], system
        [folder] = list((tmp_path / system).iterdir())
        assert json.loads((folder / "config.json").read_text())["model"] == DEFAULT_MODEL
        assert json.loads((folder / "report.json").read_text())["metrics"]["n"] == 1
    (folder / "items.jsonl").write_text("")  # resumed, the episode played again: still no model opened
    code, out, err = invoke(["bench", "embodied", "--resume", str(folder), "--quiet", "--no-cache"], recording)
    assert code == 0 and asked == [], out + err
    code, out, err = invoke(["bench", "embodied", "--system", "random", "--env", OBJECTS, "--episodes", "1",
                             "--max-steps", "2", "--model", "scripted", "--out", str(tmp_path / "eqa"), "--quiet",
                             "--no-cache"], recording)
    assert code == 0 and asked == ["scripted"], out + err
