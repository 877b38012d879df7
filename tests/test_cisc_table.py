"""`benchmarks/cisc_table.py`: plain and weighted votes recounted at every number of samples, problem by problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "cisc_table.py"


def row(item: str, gold: str, samples: list[tuple[str, float]], field: str) -> dict[str, Any]:
    return {"id": item, "gold": gold, "correct": False, "error": None,
            "samples": [{"number": number, field: weight} for number, weight in samples]}


def write(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir()
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_sequence_weights_cost_no_call_and_each_problem_is_counted_for_or_against(tmp_path: Path) -> None:
    cisc = load_script(SCRIPT, "cisc_table_script")
    field = "token_probability"
    rows = [row("a", "7", [("8", 0.5), ("7", 0.9), ("8", 0.3)], field),  # weighted wins it at k = 3
            row("b", "5", [("5", 0.2), ("6", 0.9)], field),  # plain wins it at k = 2 (first seen)
            row("c", "1", [("1", 0.6), ("1", 0.6)], field)]  # both right
    result = cisc.table(write(tmp_path / "run", rows))
    assert result["weight"] == field
    by_k = {r["samples"]: r for r in result["rows"]}
    assert by_k[2]["weighted_calls"] == by_k[2]["plain_calls"] == 2
    assert by_k[2]["won_lost"] == [1, 1]  # a: 8 vs 7 on weight; b: 5 first seen vs 6 heavier
    assert by_k[1]["won_lost"] == [0, 0] and by_k[1]["plain"] == by_k[1]["weighted"]
    assert by_k[3]["weighted"] == pytest.approx(200 / 3, abs=0.1) and by_k[3]["plain"] == pytest.approx(
        200 / 3, abs=0.1)  # a goes to the weight (7: 0.9 against 8: 0.8), plain keeps 8 (two votes)
    p_true = cisc.table(write(tmp_path / "ptrue", [row("a", "7", [("7", 0.9), ("8", 0.4)], "p_true")]))
    assert p_true["weight"] == "p_true" and p_true["rows"][1]["weighted_calls"] == 4
    mixed = [row("a", "7", [("7", 0.9)], "p_true"), row("b", "7", [("7", 0.9)], field)]
    with pytest.raises(SystemExit, match="expected one of"):
        cisc.table(write(tmp_path / "mixed", mixed))


def test_a_society_weighing_standing_answers_is_recounted_over_its_members(tmp_path: Path) -> None:
    """The members' standing answers stand for the samples: plain count and weighted vote, one run, same calls."""
    cisc = load_script(SCRIPT, "cisc_table_script")
    rows = [{"id": "a", "gold": "7", "correct": True, "error": None, "standing": {"m1": "8", "m2": "7", "m3": "8"},
             "standing_probability": {"m1": 0.3, "m2": 0.9, "m3": 0.4}},  # the weight takes 7 over two 8s
            {"id": "b", "gold": "5", "correct": False, "error": None, "standing": {"m1": "5", "m2": "6", "m3": None},
             "standing_probability": {"m1": 0.5, "m2": 0.7, "m3": None}}]
    result = cisc.table(write(tmp_path / "society", rows))
    assert result["weight"] == "token_probability" and result["society"] == 50.0
    by_k = {r["samples"]: r for r in result["rows"]}
    assert set(by_k) == {1, 2, 3}
    assert (by_k[3]["plain"], by_k[3]["weighted"], by_k[3]["won_lost"]) == (50.0, 50.0, [1, 1])
    assert result["signal"]["samples"] == 5  # the answer without a number is not scored


def test_a_society_and_best_of_n_are_set_side_by_side_on_the_problems_both_scored(tmp_path: Path) -> None:
    cisc = load_script(SCRIPT, "cisc_table_script")
    society = write(tmp_path / "society", [
        {"id": "a", "gold": "7", "correct": True, "error": None, "calls": 15, "standing": {"m1": "8", "m2": "7"},
         "standing_probability": {"m1": 0.3, "m2": 0.9}},
        {"id": "b", "gold": "5", "correct": False, "error": None, "calls": 13, "standing": {"m1": "6", "m2": "6"},
         "standing_probability": {"m1": 0.5, "m2": 0.7}},
        {"id": "c", "gold": "1", "correct": True, "error": None, "calls": 14, "standing": {"m1": "1"},
         "standing_probability": {"m1": 0.5}}])  # c: best-of-N has not scored it
    best = write(tmp_path / "best", [row("a", "7", [("8", 0.9), ("7", 0.2)], "token_probability"),
                                     row("b", "5", [("5", 0.6), ("6", 0.5)], "token_probability")])
    compared = cisc.side_by_side(society, best)
    assert compared["problems"] == ["a", "b"]
    first, other = compared["runs"]
    # the society: a is 8 on a plain count (first seen of a tie), 7 weighted; b is 6 either way
    assert (first["calls"], first["plain"], first["weighted"], first["decided"]) == (14.0, 0.0, 50.0, 50.0)
    assert (other["plain"], other["weighted"]) == (50.0, 50.0)  # best-of-N: a is 8 either way, b is 5
    assert (compared["won"], compared["lost"]) == (["a"], ["b"])


