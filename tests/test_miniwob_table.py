"""benchmarks/miniwob_table.py: the per-task MiniWoB table from run folders (no model, no browser)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "miniwob_table.py"


@pytest.fixture(scope="module")
def table() -> Any:
    return load_script(SCRIPT, "miniwob_table_script")


def run(root: Path, system: str, name: str, episodes: dict[str, tuple[bool, int]]) -> Path:
    folder = root / system / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"tasks": ["click-button", "enter-text", "login-user"]}))
    rows = [{"id": eid, "task": eid.rsplit("-", 1)[0], "correct": won, "steps": steps, "calls": steps * 3,
             "status": "ok"} for eid, (won, steps) in episodes.items()]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_each_system_s_newest_run_side_by_side_per_task(table: Any, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run(tmp_path, "base", "20260101-000000-old", {"click-button-0": (False, 1)})
    run(tmp_path, "base", "20260102-000000-new", {"login-user-0": (False, 10), "click-button-0": (True, 1),
                                                  "enter-text-0": (True, 2), "click-button-1": (True, 1)})
    run(tmp_path, "ctm", "20260102-000000-ctm", {"click-button-0": (False, 3)})
    assert table.main(["--suite", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("| task | base (20260102-000000-new, 4 episodes) | ctm (20260102-000000-ctm, 1 episodes) |")
    # tasks in the run's own order; a task a run has not played is "-"
    assert out[2:5] == ["| click-button | 2/2 | 0/1 |", "| enter-text | 1/1 | - |", "| login-user | 0/1 | - |"]
    assert out[5] == "| won | **3/4 = 75.0 %** | **0/1 = 0.0 %** |"
    assert out[7:] == ["| steps / episode | 3.50 | 3.00 |", "| calls / episode | 10.50 | 9.00 |"]


def test_a_folder_without_rows_is_one_line(table: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert table.main([str(tmp_path / "nowhere")]) == 2
    assert "no run folder with items.jsonl" in capsys.readouterr().err
    assert table.main(["--suite", str(tmp_path)]) == 2
