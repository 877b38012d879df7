"""`benchmarks/option_scoring.py`: usage errors are one line, before the model's first call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from noosphere.llm import Model, ScriptedBackend
from tests.helpers import load_script

SCRIPT = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "option_scoring.py",
                     "option_scoring_script")


def test_a_model_that_cannot_score_is_refused_before_the_warm_up_call(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = ScriptedBackend(["sarcastic"] * 5)
    monkeypatch.setattr(SCRIPT, "open_model", lambda model_id, **kwargs: Model(backend))
    with pytest.raises(SystemExit, match="option_scoring: model scripted does not support logprobs"):
        SCRIPT.main(["--model", "scripted"])
    assert backend.history == []


@pytest.mark.parametrize("flag", ["--trials", "--tokens"])
def test_counts_below_one_are_refused(flag: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    def no_model(model_id: str, **kwargs: Any) -> Model:
        raise AssertionError("a model was opened")

    monkeypatch.setattr(SCRIPT, "open_model", no_model)
    with pytest.raises(SystemExit) as stopped:
        SCRIPT.main([flag, "0"])
    assert stopped.value.code == 2 and "must be 1 or more" in capsys.readouterr().err
