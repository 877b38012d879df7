"""`benchmarks/calibration_table.py`: one row per run folder with enough confidences, recomputed from its rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import load_script

TABLE = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "calibration_table.py")


def _run(folder: Path, rows: list[dict]) -> None:
    folder.mkdir(parents=True)
    (folder / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_every_run_with_confidences_gets_a_row_and_others_none(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path / "bfcl" / "ctm" / "run-a", [
        {"id": f"i{n}", "correct": n % 3 != 0, "confidence": 0.9 if n % 3 else 0.5} for n in range(30)])
    _run(tmp_path / "bfcl" / "base" / "run-b", [{"id": f"i{n}", "correct": True} for n in range(30)])
    _run(tmp_path / "gsm8k" / "few" / "run-c", [{"id": "i0", "correct": True, "confidence": 0.7}])
    assert TABLE.main(["--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line.startswith("| `")]
    assert len(rows) == 1 and rows[0].startswith("| `bfcl/ctm/run-a` | 30 | 0.667 |")
    cells = [cell.strip() for cell in rows[0].split("|")[1:-1]]
    assert cells[7] in ("yes", "no") and cells[8].startswith("1.000")  # the confidence separates perfectly
    assert float(cells[5]) < 0.05  # isotonic maps each of the two values to its own accuracy


def test_a_missing_results_folder_is_an_error(tmp_path: Path) -> None:
    assert TABLE.main(["--results", str(tmp_path / "nowhere")]) == 2


def test_runs_at_any_depth_are_listed_and_none_at_all_is_said(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": f"i{n}", "correct": n % 2 == 0, "confidence": 0.8 if n % 2 == 0 else 0.4} for n in range(20)]
    _run(tmp_path / "mustard" / "parallel" / "p1" / "run-a", rows)  # the `parallel/` runs sit one level deeper
    _run(tmp_path / "run-b", rows)  # and a run folder may be the results folder's child
    assert TABLE.main(["--results", str(tmp_path)]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    assert [line.split("`")[1] for line in listed] == ["mustard/parallel/p1/run-a", "run-b"]
    assert TABLE.main(["--results", str(tmp_path), "--minimum", "50"]) == 1
    assert "no run under" in capsys.readouterr().err


@pytest.mark.parametrize("minimum", ["0", "-3"])
def test_a_minimum_below_one_is_refused(tmp_path: Path, minimum: str, capsys: pytest.CaptureFixture[str]) -> None:
    """It listed every run folder, those without a single confidence too, as rows of dashes."""
    _run(tmp_path / "run-a", [{"id": "i0", "correct": True}])
    with pytest.raises(SystemExit) as stopped:
        TABLE.main(["--results", str(tmp_path), "--minimum", minimum])
    assert stopped.value.code == 2 and "must be 1 or more" in capsys.readouterr().err


@pytest.mark.parametrize("confidence", ["high", 1.7, float("nan")])
def test_a_confidence_that_is_no_probability_is_one_line_naming_the_file(
        tmp_path: Path, confidence: object, capsys: pytest.CaptureFixture[str]) -> None:
    """It was a UsageError's traceback, without the file."""
    _run(tmp_path / "run-a", [{"id": f"i{n}", "correct": n % 2 == 0, "confidence": 0.5} for n in range(3)]
         + [{"id": "i9", "correct": True, "confidence": confidence}])
    assert TABLE.main(["--results", str(tmp_path), "--minimum", "1"]) == 2
    err = capsys.readouterr().err
    assert f"calibration_table: {tmp_path / 'run-a' / 'items.jsonl'}: confidence 3 is" in err