def test_adaptive_recount_draws_the_rest_only_where_the_first_samples_disagree(tmp_path: Path) -> None:
    cisc = load_script(SCRIPT, "cisc_table_script")
    field = "token_probability"
    rows = [row("a", "7", [("7", 0.9), ("7", 0.8), ("3", 0.9), ("3", 0.9)], field),  # agreed: 2 calls, right
            row("b", "5", [("6", 0.5), ("5", 0.9), ("5", 0.6), ("6", 0.1)], field),  # split: the rest drawn
            row("c", "1", [(None, 0.5), (None, 0.5), ("1", 0.6), ("2", 0.3)], field)]  # no number is no agreement
    result = cisc.adaptive_table(write(tmp_path / "run", rows), 2)
    by_k = {r["k"]: r for r in result["rows"]}
    assert by_k[4]["calls"] == pytest.approx((2 + 4 + 4) / 3, abs=0.01)
    assert by_k[4]["adaptive"] == 100.0  # a: 7 from two; b: 5 (1.5 against 0.6); c: 1
    # fixed at the nearest k (3): a goes to 7 (1.7 against 0.9), b to 5, c to 1: the same
    assert by_k[4]["fixed_k"] == 3 and by_k[4]["won_lost"] == [0, 0]
    assert by_k[3]["calls"] == pytest.approx((2 + 3 + 3) / 3, abs=0.01)
    with pytest.raises(SystemExit, match="1 <= F < 4"):
        cisc.adaptive_table(tmp_path / "run", 4)


def test_a_quorum_recount_draws_one_sample_more_until_two_give_one_number(tmp_path: Path) -> None:
    """`--quorum 2`: a agrees at two samples; b's 6 and 5 split, its third (5) makes two; c's first two give no number
    and its 1 and 2 split, so all four are drawn."""
    cisc = load_script(SCRIPT, "cisc_table_script")
    field = "token_probability"
    rows = [row("a", "7", [("7", 0.9), ("7", 0.8), ("3", 0.9), ("3", 0.9)], field),
            row("b", "6", [("6", 0.9), ("5", 0.5), ("5", 0.5), ("6", 0.1)], field),
            row("c", "1", [(None, 0.5), (None, 0.5), ("1", 0.6), ("2", 0.3)], field)]
    result = cisc.adaptive_table(write(tmp_path / "run", rows), 2, stop="quorum")
    by_k = {r["k"]: r for r in result["rows"]}
    assert by_k[4]["calls"] == pytest.approx((2 + 3 + 4) / 3, abs=0.01)
    # b: 5 (0.5 + 0.5) against 6 (0.9), wrong; the fixed vote of 3 samples is the same; c: 1 (0.6) against 2 (0.3)
    assert by_k[4]["quorum"] == pytest.approx(66.7) and by_k[4]["won_lost"] == [0, 0]
    assert by_k[3]["calls"] == pytest.approx((2 + 3 + 3) / 3, abs=0.01)
    with pytest.raises(SystemExit, match="--quorum is 2 or more"):
        cisc.adaptive_table(tmp_path / "run", 1, stop="quorum")


def test_a_debate_that_counts_every_answer_is_recounted_over_all_of_them(tmp_path: Path) -> None:
    cisc = load_script(SCRIPT, "cisc_table_script")
    answers = [{"member": "m1", "round": 0, "number": "7", "token_probability": 0.9},
               {"member": "m2", "round": 0, "number": "8", "token_probability": 0.2},
               {"member": "m1", "round": 1, "number": "8", "token_probability": 0.3},
               {"member": "m2", "round": 1, "number": "8", "token_probability": None}]  # a sub-society's: the mean
    society = {"id": "a", "gold": "7", "correct": True, "error": None, "standing": {"m1": "8", "m2": "8"},
               "standing_probability": {"m1": 0.3, "m2": None}, "answers": answers}
    result = cisc.table(write(tmp_path / "run", [society]))
    by_k = {r["samples"]: r for r in result["rows"]}
    assert len(by_k) == 4 and result["signal"]["samples"] == 4
    assert by_k[4]["weighted"] == 0.0  # 8: 0.2 + 0.3 + 0.467 against 7: 0.9
    assert by_k[3]["weighted"] == 100.0 and by_k[4]["plain"] == 0.0


