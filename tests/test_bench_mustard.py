"""MUStARD benchmark on the scripted model: loading, both systems, metrics, resume after a kill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from noosphere.bench import classification_report
from noosphere.bench.mustard import LABELS, load_mustard
from noosphere.llm.types import Request
from tests.helpers import MUSTARD_SAMPLE, chunk_reply, opener_for, stm_reply
from tests.test_cli import invoke


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "sarcasm.json"
    path.write_text(json.dumps(MUSTARD_SAMPLE))
    return path


def test_loader_reads_the_original_format_with_a_seeded_sample(data: Path) -> None:
    items = load_mustard(data)
    assert sorted(i.id for i in items) == ["1_1", "1_2", "1_3"]
    assert [i.id for i in load_mustard(data, limit=2)] == [i.id for i in items[:2]]
    first = next(i for i in items if i.id == "1_1")
    assert first.gold == "sarcastic" and first.dialogue() == "ROSS: The car broke down."
    assert "Friends" in first.speaker_card()


def test_metrics_weighted_and_missing_answers_count_as_wrong() -> None:
    gold = ["sarcastic", "sarcastic", "not sarcastic", "not sarcastic"]
    report = classification_report(gold, ["sarcastic", None, "not sarcastic", "sarcastic"], LABELS)
    assert report["accuracy"] == 50.0 and report["no_answer"] == 1
    assert report["recall"] == 50.0
    assert report["precision"] == 75.0  # sarcastic 1/2, not sarcastic 1/1, weighted by support
    assert report["confusion"]["matrix"] == [[1, 0, 1], [1, 1, 0]]



def test_base_system_scores_every_item(data: Path, tmp_path: Path) -> None:
    opener = opener_for(lambda request: {"reason": "r", "label": "sarcastic", "confidence": 0.8})
    code, _, err = invoke(["bench", "mustard", "--system", "base", "--data", str(data), "--out",
                             str(tmp_path / "runs"), "--no-cache", "--quiet"], opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    report = json.loads((run_dir / "report.json").read_text())
    assert report["metrics"]["n"] == 3 and report["metrics"]["accuracy"] == pytest.approx(66.67)
    assert report["costs"]["calls_per_item"] == 1.0
    assert "Confusion matrix" in (run_dir / "report.md").read_text()
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert [r["prediction"] for r in rows] == ["sarcastic"] * 3
    # each processor-free base call saw utterance, dialogue and speaker together
    prompt = opener.backend.history[0].messages[-1].content
    assert "Final utterance" in prompt and "Dialogue so far" in prompt and "character" in prompt


class SimulatedKill(Exception):
    """Stands for the process being killed mid-item: not a noosphere error, so nothing catches it."""


def ctm_script(request: Request) -> Any:
    if request.agent == "stm":
        return stm_reply("it mocks", 0.9, label="sarcastic")
    return chunk_reply(f"{request.agent} view", "", 0.7, 0.7)


def test_ctm_system_uses_partial_views_and_is_resumable(data: Path, tmp_path: Path) -> None:
    failing_after = {"calls": 0}

    def flaky(request: Request) -> Any:
        failing_after["calls"] += 1
        if failing_after["calls"] > 4:  # the first item takes 3 bids and 1 STM call; then the "kill"
            raise SimulatedKill
        return ctm_script(request)

    out_dir = tmp_path / "runs"
    with pytest.raises((SimulatedKill, ExceptionGroup)):
        invoke(["bench", "mustard", "--system", "ctm", "--data", str(data), "--out", str(out_dir), "--no-cache",
                "--quiet"], opener_for(flaky))
    [run_dir] = list(out_dir.iterdir())
    assert len((run_dir / "items.jsonl").read_text().splitlines()) == 1

    resumed = opener_for(ctm_script)
    code, _, err = invoke(["bench", "mustard", "--resume", str(run_dir), "--data", str(data), "--quiet",
                           "--no-cache"], resumed)
    assert code == 0, err
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and len({r["id"] for r in rows}) == 3
    assert len(resumed.backend.history) == 2 * 4  # only the two missing items were run
    agents = {r.agent for r in resumed.backend.history}
    assert agents == {"utterance", "dialogue", "speaker", "stm"}
    report = json.loads((run_dir / "report.json").read_text())
    assert report["system"] == "ctm" and report["metrics"]["n"] == 3
    kinds = [json.loads(line)["kind"] for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert kinds.count("bench_item_finished") == 3 and "ws_competition" in kinds


def test_unknown_ablation_is_a_usage_error(data: Path, tmp_path: Path) -> None:
    code, _, err = invoke(["bench", "mustard", "--ablation", "no_fusoin", "--data", str(data), "--out",
                           str(tmp_path)], opener_for(ctm_script))
    assert code == 2 and "Did you mean no_fusion" in err


def test_resume_keeps_the_saved_system_and_options(data: Path, tmp_path: Path) -> None:
    answers = iter([{"reason": "r", "label": "sarcastic", "confidence": 0.8}, SimulatedKill()])

    def first(request: Request) -> Any:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    with pytest.raises(SimulatedKill):
        invoke(["bench", "mustard", "--system", "base", "--limit", "2", "--data", str(data), "--out",
                str(tmp_path / "runs"), "--quiet", "--no-cache"], opener_for(first))
    [run_dir] = list((tmp_path / "runs").iterdir())
    resumed = opener_for(lambda request: {"reason": "r", "label": "not sarcastic", "confidence": 0.6})
    code, _, err = invoke(["bench", "mustard", "--resume", str(run_dir), "--quiet", "--no-cache"], resumed)
    assert code == 0, err
    assert [r.agent for r in resumed.backend.history] == ["base"]  # base, as saved, and only the missing item
    assert json.loads((run_dir / "report.json").read_text())["metrics"]["n"] == 2


@pytest.mark.parametrize("system", ["base", "ctm"])
def test_probability_scores_from_a_model_that_cannot_give_them_are_refused_before_a_run_folder(
        data: Path, tmp_path: Path, system: str) -> None:
    """Checked while preparing, not in the first item: the review found a folder left behind marked failed."""
    opener = opener_for(lambda request: {"reason": "r", "label": "sarcastic", "confidence": 0.8})  # no logprobs
    code, _, err = invoke(["bench", "mustard", "--system", system, "--scores", "logprob", "--data", str(data),
                           "--out", str(tmp_path / "runs"), "--no-cache", "--quiet"], opener)
    assert code == 2 and "logprobs" in err and "--scores samples" in err
    assert not list((tmp_path / "runs").glob("*")) and not opener.backend.history


@pytest.mark.parametrize("extra", [["--system", "ctm", "--scores", "logprob"], ["--system", "base"]])
def test_stm_samples_outside_the_verbal_ctm_are_refused_before_a_run_folder(data: Path, tmp_path: Path,
                                                                          extra: list[str]) -> None:
    opener = opener_for(lambda request: {"reason": "r", "label": "sarcastic", "confidence": 0.8})
    code, _, err = invoke(["bench", "mustard", *extra, "--stm-samples", "3", "--data", str(data), "--out",
                           str(tmp_path / "runs"), "--no-cache", "--quiet"], opener)
    assert code == 2 and "--stm-samples" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert opener.backend.history == []


@pytest.mark.parametrize(("flag", "says"), [
    (["--threshold", "nan"], "Invalid value for '--threshold'"),  # named by its flag, not the Python field it sets
    (["--threshold", "-1"], "Invalid value for '--threshold'"),
    (["--iterations", "0"], "Invalid value for '--iterations'")])
def test_a_threshold_no_confidence_can_be_compared_with_is_refused_before_a_run_folder(
        data: Path, tmp_path: Path, flag: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    opener = opener_for(ctm_script)
    code, _, err = invoke(["bench", "mustard", *flag, "--data", str(data), "--out",
                           str(tmp_path / "runs"), "--no-cache", "--quiet"], opener)
    assert code == 2 and says in err + capsys.readouterr().err  # typer's own check writes to the process's stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert opener.backend.history == []


def test_a_resume_takes_the_runs_own_ablations_in_any_order(data: Path, tmp_path: Path) -> None:
    """The run saves its ablations sorted: the same ones given in another order were refused as other settings."""
    args = ["bench", "mustard", "--data", str(data), "--limit", "1", "--quiet", "--no-cache"]
    with pytest.raises((SimulatedKill, ExceptionGroup)):
        invoke([*args, "--ablation", "no_uptree", "--ablation", "no_fusion", "--out", str(tmp_path / "runs")],
               opener_for([SimulatedKill()]))
    [run_dir] = list((tmp_path / "runs").iterdir())
    code, _, err = invoke(["bench", "mustard", "--resume", str(run_dir), "--ablation", "no_ltm", "--quiet",
                           "--no-cache"])
    assert code == 2 and "--ablation no_ltm (the run has no_fusion,no_uptree)" in err, err
    with pytest.raises((SimulatedKill, ExceptionGroup)):  # taken: the run goes on to its item's first call
        invoke(["bench", "mustard", "--resume", str(run_dir), "--ablation", "no_uptree", "--ablation", "no_fusion",
                "--quiet", "--no-cache"], opener_for([SimulatedKill()]))


def test_a_judged_alpha_is_saved_with_the_run_and_asked_after_each_label(data: Path, tmp_path: Path) -> None:
    """`--stm-alpha judged`: every STM answer is followed by its P(True), which the run's alpha is."""
    from noosphere.workspace.scores import ANSWER_CORRECT_QUESTION

    def scorer(request: Any) -> dict[str, float]:
        if request.options != ("Yes", "No"):
            return {"sarcastic": 0.97, "not sarcastic": 0.03}
        if request.agent == "stm":
            return {"Yes": 0.83, "No": 0.17}
        return {"Yes": 0.9, "No": 0.1}

    opener = opener_for(lambda request: {"response": "sarcastic, by the tone", "additional_question": ""},
                        scorer=scorer)
    code, _, err = invoke(["bench", "mustard", "--system", "ctm", "--scores", "logprob", "--stm-alpha", "judged",
                           "--limit", "1", "--data", str(data), "--out", str(tmp_path / "runs"), "--no-cache",
                           "--quiet"], opener)
    assert code == 0, err
    [run_dir] = list((tmp_path / "runs").iterdir())
    assert json.loads((run_dir / "config.json").read_text())["stm_alpha"] == "judged"
    [row] = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert row["prediction"] == "sarcastic" and row["confidence"] == pytest.approx(0.83)
    judged = [r for r in opener.backend.score_history if r.agent == "stm" and r.options == ("Yes", "No")]
    assert judged and all(r.messages[-1].content == ANSWER_CORRECT_QUESTION for r in judged)


@pytest.mark.parametrize(("extra", "says"), [(["--system", "base"], "--stm-alpha"),
                                             (["--system", "ctm"], "--stm-alpha"),  # verbal scores
                                             (["--system", "ctm", "--scores", "logprob", "--stm-alpha", "gist"],
                                              "unknown STM alpha 'gist'")])
def test_a_judged_alpha_outside_the_probability_ctm_is_refused_before_a_run_folder(
        data: Path, tmp_path: Path, extra: list[str], says: str) -> None:
    opener = opener_for(ctm_script)
    flag = [] if "--stm-alpha" in extra else ["--stm-alpha", "judged"]
    code, _, err = invoke(["bench", "mustard", *extra, *flag, "--data", str(data), "--out", str(tmp_path / "runs"),
                           "--no-cache", "--quiet"], opener)
    assert code == 2 and says in err, err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert opener.backend.history == []
