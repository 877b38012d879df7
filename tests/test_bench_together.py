"""`bench together` stopped or refused at each of its steps: every run it reopened ends saying so, none is left
looking as if it still played."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from noosphere.llm import Model, ScriptedBackend
from tests.skip_policy import GAME_EXTRAS
from tests.test_cli import invoke
from tests.test_game_figures import TwoRooms, walk_to_the_key


@pytest.fixture
def two_rooms(monkeypatch: pytest.MonkeyPatch) -> None:
    """TextWorld runs over two games of `TwoRooms` (nothing generated), their models scripted to win them."""
    pytest.importorskip("textworld", reason=GAME_EXTRAS)
    import noosphere.envs

    monkeypatch.setattr(noosphere.envs, "textworld_games", lambda folder, **options: [TwoRooms("g1"), TwoRooms("g2")])


def opener(model_id: str, **kwargs: Any) -> Model:
    return Model(ScriptedBackend(walk_to_the_key), **kwargs)


def created(tmp_path: Path, *outs: str, system: tuple[str, ...] = ("--system", "react")) -> list[Path]:
    folders = []
    for out in outs:
        code, _, err = invoke(["bench", "textworld", *system, "--games-dir", str(tmp_path / "games"), "--out",
                               str(tmp_path / out), "--create-only"], opener)
        assert code == 0, err
        folders.extend((tmp_path / out).iterdir())
    return folders


def status(folder: Path) -> str:
    return str(json.loads((folder / "result.json").read_text())["status"])


def test_stopped_while_the_reports_are_written_every_run_says_interrupted(tmp_path: Path, two_rooms: None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or TERM) once every game was played, while the first report is written: the runs were left "running",
    as a kill leaves them, and the rest never finished."""
    import noosphere.cli.bench_run

    folders = created(tmp_path, "a", "b")
    real = noosphere.cli.bench_run.write_report

    def stopped(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(noosphere.cli.bench_run, "write_report", real)
        raise KeyboardInterrupt

    monkeypatch.setattr(noosphere.cli.bench_run, "write_report", stopped)
    code, _, _ = invoke(["bench", "together", *map(str, folders), "--no-cache", "--quiet"], opener)
    assert code == 130
    assert [status(folder) for folder in folders] == ["interrupted", "interrupted"]
    code, _, err = invoke(["bench", "together", *map(str, folders), "--no-cache", "--quiet"], opener)
    assert code == 0, err
    assert [status(folder) for folder in folders] == ["ok", "ok"]
    for folder in folders:
        assert len((folder / "items.jsonl").read_text().splitlines()) == 2  # nothing played twice


def test_a_run_whose_call_cache_is_damaged_stops_them_all_before_any_model_opens(
        tmp_path: Path, two_rooms: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found while the second run prepared, the damage came after the first run's model had opened, and the first run
    then played every game; `--resume` of that run alone refuses it before its model opens."""
    import hashlib

    from noosphere.cli import ask

    monkeypatch.setattr(ask, "default_cache_dir", lambda: tmp_path / "user-cache")
    folders = created(tmp_path, "a", "b")
    (folders[1] / "calls.sqlite").write_bytes(b"not a database " * 100)

    def snapshot() -> dict[str, str]:
        return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for folder in folders
                for p in sorted(folder.rglob("*")) if p.is_file()}

    before = snapshot()
    opened: list[str] = []

    def recording(model_id: str, **kwargs: Any) -> Model:
        opened.append(str(kwargs["trace"].path))
        return opener(model_id, **kwargs)

    code, _, err = invoke(["bench", "together", *map(str, folders), "--quiet"], recording)
    assert code == 2 and f"{folders[1] / 'calls.sqlite'} cannot be used" in err, err
    assert opened == [] and snapshot() == before  # no model opened, no game played, both runs as they were
