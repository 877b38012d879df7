"""Calibration held out: a map fitted on some runs of an engine, applied to another run of it on other items."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from noosphere.bench.calibration import expected_calibration_error
from noosphere.bench.calibration_map import (
    CalibrationMap,
    apply_map,
    cross_fitted,
    engine_folds,
    engine_of,
    fit_map,
    held_out_fits,
    read_run,
)
from noosphere.bench.saved import ABSENT_MEANS, played
from noosphere.errors import UsageError
from tests.helpers import load_script
from tests.test_cli import invoke

TABLE = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "calibration_table.py")
ENGINE = {"command": "bench", "benchmark": "gsm8k", "system": "best-of-n", "model": "local:m", "n": 3}


def overconfident_rows(start: int, count: int, seed: int) -> list[dict]:
    """Rows whose confidence says 0.9 where the engine is right 60 % of the time and 0.6 where it is right 20 %."""
    rng = random.Random(seed)
    rows = []
    for number in range(start, start + count):
        high = number % 2 == 0
        rows.append({"id": f"q{number:04d}", "correct": rng.random() < (0.6 if high else 0.2),
                     "confidence": 0.9 if high else 0.6})
    return rows


def make_run(folder: Path, rows: list[dict], **config: object) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({**ENGINE, "run_id": folder.name, **config}))
    (folder / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


@pytest.mark.parametrize("method", ["platt", "isotonic", "platt-cv"])
def test_a_map_fitted_on_one_block_corrects_the_next(tmp_path: Path, method: str) -> None:
    dev = read_run(make_run(tmp_path / "dev", overconfident_rows(0, 400, 1), offset=0, seed=0))
    test = read_run(make_run(tmp_path / "test", overconfident_rows(400, 400, 2), offset=400, seed=7))
    held = apply_map(fit_map([dev], method), test)  # seed and offset differ: the same engine
    assert held.raw.ece is not None and held.raw.ece > 0.25
    assert held.mapped.ece is not None and held.mapped.ece < 0.06
    assert held.mapped.auroc == pytest.approx(held.raw.auroc)  # a rising map keeps the order
    assert held.within_floor is True


def test_isotonic_gives_each_confidence_level_its_own_accuracy(tmp_path: Path) -> None:
    rows = [{"id": f"a{n}", "correct": n % 4 != 0, "confidence": 1.0} for n in range(40)]  # right 75 %
    rows += [{"id": f"b{n}", "correct": n % 4 == 0, "confidence": 0.5} for n in range(40)]  # right 25 %
    calibration_map = fit_map([read_run(make_run(tmp_path / "dev", rows))], "isotonic")
    assert calibration_map.apply([1.0, 0.5, 0.75]) == pytest.approx([0.75, 0.25, 0.5])


def noise_rows(start: int, count: int, seed: int) -> list[dict]:
    """Rows whose confidence, between 0.4 and 0.8, says nothing of whether the engine is right (55 % of the time)."""
    rng = random.Random(seed)
    return [{"id": f"q{number:04d}", "correct": rng.random() < 0.55, "confidence": round(rng.uniform(0.4, 0.8), 2)}
            for number in range(start, start + count)]


def test_platt_cv_shrinks_a_slope_fitted_on_noise_towards_the_fits_accuracy(tmp_path: Path) -> None:
    blocks = [read_run(make_run(tmp_path / f"b{at}", noise_rows(40 * at, 40, at), offset=40 * at)) for at in range(4)]
    free, shrunk = (fit_map(blocks[1:], method) for method in ("platt", "platt-cv"))
    assert abs(shrunk.parameters[0]) < 0.2 * abs(free.parameters[0])
    mapped = shrunk.apply([0.4, 0.6, 0.8])
    assert max(mapped) - min(mapped) < 0.05 and mapped[1] == pytest.approx(shrunk.accuracy, abs=0.03)
    signal = read_run(make_run(tmp_path / "signal", overconfident_rows(0, 400, 1)))
    free, kept = (fit_map([signal], method) for method in ("platt", "platt-cv"))  # a score that tells: little penalty
    assert kept.parameters == pytest.approx(free.parameters, rel=0.15)


def test_a_map_survives_its_file_and_a_damaged_file_is_refused(tmp_path: Path) -> None:
    dev = read_run(make_run(tmp_path / "dev", overconfident_rows(0, 60, 1)))
    for method in ("platt", "isotonic", "platt-cv"):
        fitted = fit_map([dev], method)  # type: ignore[arg-type]
        loaded = CalibrationMap.load(fitted.save(tmp_path / f"{method}.json"))
        assert loaded == fitted
        assert loaded.apply([0.6, 0.9]) == pytest.approx(fitted.apply([0.6, 0.9]))
    data = json.loads((tmp_path / "isotonic.json").read_text())
    data["parameters"] = data["parameters"][::-1]  # falling x values
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match="not a calibration map"):
        CalibrationMap.load(tmp_path / "bad.json")
    (tmp_path / "text.json").write_text("slope=1")
    with pytest.raises(UsageError, match="not a calibration map"):
        CalibrationMap.load(tmp_path / "text.json")


def test_another_engine_or_fitted_items_are_refused(tmp_path: Path) -> None:
    dev = read_run(make_run(tmp_path / "dev", overconfident_rows(0, 60, 1)))
    other = read_run(make_run(tmp_path / "n5", overconfident_rows(60, 60, 2), n=5))
    same_items = read_run(make_run(tmp_path / "again", overconfident_rows(50, 60, 3)))
    calibration_map = fit_map([dev])
    with pytest.raises(UsageError, match="differ in n"):
        apply_map(calibration_map, other)
    with pytest.raises(UsageError, match=r"10 of .* were in the map's fit .*q0050"):
        apply_map(calibration_map, same_items)
    with pytest.raises(UsageError, match="different engines"):
        fit_map([dev, other])
    with pytest.raises(UsageError, match="counts twice"):
        fit_map([dev, same_items])


def test_too_few_right_or_wrong_answers_or_no_confidence_is_said(tmp_path: Path) -> None:
    right = read_run(make_run(tmp_path / "right", [{"id": f"q{n}", "correct": True, "confidence": 0.8}
                                                   for n in range(20)]))
    with pytest.raises(UsageError, match="20 right and 0 wrong"):
        fit_map([right])
    with pytest.raises(UsageError, match=r"no row of items\.jsonl carries a confidence"):
        read_run(make_run(tmp_path / "none", [{"id": "q1", "correct": True}]))
    with pytest.raises(UsageError, match="not a benchmark run"):
        read_run(tmp_path)


def test_the_engine_leaves_out_what_names_the_run_and_its_items() -> None:
    config = {**ENGINE, "run_id": "r", "seed": 3, "limit": 100, "offset": 50, "data": "/x", "society_file": "/y"}
    assert engine_of(config) == {k: v for k, v in ENGINE.items() if k != "command"}


def test_held_out_fits_take_other_runs_of_the_engine_on_other_items(tmp_path: Path) -> None:
    a = read_run(make_run(tmp_path / "a", overconfident_rows(0, 50, 1)))
    b = read_run(make_run(tmp_path / "b", overconfident_rows(50, 50, 2)))
    c = read_run(make_run(tmp_path / "c", overconfident_rows(90, 40, 3)))  # shares items with b
    d = read_run(make_run(tmp_path / "d", overconfident_rows(200, 50, 4), n=5))  # another engine
    fits = held_out_fits([a, b, c, d])
    assert [r.folder.name for r in fits[a.folder]] == ["b"]  # b is larger; c shares items with b
    assert [r.folder.name for r in fits[b.folder]] == ["a"]
    assert [r.folder.name for r in fits[c.folder]] == ["a"]
    assert d.folder not in fits


def test_cli_fits_and_applies_and_refuses_writing_into_a_run(tmp_path: Path) -> None:
    dev = make_run(tmp_path / "dev", overconfident_rows(0, 200, 1))
    test = make_run(tmp_path / "test", overconfident_rows(200, 200, 2))
    code, out, err = invoke(["calibration", "fit", str(dev), "-o", str(tmp_path / "map.json"), "--method", "isotonic"])
    assert code == 0, err
    assert "fitted on 200 items of 1 run(s)" in out
    code, out, err = invoke(["calibration", "apply", str(tmp_path / "map.json"), str(test), "--json",
                             "--diagram", str(tmp_path / "held.svg")])
    assert code == 0, err
    figures = json.loads(out)
    assert figures["mapped"]["ece"] < figures["raw"]["ece"]
    rows = [json.loads(line) for line in (test / "items.jsonl").read_text().splitlines()]
    mapped = CalibrationMap.load(tmp_path / "map.json").apply([r["confidence"] for r in rows])
    assert figures["mapped"]["ece"] == pytest.approx(
        expected_calibration_error(mapped, [r["correct"] for r in rows]), abs=1e-4)
    assert (tmp_path / "held.svg").read_text().startswith("<?xml")
    code, _, err = invoke(["calibration", "apply", str(tmp_path / "map.json"), str(test), "--diagram",
                           str(test / "reliability.png")])
    assert code == 2 and "inside the run folder" in err
    code, _, err = invoke(["calibration", "fit", str(dev), "-o", str(tmp_path / "m.json"), "--method", "beta"])
    assert code == 2 and "platt, isotonic, platt-cv" in err


def test_calibration_table_heldout_lists_runs_with_a_sibling(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    make_run(tmp_path / "gsm8k" / "b3" / "r1", overconfident_rows(0, 100, 1), offset=0)
    make_run(tmp_path / "gsm8k" / "b3-next" / "r2", overconfident_rows(100, 100, 2), offset=100)
    make_run(tmp_path / "gsm8k" / "b5" / "r3", overconfident_rows(0, 100, 3), n=5)
    assert TABLE.main(["--results", str(tmp_path), "--heldout"]) == 0
    per_run = capsys.readouterr().out.split("\n\n")[0]  # the pooled table follows
    rows = [line for line in per_run.splitlines() if line.startswith("| `")]
    assert [row.split("|")[1].strip() for row in rows] == ["`gsm8k/b3/r1`", "`gsm8k/b3-next/r2`"]
    cells = [cell.strip() for cell in rows[1].split("|")[1:-1]]
    assert cells[2] == "`gsm8k/b3/r1` (100)"
    assert float(cells[3]) > 0.25 and float(cells[4].split()[0]) < 0.1


def test_a_bad_row_is_named_with_its_file_and_item_and_a_torn_line_is_told(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    no_truth = make_run(tmp_path / "no-truth", [*overconfident_rows(0, 20, 1), {"id": "x1", "confidence": 0.5}])
    with pytest.raises(UsageError, match=r"items.jsonl: item x1: correctness 0 is None"):
        read_run(no_truth)
    make_run(tmp_path / "results" / "a" / "r1", [{"id": "y", "correct": True, "confidence": 1.7}])
    make_run(tmp_path / "results" / "a-next" / "r2", overconfident_rows(0, 20, 2))
    assert TABLE.main(["--results", str(tmp_path / "results"), "--heldout"]) == 2  # not left out in silence
    assert "item y: confidence 0 is 1.7" in capsys.readouterr().err
    torn = make_run(tmp_path / "torn", overconfident_rows(0, 40, 3))
    with (torn / "items.jsonl").open("a") as handle:
        handle.write('{"id": "q9999", "corr\n' + json.dumps(overconfident_rows(40, 1, 3)[0]) + "\n")  # resumed
    monkeypatch.chdir(torn)
    code, out, _ = invoke(["calibration", "fit", ".", "-o", str(tmp_path / "m.json")])
    warned = capsys.readouterr().err  # warnings go to stderr, as the viewer's about a trace's bad lines
    assert code == 0 and "fitted on 41 items" in out and "warning:" in warned and "(left out)" in warned
    code, out, err = invoke(["calibration", "apply", str(tmp_path / "m.json"), str(no_truth.parent / "torn")])
    assert code == 2 and "were in the map's fit" in err
    fresh = make_run(tmp_path / "fresh", overconfident_rows(100, 40, 4))
    monkeypatch.chdir(fresh)
    code, out, err = invoke(["calibration", "apply", str(tmp_path / "m.json"), "."])
    assert code == 0, err
    assert "40 items of fresh, none of them in the fit" in out  # the folder's name, not "." or ""
    code, _, err = invoke(["calibration", "fit", str(torn), "-o", str(torn / "sub" / "m.json")])
    assert code == 2 and "inside the run folder" in err
    code, _, err = invoke(["calibration", "fit", str(torn), str(torn), "-o", str(tmp_path / "m2.json")])
    assert code == 2 and "given twice" in err


def test_an_ece_equal_to_the_floor_up_to_rounding_is_within_it(tmp_path: Path) -> None:
    from noosphere.bench.calibration import calibrate
    from noosphere.bench.calibration_map import HeldOut

    result = calibrate([0.5, 0.5], [True, False], recalibrate=False)
    held = HeldOut(result, result.__class__(**{**result.__dict__, "ece": 0.15000000000000002}),
                   (0.1, 0.1499999999999999))
    assert held.within_floor is True
    assert HeldOut(result, result.__class__(**{**result.__dict__, "ece": 0.1501}), (0.1, 0.15)).within_floor is False


def test_cross_fitting_maps_each_run_by_the_others_and_measures_them_together(tmp_path: Path) -> None:
    blocks = [read_run(make_run(tmp_path / f"b{k}", overconfident_rows(100 * k, 100, k), offset=100 * k))
              for k in range(4)]
    held = cross_fitted(blocks, "platt")
    assert held.raw.n == 400 and held.raw.ece is not None and held.raw.ece > 0.25
    assert held.mapped.ece is not None and held.mapped.ece < 0.06
    # the first block's values are those of a map fitted on the other three, not on all four
    on_others = fit_map(blocks[1:], "platt").apply(blocks[0].confidences)
    assert held.mapped_confidences[:100] == pytest.approx(on_others)
    assert held.mapped_confidences[:100] != pytest.approx(fit_map(blocks, "platt").apply(blocks[0].confidences))
    with pytest.raises(UsageError, match="at least two runs"):
        cross_fitted(blocks[:1])
    all_right = read_run(make_run(tmp_path / "right", [{**row, "correct": True}
                                                       for row in overconfident_rows(900, 100, 8)]))
    with pytest.raises(UsageError, match="0 wrong"):  # the fold mapped by that run alone cannot be fitted
        cross_fitted([blocks[0], all_right])
    overlapping = read_run(make_run(tmp_path / "again", overconfident_rows(50, 100, 9)))
    with pytest.raises(UsageError, match="counts twice"):
        cross_fitted([*blocks, overlapping])


def test_engine_folds_group_one_engines_runs_on_different_items(tmp_path: Path) -> None:
    a = read_run(make_run(tmp_path / "a", overconfident_rows(0, 50, 1)))
    b = read_run(make_run(tmp_path / "b", overconfident_rows(50, 60, 2)))
    c = read_run(make_run(tmp_path / "c", overconfident_rows(90, 40, 3)))  # shares items with b, the larger
    d = read_run(make_run(tmp_path / "d", overconfident_rows(200, 50, 4), n=5))  # another engine, alone
    assert [[r.folder.name for r in fold] for fold in engine_folds([a, b, c, d])] == [["b", "a"]]


def test_a_key_an_older_config_lacks_stands_for_the_value_the_run_played(tmp_path: Path) -> None:
    """`form` was added to bench gsm8k after runs were made without it: those played statements."""
    old = read_run(make_run(tmp_path / "old", overconfident_rows(0, 60, 1)))
    saying = read_run(make_run(tmp_path / "new", overconfident_rows(60, 60, 2), form="statement"))
    programs = read_run(make_run(tmp_path / "programs", overconfident_rows(120, 60, 3), form="program"))
    apply_map(fit_map([old]), saying)  # the same engine
    assert len(fit_map([old, saying]).items) == 120
    with pytest.raises(UsageError, match="differ in form"):
        apply_map(fit_map([old]), programs)
    unknown = read_run(make_run(tmp_path / "unknown", overconfident_rows(180, 60, 4), novel_option=None))
    apply_map(fit_map([old]), unknown)  # a key with no known value: absent is null
    novel = read_run(make_run(tmp_path / "novel", overconfident_rows(240, 60, 5), novel_option=1))
    with pytest.raises(UsageError, match="differ in novel_option"):
        apply_map(fit_map([old]), novel)
    weighted = read_run(make_run(tmp_path / "weighted", overconfident_rows(300, 60, 6), weighted=True))
    p_true = read_run(make_run(tmp_path / "p-true", overconfident_rows(360, 60, 7), weighted=True, weights="p-true"))
    apply_map(fit_map([weighted]), p_true)  # made before --weights: --weighted was P(True)
    with pytest.raises(UsageError, match="differ in weighted, weights"):
        apply_map(fit_map([old]), p_true)


def test_cli_cross_and_the_tables_pooled_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [make_run(tmp_path / "gsm8k" / f"b{k}" / f"r{k}", overconfident_rows(100 * k, 100, k), offset=100 * k)
            for k in range(3)]
    code, out, err = invoke(["calibration", "cross", *map(str, runs), "--json", "--method", "isotonic",
                             "--diagram", str(tmp_path / "cross.svg")])
    assert code == 0, err
    figures = json.loads(out)
    assert figures["raw"]["n"] == 300 and figures["mapped"]["ece"] < 0.08 < figures["raw"]["ece"]
    assert (tmp_path / "cross.svg").read_text().startswith("<?xml")
    code, out, err = invoke(["calibration", "cross", *map(str, runs)])
    assert code == 0 and "300 items of 3 runs" in out, err
    code, _, err = invoke(["calibration", "cross", str(runs[0])])
    assert code == 2 and "at least two runs" in err
    code, _, err = invoke(["calibration", "cross", *map(str, runs), "--diagram", str(runs[1] / "x.png")])
    assert code == 2 and "inside the run folder" in err
    assert TABLE.main(["--results", str(tmp_path / "gsm8k"), "--heldout"]) == 0
    pooled = capsys.readouterr().out.split("runs of one engine")[1].splitlines()[2]
    cells = [cell.strip() for cell in pooled.split("|")[1:-1]]
    assert cells[1] == "300" and float(cells[3].split()[0]) > 0.25
    assert len(cells) == 7 and all(float(cell.split()[0]) < 0.08 for cell in cells[4:])  # platt, isotonic, platt-cv
    raw_brier, *mapped_brier = (float(cell.split("Brier ")[1]) for cell in cells[3:])
    assert all(brier < raw_brier for brier in mapped_brier)


def test_a_filled_in_value_is_the_callers_own() -> None:
    """`played` fills in a list for a config without `ablation`; a caller that extends it changes its own copy, not
    what the next config's absence stands for."""
    first = played({"system": "ctm"})
    first["ablation"].append("no_ltm")
    assert played({"system": "ctm"})["ablation"] == [] and ABSENT_MEANS["ablation"] == []