def test_adaptive_recount_of_p_true_samples_counts_their_scoring_calls(tmp_path: Path) -> None:
    """A sample weighted by P(True) costs two calls (its own and the judge's), as the fixed recount counts it: the
    mean calls are twice the samples drawn, and the fixed vote is still taken at the nearest number of samples."""
    cisc = load_script(SCRIPT, "cisc_table_script")
    rows = [row("a", "7", [("7", 0.9), ("7", 0.8), ("3", 0.9), ("3", 0.9)], "p_true"),
            row("b", "5", [("6", 0.5), ("5", 0.9), ("5", 0.6), ("6", 0.1)], "p_true")]
    by_k = {r["k"]: r for r in cisc.adaptive_table(write(tmp_path / "run", rows), 2)["rows"]}
    assert by_k[4]["calls"] == 2 * (2 + 4) / 2 and by_k[4]["fixed_k"] == 3


def test_two_best_of_n_runs_are_pooled_sample_by_sample_beside_each_alone(tmp_path: Path) -> None:
    """`--mix`: at k, the first ceil(k/2) samples of the first run and the first floor(k/2) of the other."""
    cisc = load_script(SCRIPT, "cisc_table_script")
    field = "token_probability"
    words = write(tmp_path / "words", [row("a", "7", [("8", 0.6), ("8", 0.6)], field),
                                       row("b", "5", [("5", 0.9), ("6", 0.2)], field),
                                       row("c", "1", [("1", 0.9), ("1", 0.9)], field)])  # c: the other has not
    programs = write(tmp_path / "programs", [row("a", "7", [("7", 0.9), ("7", 0.9)], field),
                                             row("b", "5", [("6", 0.95), ("6", 0.95)], field)])
    mixed = cisc.mixed_table(words, programs)
    assert mixed["problems"] == 2
    one, two = mixed["rows"]
    assert (one["first"], one["other"], one["mixed"]) == (50.0, 50.0, 50.0)  # k = 1: the first run's first sample
    # k = 2: a is 8 (0.6) against 7 (0.9): 7; b is 5 (0.9) against 6 (0.95): 6
    assert (two["first"], two["other"], two["mixed"], two["won_lost"]) == (50.0, 50.0, 50.0, [1, 1])
    assert two["mixed_plain"] == 50.0  # a tie goes to the first seen: 8 (wrong) for a, 5 (right) for b
    p_true = write(tmp_path / "ptrue", [row("a", "7", [("7", 0.9)], "p_true")])
    with pytest.raises(SystemExit, match="weighted alike"):
        cisc.mixed_table(words, p_true)


def test_against_counts_the_other_run_at_k_samples_pools_blocks_and_gives_a_sign_test(tmp_path: Path) -> None:
    cisc = load_script(SCRIPT, "cisc_table_script")
    field = "token_probability"
    jury_a = write(tmp_path / "jury-a", [
        {"id": "a", "gold": "7", "correct": True, "error": None, "calls": 2, "samples": [
            {"number": "7", field: 0.5}, {"number": "7", field: 0.5}]}])
    jury_b = write(tmp_path / "jury-b", [
        {"id": "b", "gold": "5", "correct": True, "error": None, "calls": 4, "samples": [
            {"number": "5", field: 0.5}, {"number": "6", field: 0.5}, {"number": "4", field: 0.5},
            {"number": "5", field: 0.5}]}])
    # best-of-4: a is 7 only once all four are counted; b is 6 at every k
    best = write(tmp_path / "best", [row("a", "7", [("8", 0.9), ("7", 0.2), ("7", 0.5), ("7", 0.5)], field),
                                     row("b", "5", [("6", 0.9), ("6", 0.2), ("5", 0.1), ("6", 0.4)], field)])
    whole = cisc.side_by_side([jury_a, jury_b], best)
    assert whole["problems"] == ["a", "b"] and (whole["won"], whole["lost"]) == (["b"], [])
    assert whole["runs"][0]["calls"] == 3.0 and whole["runs"][1]["weighted"] == 50.0
    at_two = cisc.side_by_side([jury_a, jury_b], best, at=2)
    assert at_two["won"] == ["a", "b"] and at_two["runs"][1]["calls"] == 2 and at_two["runs"][1]["weighted"] == 0.0
    assert at_two["runs"][1]["decided"] is None  # the run decided over all its samples, not two
    assert at_two["sign_test_p"] == pytest.approx(0.5)
    assert cisc.sign_test(11, 7) == pytest.approx(0.4807, abs=1e-4) and cisc.sign_test(0, 0) == 1.0
    with pytest.raises(SystemExit, match="1 to 4 samples"):
        cisc.side_by_side(jury_a, best, at=5)
    with pytest.raises(SystemExit, match="pool runs of different problems"):
        cisc.side_by_side([jury_a, jury_a], best)
