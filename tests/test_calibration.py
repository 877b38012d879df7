"""Calibration of confidence against correctness: ECE, Brier, AUROC and its interval, reliability diagrams, and
the calibration every benchmark report with confidences gets. Expected values are worked out by hand."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench.calibration import (
    DIAGRAM,
    auroc,
    auroc_interval,
    brier_score,
    calibrate_run,
    calibration_summary,
    expected_calibration_error,
    reliability_bins,
    write_reliability_diagram,
)
from noosphere.errors import UsageError
from noosphere.llm.types import Request
from tests.helpers import MUSTARD_SAMPLE, by_agent, opener_for
from tests.test_cli import invoke

# bins 9 (0.95, right), 8 (0.85, wrong), 6 (0.65 and 0.6, both right), 1 (0.15, wrong)
CONFIDENCES = [0.95, 0.85, 0.65, 0.6, 0.15]
CORRECT = [True, False, True, True, False]


def test_ece_of_a_small_set_by_hand() -> None:
    # |1 - 0.95| + |0 - 0.85| + 2 x |1 - 0.625| + |0 - 0.15|, over 5 items = 1.8 / 5
    assert expected_calibration_error(CONFIDENCES, CORRECT) == pytest.approx(0.36)
    assert expected_calibration_error([0.8] * 5, [True] * 4 + [False]) == pytest.approx(0.0)  # 80 % right at 0.8
    assert expected_calibration_error([1.0, 0.0], [True, False]) == pytest.approx(0.0)


def test_bins_are_equal_width_with_one_point_zero_in_the_last() -> None:
    bins = reliability_bins([0.0, 0.1, 0.3, 0.7, 0.99, 1.0], [False, True, True, False, True, True])
    assert len(bins) == 10 and [b.count for b in bins] == [1, 1, 0, 1, 0, 0, 0, 1, 0, 2]
    last = bins[9]
    assert (last.lower, last.upper) == (0.9, 1.0)
    assert last.confidence == pytest.approx(0.995) and last.accuracy == 1.0
    assert bins[2].confidence is None and bins[2].accuracy is None


def test_brier_score_by_hand() -> None:
    # (0.05² + 0.85² + 0.35² + 0.4² + 0.15²) / 5 = 1.03 / 5
    assert brier_score(CONFIDENCES, CORRECT) == pytest.approx(0.206)
    assert brier_score([0.5] * 4, [True, False, True, False]) == pytest.approx(0.25)


def test_auroc_separating_reversed_tied_and_by_hand() -> None:
    assert auroc([0.9, 0.8, 0.3, 0.2], [True, True, False, False]) == 1.0
    assert auroc([0.9, 0.8, 0.3, 0.2], [False, False, True, True]) == 0.0
    # right 0.95, 0.65, 0.6 against wrong 0.85, 0.15: 4 of the 6 pairs ordered right
    assert auroc(CONFIDENCES, CORRECT) == pytest.approx(4 / 6)
    # a tie between a right and a wrong answer counts one half: (0.5 + 1 + 1 + 1) / 4
    assert auroc([0.5, 0.5, 0.9, 0.1], [True, False, True, False]) == pytest.approx(0.875)
    assert auroc([0.7] * 4, [True, False, True, False]) == pytest.approx(0.5)


def test_delong_interval_by_hand() -> None:
    # right 0.9, 0.6; wrong 0.7, 0.2: AUROC 3/4; structural components (1, 1/2) and (1/2, 1), each of
    # variance 1/8, so var = 1/8 / 2 + 1/8 / 2 = 1/8 and the interval is 0.75 ± 1.96 x sqrt(1/8), clipped at 1
    confidences, correct = [0.9, 0.6, 0.7, 0.2], [True, True, False, False]
    low, high = auroc_interval(confidences, correct)  # type: ignore[misc]
    assert low == pytest.approx(0.75 - 1.959964 * math.sqrt(0.125), abs=1e-5) and high == 1.0
    assert auroc_interval([0.9, 0.8, 0.3, 0.2], [True, True, False, False]) == (1.0, 1.0)  # degenerate at 1
    assert auroc_interval([0.9, 0.6, 0.7], [True, True, False]) is None  # one wrong answer: no DeLong variance


def test_bootstrap_interval_is_seeded() -> None:
    confidences = [round(0.025 * i, 3) for i in range(1, 40)]
    correct = [(i * 7) % 10 < i / 4 for i in range(1, 40)]  # mostly right at high confidence: AUROC 0.91
    first = auroc_interval(confidences, correct, method="bootstrap", seed=1, resamples=500)
    assert first == auroc_interval(confidences, correct, method="bootstrap", seed=1, resamples=500)
    assert first != auroc_interval(confidences, correct, method="bootstrap", seed=2, resamples=500)
    assert first is not None and first[0] < auroc(confidences, correct) < first[1] < 1.0  # type: ignore[operator]
    assert first[1] - first[0] == pytest.approx(0.175, abs=0.05)  # about as wide as DeLong's (0.83 to 1.0)
    with pytest.raises(UsageError, match="unknown interval method"):
        auroc_interval(confidences, correct, method="jackknife")  # type: ignore[arg-type]


def test_summary_of_no_items_and_of_all_right_or_all_wrong() -> None:
    empty = calibration_summary([], [])
    assert empty["n"] == 0 and empty["ece"] is None and empty["brier"] is None and empty["auroc"] is None
    assert empty["notes"] == ["no items"] and all(b["count"] == 0 for b in empty["bins"])
    right = calibration_summary([0.9, 0.7], [True, True])
    assert right["auroc"] is None and right["auroc_ci95"] is None
    assert right["notes"] == ["AUROC undefined: every answer is correct"]
    assert right["ece"] == pytest.approx(0.2) and right["brier"] == pytest.approx(0.05)
    wrong = calibration_summary([0.9, 0.7], [False, False])
    assert wrong["auroc"] is None and wrong["notes"] == ["AUROC undefined: every answer is wrong"]


def test_summary_gives_every_figure_rounded() -> None:
    summary = calibration_summary(CONFIDENCES, CORRECT)
    assert summary["n"] == 5 and summary["accuracy"] == 0.6 and summary["mean_confidence"] == 0.64
    assert summary["ece"] == 0.36 and summary["brier"] == 0.206 and summary["auroc"] == 0.6667
    assert summary["interval_method"] == "delong" and summary["auroc_ci95"] is not None
    assert summary["bins"][6] == {"lower": 0.6, "upper": 0.7, "count": 2, "confidence": 0.625, "accuracy": 1.0}
    json.dumps(summary)  # plain JSON


@pytest.mark.parametrize(("confidences", "correct", "message"), [
    ([1.2], [True], "outside"), ([-0.1], [False], "outside"), ([float("nan")], [True], "outside"),
    (["0.5"], [True], "not a number"), ([True], [True], "not a number"), ([None], [True], "not a number"),
    ([0.5, 0.5], [True], "one correctness per confidence"), ([0.5], ["yes"], "not True or False")])
def test_bad_input_is_refused(confidences: list[Any], correct: list[Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        calibration_summary(confidences, correct)
    with pytest.raises(UsageError, match=message):
        expected_calibration_error(confidences, correct)


def test_reliability_diagram_png_and_svg(tmp_path: Path) -> None:
    png = write_reliability_diagram(CONFIDENCES, CORRECT, tmp_path / "r.png", "five items")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    svg = write_reliability_diagram(CONFIDENCES, CORRECT, tmp_path / "sub" / "r.svg", "five items").read_text()
    assert "five items" in svg and "ECE 0.360" in svg and "AUROC 0.667" in svg and "n 5" in svg
    empty = write_reliability_diagram([], [], tmp_path / "empty.svg", "nothing").read_text()
    assert "ECE n/a" in empty and "no items" in empty
    with pytest.raises(UsageError, match=r"\.png or \.svg"):
        write_reliability_diagram(CONFIDENCES, CORRECT, tmp_path / "r.jpg", "x")
    with pytest.raises(UsageError, match="outside"):
        write_reliability_diagram([2.0], [True], tmp_path / "bad.png", "x")
    assert not (tmp_path / "bad.png").exists()


def test_a_run_without_matplotlib_still_gets_its_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"correct": True, "confidence": 0.9}, {"correct": False, "confidence": 0.2}, {"correct": False}]
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    result = calibrate_run(tmp_path, rows, "t")
    assert result.written == () and result.warning is not None and "matplotlib" in result.warning
    assert result.metrics["auroc"] == 1.0 and result.metrics["calibration"]["without_confidence"] == 1
    assert result.metrics["calibration"]["diagram"] is None and not (tmp_path / DIAGRAM).exists()
    assert calibrate_run(tmp_path, [{"correct": True, "confidence": None}], "t").metrics == {}


# benchmark runs on the scripted model ------------------------------------------------------------------------
MUSTARD_CONFIDENCE = {"great": 0.9, "sandwich": 0.7, "genius": 0.6}


def always_sarcastic(request: Request) -> dict[str, Any]:
    prompt = request.messages[-1].content
    confidence = next(value for word, value in MUSTARD_CONFIDENCE.items() if word in prompt)
    return {"reason": "r", "label": "sarcastic", "confidence": confidence}


def mustard_run(tmp_path: Path, name: str) -> Path:
    data = tmp_path / "sarcasm.json"
    data.write_text(json.dumps(MUSTARD_SAMPLE))
    code, out, err = invoke(["bench", "mustard", "--system", "base", "--data", str(data), "--out",
                             str(tmp_path / name), "--no-cache", "--quiet"], opener_for(always_sarcastic))
    assert code == 0, err
    assert "wrote:" in out and DIAGRAM in out
    [run_dir] = list((tmp_path / name).iterdir())
    return run_dir


def test_a_mustard_run_reports_ece_brier_auroc_and_draws_the_diagram(tmp_path: Path) -> None:
    run_dir = mustard_run(tmp_path, "runs")
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert sorted(r["confidence"] for r in rows) == [0.6, 0.7, 0.9]
    metrics = json.loads((run_dir / "report.json").read_text())["metrics"]
    # right at 0.9 and 0.6, wrong at 0.7: ECE (0.1 + 0.7 + 0.4) / 3, Brier (0.01 + 0.49 + 0.16) / 3, AUROC 1/2
    assert metrics["ece"] == pytest.approx(0.4) and metrics["brier"] == pytest.approx(0.22)
    assert metrics["auroc"] == 0.5 and metrics["auroc_ci95"] is None
    assert metrics["calibration"]["n"] == 3 and metrics["calibration"]["diagram"] == DIAGRAM
    assert metrics["accuracy"] == pytest.approx(66.67)  # the benchmark's own metrics stay
    assert (run_dir / DIAGRAM).read_bytes()[:4] == b"\x89PNG"
    report = (run_dir / "report.md").read_text()
    assert "## Calibration" in report and "ECE 0.400" in report and f"![reliability diagram]({DIAGRAM})" in report
    assert "| ece | 0.4 |" in report and "| 0.9-1.0 | 1 | 0.900 | 1.000 |" in report
    assert "two right and two wrong answers" in report


def test_gsm8k_best_of_n_confidence_is_the_winners_share_and_base_has_none(tmp_path: Path) -> None:
    data = tmp_path / "gsm.jsonl"
    data.write_text("\n".join(json.dumps(p) for p in [
        {"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3+4=7\n#### 7"},
        {"question": "A book costs $1,200 and is halved. Price?", "answer": "1200/2=600\n#### 600"}]) + "\n")

    def said(answer: str) -> str:
        return json.dumps({"reasoning": "work", "answer": answer})

    samples = by_agent({f"sample-{i}": [said("7"), said("300" if i < 3 else "600")] for i in range(4)})
    code, _, err = invoke(["bench", "gsm8k", "--system", "best-of-n", "--n", "4", "--data", str(data), "--out",
                           str(tmp_path / "n"), "--no-cache", "--quiet"], opener_for(samples))
    assert code == 0, err
    [run_dir] = list((tmp_path / "n").iterdir())
    metrics = json.loads((run_dir / "report.json").read_text())["metrics"]
    # 4 of 4 said 7 (right), 3 of 4 said 300 (wrong): ECE (0 + 0.75) / 2, Brier (0 + 0.75²) / 2
    assert metrics["ece"] == pytest.approx(0.375) and metrics["brier"] == pytest.approx(0.28125, abs=1e-4)
    assert metrics["auroc"] == 1.0 and (run_dir / DIAGRAM).exists()

    code, _, err = invoke(["bench", "gsm8k", "--system", "base", "--data", str(data), "--out", str(tmp_path / "b"),
                           "--no-cache", "--quiet"], opener_for([said("7"), said("300")]))
    assert code == 0, err
    [run_dir] = list((tmp_path / "b").iterdir())
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert [r["confidence"] for r in rows] == [None, None]
    report = json.loads((run_dir / "report.json").read_text())
    assert "ece" not in report["metrics"] and "calibration" not in report["metrics"]
    assert not (run_dir / DIAGRAM).exists() and "Calibration" not in (run_dir / "report.md").read_text()


def test_platt_scaling_out_of_fold_repairs_a_miscalibrated_but_informative_confidence() -> None:
    """Confidences all near 0.95 while only half the answers are right, yet ranked well: ECE is large, and a
    calibration learnt on the other fold brings it down; a confidence without signal stays near the base rate."""
    import random as random_module

    from noosphere.bench.calibration import expected_calibration_error, recalibrated_ece

    rng = random_module.Random(3)
    correct = [i % 2 == 0 for i in range(200)]
    confidence = [0.95 + (0.04 if c else 0.0) * rng.random() - (0.0 if c else 0.04 * rng.random()) for c in correct]
    assert expected_calibration_error(confidence, correct) > 0.4
    assert recalibrated_ece(confidence, correct) < 0.1
    assert recalibrated_ece([0.9, 0.8, 0.7], [True, False, True]) is None


def test_the_noise_floor_is_the_ece_a_calibrated_system_shows_and_shrinks_with_items() -> None:
    """Labels drawn from the confidences themselves are calibrated by construction, yet their ECE on 30 items is
    far from 0; the floor predicts it, and shrinks as items grow. Seeded: the same figure twice."""
    import random as random_module

    from noosphere.bench.calibration import ece_noise_floor, expected_calibration_error

    rng = random_module.Random(5)
    few = [rng.uniform(0.3, 0.95) for _ in range(30)]
    many = [rng.uniform(0.3, 0.95) for _ in range(3000)]
    mean_few, p95_few = ece_noise_floor(few)
    mean_many, _ = ece_noise_floor(many)
    assert 0.08 < mean_few < p95_few < 0.4
    assert mean_many < 0.03 < mean_few
    assert ece_noise_floor(few) == (mean_few, p95_few)
    observed = [expected_calibration_error(few, [rng.random() < c for c in few]) for _ in range(200)]
    assert abs(sum(observed) / len(observed) - mean_few) < 0.02
    assert ece_noise_floor([]) is None


def test_a_report_states_the_floor_beside_the_recalibrated_ece() -> None:
    from noosphere.bench.calibration import calibrate, calibration_markdown, calibration_summary

    correct = [i % 3 != 0 for i in range(40)]
    confidence = [0.9 if c else 0.6 for c in correct]
    result = calibrate(confidence, correct)
    assert result.ece_recalibrated is not None and result.ece_floor is not None
    text = "\n".join(calibration_markdown(calibration_summary(confidence, correct)))
    assert "a perfectly calibrated confidence would show" in text
    assert calibrate([0.9, 0.8, 0.7], [True, False, True]).ece_floor is None


def test_the_recalibrated_ece_does_not_depend_on_the_order_of_the_rows() -> None:
    """Rows arrive in completion order, which `--parallel` changes; the recalibrated ECE must not move with it."""
    import random as random_module

    from noosphere.bench.calibration import recalibrated_ece

    rng = random_module.Random(11)
    pairs = [(c, rng.random() < c) for c in (rng.uniform(0.5, 1.0) for _ in range(30))]
    figures = set()
    for seed in range(4):
        shuffled = pairs[:]
        random_module.Random(seed).shuffle(shuffled)
        figures.add(round(recalibrated_ece([c for c, _ in shuffled], [k for _, k in shuffled]), 12))
    assert len(figures) == 1


def test_isotonic_recalibration_maps_a_vote_share_of_few_values_beside_platt() -> None:
    """A share of five votes takes few values, with a step-shaped accuracy. Isotonic regression, cross-fitted on
    random halves, brings the ECE down and does not move with the rows' order."""
    import random as random_module

    from noosphere.bench.calibration import expected_calibration_error, isotonic_ece, recalibrated_ece

    shares = [0.4] * 20 + [0.6] * 20 + [0.8] * 20 + [1.0] * 20
    correct = [i < 2 for i in range(20)] + [i < 3 for i in range(20)] + [i < 5 for i in range(20)] + [True] * 20
    figure = isotonic_ece(shares, correct)
    assert figure is not None and figure < expected_calibration_error(shares, correct) - 0.2
    pairs = list(zip(shares, correct, strict=True))
    random_module.Random(1).shuffle(pairs)
    assert isotonic_ece([c for c, _ in pairs], [k for _, k in pairs]) == pytest.approx(figure, abs=1e-12)
    assert recalibrated_ece(shares, correct) is not None  # Platt's, beside it
    assert isotonic_ece([0.9, 0.8, 0.7], [True, False, True]) is None
    with pytest.raises(UsageError, match="at least one split"):
        isotonic_ece(shares, correct, splits=0)


def test_a_recalibrated_constant_confidence_is_not_sorted_into_bins_by_its_own_answers() -> None:
    """Leave-one-out moves each item's mapped value against its own answer (19/39 for a right item, 20/39 for a wrong
    one); binned by those values, a constant 0.5 that is right half the time showed a recalibrated ECE of 0.51."""
    from noosphere.bench.calibration import calibrate, recalibrated, recalibrated_ece

    truth = [True] * 20 + [False] * 20
    mapped = recalibrated([0.5] * 40, truth)
    assert mapped is not None and mapped[0] < 0.5 < mapped[-1]  # the leave-one-out values do move
    assert recalibrated_ece([0.5] * 40, truth) == pytest.approx(0.0, abs=1e-6)
    assert calibrate([1.0] * 40, truth).ece_recalibrated == pytest.approx(0.0, abs=1e-6)  # raw ECE 0.5
    # a confidence with signal still keeps what leave-one-out says of it
    rng = __import__("random").Random(3)
    values = [rng.random() for _ in range(60)]
    answers = [rng.random() < v for v in values]
    figure = recalibrated_ece(values, answers)
    assert figure is not None and 0.0 < figure < 0.3
