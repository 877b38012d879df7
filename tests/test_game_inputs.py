"""Bad input to the game benchmarks (issue 27): a game file that does not load, a graph file that names agents the
engine does not have, a memory folder from another version of noosphere. Each is one line and exit code 2 through
the CLI, before any model is opened; no run folder is made, a resumed one is left byte for byte as it was, and no
memory is changed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from noosphere.envs.gamefiles import check_compiled_game, check_story_file
from noosphere.errors import ConfigError, DataError
from noosphere.memory import Episode, EpisodeStep, MemoryStore, default_embedder
from noosphere.memory.check import FORMAT
from tests.skip_policy import GAME_EXTRAS, shared_data
from tests.test_hostile_inputs import ALFWORLD_GAME, Outcome, cli

DESCRIPTION = json.loads((Path(__file__).parent / "fixtures" / "textworld" / "one_room.json").read_text())
"""A game description TextWorld reads back: `textworld.GameMaker()` with one room and the player in it, built and
serialised (TextWorld 1.7)."""
HOLLOW = {"KB": {}, "world": [], "grammar": {}, "quests": [], "infos": [], "version": 1}
"""The top-level keys of a description, each holding nothing: TextWorld cannot read it back (no logic)."""


def story(version: int = 8, size: int = 1024) -> bytes:
    """A Z-machine story file's bytes whose header (version, length, checksum) matches its contents."""
    body = bytearray(size)
    body[0] = version
    body[0x40:] = bytes((i * 7 + 3) % 256 for i in range(size - 0x40))
    body[0x1A:0x1C] = (size // {8: 8, 5: 4, 3: 2}[version]).to_bytes(2, "big")
    body[0x1C:0x1E] = (sum(body[0x40:]) & 0xFFFF).to_bytes(2, "big")
    return bytes(body)


def cached_game(games: Path, data: bytes, description: Any = DESCRIPTION, name: str = "coin_collector-0") -> Path:
    path = games / "tier1" / f"{name}.z8"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.with_suffix(".json").write_text(json.dumps(description))
    return path


def refused(outcome: Outcome, *words: str) -> str:
    """The one line of a refusal: exit 2, no traceback, and the words it must say."""
    lines = [line for line in outcome.err.splitlines() if line.strip()]
    assert outcome.code == 2, outcome
    assert "Traceback" not in outcome.err + outcome.out
    assert len(lines) == 1 and lines[0].startswith("error:"), outcome.err
    for said in words:
        assert said in lines[0], (said, lines[0])
    return lines[0]


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` by its content: what "left exactly as it was" compares."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


# ---------------------------------------------------------------- a game file that does not load


def test_a_whole_story_file_passes_and_each_kind_of_damage_is_named(tmp_path: Path) -> None:
    good = cached_game(tmp_path, story())
    check_compiled_game(good)
    cases = {
        "garbage": (b"garbage " * 100, "Z-machine version 103, not version 8"),
        "version 5 bytes in a .z8": (story(version=5), "Z-machine version 5, not version 8"),
        "cut short": (story()[:700], "cut short, 700 of the 1024 bytes"),
        "one byte changed": (story()[:500] + b"\x00" + story()[501:], "do not match the checksum"),
        "shorter than a header": (b"\x08\x00\x01", "shorter than a story file's header"),
        "length zero": (story()[:0x1A] + b"\x00\x00" + story()[0x1C:], "length of 0, which a version 8 story"),
    }
    for name, (data, says) in cases.items():
        path = tmp_path / f"{name}.z8"
        path.write_bytes(data)
        with pytest.raises(DataError, match=says) as refusal:
            check_story_file(path)
        assert f"{name}.z8" in str(refusal.value)


def test_only_an_early_story_file_may_leave_its_length_blank(tmp_path: Path) -> None:
    """The standard lets some version 3 files leave length and checksum blank; a later version never does."""
    blank = {3: story(version=3), 5: story(version=5)}
    for version, data in blank.items():
        (tmp_path / f"game.z{version}").write_bytes(data[:0x1A] + b"\x00\x00" + data[0x1C:])
    check_story_file(tmp_path / "game.z3")
    with pytest.raises(DataError, match=r"game\.z5: does not load: its header gives a length of 0"):
        check_story_file(tmp_path / "game.z5")


@pytest.mark.parametrize(("data", "description", "says"), [
    (story()[:600], DESCRIPTION, ("coin_collector-0.z8", "does not load", "cut short")),
    (story()[:300] + b"\xff" + story()[301:], DESCRIPTION, ("coin_collector-0.z8", "checksum")),
    (b"\x89PNG\r\n\x1a\n" * 20, DESCRIPTION, ("coin_collector-0.z8", "Z-machine version 137")),
    (story(), {k: v for k, v in DESCRIPTION.items() if k != "KB"}, ("coin_collector-0.json", "'KB' is missing")),
    (story(), {**DESCRIPTION, "quests": {}}, ("coin_collector-0.json", "'quests'")),
    (story(), HOLLOW, ("coin_collector-0.json: does not load: TextWorld cannot read it back (KeyError: 'logic')",
                       "delete the game")),
    (story(), {**DESCRIPTION, "version": 7}, ("coin_collector-0.json", "Cannot deserialize a TextWorld version 7")),
], ids=["cut short", "a byte changed", "not a story file", "description without KB", "quests not a list",
        "nothing under the keys", "another version"])
def test_a_textworld_game_that_would_not_load_is_refused_before_any_run(data: bytes, description: Any,
                                                                        says: tuple[str, ...], tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    cached_game(tmp_path / "games", data, description)
    outcome = cli(["bench", "textworld", "--system", "react", "--memory", "none", "--per-challenge", "1",
                   "--challenges", "coin_collector", "--games-dir", str(tmp_path / "games"), "--out",
                   str(tmp_path / "runs")])
    refused(outcome, *says)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("where", ["a file where its tier's folder goes", "a folder that cannot be made"])
def test_a_games_dir_that_cannot_hold_games_is_refused_before_any_run(where: str, tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    if where.startswith("a file"):
        (tmp_path / "games").mkdir()
        (tmp_path / "games" / "tier1").write_text("not a folder")
        games, says = tmp_path / "games", (f"{tmp_path / 'games' / 'tier1'} is a file, not a folder",)
    else:
        games, says = Path("/proc/noosphere-games"), ("cannot make /proc/noosphere-games/tier1",)
    for only in (["--create-only"], []):
        outcome = cli(["bench", "textworld", "--system", "react", "--memory", "none", "--per-challenge", "1",
                       "--games-dir", str(games), "--out", str(tmp_path / "runs"), *only])
        refused(outcome, f"--games-dir {games}", *says)
        assert not (tmp_path / "runs").exists()


def run_with_closed(folder: Path, args: list[str]) -> Outcome:
    """`args` run while `folder` can be neither listed nor entered (as a user without root's override sees it)."""
    folder.chmod(0)
    try:
        return bound_by_permissions(args)
    finally:
        folder.chmod(0o755)


def bound_by_permissions(args: list[str]) -> Outcome:
    """The CLI in a process that file permissions bind (as root, one without the capabilities that pass them by),
    so that a folder made unreadable with chmod is one to root too. A run it makes or resumes should be one of the
    scripted model, which cannot play there: nothing real is loaded if a check lets it through."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
        if shutil.which("setpriv") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode:
            pytest.skip("setpriv cannot drop root's file capabilities here")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "COLUMNS": "240"}
    done = subprocess.run([*prefix, sys.executable, "-m", "noosphere", *args],
                          capture_output=True, text=True, env=env, check=False)
    return Outcome(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize(("command", "closed"), [("new", "tier1"), ("resume", "tier1"), ("resume", "games"),
                                               ("together", "tier1"), ("together", "games")])
def test_a_games_dir_that_cannot_be_looked_into_is_refused_before_any_run(closed: str, command: str,
                                                                          tmp_path: Path) -> None:
    """Where the games folder (or its tier's) could not be looked into, `Path.exists` raised: a traceback. (A new
    run given a --games-dir it cannot read is refused by typer's own check of the option.)"""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    games = tmp_path / "games"
    cached_game(games, story(), DESCRIPTION)
    args = ["bench", "textworld", "--system", "react", "--memory", "none", "--per-challenge", "1", "--challenges",
            "coin_collector", "--games-dir", str(games), "--out", str(tmp_path / "runs"), "--model", "scripted"]
    if command != "new":
        made = cli([*args, "--create-only"])
        assert made.code == 0, made
        [run_dir] = (tmp_path / "runs").iterdir()
        args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
                else ["bench", "together", str(run_dir)])
    folder = games if closed == "games" else games / "tier1"
    before = snapshot(tmp_path)
    outcome = run_with_closed(folder, args)
    refused(outcome, f"--games-dir {games}: cannot look into {folder}", "Permission denied")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["new", "create only", "resume", "together"])
def test_a_games_dir_the_games_cannot_be_compiled_into_is_refused_before_any_run(command: str,
                                                                                 tmp_path: Path) -> None:
    """A read-only tier folder passed the checks; the games were compiled once the run had begun, and TextWorld's
    PermissionError was a traceback with the run left failed. Games already compiled there are only read."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    games = tmp_path / "games"
    cached_game(games, story(), DESCRIPTION)  # coin_collector-0 compiled, coin_collector-1 not yet
    args = ["bench", "textworld", "--system", "react", "--memory", "none", "--per-challenge", "2", "--challenges",
            "coin_collector", "--games-dir", str(games), "--out", str(tmp_path / "runs")]
    if command in ("resume", "together"):
        made = cli([*args, "--create-only"])
        assert made.code == 0, made
        [run_dir] = (tmp_path / "runs").iterdir()
        args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
                else ["bench", "together", str(run_dir)])
    elif command == "create only":
        args.append("--create-only")
    before = snapshot(tmp_path)
    with immutable(games / "tier1"):
        refused(cli(args), f"--games-dir {games}: {games / 'tier1'} is read-only",
                "not compiled yet (coin_collector-1.z8)", "chattr -i")
        assert snapshot(tmp_path) == before
        if command == "create only":  # the first game alone is compiled already
            assert cli([*args, "--limit", "1"]).code == 0


@pytest.mark.parametrize(("seed", "per_challenge", "says"), [
    ("-1", "1", "--seed -1: TextWorld makes games from seeds 0 to 4294967295"),
    ("4294967296", "1", "--seed 4294967296: TextWorld makes games from seeds 0 to 4294967295"),
    ("4294967295", "2", "--seed 4294967295 with --per-challenge 2 (seeds 4294967295 to 4294967296)"),
], ids=["negative", "past 2**32 - 1", "the last game's past 2**32 - 1"])
@pytest.mark.parametrize("only", [[], ["--create-only"]], ids=["run", "create only"])
def test_a_seed_textworld_cannot_take_is_refused_before_any_run(seed: str, per_challenge: str, says: str,
                                                                only: list[str], tmp_path: Path) -> None:
    outcome = cli(["bench", "textworld", "--system", "react", "--memory", "none", "--per-challenge", per_challenge,
                   f"--seed={seed}", "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "runs"), *only])
    refused(outcome, says, f"choose a seed from 0 to {2**32 - int(per_challenge)}")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "games").exists()


@pytest.mark.parametrize("game", ["alfworld", "textworld"])
def test_a_relative_data_folder_is_saved_absolute(game: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A run resumed from another directory reads the games it was made with (not `no data at alf`, nor games
    generated again in a new folder)."""
    checked: list[dict[str, Any]] = []
    monkeypatch.setattr(f"noosphere.cli.bench_games.check_{game}", checked.append)  # no games needed here
    monkeypatch.chdir(tmp_path)
    folder = ["--data", "alf"] if game == "alfworld" else ["--games-dir", "games"]
    made = cli(["bench", game, "--system", "react", "--memory", "none", *folder, "--out", "runs",
                "--create-only"])
    assert made.code == 0, made
    [run_dir] = (tmp_path / "runs").iterdir()
    key, name = ("data", "alf") if game == "alfworld" else ("games_dir", "games")
    assert json.loads((run_dir / "config.json").read_text())[key] == str(tmp_path.resolve() / name)
    assert checked[0][key] == str(tmp_path.resolve() / name)


@pytest.mark.parametrize(("options", "says"), [
    (["--system", "react", "--memory", "episodic"], "--memory episodic is the meta-agent's; --system react keeps no"),
    (["--system", "reflexion", "--memory", "conceptual"], "--memory conceptual is the meta-agent's; --system "
                                                          "reflexion"),
    (["--system", "react", "--k", "7"], "--k 7 is how many past episodes the meta-agent recalls: --system react keeps"),
    (["--system", "metaagent", "--memory", "conceptual", "--k", "7"], "--k 7 is how many past episodes the "
                                                                       "meta-agent recalls: --memory conceptual keeps"),
], ids=["react with memory", "reflexion with memory", "react with k", "k without episodes"])
@pytest.mark.parametrize("game", ["textworld", "alfworld"])
def test_memory_options_a_system_would_not_use_are_refused(game: str, options: list[str], says: str,
                                                           tmp_path: Path) -> None:
    """As --retrieve, --judge and --margin are: silently ignored, the run would not be what was asked for."""
    data = ["--games-dir", str(tmp_path / "games")] if game == "textworld" else ["--data", str(tmp_path / "alf")]
    for only in ([], ["--create-only"]):
        refused(cli(["bench", game, *options, *data, "--out", str(tmp_path / "runs"), *only]), says)
        assert not (tmp_path / "runs").exists()


def _alfworld_data(tmp: Path, **changes: str) -> Path:
    game = tmp / "alf" / "valid_seen" / "pick_and_place_simple-Apple-None-Table-1" / "trial_1" / "game.tw-pddl"
    game.parent.mkdir(parents=True)
    game.write_text(json.dumps({**ALFWORLD_GAME, **changes}))
    return game


@pytest.mark.parametrize(("changes", "says"), [
    ({}, "its pddl_domain and pddl_problem do not parse"),  # the fixture's PDDL is a stub: it parses to nothing
    ({"pddl_problem": "(define (problem p) (:domain alfred) (:objects a"}, "Missing ')'"),
], ids=["a stub domain", "a problem cut short"])
def test_an_alfworld_game_whose_pddl_does_not_parse_is_refused_before_any_run(changes: dict[str, str], says: str,
                                                                              tmp_path: Path) -> None:
    pytest.importorskip("alfworld", reason=GAME_EXTRAS)
    game = _alfworld_data(tmp_path, **changes)
    outcome = cli(["bench", "alfworld", "--system", "react", "--memory", "none", "--no-demo", "--data",
                   str(tmp_path / "alf"), "--out", str(tmp_path / "runs")])
    refused(outcome, "trial_1/game.tw-pddl", "does not load", says)
    assert not (tmp_path / "runs").exists() and str(game.parent) in outcome.err.replace("\n", "")


@pytest.mark.parametrize(("command", "closed"), [("new", "split"), ("new", "task"), ("new", "trial"),
                                               ("resume", "data"), ("together", "split")])
def test_an_alfworld_folder_that_cannot_be_looked_into_is_refused_before_any_run(
        command: str, closed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The data folder or its split's, closed, was a PermissionError traceback (`Path.is_dir` inside it); a task's
    or a trial's folder was passed by (`Path.glob` does), and its game left out of the run, silently."""
    pytest.importorskip("alfworld", reason=GAME_EXTRAS)
    game = _alfworld_data(tmp_path)
    args = ["bench", "alfworld", "--system", "react", "--memory", "none", "--no-demo", "--data",
            str(tmp_path / "alf"), "--out", str(tmp_path / "runs"), "--model", "scripted"]
    if command != "new":
        with monkeypatch.context() as patch:
            patch.setattr("noosphere.cli.bench_games.check_alfworld", lambda saved: None)  # the stub's PDDL
            made = cli([*args, "--create-only"])
        assert made.code == 0, made
        [run_dir] = (tmp_path / "runs").iterdir()
        args = (["bench", "alfworld", "--resume", str(run_dir)] if command == "resume"
                else ["bench", "together", str(run_dir)])
    folder = {"data": tmp_path / "alf", "split": tmp_path / "alf" / "valid_seen", "task": game.parent.parent,
              "trial": game.parent}[closed]
    before = snapshot(tmp_path)
    outcome = run_with_closed(folder, args)
    refused(outcome, f"cannot look into the ALFWorld data folder {folder} (permission denied)")
    assert snapshot(tmp_path) == before


SMALL_DOMAIN = ("(define (domain alfred) (:requirements :typing) (:types agent object location)\n"
                "(:predicates (atLocation ?a - agent ?l - location) (objectAt ?o - object ?l - location))\n"
                "(:action look :parameters (?a - agent ?l - location) :precondition (atLocation ?a ?l)"
                " :effect (atLocation ?a ?l)))")


def small_problem(objects: str, goal: str = "(atLocation agent1 loc1)") -> str:
    return (f"(define (problem p) (:domain alfred) (:objects {objects})\n"
            f"(:init (atLocation agent1 loc1) (objectAt apple1 loc1))\n(:goal {goal}))")


@pytest.mark.parametrize(("objects", "goal", "says"), [
    ("agent1 - agent loc1 - location", "(atLocation agent1 loc1)", "uses apple1 in :init or :goal"),
    ("agent1 - agent loc1 - location apple1 - object", "(exists (?o - object) (objectAt ?o loc9))",
     "uses loc9 in :init or :goal"),
], ids=["an object of :init", "an object of the goal"])
def test_an_alfworld_game_using_an_undeclared_object_is_refused_before_any_run(objects: str, goal: str, says: str,
                                                                               tmp_path: Path) -> None:
    """TextWorld looks up each object's type by name when the game loads: one missing from :objects was a KeyError
    mid-run, the run folder left failed."""
    pytest.importorskip("alfworld", reason=GAME_EXTRAS)
    _alfworld_data(tmp_path, pddl_domain=SMALL_DOMAIN, pddl_problem=small_problem(objects, goal))
    outcome = cli(["bench", "alfworld", "--system", "react", "--memory", "none", "--no-demo", "--data",
                   str(tmp_path / "alf"), "--out", str(tmp_path / "runs")])
    refused(outcome, "trial_1/game.tw-pddl", "does not load", says, "not declared in :objects")
    assert not (tmp_path / "runs").exists()


def test_an_alfworld_game_declaring_its_objects_gets_past_the_object_check(tmp_path: Path) -> None:
    pytest.importorskip("alfworld", reason=GAME_EXTRAS)
    _alfworld_data(tmp_path, pddl_domain=SMALL_DOMAIN,
                   pddl_problem=small_problem("agent1 - agent loc1 - location apple1 - object"))
    outcome = cli(["bench", "alfworld", "--system", "react", "--memory", "none", "--no-demo", "--data",
                   str(tmp_path / "alf"), "--out", str(tmp_path / "runs")])
    refused(outcome, "trial_1/game.tw-pddl", "its grammar does not parse")  # the fixture's stub grammar, next


def test_a_game_that_fails_to_load_mid_run_is_a_data_error_not_an_exit(tmp_path: Path) -> None:
    """Met mid-run (a file changed after the check), a game that does not load is a `DataError` naming it. Fast
    Downward raises SystemExit on a predicate its domain lacks, which would otherwise end the whole benchmark."""
    pytest.importorskip("alfworld", reason=GAME_EXTRAS)
    from noosphere.envs import alfworld_game
    from noosphere.envs.alfworld import game_files

    with pytest.raises(DataError, match=r"game\.tw-pddl: does not load \(FailedParse: "):
        alfworld_game(_alfworld_data(tmp_path / "stub")).reset()  # the stub's grammar
    try:
        real = json.loads(game_files()[0].read_text())
    except Exception:
        pytest.skip(shared_data("alfworld"))
    game = alfworld_game(_alfworld_data(tmp_path / "real", **{**real, "pddl_domain": "(define (domain alfred))"}))
    with pytest.raises(DataError, match=r"game\.tw-pddl: does not load \(SystemExit: Undeclared predicate"):
        game.reset()


# ---------------------------------------------------------------- a graph file that names unknown agents


@pytest.mark.parametrize(("graph", "says"), [
    ("edges:\n  conscious: [planing]\n  planing: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\n",
     ("graph.yaml: field 'edges.conscious': unknown agent 'planing'", "Did you mean planning")),
    ("edges:\n  conscious: [planning, dreaming]\n  planning: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\n",
     ("graph.yaml: field 'edges.conscious': unknown agent 'dreaming'", "Known: conscious")),
    ("edges:\n  conscious: [planning]\n  planning: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\ndefaults:\n  conscious: plannign\n",
     ("field 'defaults.conscious': unknown agent 'plannign'", "Did you mean planning")),
    ("edges:\n  conscious: [planning]\n  planning: [conscious]\n",
     ("graph.yaml: field 'edges'", "could never act")),
    ("edges:\n  conscious: 3\n  planning: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\n",
     ("graph.yaml: field 'edges.conscious'", "an agent's name or a list of names, not 3")),
    ("edges:\n  conscious: {planning: 1}\n  planning: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\n",
     ("graph.yaml: field 'edges.conscious'", "an agent's name or a list of names, not {'planning': 1}")),
    ("edges:\n  conscious: []\n  planning: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\n",
     ("graph.yaml: field 'edges.conscious': agent 'conscious' has no successor",)),
    ("edges:\n  conscious: [retrieve_memory]\n  retrieve_memory: [planning]\n  planning: [motor]\n"
     "  motor: [external_perception]\n  external_perception: [conscious]\n",
     ("graph.yaml: field 'edges.conscious': agent 'conscious' has no successor once the memory agents this run "
      "does not keep are left out (--memory none: retrieve_memory, learning, record_memory)",)),
    ("edges:\n  conscious: [planning, focus]\n  planning: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\n  focus: [internal_perception]\n  internal_perception: [focus]\n",
     ("graph.yaml: field 'edges': no path from focus, internal_perception reaches 'external_perception'",
      "could never act again")),
    ("edges:\n  conscious: [external_perception]\n  external_perception: [conscious]\n",  # it played 'look' only
     ("graph.yaml: field 'edges': no path from 'conscious' reaches 'external_perception' through 'motor'",
      "could never choose one")),
    ("edges:\n  conscious: [planning, planning]\n  planning: [motor]\n  motor: [external_perception]\n"
     "  external_perception: [conscious]\n",  # the orchestrator was asked to choose between planning and planning
     ("graph.yaml: field 'edges.conscious': agent 'conscious' names 'planning' more than once among its successors",)),
], ids=["a successor misspelt", "an agent the engine lacks", "a default misspelt", "no way to act",
        "a number for successors", "a mapping for successors", "no successor", "no successor without memory",
        "a loop with no way out to an action", "no way to choose an action", "a successor twice"])
def test_a_graph_file_naming_unknown_agents_is_one_line_where_it_is(graph: str, says: tuple[str, ...],
                                                                    tmp_path: Path) -> None:
    (tmp_path / "graph.yaml").write_text(graph)
    for benchmark in (["textworld", "--games-dir", str(tmp_path / "games")], ["alfworld", "--data", str(tmp_path)]):
        for only in ([], ["--create-only"]):
            outcome = cli(["bench", *benchmark, "--system", "metaagent", "--memory", "none", "--graph",
                           str(tmp_path / "graph.yaml"), "--out", str(tmp_path / "runs"), *only])
            refused(outcome, *says)
    assert not (tmp_path / "runs").exists()


def test_a_graph_that_acts_only_through_memory_is_refused_when_memory_waits_until_the_team_is_stuck(
        tmp_path: Path) -> None:
    """With `--recall-at stuck` the team plays without its memory agents until the first recall: a graph whose only
    way to act goes through one could never act there."""
    (tmp_path / "graph.yaml").write_text(
        "edges:\n  conscious: [focus, retrieve_memory]\n  retrieve_memory: [planning]\n  planning: [motor]\n"
        "  motor: [external_perception]\n  external_perception: [conscious]\n  focus: [internal_perception]\n"
        "  internal_perception: [conscious]\n")
    args = ["bench", "textworld", "--games-dir", str(tmp_path / "games"), "--system", "metaagent", "--memory", "both",
            "--graph", str(tmp_path / "graph.yaml"), "--out", str(tmp_path / "runs")]
    refused(cli([*args, "--recall-at", "stuck"]), "before the first recall", "could never act")
    assert not (tmp_path / "runs").exists()
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    assert cli([*args, "--recall-at", "start", "--create-only"]).code == 0  # recalled at the start, it can act


def test_a_graph_file_nested_too_deeply_is_a_config_error_naming_it(tmp_path: Path) -> None:
    """PyYAML recurses once per level: a RecursionError traceback before."""
    from noosphere.errors import ConfigError
    from noosphere.metaagent import TransitionGraph

    (tmp_path / "graph.yaml").write_text("[" * 3_000)
    with pytest.raises(ConfigError, match=r"graph\.yaml: cannot read the transition graph: nested too deeply"):
        TransitionGraph.from_file(tmp_path / "graph.yaml")


AUTOPILOT = ("edges:\n  conscious: [planning, focus]\n  planning: [motor]\n  motor: [external_perception]\n"
             "  external_perception: [conscious]\n  focus: [internal_perception]\n  internal_perception: [conscious]\n")


@pytest.mark.parametrize(("name", "text", "says"), [
    ("graph.yaml", AUTOPILOT + "  conscious: [planning]\n",
     "graph.yaml:8: the key 'conscious' is given twice in one mapping"),
    ("graph.yaml", AUTOPILOT + "defualts:\n  conscious: focus\n",
     "graph.yaml: field 'defualts': unknown key 'defualts'. Did you mean defaults?"),
    ("graph.json", '{"edges": {"conscious": ["planning"], "planning": ["motor"], "motor": ["external_perception"], '
                   '"external_perception": ["conscious"]}, "defaults": {"conscious": "planning"}, '
                   '"defaults": {}}', "graph.json: the key 'defaults' is given twice in one mapping"),
    ("graph.json", '{"edges": {"conscious": ["planning"], "planning": ["motor"], "motor": ["external_perception"], '
                   '"external_perception": ["conscious"]}, "extra": 1}', "graph.json: field 'extra': unknown key"),
], ids=["a yaml key twice", "a misspelt top-level key", "a json key twice", "an extra json key"])
def test_a_graph_file_with_a_key_twice_or_an_unknown_key_is_refused_where_it_is(name: str, text: str, says: str,
                                                                               tmp_path: Path) -> None:
    """Before, the last of a repeated key won silently (the focus loop dropped) and unknown keys were ignored."""
    (tmp_path / name).write_text(text)
    outcome = cli(["bench", "textworld", "--games-dir", str(tmp_path / "games"), "--system", "metaagent", "--memory",
                   "none", "--graph", str(tmp_path / name), "--out", str(tmp_path / "runs"), "--create-only"])
    refused(outcome, says)
    assert not (tmp_path / "runs").exists()


def test_a_json_graph_indented_with_tabs_loads(tmp_path: Path) -> None:
    from noosphere.metaagent import DEFAULT_GRAPH, TransitionGraph

    (tmp_path / "graph.json").write_text(json.dumps(DEFAULT_GRAPH.to_data(), indent="\t"))
    assert TransitionGraph.from_file(tmp_path / "graph.json") == DEFAULT_GRAPH
    for missing in (tmp_path / "nowhere.json", tmp_path):  # the path once, then why
        with pytest.raises(ConfigError) as caught:
            TransitionGraph.from_file(missing)
        assert str(caught.value).count(str(missing)) == 1, str(caught.value)
        assert caught.value.message in ("cannot read the transition graph: No such file or directory",
                                        "cannot read the transition graph: Is a directory")
    # saved by an editor that marks UTF-8: json.loads refused the mark, where the same graph in YAML loaded
    (tmp_path / "marked.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(DEFAULT_GRAPH.to_data()).encode())
    assert TransitionGraph.from_file(tmp_path / "marked.json") == DEFAULT_GRAPH


def test_a_graph_left_without_successors_before_the_first_recall_says_why(tmp_path: Path) -> None:
    (tmp_path / "graph.yaml").write_text(
        "edges:\n  conscious: [retrieve_memory]\n  retrieve_memory: [planning]\n  planning: [motor]\n"
        "  motor: [external_perception]\n  external_perception: [conscious]\n")
    outcome = cli(["bench", "textworld", "--games-dir", str(tmp_path / "games"), "--system", "metaagent", "--memory",
                   "both", "--recall-at", "stuck", "--graph", str(tmp_path / "graph.yaml"), "--out",
                   str(tmp_path / "runs")])
    refused(outcome, "graph.yaml: field 'edges.conscious': agent 'conscious' has no successor once the memory "
                     "agents are left out, as they are until the first recall (--recall-at stuck)")
    assert not (tmp_path / "runs").exists()


def test_a_run_with_memory_is_refused_on_a_cluster_before_anything_is_made(tmp_path: Path) -> None:
    """A worker keeps no run folder: the memory would go wherever the worker stands, and be lost to a resume."""
    outcome = cli(["bench", "textworld", "--games-dir", str(tmp_path / "games"), "--system", "metaagent",
                   "--memory", "episodic", "--cluster", "127.0.0.1:1", "--workers", "1", "--out",
                   str(tmp_path / "runs")])
    refused(outcome, "memory is kept in the run folder", "without --cluster")
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------- a memory folder from another version


def _memory(folder: Path, version: int | None) -> Path:
    """A memory with one episode; stamped `version` (None: left as a noosphere before the stamp wrote it)."""
    store = MemoryStore(folder)
    store.add_episode(Episode("Your task is to: take the key.", "fetch", "two-rooms",
                              (EpisodeStep(0, "", "You are in the west room."), EpisodeStep(1, "go east", "A key.")),
                              True))
    with contextlib.closing(sqlite3.connect(store.path)) as db:
        db.execute(f"PRAGMA user_version = {0 if version is None else version}")
        db.commit()
    return store.path


def test_a_new_memory_is_stamped_and_one_from_before_the_stamp_still_opens(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "new")
    with contextlib.closing(sqlite3.connect(store.path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == FORMAT == 1
    older = _memory(tmp_path / "older", None)
    [episode] = MemoryStore(older.parent).episodes()
    assert episode.won and episode.steps[1].action == "go east"


def test_memory_from_another_version_is_refused_whole_and_left_as_it_was(tmp_path: Path) -> None:
    path = _memory(tmp_path / "memory", 7)
    before = path.read_bytes()
    with pytest.raises(DataError, match="another version of noosphere \\(memory format 7; this one reads format 1\\)"):
        MemoryStore(path.parent)
    for command in (["memory", "show", str(path.parent)], ["memory", "reset", "--yes", str(path.parent)]):
        refused(cli(command), "memory.sqlite", "another version of noosphere", "Nothing in it was read or changed")
    assert path.read_bytes() == before  # not reset, not migrated, not stamped


@pytest.mark.parametrize("version", [None, FORMAT], ids=["from before the stamp", "stamped"])
def test_memory_show_only_reads(version: int | None, tmp_path: Path) -> None:
    """`memory show` neither stamps a memory from before the stamp nor writes its schema or header."""
    path = _memory(tmp_path / "memory", version)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    outcome = cli(["memory", "show", str(path.parent)])
    assert outcome.code == 0 and "1 episodes (1 solved), 0 concepts, 0 clusters" in outcome.out, outcome
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["memory.sqlite"]  # no journal left either


def test_a_read_only_memory_store_cannot_write(tmp_path: Path) -> None:
    path = _memory(tmp_path / "memory", None)
    before = path.read_bytes()
    store = MemoryStore(path.parent, read_only=True)
    assert [e.game for e in store.episodes()] == ["two-rooms"] and store.concepts() == [] and store.clusters() == []
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store.add_concept("Open the fridge before looking for food in the kitchen.", "fridge-1")
    assert path.read_bytes() == before


def test_memory_whose_tables_differ_says_it_may_be_from_another_version(tmp_path: Path) -> None:
    path = _memory(tmp_path / "memory", None)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("ALTER TABLE concepts RENAME COLUMN text TO rule")
        db.commit()
    before = path.read_bytes()
    refused(cli(["memory", "reset", "--yes", str(path.parent)]), "lacks the column(s) text",
            "another version of noosphere?")
    assert path.read_bytes() == before


def test_a_damaged_memory_is_one_line_naming_its_first_problem(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory")
    for i in range(5):
        store.add_episode(Episode(f"task {i}", "fetch", f"game-{i}", (EpisodeStep(0, "", "a room " * 40),), True))
    data = bytearray(store.path.read_bytes())
    data[4096 + 8:4096 + 24] = bytes(16)  # the cell pointers of page 2 (the episodes) scrambled
    store.path.write_bytes(bytes(data))
    line = refused(cli(["memory", "show", str(store.path.parent)]), "memory.sqlite: is damaged (On tree page 2",
                   "and 4 more); expected noosphere's memory database")
    assert "***" not in line


def _steps_not_json(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE episodes SET steps = '[[0, \"go east\"'")
        db.commit()


def _steps_not_text(path: Path) -> None:
    """JSON, but with a lone surrogate: the first prompt recalling the episode was a traceback, mid-run."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE episodes SET steps = '[[0, \"look\", \"a \\ud800 room\", \"\"]]'")
        db.commit()


def memory_run(tmp_path: Path, *extra: str) -> Path:
    """A new meta-agent run with episodic memory, made and not played (`--create-only`): its folder."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    made = cli(["bench", "textworld", "--system", "metaagent", "--memory", "episodic", "--per-challenge", "1",
                "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--create-only", *extra])
    assert made.code == 0, made
    [run_dir] = (tmp_path / "runs").iterdir()
    return run_dir


@pytest.mark.parametrize(("version", "damage", "says"), [
    (7, None, ("memory.sqlite", "another version of noosphere")),
    (None, _steps_not_json, ("memory.sqlite", "row id=1", "column 'steps' is not JSON")),
    (None, _steps_not_text, ("memory.sqlite", "row id=1", "column 'steps' holds a lone surrogate")),
], ids=["format 7", "steps not JSON", "steps not text"])
@pytest.mark.parametrize("command", ["resume", "together"])
def test_resuming_a_run_whose_memory_is_from_another_version_changes_nothing(
        command: str, version: int | None, damage: Any, says: tuple[str, ...], tmp_path: Path) -> None:
    run_dir = memory_run(tmp_path)
    path = _memory(run_dir / "memory", version)
    if damage is not None:
        damage(path)
    before = snapshot(tmp_path)
    args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
            else ["bench", "together", str(run_dir)])
    refused(cli(args), *says)
    assert snapshot(tmp_path) == before  # no run folder, no line of trace, no result, the memory as it was


@pytest.mark.parametrize("command", ["resume", "together"])
def test_resuming_a_run_whose_memory_folder_is_a_file_changes_nothing(command: str, tmp_path: Path) -> None:
    run_dir = memory_run(tmp_path)
    (run_dir / "memory").write_text("not a folder")
    before = snapshot(tmp_path)
    args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
            else ["bench", "together", str(run_dir)])
    refused(cli(args), f"{run_dir / 'memory'}, and that is a file, not a folder")
    assert snapshot(tmp_path) == before  # the run's result not rewritten as failed


@pytest.mark.parametrize("command", ["resume", "together"])
def test_resuming_a_run_whose_memory_was_killed_as_it_began_gets_past_the_memory_check(command: str,
                                                                                     tmp_path: Path) -> None:
    """A store killed between SQLite's making its file and its first write leaves it at 0 bytes, which the store
    begins again; the resume's check refused it as "is empty", and the run could not go on."""
    from noosphere.errors import UsageError

    run_dir = memory_run(tmp_path)
    (run_dir / "memory").mkdir()
    (run_dir / "memory" / "memory.sqlite").touch()

    def opened(model_id: str, **kwargs: Any) -> Any:
        raise UsageError("the model was opened")

    args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
            else ["bench", "together", str(run_dir)])
    refused(cli(args, opened), "the model was opened")  # every check before it passed
    assert MemoryStore(run_dir / "memory").episodes() == []


@pytest.mark.parametrize("memory", ["deleted", "emptied"])
@pytest.mark.parametrize("command", ["resume", "together"])
def test_resuming_a_run_that_played_games_without_their_memory_changes_nothing(command: str, memory: str,
                                                                               tmp_path: Path) -> None:
    """A run whose memory folder went missing (not committed, deleted) after it had played games was resumed with
    a fresh memory: the rest of the games played remembering none of those, and the table did not say so."""
    run_dir = memory_run(tmp_path)
    with (run_dir / "items.jsonl").open("a") as rows:
        rows.write(json.dumps({"id": "failed-to-load", "prediction": "", "error": "EnvError: no such game"}) + "\n")
        rows.write(json.dumps({"id": "game-1", "prediction": "lost", "error": None}) + "\n")
    if memory == "emptied":
        (run_dir / "memory").mkdir()
        (run_dir / "memory" / "memory.sqlite").touch()
    before = snapshot(tmp_path)
    args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
            else ["bench", "together", str(run_dir)])
    refused(cli(args), "this run has played 1 game(s)", f"{run_dir / 'memory' / 'memory.sqlite'}",
            "missing or empty", "Nothing was played or changed")
    assert snapshot(tmp_path) == before


@contextlib.contextmanager
def immutable(path: Path) -> Any:
    """`path` made read-only even to root (`chattr +i`) while the block runs; the test is skipped where it cannot be."""
    import subprocess

    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("command", ["resume", "together", "reset"])
def test_a_read_only_memory_is_refused_before_the_model_opens_and_changes_nothing(command: str,
                                                                                   tmp_path: Path) -> None:
    run_dir = memory_run(tmp_path)
    path = _memory(run_dir / "memory", None)  # from before the stamp: opening it would stamp it
    before = snapshot(tmp_path)
    args = {"resume": ["bench", "textworld", "--resume", str(run_dir)], "together": ["bench", "together", str(run_dir)],
            "reset": ["memory", "reset", "--yes", str(path.parent)]}[command]
    with immutable(path):
        refused(cli(args), f"the memory {path} is read-only", "chattr -i")
    assert snapshot(tmp_path) == before  # the result not rewritten as failed, the memory as it was


@pytest.mark.parametrize("closed", ["file", "folder"])
@pytest.mark.parametrize("command", ["resume", "together", "show", "reset"])
def test_a_memory_that_cannot_be_read_is_refused_before_the_model_opens_and_changes_nothing(
        command: str, closed: str, tmp_path: Path) -> None:
    """A memory.sqlite that cannot be read, or in a folder that cannot be looked into, was a PermissionError
    traceback (`Path.open`, `Path.exists`)."""
    run_dir = memory_run(tmp_path, "--model", "scripted")
    path = _memory(run_dir / "memory", FORMAT)
    args = {"resume": ["bench", "textworld", "--resume", str(run_dir)], "together": ["bench", "together", str(run_dir)],
            "show": ["memory", "show", str(path.parent)], "reset": ["memory", "reset", "--yes", str(path.parent)]}
    before = snapshot(tmp_path)
    target, mode = (path, 0o644) if closed == "file" else (path.parent, 0o755)
    target.chmod(0 if closed == "file" else 0o644)  # a folder that can be listed (typer's check) but not entered
    try:
        outcome = bound_by_permissions(args[command])
    finally:
        target.chmod(mode)
    refused(outcome, f"the memory at {path.parent} cannot be read (Permission denied: {path})", "chmod u+rx")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("read_only", ["folder", "file"])
def test_a_read_only_memory_its_writer_left_mid_write_says_so_not_that_it_is_damaged(read_only: str,
                                                                                     tmp_path: Path) -> None:
    """Its journal must be rolled back before it can be read, which writes: read-only, SQLite's refusal ("disk I/O
    error") was told as a memory that "cannot be read as a database"."""
    import subprocess
    import sys

    path = _memory(tmp_path / "memory", None)
    writer = ("import os, sqlite3, sys\ndb = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "db.execute('PRAGMA cache_size=1')\ndb.execute('BEGIN')\ndb.execute('CREATE TABLE junk (x BLOB)')\n"
              "for _ in range(300):\n    db.execute('INSERT INTO junk VALUES (?)', (os.urandom(4096),))\n"
              "os.kill(os.getpid(), 9)\n")
    assert subprocess.run([sys.executable, "-c", writer, str(path)], check=False).returncode == -9
    before = snapshot(tmp_path)
    with immutable(path.parent if read_only == "folder" else path):
        for command in ("show", "reset"):
            refused(cli(["memory", command, "--yes" if command == "reset" else "--episodes=1", str(path.parent)]),
                    "is read-only", "left memory.sqlite-journal to roll back first", "chattr -i")
    assert snapshot(tmp_path) == before
    outcome = cli(["memory", "show", str(path.parent)])  # writable again: rolled back, as its last write left it
    assert outcome.code == 0 and "1 episodes (1 solved)" in outcome.out, outcome


@pytest.mark.parametrize("seen", ["before opening", "by SQLite"])
def test_a_memory_that_cannot_be_written_is_a_usage_error(seen: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from noosphere.errors import UsageError

    path = _memory(tmp_path / "memory", None)
    if seen == "by SQLite":  # read-only where the permission bits do not tell (a read-only mount, say)
        monkeypatch.setattr("noosphere.memory.store.check_writable", lambda folder: None)
    says = "is read-only" if seen == "before opening" else "readonly database; make .* writable"
    with immutable(path), pytest.raises(UsageError, match=says):
        MemoryStore(path.parent)


@pytest.mark.parametrize("command", ["resume", "together", "show", "reset"])
def test_a_memory_file_that_is_a_folder_is_named_as_one(command: str, tmp_path: Path) -> None:
    """It was "no memory at FOLDER (expected FOLDER/memory.sqlite)", with memory.sqlite there."""
    run_dir = memory_run(tmp_path)
    path = run_dir / "memory" / "memory.sqlite"
    path.mkdir(parents=True)
    before = snapshot(tmp_path)
    args = {"resume": ["bench", "textworld", "--resume", str(run_dir)], "together": ["bench", "together", str(run_dir)],
            "show": ["memory", "show", str(path.parent)], "reset": ["memory", "reset", "--yes", str(path.parent)]}
    refused(cli(args[command]), f"{path}: is a folder; expected a file holding noosphere's memory database")
    assert snapshot(tmp_path) == before and path.is_dir()


def test_a_memory_store_where_a_file_is_is_a_usage_error(tmp_path: Path) -> None:
    from noosphere.errors import UsageError

    (tmp_path / "memory").write_text("not a folder")
    with pytest.raises(UsageError, match=f"cannot keep a memory in {tmp_path / 'memory'}: File exists"):
        MemoryStore(tmp_path / "memory")


@pytest.mark.parametrize("command", ["resume", "together"])
@pytest.mark.parametrize(("key", "value", "says"), [
    ("recall_view", "everyone", "unknown recall view 'everyone'"),
    ("planner_view", "belief", "unknown planner view 'belief'"),
    ("system", "reactt", "unknown system 'reactt'"),
    ("memory", "all", "unknown memory mode 'all'"),
    ("graph", {"edges": {"conscious": ["planing"], "planing": ["conscious"]}}, "unknown agent 'planing'"),
    ("graph", {"edges": {"conscious": ["planning"], "planning": ["conscious"]}}, "could never act"),
    ("embedder", "another-embedder-384", "embedded with another-embedder-384"),
], ids=["recall view", "planner view", "system", "memory", "graph: unknown agent", "graph: no way to act",
        "embedder"])
def test_resuming_a_run_whose_saved_view_is_unknown_changes_nothing(
        command: str, key: str, value: str, says: str, tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    made = cli(["bench", "textworld", "--system", "metaagent", "--memory", "episodic", "--per-challenge", "1",
                "--recall-view", "planner", "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "runs"),
                "--create-only"])
    assert made.code == 0, made
    [run_dir] = (tmp_path / "runs").iterdir()
    config_file = run_dir / "config.json"
    saved = json.loads(config_file.read_text())
    assert saved["recall_view"] == "planner" and saved["embedder"] == default_embedder().name
    saved[key] = value  # edited by hand
    config_file.write_text(json.dumps(saved))
    before = snapshot(tmp_path)
    args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
            else ["bench", "together", str(run_dir)])
    refused(cli(args), says)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["resume", "together"])
@pytest.mark.parametrize(("system", "gone", "says"), [
    ("react", ("tier",), "config.json lacks tier (edited by hand"),
    ("react", ("games_dir",), "config.json lacks games_dir"),
    ("react", ("max_actions",), "config.json lacks max_actions"),
    ("react", ("tier", "per_challenge", "system"), "config.json lacks system, tier, per_challenge"),
    ("metaagent", ("k", "retrieve"), "config.json lacks retrieve, k"),
], ids=["tier", "games_dir", "max_actions", "three keys", "the meta-agent's memory keys"])
def test_resuming_a_run_whose_config_lacks_a_key_changes_nothing(command: str, system: str, gone: tuple[str, ...],
                                                                 says: str, tmp_path: Path) -> None:
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    memory = "episodic" if system == "metaagent" else "none"
    made = cli(["bench", "textworld", "--system", system, "--memory", memory, "--per-challenge", "1",
                "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--create-only"])
    assert made.code == 0, made
    [run_dir] = (tmp_path / "runs").iterdir()
    config_file = run_dir / "config.json"
    saved = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({k: v for k, v in saved.items() if k not in gone}))  # edited, or older
    before = snapshot(tmp_path)
    args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
            else ["bench", "together", str(run_dir)])
    refused(cli(args), says, "make a new run with `noosphere bench textworld`")
    assert snapshot(tmp_path) == before  # the model never opened, the result not rewritten as failed


@pytest.mark.parametrize("command", ["resume", "together"])
@pytest.mark.parametrize(("edit", "says"), [
    ({"per_challenge": "1"}, "key 'per_challenge': Input should be a valid integer (got \"1\")"),
    ({"per_challenge": 0}, "key 'per_challenge': Input should be greater than or equal to 1 (got 0)"),
    ({"max_actions": "3"}, "key 'max_actions': Input should be a valid integer"),
    ({"k": "4"}, "key 'k': Input should be a valid integer"),
    ({"limit": -1}, "key 'limit': Input should be greater than or equal to 1 (got -1)"),
    ({"memory": None}, "key 'memory': Input should be a valid string (got null)"),
    ({"challenges": [1]}, "key 'challenges[0]': Input should be a valid string (got 1)"),
    ({"games_dir": 5}, "key 'games_dir': Input should be a valid string (got 5)"),
    ({"judge": True, "margin": "x"}, "key 'margin': Input should be a valid number"),
    ({"graph": {}}, "key 'graph': Dictionary should have at least 1 item"),
], ids=["per_challenge a string", "per_challenge 0", "max_actions a string", "k a string", "limit -1",
        "memory null", "a challenge a number", "games_dir a number", "margin a string", "an empty graph"])
def test_resuming_a_run_whose_config_holds_a_setting_no_option_gives_changes_nothing(
        command: str, edit: dict[str, Any], says: str, tmp_path: Path) -> None:
    """Each was a traceback (some mid-run, after the model opened), or a run no option makes: `per_challenge` 0
    played no game and ended ok, `limit` -1 every game but the last."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    made = cli(["bench", "textworld", "--memory", "episodic", "--per-challenge", "1", "--games-dir",
                str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--create-only"])
    assert made.code == 0, made
    [run_dir] = (tmp_path / "runs").iterdir()
    config_file = run_dir / "config.json"
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), **edit}))  # edited by hand
    before = snapshot(tmp_path)
    args = (["bench", "textworld", "--resume", str(run_dir)] if command == "resume"
            else ["bench", "together", str(run_dir)])
    refused(cli(args), f"the run's config.json: {says}", "make a new run with `noosphere bench textworld`")
    assert snapshot(tmp_path) == before  # the model never opened, the result not rewritten as failed


def test_an_alfworld_config_without_its_games_per_type_is_refused_before_its_games_are_read() -> None:
    from noosphere.cli.bench_games import check_alfworld
    from noosphere.errors import UsageError

    with pytest.raises(UsageError, match=r"config\.json lacks per_type .* `noosphere bench alfworld`"):
        check_alfworld({"benchmark": "alfworld", "model": "m", "seed": 0, "system": "react", "max_actions": 5})


def test_resuming_a_run_with_memory_at_once_is_refused_before_the_model_opens(tmp_path: Path) -> None:
    run_dir = memory_run(tmp_path)
    before = snapshot(tmp_path)
    refused(cli(["bench", "textworld", "--resume", str(run_dir), "--parallel", "2"]), "--parallel 1")
    assert snapshot(tmp_path) == before


def test_a_split_folder_given_for_another_split_is_refused(tmp_path: Path) -> None:
    from noosphere.envs.alfworld import game_files
    from noosphere.errors import UsageError

    (tmp_path / "valid_seen").mkdir()
    with pytest.raises(UsageError, match="is the valid_seen split, and the run plays valid_unseen"):
        game_files(tmp_path / "valid_seen", split="valid_unseen")  # not played as if it were valid_unseen


def test_the_split_folder_given_is_the_split_played(tmp_path: Path) -> None:
    """Games the developers did not play: `--data .../valid_unseen` plays valid_unseen (it was refused, with advice
    to rename the folder valid_seen), and the run's config says which split it played."""
    from noosphere.envs.alfworld import data_split

    (tmp_path / "json_2.1.1").mkdir()
    unseen = _alfworld_data(tmp_path).parents[2].rename(tmp_path / "json_2.1.1" / "valid_unseen")
    outcome = cli(["bench", "alfworld", "--system", "react", "--memory", "none", "--data", str(unseen), "--out",
                   str(tmp_path / "runs")])
    assert "--split" not in outcome.err and "do not parse" in outcome.err, outcome  # past the split: the stub's fault
    assert data_split(unseen, None) == "valid_unseen" and data_split(unseen.parent, None) == "valid_seen"
    assert data_split(None, None) == "valid_seen" and data_split(unseen, "train") == "train"


@pytest.mark.parametrize("given", ["json_2.1.1 holding valid_unseen alone", "valid_unseen with --split valid_seen"])
def test_the_advice_for_data_of_another_split_can_be_followed(given: str, tmp_path: Path) -> None:
    """Where the data holds no folder of the split asked for, the refusal says what to pass: `--split` the one it
    holds, or the data of the split asked for."""
    (tmp_path / "json_2.1.1").mkdir()
    unseen = _alfworld_data(tmp_path).parents[2].rename(tmp_path / "json_2.1.1" / "valid_unseen")
    data, split = (unseen.parent, []) if given.startswith("json") else (unseen, ["--split", "valid_seen"])
    says = ("has no valid_seen folder (it holds valid_unseen)" if data != unseen else "is the valid_unseen split",
            "the run plays valid_seen: give --split valid_unseen to play it, or --data the valid_seen folder or a "
            "json_2.1.1 folder that holds it")
    refused(cli(["bench", "alfworld", "--system", "react", "--memory", "none", "--data", str(data), *split, "--out",
                 str(tmp_path / "runs")]), *says)
    assert not (tmp_path / "runs").exists()
    outcome = cli(["bench", "alfworld", "--system", "react", "--memory", "none", "--data", str(data),
                   "--split", "valid_unseen", "--out", str(tmp_path / "runs")])  # the advice followed
    assert "--split" not in outcome.err and "do not parse" in outcome.err, outcome  # past the split: the stub's fault


def test_a_run_that_gets_fewer_games_than_it_asked_for_is_told_which_and_how_many() -> None:
    """Five games of two task types with `--per-type 10` played 3 games without a word, and a folder of no task type
    was played as a seventh kind."""
    from noosphere.envs.alfworld import TASK_TYPES, shortfall

    def game(kind: str, n: int) -> Path:
        return Path(f"/d/valid_unseen/{kind}-Apple-None-Table-{n}/trial_1/game.tw-pddl")

    every = [game(kind, n) for kind in TASK_TYPES for n in range(2)]
    assert shortfall(every, 2) is None and shortfall(every, None) is None
    said = shortfall([*every[:3], game("weird_type", 0)], 2)
    assert said is not None and said.startswith("--per-type 2 asks for more games of a task type than the data has")
    assert f"{TASK_TYPES[1]} 1" in said and f"{TASK_TYPES[2]} 0" in said and f"{TASK_TYPES[0]} " not in said
    assert "games of no ALFWorld task type (weird_type)" in said and said.endswith("the data gives 4 games")


def test_an_unknown_split_is_named_with_the_known_ones(tmp_path: Path) -> None:
    refused(cli(["bench", "alfworld", "--system", "react", "--memory", "none", "--split", "valid_unsen", "--out",
                 str(tmp_path / "runs")]), "valid_unsen", "valid_unseen")
    assert not (tmp_path / "runs").exists()


def test_a_step_before_the_reset_is_a_clear_error(tmp_path: Path) -> None:
    from noosphere.envs.textgame import TextGame
    from noosphere.errors import UsageError

    game = TextGame(tmp_path / "never-loaded.z8", name="coin_collector-0", kind="coin_collector")
    with pytest.raises(UsageError, match="coin_collector-0: reset the game before its first step"):
        game.step("go north")


def test_a_resume_refuses_a_meta_agent_option_the_run_was_made_without_and_takes_the_same_again(
        tmp_path: Path) -> None:
    """Options a run saves only when given (`--focus`, `--graph`, `--judge`...) were skipped on a resume when the run
    had none, so `--focus mask` was ignored silently; and a run's own `--challenges a,b` or `--graph file` given
    again was refused (a comma list against the saved list, a file name against the saved graph)."""
    from noosphere.errors import UsageError
    from noosphere.llm import Model

    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    graph = {"edges": {"conscious": ["planning"], "planning": ["motor"], "motor": ["external_perception"],
                       "external_perception": ["conscious"]}, "defaults": {}}
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    (tmp_path / "other.yaml").write_text(AUTOPILOT)
    made = [cli(["bench", "textworld", "--system", "metaagent", "--memory", "none", "--per-challenge", "1",
                 "--challenges", "coin_collector,cooking", "--games-dir", str(tmp_path / "games"), "--out",
                 str(tmp_path / name), "--create-only", *extra]) for name, extra in
            (("plain", []), ("graphed", ["--graph", str(tmp_path / "graph.json")]))]
    assert all(outcome.code == 0 for outcome in made), made
    [plain], [graphed] = (list((tmp_path / name).iterdir()) for name in ("plain", "graphed"))
    before = snapshot(tmp_path)
    for changed, says in ((["--focus", "mask"], "--focus mask (the run has replay)"),
                          (["--planner-view", "percept"], "--planner-view percept (the run has team)"),
                          (["--graph", str(tmp_path / "graph.json")], "(the run has the default graph)"),
                          (["--judge"], "--judge True (the run has False)"),
                          (["--recall-at", "stuck"], "--recall-at stuck (the run has start)"),
                          (["--margin", "0.1"], "--margin 0.1 (the run has none)"),
                          (["--challenges", "coin_collector"], "(the run has coin_collector,cooking)")):
        refused(cli(["bench", "textworld", "--resume", str(plain), *changed]), "keeps the settings", says)
    refused(cli(["bench", "textworld", "--resume", str(graphed), "--graph", str(tmp_path / "other.yaml")]),
            "(the run has the graph saved in its config.json)")
    assert snapshot(tmp_path) == before

    def opened(model_id: str, **kwargs: Any) -> Model:
        raise UsageError("the model was opened")

    for run_dir, same in ((plain, ["--challenges", "coin_collector,cooking", "--focus", "replay"]),
                          (graphed, ["--graph", str(tmp_path / "graph.json")])):
        refused(cli(["bench", "textworld", "--resume", str(run_dir), *same], opened), "the model was opened")


def test_a_graph_file_given_to_a_resume_naming_an_unknown_agent_says_so(tmp_path: Path) -> None:
    """Given again on a resume, a graph file was read without the engine's agents: a misspelt one was told as
    "'planning' leads to ['motr'], which have no edges of their own", where a new run says it is unknown and what was
    meant."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    (tmp_path / "graph.yaml").write_text(AUTOPILOT)
    made = cli(["bench", "textworld", "--system", "metaagent", "--memory", "none", "--per-challenge", "1",
                "--challenges", "coin_collector", "--games-dir", str(tmp_path / "games"), "--out",
                str(tmp_path / "runs"), "--create-only", "--graph", str(tmp_path / "graph.yaml")])
    assert made.code == 0, made
    [run_dir] = (tmp_path / "runs").iterdir()
    (tmp_path / "graph.yaml").write_text(AUTOPILOT.replace("planning: [motor]", "planning: [motr]"))
    before = snapshot(tmp_path)
    refused(cli(["bench", "textworld", "--resume", str(run_dir), "--graph", str(tmp_path / "graph.yaml")]),
            f"{tmp_path / 'graph.yaml'}: field 'edges.planning': unknown agent 'motr'. Did you mean motor?")
    assert snapshot(tmp_path) == before


def test_bench_together_with_a_run_in_use_leaves_the_runs_before_it_as_they_were(tmp_path: Path) -> None:
    """The runs were reopened one by one, each with its model loaded: a later one in use by another process was
    refused after the first had gained a `run_started` with no end (and a model loaded for nothing)."""
    import subprocess
    import sys

    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    for name in ("a", "b"):
        made = cli(["bench", "textworld", "--system", "metaagent", "--memory", "none", "--per-challenge", "1",
                    "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / name), "--create-only"])
        assert made.code == 0, made
    [first], [second] = (list((tmp_path / name).iterdir()) for name in ("a", "b"))
    before = snapshot(tmp_path / "a")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                               f"handle = open({str(second / '.lock')!r}, 'a')\n"
                               "fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                               "print('held', flush=True)\ntime.sleep(120)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused(cli(["bench", "together", str(first), str(second)]), f"{second} is in use by another run")
    finally:
        holder.kill()
        holder.wait()
    assert snapshot(tmp_path / "a") == before


@pytest.mark.parametrize(("model", "says"), [("nosuch", "unknown model id 'nosuch'"),
                                             ("local:/nonexistent.gguf", "no GGUF file at /nonexistent.gguf")])
def test_create_only_checks_the_model_id_before_making_the_folder(model: str, says: str, tmp_path: Path) -> None:
    """`--create-only` never opened the model: a mistyped `--model` (a suite's `--together`) left folders that a
    later, corrected call resumed with the wrong model."""
    for benchmark in (["textworld", "--games-dir", str(tmp_path / "games")], ["alfworld", "--data", str(tmp_path)]):
        refused(cli(["bench", *benchmark, "--system", "react", "--model", model, "--out", str(tmp_path / "runs"),
                     "--create-only"]), says)
    assert not (tmp_path / "runs").exists()


def test_bench_together_stopped_while_the_first_run_prepares_leaves_the_runs_not_reached_as_they_were(
        tmp_path: Path) -> None:
    """All runs are reopened before any is prepared: Ctrl-C while the first one's model loaded marked every run
    "interrupted", even those never prepared."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    for name in ("a", "b"):
        made = cli(["bench", "textworld", "--system", "react", "--per-challenge", "1", "--games-dir",
                    str(tmp_path / "games"), "--out", str(tmp_path / name), "--create-only"])
        assert made.code == 0, made
    [first], [second] = (list((tmp_path / name).iterdir()) for name in ("a", "b"))
    before = snapshot(second)

    def stopped(model_id: str, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    outcome = cli(["bench", "together", str(first), str(second)], stopped)
    assert outcome.code == 130, outcome
    assert json.loads((first / "result.json").read_text())["status"] == "interrupted"
    assert snapshot(second) == before


def test_a_react_scored_run_made_before_margins_resumes_with_margin_0(tmp_path: Path) -> None:
    """Such a run plays margin 0 (`config.get("margin", 0.0)`); `--margin 0` given again was refused ("the run has
    none"), as the suite's `react-scored-nomargin` run shows."""
    from noosphere.errors import UsageError

    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    made = cli(["bench", "textworld", "--system", "react-scored", "--margin", "0", "--per-challenge", "1",
                "--games-dir", str(tmp_path / "games"), "--out", str(tmp_path / "runs"), "--create-only"])
    assert made.code == 0, made
    [run_dir] = list((tmp_path / "runs").iterdir())
    config = json.loads((run_dir / "config.json").read_text())
    del config["margin"]  # as the runs made before margins were saved
    (run_dir / "config.json").write_text(json.dumps(config))

    def opened(model_id: str, **kwargs: Any) -> Any:
        raise UsageError("the model was opened")

    refused(cli(["bench", "textworld", "--resume", str(run_dir), "--margin", "0"], opened), "the model was opened")
    refused(cli(["bench", "textworld", "--resume", str(run_dir), "--margin", "0.1"], opened),
            "--margin 0.1 (the run has 0.0)")


def test_a_memory_in_use_says_so_rather_than_asking_for_write_permission(tmp_path: Path) -> None:
    import sqlite3

    from noosphere.errors import UsageError

    path = _memory(tmp_path / "memory", None)
    holder = sqlite3.connect(path)
    holder.execute("BEGIN IMMEDIATE")  # what the review held: a writer, readers still let in
    try:
        with pytest.raises(UsageError, match="another process"):
            MemoryStore(path.parent)
    finally:
        holder.rollback()
        holder.close()
